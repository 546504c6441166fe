//! Shipments: create (with idempotency), read, list, and changes that are
//! read, decided by `domain` and written back in one transaction.

use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;
use shipment_sdk::model::{
    CourierId, DriverId, MerchantId, Shipment, ShipmentCode, ShipmentId, Status,
};

use super::{Backend, Counter, Store, StoreError, Tx, now, outbox};
use crate::domain::Refusal;
use crate::domain::confirmation;
use crate::domain::fee::from_minor_units;
use crate::domain::validation::NewShipment;

pub(crate) mod batched;
pub(super) mod by_code;
mod list;

pub use list::{PageRow, RowVersion, page_reads_whole_rows};

/// How long an `Idempotency-Key` is remembered.
pub const IDEMPOTENCY_WINDOW: Duration = Duration::hours(24);
/// A shipment's confirmation code, as deliver checks it.
const CONFIRMATION_CODE: &str = "SELECT code_digest AS digest, expires_at, failed_attempts \
                                 FROM confirmation_codes WHERE shipment_id = $1";
/// [`CONFIRMATION_CODE`], with the row locked until the transaction ends.
const CONFIRMATION_CODE_LOCKED: &str = "SELECT code_digest AS digest, expires_at, failed_attempts \
                                        FROM confirmation_codes WHERE shipment_id = $1 FOR UPDATE";
/// One shipment by code.
const BY_CODE: &str = "SELECT * FROM shipments WHERE code = $1";

/// A shipment row, as stored. Changes are decided on its wire form
/// ([`ShipmentRecord::to_model`], by `domain::lifecycle`) and written back
/// by [`Store::change_shipment`].
///
/// One field per column of `shipments`, read by name, so queries read it
/// with `SELECT *` and `RETURNING *`.
#[derive(Debug, Clone, sqlx::FromRow)]
#[allow(missing_docs)]
pub struct ShipmentRecord {
    pub id: i64,
    pub code: String,
    pub merchant_id: i64,
    pub courier_company_id: i64,
    pub status: String,
    pub assigned_driver_id: Option<i64>,
    pub description: Option<String>,
    pub weight_kg: Option<String>,
    pub dimensions: Option<String>,
    pub items: String,
    pub start_address: Option<String>,
    pub end_address: Option<String>,
    pub total_fee_minor: i64,
    pub webhook_url: Option<String>,
    pub version: i64,
    pub rating: Option<i64>,
    pub failure_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub assigned_to_courier_at: Option<DateTime<Utc>>,
    pub assigned_to_driver_at: Option<DateTime<Utc>>,
    pub picked_up_at: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub failed_at: Option<DateTime<Utc>>,
    pub returned_at: Option<DateTime<Utc>>,
    pub cancelled_at: Option<DateTime<Utc>>,
    pub rated_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

impl ShipmentRecord {
    /// The kept count this shipment is one of.
    pub(crate) fn counter(&self) -> Counter {
        Counter {
            merchant_id: self.merchant_id,
            courier_company_id: self.courier_company_id,
            status: self.status.clone(),
        }
    }

    /// The status as the wire model knows it.
    pub fn status(&self) -> Status {
        self.status.parse().unwrap_or_else(|never| match never {})
    }

    /// The wire form.
    pub fn to_model(&self) -> Result<Shipment, StoreError> {
        self.clone().into_model()
    }

    /// The wire form, taking the record's strings instead of copying them.
    pub fn into_model(self) -> Result<Shipment, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("shipment {}: {what}", self.id));
        let weight_kg = self
            .weight_kg
            .as_deref()
            .map(|w| w.parse::<Decimal>().map_err(|_| corrupt("weight_kg")))
            .transpose()?;
        let items = serde_json::from_str(&self.items).map_err(|_| corrupt("items"))?;
        let rating = self
            .rating
            .map(|r| u8::try_from(r).map_err(|_| corrupt("rating")))
            .transpose()?;
        let code = ShipmentCode::parse(&self.code).map_err(|_| corrupt("code"))?;
        let status = self.status();
        let mut s = Shipment::new(
            ShipmentId::new(self.id),
            code,
            MerchantId::new(self.merchant_id),
            CourierId::new(self.courier_company_id),
            from_minor_units(self.total_fee_minor),
            self.created_at,
        );
        s.status = status;
        s.assigned_driver_id = self.assigned_driver_id.map(DriverId::new);
        s.description = self.description;
        s.weight_kg = weight_kg;
        s.dimensions = self.dimensions;
        s.items = items;
        s.start_address = self.start_address;
        s.end_address = self.end_address;
        s.webhook_url = self.webhook_url;
        s.version = self.version;
        s.rating = rating;
        s.failure_reason = self.failure_reason;
        s.assigned_to_courier_at = self.assigned_to_courier_at;
        s.assigned_to_driver_at = self.assigned_to_driver_at;
        s.picked_up_at = self.picked_up_at;
        s.delivered_at = self.delivered_at;
        s.failed_at = self.failed_at;
        s.returned_at = self.returned_at;
        s.cancelled_at = self.cancelled_at;
        s.rated_at = self.rated_at;
        s.updated_at = self.updated_at;
        Ok(s)
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

/// Result of a create.
#[derive(Debug)]
pub enum Created {
    /// A new shipment.
    New(Box<Shipment>),
    /// The same `Idempotency-Key` and body were seen before: the first
    /// response body, verbatim.
    Replayed(String),
    /// The `Idempotency-Key` was used before with another body.
    KeyReused,
}

/// Result of a change to an existing shipment.
#[derive(Debug)]
pub enum Change<T = Shipment> {
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

/// Who is acting on a shipment; a shipment is visible to its merchant and
/// to its courier company.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    /// A merchant, by id.
    Merchant(i64),
    /// A courier company, by id.
    Courier(i64),
}

impl Actor {
    fn may_see(self, record: &ShipmentRecord) -> bool {
        match self {
            Actor::Merchant(id) => record.merchant_id == id,
            Actor::Courier(id) => record.courier_company_id == id,
        }
    }
}

async fn fetch_by_code(tx: &mut Tx, code: &str) -> Result<Option<ShipmentRecord>, StoreError> {
    Ok(tx.query(BY_CODE).bind(code).fetch_optional().await?)
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

/// Shards per counter on PostgreSQL: concurrent creates of one merchant
/// update different rows instead of queueing on one.
const COUNT_SHARDS: i32 = 8;

/// Adds `delta` to a kept count of shipments (what [`Tx::commit`] does
/// with the transaction's [`Tx::count`]s).
pub(super) async fn bump_count(
    tx: &mut Tx,
    counter: &Counter,
    delta: i64,
) -> Result<(), StoreError> {
    // SQLite has one writer at a time anyway: one row is enough there.
    let shard = match tx.backend() {
        Backend::Sqlite => 0,
        Backend::Postgres => rand::random_range(0..COUNT_SHARDS),
    };
    let sql = "INSERT INTO shipment_counts_by_courier \
               (merchant_id, courier_company_id, status, shard, n) VALUES ($1, $2, $3, $4, $5) \
               ON CONFLICT (merchant_id, courier_company_id, status, shard) \
               DO UPDATE SET n = shipment_counts_by_courier.n + excluded.n";
    tx.query(sql)
        .bind(counter.merchant_id)
        .bind(counter.courier_company_id)
        .bind(counter.status.as_str())
        .bind(shard)
        .bind(delta)
        .execute()
        .await?;
    Ok(())
}

/// A create, as the group commit runs it.
struct NewRow {
    merchant_id: i64,
    new: NewShipment,
    items: String,
    total_fee_minor: i64,
    /// The `Idempotency-Key` and the request's digest.
    idempotency: Option<(String, String)>,
}

/// A change, as the group commit runs it.
struct ChangeRow<D> {
    code: String,
    actor: Actor,
    /// `Some(provided code)` when the change needs the confirmation code
    /// checked (deliver).
    confirmation: Option<Option<String>>,
    decide: D,
}

impl Store {
    /// Creates a shipment, honouring an `(Idempotency-Key, request digest)`;
    /// committed with the writes of concurrent requests (`Store::write`).
    pub async fn create_shipment(
        &self,
        merchant_id: i64,
        new: NewShipment,
        total_fee_minor: i64,
        idempotency: Option<(&str, &str)>,
    ) -> Result<Created, StoreError> {
        let row = NewRow {
            merchant_id,
            items: serde_json::to_string(&new.items).expect("strings serialize"),
            new,
            total_fee_minor,
            idempotency: idempotency.map(|(k, d)| (k.to_owned(), d.to_owned())),
        };
        let inserted = self
            .write(row, |tx, row| Box::pin(insert_shipment(tx, row)))
            .await?;
        match inserted {
            Inserted::Now(created) => Ok(created),
            // Committed: the transaction that filled the cell is gone.
            Inserted::AtCommit(made) => Arc::into_inner(made)
                .and_then(OnceLock::into_inner)
                .map(|shipment| Created::New(Box::new(shipment)))
                .ok_or_else(|| StoreError::Corrupt("a committed create left no shipment".into())),
        }
    }

    /// Reads a shipment, lets `decide` change it, and writes it back with
    /// `version` + 1 and `updated_at` = now, with its outbox row, all in one
    /// transaction (a group commit's, `Store::write`).
    ///
    /// `decide` gets the record and the time of the change; it returns
    /// `Ok(true)` if it changed something, `Ok(false)` for "nothing to do".
    /// A write that loses a race is retried from the read.
    pub async fn change_shipment<D>(
        &self,
        code: &str,
        actor: Actor,
        decide: D,
    ) -> Result<Change, StoreError>
    where
        D: Fn(&mut Shipment, DateTime<Utc>) -> Result<bool, Refusal> + Send + Sync + 'static,
    {
        self.change(code, actor, None, decide).await
    }

    /// Delivers a shipment: [`Store::change_shipment`] that first checks
    /// the confirmation code, if one was generated, by
    /// [`confirmation::check`]. A wrong code is counted (and the count
    /// committed) though the delivery is refused; a delivery consumes the
    /// code.
    pub async fn deliver_shipment<D>(
        &self,
        code: &str,
        courier_id: i64,
        provided: Option<&str>,
        decide: D,
    ) -> Result<Change, StoreError>
    where
        D: Fn(&mut Shipment, DateTime<Utc>) -> Result<bool, Refusal> + Send + Sync + 'static,
    {
        let confirmation = Some(provided.map(str::to_owned));
        self.change(code, Actor::Courier(courier_id), confirmation, decide)
            .await
    }

    /// The one change path.
    async fn change<D>(
        &self,
        code: &str,
        actor: Actor,
        confirmation: Option<Option<String>>,
        decide: D,
    ) -> Result<Change, StoreError>
    where
        D: Fn(&mut Shipment, DateTime<Utc>) -> Result<bool, Refusal> + Send + Sync + 'static,
    {
        let row = ChangeRow {
            code: code.to_owned(),
            actor,
            confirmation,
            decide,
        };
        self.write(row, |tx, row| Box::pin(apply_change(tx, row)))
            .await
    }

    /// Stores a new confirmation code digest for the merchant's shipment,
    /// replacing any earlier one; `check` decides whether the state allows it.
    pub async fn set_confirmation_code(
        &self,
        code: &str,
        merchant_id: i64,
        code_digest: &str,
        expires_at: DateTime<Utc>,
        check: impl FnOnce(&ShipmentRecord) -> Result<(), Refusal>,
    ) -> Result<Change<()>, StoreError> {
        let mut tx = self.begin().await?;
        let Some(record) = fetch_by_code(&mut tx, code).await? else {
            return Ok(Change::NotFound);
        };
        if !Actor::Merchant(merchant_id).may_see(&record) {
            return Ok(Change::Refused(Refusal::Forbidden));
        }
        if let Err(refusal) = check(&record) {
            return Ok(Change::Refused(refusal));
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
        Ok(Change::Done(()))
    }
}

/// What a create's write gives back.
enum Inserted {
    /// The answer (a create with an `Idempotency-Key`).
    Now(Created),
    /// The shipment, once the transaction has committed (`batched`).
    AtCommit(Arc<OnceLock<Shipment>>),
}

/// One attempt at a create in `tx`; a code collision or an idempotency key
/// stored meanwhile fails it with a transient error, and the group commit
/// tries again in a new transaction. A create without a key is written at
/// the commit, with the others of its group (`batched`).
async fn insert_shipment(tx: &mut Tx, row: &NewRow) -> Result<Inserted, StoreError> {
    match &row.idempotency {
        Some((key, digest)) => insert_now(tx, row, key, digest).await.map(Inserted::Now),
        None => Ok(Inserted::AtCommit(batched::defer(tx, row))),
    }
}

/// A create with an `Idempotency-Key`, written in its turn: read the key,
/// write the shipment, store the answer under the key.
async fn insert_now(
    tx: &mut Tx,
    row: &NewRow,
    key: &str,
    digest: &str,
) -> Result<Created, StoreError> {
    let merchant_id = row.merchant_id;
    let new_row = batched::NewShipmentRow::new(row);
    let at = new_row.at;
    let sql = "SELECT request_digest, response_body, created_at FROM idempotency_keys \
               WHERE merchant_id = $1 AND idem_key = $2";
    let seen: Option<SeenKey> = tx
        .query(sql)
        .bind(merchant_id)
        .bind(key)
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
            tx.query(sql).bind(merchant_id).bind(key).execute().await?;
        }
        None => {}
    }
    let shipment = batched::insert(tx, &[&new_row])
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
        .bind(key)
        .bind(digest)
        .bind(body)
        .bind(at)
        .execute()
        .await?;
    Ok(Created::New(Box::new(shipment)))
}

/// A change in `tx`: read, decided, written back with its outbox row and
/// counts. A write that loses a race with another process is retried from
/// the read (PostgreSQL; on SQLite the transaction holds the only write
/// lock).
async fn apply_change<D>(tx: &mut Tx, row: &ChangeRow<D>) -> Result<Change, StoreError>
where
    D: Fn(&mut Shipment, DateTime<Utc>) -> Result<bool, Refusal> + Send + Sync,
{
    // As many re-reads after a lost race (PostgreSQL, with other
    // processes) as the group commit gives a write.
    for _ in 0..super::group_commit::ATTEMPTS {
        let Some(record) = fetch_by_code(tx, &row.code).await? else {
            return Ok(Change::NotFound);
        };
        if !row.actor.may_see(&record) {
            return Ok(Change::Refused(Refusal::Forbidden));
        }
        let mut shipment = record.to_model()?;
        let at = now();
        let read_version = record.version;
        match (row.decide)(&mut shipment, at) {
            Err(refusal) => return Ok(Change::Refused(refusal)),
            Ok(false) => return Ok(Change::Unchanged(shipment)),
            Ok(true) => {}
        }
        if let Some(provided) = &row.confirmation
            && let Some(stored) = confirmation_code(tx, record.id).await?
            && let Err(refusal) = confirmation::check(&stored, provided.as_deref(), at)
        {
            if refusal.counts {
                // Committed though the delivery is refused.
                count_wrong_code(tx, record.id).await?;
            }
            let reason = refusal.reason.to_owned();
            return Ok(Change::Refused(Refusal::ConfirmationCode(reason)));
        }
        shipment.version = read_version + 1;
        shipment.updated_at = at;
        if write_back(tx, &shipment, read_version).await? {
            if record.status != shipment.status.as_str() {
                let was = record.counter();
                let now_in = Counter {
                    status: shipment.status.as_str().to_owned(),
                    ..was.clone()
                };
                tx.count(was, -1);
                tx.count(now_in, 1);
            }
            if row.confirmation.is_some() {
                let sql = "DELETE FROM confirmation_codes WHERE shipment_id = $1";
                tx.query(sql).bind(record.id).execute().await?;
            }
            outbox::enqueue(tx, record.id, record.merchant_id, &shipment);
            return Ok(Change::Done(shipment));
        }
    }
    Err(StoreError::Contended(format!("shipment {}", row.code)))
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
