//! Shipments: create (with idempotency), read, list, and updates: a
//! shipment read, changed by the use-case's decision, and written back in
//! one transaction.
//!
//! A create without an `Idempotency-Key` is a `NewRow` written at the
//! commit of a group commit (`Store::write_at_commit`), every one of a
//! group in one `INSERT … RETURNING *` (`NewRow`'s `AtCommit`), which
//! queues each shipment's outbox row (`outbox::enqueue`) and its count
//! (`Count`). A create with a key is written in its turn, as a group of
//! one: it reads the key first and stores the answer with it. An update is
//! a closure on the group's transaction (`Store::write`): read, decided,
//! written back, with its outbox row, in [`Store::update_shipment`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use chrono::{DateTime, Duration, Utc};
use shipment_sdk::model::{CourierId, DriverId, MerchantId, Shipment, ShipmentCode, Status};

use super::engine::{AtCommit, Kind, MAX_GROUP, Sql, multi_row};
use super::{Backend, Store, StoreError, Tx, now, outbox};
use crate::domain::Refusal;
use crate::domain::actor::Actor;
use crate::domain::code;
use crate::domain::confirmation;
use crate::domain::validation::NewShipment;

pub(crate) mod by_code;
mod history;
mod list;
pub(crate) mod record;

pub(crate) use list::{ListedRows, PageRow, RowVersion};
pub(crate) use record::ShipmentRecord;

/// How long an `Idempotency-Key` is remembered.
pub(crate) const IDEMPOTENCY_WINDOW: Duration = Duration::hours(24);
/// A shipment's confirmation code, as deliver checks it.
const CONFIRMATION_CODE: &str = "SELECT code_digest AS digest, expires_at, failed_attempts \
                                 FROM confirmation_codes WHERE shipment_id = $1";
/// [`CONFIRMATION_CODE`], with the row locked until the transaction ends.
const CONFIRMATION_CODE_LOCKED: &str = "SELECT code_digest AS digest, expires_at, failed_attempts \
                                        FROM confirmation_codes WHERE shipment_id = $1 FOR UPDATE";
/// One shipment by code.
const BY_CODE: &str = "SELECT * FROM shipments WHERE code = $1";

/// The `INSERT` of `n` new shipments, for each `n` up to a group commit's
/// writes. The time is bound three times, once for each timestamp: each
/// parameter once, in order, is what lets SQLite take anonymous ones
/// (`Sql`).
static INSERT: LazyLock<Vec<Sql>> = LazyLock::new(|| {
    let head = "INSERT INTO shipments (code, merchant_id, courier_company_id, status, \
                description, weight_kg, dimensions, items, start_address, end_address, \
                total_fee_minor, webhook_url, version, created_at, assigned_to_courier_at, \
                updated_at)";
    let row = format!(
        "(?, ?, ?, '{}', ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
        Status::AssignedToCourier.as_str()
    );
    multi_row(head, MAX_GROUP, &row, " RETURNING *")
});

impl ShipmentRecord {
    /// `delta` to the kept count this shipment is one of.
    fn count(&self, delta: i64) -> Count {
        Count {
            merchant_id: self.merchant_id,
            courier_company_id: self.courier_company_id,
            status: self.status.clone(),
            day: day_of(self.created_at),
            delta,
        }
    }
}

/// A create's earlier answer under the same `Idempotency-Key`.
#[derive(sqlx::FromRow)]
struct SeenKey {
    request_digest: String,
    response_body: String,
    created_at: DateTime<Utc>,
}

/// A confirmation code as stored.
#[derive(sqlx::FromRow)]
struct CodeRow {
    digest: String,
    expires_at: DateTime<Utc>,
    failed_attempts: i64,
}

/// What the store did with a create: every answer the caller must tell
/// apart, side by side, so a key used with another body is an outcome to
/// map like the others, not a second layer of `Result`.
#[derive(Debug)]
pub(crate) enum Created {
    /// A new shipment, committed with its outbox row.
    New(Box<Shipment>),
    /// The same `Idempotency-Key` and body were seen within
    /// [`IDEMPOTENCY_WINDOW`]: the first answer's body, verbatim.
    Replayed(String),
    /// The `Idempotency-Key` came with another body within the window:
    /// nothing was written.
    KeyReused,
}

/// What an update of an existing shipment ([`Store::update_shipment`],
/// [`Store::deliver_shipment`], [`Store::set_confirmation_code`]) came to.
#[derive(Debug)]
pub(crate) enum ShipmentUpdate<T = Shipment> {
    /// No shipment has this code.
    NotFound,
    /// The caller may not, or the shipment cannot.
    Refused(Refusal),
    /// Done: the change is committed with its outbox row; the shipment as
    /// it now is.
    Done(T),
    /// Nothing to do (cancelling a cancelled shipment, say): no write, no
    /// delivery; the shipment as it is.
    Unchanged(T),
}

/// Whether `record` is `actor`'s to see.
fn may_see(actor: Actor, record: &ShipmentRecord) -> bool {
    actor.may_see(
        MerchantId::new(record.merchant_id),
        CourierId::new(record.courier_company_id),
    )
}

/// Whether an update checks the shipment's confirmation code: a named
/// choice where a nested `Option` would leave the reader to guess which
/// `None` is which.
#[derive(Debug, Clone)]
enum CodeCheck {
    /// Not a delivery: no code is checked or consumed.
    Skip,
    /// A delivery: the code the courier gave (none, if it gave none) is
    /// checked against a generated one, which the delivery consumes.
    Deliver(Option<String>),
}

/// How `decide` changes a shipment: it gets the shipment and the time of
/// the update, and says whether it changed something (`Ok(false)`:
/// nothing to do).
type Decide = dyn Fn(&mut Shipment, DateTime<Utc>) -> Result<bool, Refusal> + Send + Sync;

impl Store {
    /// Creates a shipment, honouring an `(Idempotency-Key, request digest)`;
    /// committed with the writes of concurrent requests (a group commit).
    /// `trace_parent` is the trace of the request, which the shipment's
    /// delivery continues (`outbox::enqueue`).
    pub(crate) async fn create_shipment(
        &self,
        merchant_id: MerchantId,
        new: NewShipment,
        total_fee_minor: i64,
        idempotency: Option<(&str, &str)>,
        trace_parent: Option<String>,
    ) -> Result<Created, StoreError> {
        let row = NewRow {
            merchant_id: merchant_id.get(),
            new,
            total_fee_minor,
            trace_parent,
        };
        let Some((key, digest)) = idempotency else {
            let shipment = self.write_at_commit(row).await?;
            return Ok(Created::New(Box::new(shipment)));
        };
        let (key, digest) = (key.to_owned(), digest.to_owned());
        self.write(move |tx| Box::pin(create_once(tx, row.clone(), key.clone(), digest.clone())))
            .await
    }

    /// One shipment by code, if it exists; read together with the reads by
    /// code of concurrent requests (`ByCode`).
    pub(crate) async fn shipment(&self, code: &str) -> Result<Option<ShipmentRecord>, StoreError> {
        self.by_code.read(&self.db, code.to_owned()).await
    }

    /// Reads a shipment, lets `decide` change it, and writes it back with
    /// `version` + 1 and `updated_at` = now, with its outbox row, all in one
    /// transaction (a group commit's, `Store::write`).
    ///
    /// `decide` gets the record and the time of the update; it returns
    /// `Ok(true)` if it changed something, `Ok(false)` for "nothing to do".
    /// A write that loses a race is retried from the read. `trace_parent`
    /// is the trace of the request, which the delivery continues.
    pub(crate) async fn update_shipment<D>(
        &self,
        code: &str,
        actor: Actor,
        trace_parent: Option<String>,
        decide: D,
    ) -> Result<ShipmentUpdate, StoreError>
    where
        D: Fn(&mut Shipment, DateTime<Utc>) -> Result<bool, Refusal> + Send + Sync + 'static,
    {
        let (code, decide): (String, Arc<Decide>) = (code.to_owned(), Arc::new(decide));
        self.write(move |tx| {
            let trace = trace_parent.clone();
            Box::pin(update(
                tx,
                code.clone(),
                actor,
                CodeCheck::Skip,
                decide.clone(),
                trace,
            ))
        })
        .await
    }

    /// Delivers a shipment: [`Store::update_shipment`] that first checks
    /// the confirmation code, if one was generated, by
    /// [`confirmation::check`]. A wrong code is counted (and the count
    /// committed) though the delivery is refused; a delivery consumes the
    /// code.
    pub(crate) async fn deliver_shipment<D>(
        &self,
        code: &str,
        courier_id: CourierId,
        provided: Option<&str>,
        trace_parent: Option<String>,
        decide: D,
    ) -> Result<ShipmentUpdate, StoreError>
    where
        D: Fn(&mut Shipment, DateTime<Utc>) -> Result<bool, Refusal> + Send + Sync + 'static,
    {
        let (code, decide): (String, Arc<Decide>) = (code.to_owned(), Arc::new(decide));
        let actor = Actor::Courier(courier_id);
        let check = CodeCheck::Deliver(provided.map(str::to_owned));
        self.write(move |tx| {
            let (check, trace) = (check.clone(), trace_parent.clone());
            Box::pin(update(
                tx,
                code.clone(),
                actor,
                check,
                decide.clone(),
                trace,
            ))
        })
        .await
    }

    /// Stores a new confirmation code digest for the merchant's shipment,
    /// replacing any earlier one; `check` decides whether the state allows it.
    pub(crate) async fn set_confirmation_code(
        &self,
        code: &str,
        merchant_id: MerchantId,
        code_digest: &str,
        expires_at: DateTime<Utc>,
        check: impl FnOnce(&ShipmentRecord) -> Result<(), Refusal>,
    ) -> Result<ShipmentUpdate<()>, StoreError> {
        let mut tx = self.begin().await?;
        let Some(record) = fetch_by_code(&mut tx, code).await? else {
            return Ok(ShipmentUpdate::NotFound);
        };
        if !may_see(Actor::Merchant(merchant_id), &record) {
            return Ok(ShipmentUpdate::Refused(Refusal::Forbidden));
        }
        if let Err(refusal) = check(&record) {
            return Ok(ShipmentUpdate::Refused(refusal));
        }
        let sql = "INSERT INTO confirmation_codes (shipment_id, code_digest, expires_at, failed_attempts, created_at) \
                   VALUES ($1, $2, $3, 0, $4) ON CONFLICT (shipment_id) DO UPDATE SET \
                   code_digest = excluded.code_digest, expires_at = excluded.expires_at, \
                   failed_attempts = 0, created_at = excluded.created_at";
        tx.query(sql)
            .bind(record.id)
            .bind(code_digest)
            .bind(expires_at)
            .bind(now())
            .execute()
            .await?;
        tx.commit().await?;
        Ok(ShipmentUpdate::Done(()))
    }
}

/// A create: what its row in `shipments` is made of, less what the
/// `INSERT` gives it (a new code, the status, the version, the times).
#[derive(Debug, Clone)]
pub(crate) struct NewRow {
    merchant_id: i64,
    new: NewShipment,
    total_fee_minor: i64,
    /// The trace of the request asking for it, for its outbox row: taken
    /// in the request's task, since the row is written with a group's.
    trace_parent: Option<String>,
}

/// New shipments are inserted at commit, every one of a group commit in
/// one statement: a statement is a hand-off to SQLite's worker thread and
/// back, or a round trip to PostgreSQL, and a group of 64 creates took 64
/// of them for the rows alone (docs/src/appendix/benchmarks-history.md has
/// the profile).
impl AtCommit for NewRow {
    type Made = Shipment;

    const KIND: Kind = Kind::NewShipments;

    /// Inserts `rows` (at most a group's) in one statement, each with a new
    /// code, and gives back their shipments in the order of `rows`, each
    /// counted and with its outbox row queued. A code already taken fails
    /// the statement (and the group: each write then runs again alone,
    /// with a new code).
    async fn write(tx: &mut Tx, rows: Vec<NewRow>) -> Result<Vec<Shipment>, StoreError> {
        let at = now();
        let codes: Vec<ShipmentCode> = rows.iter().map(|_| code::generate()).collect();
        let mut q = tx.query(&INSERT[rows.len() - 1]);
        for (r, code) in rows.iter().zip(&codes) {
            let new = &r.new;
            q = q
                .bind(code.as_str())
                .bind(r.merchant_id)
                .bind(new.courier_company_id.get())
                .bind(new.description.as_deref())
                .bind(new.weight_kg.map(|w| w.to_string()))
                .bind(new.dimensions.as_deref())
                .bind(serde_json::to_string(&new.items).expect("strings serialize"))
                .bind(new.start_address.as_deref())
                .bind(new.end_address.as_deref())
                .bind(r.total_fee_minor)
                .bind(new.webhook_url.as_ref().map(|u| u.as_str()))
                .bind(at)
                .bind(at)
                .bind(at);
        }
        let records: Vec<ShipmentRecord> = q.fetch_all().await?;
        // `RETURNING` promises no order: match the rows by their codes.
        let mut by_code: HashMap<String, ShipmentRecord> =
            records.into_iter().map(|r| (r.code.clone(), r)).collect();
        let mut made = Vec::with_capacity(rows.len());
        for (code, row) in codes.iter().zip(rows) {
            let record = by_code.remove(code.as_str()).ok_or_else(|| {
                StoreError::Corrupt(format!("shipment {code} was not returned by its insert"))
            })?;
            tx.at_commit(record.count(1));
            let (id, merchant_id) = (record.id, record.merchant_id);
            let shipment = record.into_model()?;
            outbox::enqueue(tx, id, merchant_id, &shipment, row.trace_parent);
            made.push(shipment);
        }
        Ok(made)
    }
}

/// One attempt at a create with an `Idempotency-Key`, written in its turn:
/// read the key, write the shipment, store the answer under the key. A
/// code collision or a key stored meanwhile fails it with a transient
/// error, and the group commit tries again in a new transaction.
async fn create_once(
    tx: &mut Tx,
    row: NewRow,
    key: String,
    digest: String,
) -> Result<Created, StoreError> {
    let merchant_id = row.merchant_id;
    let at = now();
    let sql = "SELECT request_digest, response_body, created_at FROM idempotency_keys \
               WHERE merchant_id = $1 AND idem_key = $2";
    let seen: Option<SeenKey> = tx
        .query(sql)
        .bind(merchant_id)
        .bind(key.as_str())
        .fetch_optional()
        .await?;
    match seen {
        Some(seen) if seen.created_at > at - IDEMPOTENCY_WINDOW => {
            return Ok(if seen.request_digest == digest {
                Created::Replayed(seen.response_body)
            } else {
                Created::KeyReused
            });
        }
        Some(_) => {
            let sql = "DELETE FROM idempotency_keys WHERE merchant_id = $1 AND idem_key = $2";
            let q = tx.query(sql).bind(merchant_id).bind(key.as_str());
            q.execute().await?;
        }
        None => {}
    }
    let shipment = NewRow::write(tx, vec![row])
        .await?
        .pop()
        .ok_or_else(|| StoreError::Corrupt("an insert of one shipment returned none".into()))?;
    let body = serde_json::to_string(&shipment).expect("shipments serialize");
    let sql = "INSERT INTO idempotency_keys \
               (merchant_id, idem_key, request_digest, response_body, created_at) \
               VALUES ($1, $2, $3, $4, $5)";
    // A concurrent request with the same key may win the race (only
    // possible across processes): `IdempotencyKeyTaken`, and the next
    // attempt's read above replays its answer.
    tx.query(sql)
        .bind(merchant_id)
        .bind(key.as_str())
        .bind(digest.as_str())
        .bind(body)
        .bind(at)
        .execute()
        .await?;
    Ok(Created::New(Box::new(shipment)))
}

async fn fetch_by_code(tx: &mut Tx, code: &str) -> Result<Option<ShipmentRecord>, StoreError> {
    Ok(tx.query(BY_CODE).bind(code).fetch_optional().await?)
}

/// An update in `tx`: read, decided, written back with its outbox row and
/// counts, the confirmation code checked first as `check` says;
/// `trace_parent` goes with the outbox row. A write that loses a race with
/// another process is retried from the read (PostgreSQL; on SQLite the
/// transaction holds the only write lock).
async fn update(
    tx: &mut Tx,
    code: String,
    actor: Actor,
    check: CodeCheck,
    decide: Arc<Decide>,
    trace_parent: Option<String>,
) -> Result<ShipmentUpdate, StoreError> {
    // As many re-reads after a lost race (PostgreSQL, with other
    // processes) as the group commit gives a write.
    for _ in 0..super::engine::ATTEMPTS {
        let Some(record) = fetch_by_code(tx, &code).await? else {
            return Ok(ShipmentUpdate::NotFound);
        };
        if !may_see(actor, &record) {
            return Ok(ShipmentUpdate::Refused(Refusal::Forbidden));
        }
        let (id, merchant_id, read_version) = (record.id, record.merchant_id, record.version);
        let was = record.count(-1);
        let mut shipment = record.into_model()?;
        let at = now();
        match decide(&mut shipment, at) {
            Err(refusal) => return Ok(ShipmentUpdate::Refused(refusal)),
            Ok(false) => return Ok(ShipmentUpdate::Unchanged(shipment)),
            Ok(true) => {}
        }
        if let CodeCheck::Deliver(provided) = &check
            && let Some(stored) = confirmation_code(tx, id).await?
            && let Err(refusal) = confirmation::check(&stored, provided.as_deref(), at)
        {
            if refusal.counts {
                // Committed though the delivery is refused.
                count_wrong_code(tx, id).await?;
            }
            let reason = refusal.reason.to_owned();
            return Ok(ShipmentUpdate::Refused(Refusal::ConfirmationCode(reason)));
        }
        shipment.version = read_version + 1;
        shipment.updated_at = at;
        if write_back(tx, &shipment, read_version).await? {
            if was.status != shipment.status.as_str() {
                let now_in = Count {
                    status: shipment.status.as_str().to_owned(),
                    delta: 1,
                    ..was.clone()
                };
                tx.at_commit(was);
                tx.at_commit(now_in);
            }
            if matches!(check, CodeCheck::Deliver(_)) {
                let sql = "DELETE FROM confirmation_codes WHERE shipment_id = $1";
                tx.query(sql).bind(id).execute().await?;
            }
            outbox::enqueue(tx, id, merchant_id, &shipment, trace_parent);
            return Ok(ShipmentUpdate::Done(shipment));
        }
    }
    Err(StoreError::Contended(format!("shipment {code}")))
}

/// Writes back every mutable column if nobody changed the row since it was
/// read; `false` if somebody did (the caller retries).
async fn write_back(tx: &mut Tx, r: &Shipment, read_version: i64) -> Result<bool, StoreError> {
    let sql = "UPDATE shipments SET status = $1, assigned_driver_id = $2, version = $3, \
        rating = $4, failure_reason = $5, assigned_to_courier_at = $6, assigned_to_driver_at = $7, \
        picked_up_at = $8, delivered_at = $9, failed_at = $10, returned_at = $11, \
        cancelled_at = $12, rated_at = $13, updated_at = $14 WHERE id = $15 AND version = $16";
    let done = tx
        .query(sql)
        .bind(r.status.as_str())
        .bind(r.assigned_driver_id.map(DriverId::get))
        .bind(r.version)
        .bind(r.rating.map(i64::from))
        .bind(r.failure_reason.as_deref())
        .bind(r.assigned_to_courier_at)
        .bind(r.assigned_to_driver_at)
        .bind(r.picked_up_at)
        .bind(r.delivered_at)
        .bind(r.failed_at)
        .bind(r.returned_at)
        .bind(r.cancelled_at)
        .bind(r.rated_at)
        .bind(r.updated_at)
        .bind(r.id.get())
        .bind(read_version)
        .execute()
        .await?;
    Ok(done == 1)
}

/// A change to one kept count of shipments: a merchant's, with one courier
/// company, in one status (`shipment_counts_by_courier`), and of those the
/// ones created on one day (`shipment_counts_by_day`).
#[derive(Debug, Clone)]
pub(crate) struct Count {
    merchant_id: i64,
    courier_company_id: i64,
    status: String,
    /// The UTC day of the shipment's creation ([`day_of`]).
    day: i64,
    delta: i64,
}

/// Shards per counter on PostgreSQL: concurrent creates of one merchant
/// update different rows instead of queueing on one.
const COUNT_SHARDS: i32 = 8;

/// Counts are written at commit: one statement per counter however many
/// shipments a group commit holds, and in one order, so two transactions
/// never wait on each other's counters.
impl AtCommit for Count {
    type Made = ();

    const KIND: Kind = Kind::Counts;

    async fn write(tx: &mut Tx, rows: Vec<Count>) -> Result<Vec<()>, StoreError> {
        let n = rows.len();
        let mut sums: BTreeMap<(i64, i64, String), i64> = BTreeMap::new();
        let mut days: BTreeMap<(i64, i64, i64, String), i64> = BTreeMap::new();
        for c in rows {
            *days
                .entry((c.merchant_id, c.day, c.courier_company_id, c.status.clone()))
                .or_default() += c.delta;
            *sums
                .entry((c.merchant_id, c.courier_company_id, c.status))
                .or_default() += c.delta;
        }
        // SQLite has one writer at a time anyway: one row is enough there.
        let sharded = tx.backend() == Backend::Postgres;
        let shard = || {
            if sharded {
                rand::random_range(0..COUNT_SHARDS)
            } else {
                0
            }
        };
        let sql = "INSERT INTO shipment_counts_by_courier \
                   (merchant_id, courier_company_id, status, shard, n) VALUES ($1, $2, $3, $4, $5) \
                   ON CONFLICT (merchant_id, courier_company_id, status, shard) \
                   DO UPDATE SET n = shipment_counts_by_courier.n + excluded.n";
        for ((merchant_id, courier_company_id, status), delta) in sums {
            if delta == 0 {
                continue;
            }
            tx.query(sql)
                .bind(merchant_id)
                .bind(courier_company_id)
                .bind(status.as_str())
                .bind(shard())
                .bind(delta)
                .execute()
                .await?;
        }
        let sql = "INSERT INTO shipment_counts_by_day \
                   (merchant_id, day, courier_company_id, status, shard, n) \
                   VALUES ($1, $2, $3, $4, $5, $6) \
                   ON CONFLICT (merchant_id, day, courier_company_id, status, shard) \
                   DO UPDATE SET n = shipment_counts_by_day.n + excluded.n";
        for ((merchant_id, day, courier_company_id, status), delta) in days {
            if delta == 0 {
                continue;
            }
            tx.query(sql)
                .bind(merchant_id)
                .bind(day)
                .bind(courier_company_id)
                .bind(status.as_str())
                .bind(shard())
                .bind(delta)
                .execute()
                .await?;
        }
        Ok(vec![(); n])
    }
}

/// The shipment's confirmation code, if one was generated; locked on
/// PostgreSQL, so concurrent wrong codes queue here and each counts
/// against the limit (SQLite's IMMEDIATE transaction already holds the only
/// write lock).
async fn confirmation_code(
    tx: &mut Tx,
    shipment_id: i64,
) -> Result<Option<confirmation::StoredCode>, StoreError> {
    let sql = match tx.backend() {
        Backend::Sqlite => CONFIRMATION_CODE,
        Backend::Postgres => CONFIRMATION_CODE_LOCKED,
    };
    let row: Option<CodeRow> = tx.query(sql).bind(shipment_id).fetch_optional().await?;
    Ok(row.map(|r| confirmation::StoredCode {
        digest: r.digest,
        expires_at: r.expires_at,
        failed_attempts: r.failed_attempts,
    }))
}

/// Counts a wrong confirmation code.
async fn count_wrong_code(tx: &mut Tx, shipment_id: i64) -> Result<(), StoreError> {
    let sql = "UPDATE confirmation_codes SET failed_attempts = failed_attempts + 1 \
               WHERE shipment_id = $1";
    tx.query(sql).bind(shipment_id).execute().await?;
    Ok(())
}

/// The UTC day of `t`: days since 1970-01-01, as `shipment_counts_by_day`
/// keeps them. Here rather than in `list`, which reads the counts, since the
/// writes that keep them (above) need it too and `list` already builds on
/// this module.
pub(crate) fn day_of(t: DateTime<Utc>) -> i64 {
    t.timestamp().div_euclid(SECONDS_PER_DAY)
}

/// Seconds in a UTC day (no leap seconds in Unix time).
pub(super) const SECONDS_PER_DAY: i64 = 86_400;
