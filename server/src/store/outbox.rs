//! The transactional outbox: a row per shipment change, written in the
//! change's own transaction with what its delivery needs, claimed by a
//! dispatcher under a lease, and marked done once every target has been
//! attempted; and a row per redelivery someone asked for, which copies the
//! change's row and goes to one webhook only.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::LazyLock;

use chrono::{DateTime, Duration, Utc};
use shipment_sdk::model::{DeliveryId, MerchantId, Shipment, WebhookId};

use super::engine::{AtCommit, MAX_GROUP, Sql, multi_row};
use super::listen::ListenerRow;
use super::{Backend, Store, StoreError, Tx, now};
use crate::domain::ids::EventId;

mod budget;
mod finished;

pub use budget::RedeliveryBudget;
pub(crate) use finished::Attempt;

use finished::{Finished, Logged};

/// Queues the outbox row for a change, written when the change's
/// transaction commits, with the other rows of its group commit
/// ([`Enqueued`]).
///
/// It captures the shipment's own URL and whose shipment signing key signs
/// the delivery to it, so the dispatcher need not read the shipment back.
/// The key is referenced, not copied: a key rotated before the delivery
/// leaves signs it with the new key, as receivers expect. `trace_parent`
/// is the trace of the request that made the change
/// (`telemetry::current_traceparent`, taken in its task), which the
/// deliveries and listener events of the change continue.
pub(crate) fn enqueue(
    tx: &mut Tx,
    shipment_id: i64,
    merchant_id: i64,
    shipment: &Shipment,
    trace_parent: Option<String>,
) {
    tx.at_commit(Enqueued {
        shipment_id,
        merchant_id,
        shipment_code: shipment.code.as_str().to_owned(),
        version: shipment.version,
        payload: serde_json::to_string(shipment).expect("shipments serialize"),
        webhook_url: shipment.webhook_url.clone(),
        trace_parent,
    });
}

/// The outbox row of a change, waiting for its transaction's commit.
#[derive(Debug)]
pub(crate) struct Enqueued {
    shipment_id: i64,
    merchant_id: i64,
    shipment_code: String,
    version: i64,
    payload: String,
    webhook_url: Option<String>,
    /// The W3C `traceparent` of the request's trace: the delivery's span
    /// continues that trace.
    trace_parent: Option<String>,
}

/// The `INSERT` of `n` outbox rows, for each `n` up to a group commit's
/// writes.
static INSERT_ENQUEUED: LazyLock<Vec<Sql>> = LazyLock::new(|| {
    let head = "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, payload, \
                webhook_url, signing_key_merchant_id, created_at, trace_parent)";
    multi_row(head, MAX_GROUP, "(?, ?, ?, ?, ?, ?, ?, ?, ?)", "")
});

/// A transaction's outbox rows are written at its commit, in the order
/// they were enqueued (so a shipment's changes keep their order in the
/// outbox), a group's in one statement instead of one each, which on
/// SQLite is one hand-off to its worker thread, and on PostgreSQL one
/// round trip.
impl AtCommit for Enqueued {
    type Made = ();
    /// After the new shipments, which enqueue theirs.
    const RANK: u8 = 1;

    async fn write(tx: &mut Tx, rows: Vec<Enqueued>) -> Result<Vec<()>, StoreError> {
        let at = now();
        for chunk in rows.chunks(MAX_GROUP) {
            let mut q = tx.query(&INSERT_ENQUEUED[chunk.len() - 1]);
            for r in chunk {
                q = q
                    .bind(r.shipment_id)
                    .bind(r.merchant_id)
                    .bind(r.shipment_code.as_str())
                    .bind(r.version)
                    .bind(r.payload.as_str())
                    .bind(r.webhook_url.as_deref())
                    .bind(r.merchant_id)
                    .bind(at)
                    .bind(r.trace_parent.as_deref());
            }
            q.execute().await?;
        }
        Ok(vec![(); rows.len()])
    }
}

/// A claimed change, with what its delivery needs.
#[derive(Debug, Clone, sqlx::FromRow)]
#[allow(missing_docs)]
pub struct OutboxRow {
    pub id: i64,
    pub shipment_id: i64,
    pub merchant_id: i64,
    pub shipment_code: String,
    pub version: i64,
    /// The shipment's JSON at that change: the delivery body, byte for byte.
    pub payload: String,
    /// The shipment's own `webhook_url` at that change, if it had one.
    pub webhook_url: Option<String>,
    /// The sealed shipment signing key that signs the delivery to
    /// `webhook_url`, when the merchant has one.
    pub signing_key_sealed: Option<String>,
    /// Deliveries already logged for this row: more than zero only when a
    /// process died before it marked the row done.
    pub attempts: i64,
    /// A redelivery goes to this webhook only (even if it is disabled now:
    /// someone asked for it); `None` for a change's own row, which goes to
    /// every target.
    pub only_webhook_id: Option<i64>,
    /// The delivery (log id) a redelivery sends again, logged with each
    /// attempt; `None` for a change's own row.
    pub redelivery_of: Option<i64>,
    /// The W3C `traceparent` of the request that made the change (or, for
    /// a redelivery, that asked for it), when it had one or the server
    /// exported its spans then.
    #[sqlx(default)]
    pub trace_parent: Option<String>,
}

impl OutboxRow {
    /// The delivery to the shipment's own `webhook_url`, if it had one.
    fn own_target(&self) -> Option<Target> {
        Some(Target {
            webhook_id: None,
            url: self.webhook_url.clone()?,
            signing_key_sealed: self.signing_key_sealed.clone(),
        })
    }

    /// The change as listeners receive it; `None` for a redelivery, which
    /// is for one webhook only. (Here rather than in `listen`, so that
    /// `listen` need not know the outbox: the arrow runs one way.)
    pub(crate) fn for_listeners(&self) -> Option<ListenerRow> {
        if self.only_webhook_id.is_some() {
            return None;
        }
        Some(ListenerRow {
            id: self.id,
            merchant_id: self.merchant_id,
            shipment_code: self.shipment_code.clone(),
            version: self.version,
            payload: self.payload.clone(),
            trace_parent: self.trace_parent.clone(),
        })
    }
}

/// Where one change goes.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct Target {
    /// The registered webhook, or `None` for the shipment's own `webhook_url`.
    pub webhook_id: Option<i64>,
    /// The URL to POST to.
    pub url: String,
    /// The sealed signing key, or `None` when the merchant has none (only
    /// possible for a shipment's own URL).
    pub signing_key_sealed: Option<String>,
}

/// Age and count of the rows not yet delivered.
#[derive(Debug, Clone, Copy, Default, sqlx::FromRow)]
pub struct Backlog {
    /// Rows not done.
    pub depth: i64,
    /// When the oldest of them was written.
    pub oldest: Option<DateTime<Utc>>,
}

/// A redelivery of the same change to the same webhook that has not been
/// attempted yet: at most one waits at a time.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WaitingRedelivery {
    /// Its outbox row (the dispatcher sends it as `dlv_<id>_w<webhook>`).
    #[sqlx(rename = "id")]
    pub outbox_id: i64,
    /// The change: its shipment's code ...
    pub shipment_code: String,
    /// ... and version.
    pub version: i64,
    /// The delivery it repeats.
    pub redelivery_of: i64,
    /// When it was queued.
    #[sqlx(rename = "created_at")]
    pub queued_at: DateTime<Utc>,
}

/// What asking for one redelivery did ([`Store::redeliver`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redelivery {
    /// Queued, as this outbox row.
    Queued(EventId),
    /// The webhook has no such delivery.
    NoSuchDelivery,
    /// Not queued: a redelivery of that change to that webhook waits.
    Waiting(WaitingRedelivery),
    /// Not queued: the merchant has used its budget for the minute; room
    /// for one more comes after this long.
    OverBudget(std::time::Duration),
}

/// What asking for the redelivery of failures did
/// ([`Store::redeliver_failures`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkRedelivery {
    /// This many queued (perhaps none); `truncated` when more changes were
    /// left, with how long until the budget has room again when the budget
    /// (rather than the limit of one call) is what stopped it.
    Queued {
        /// Redeliveries queued.
        queued: u32,
        /// More matched than were queued.
        truncated: bool,
        /// When the budget cut it: how long until it has room again.
        retry_after: Option<std::time::Duration>,
    },
    /// Nothing queued: changes matched, but the merchant has used its
    /// budget for the minute; room comes after this long.
    OverBudget(std::time::Duration),
}

/// The claim of [`Store::claim_outbox`], with `$lock` after the `LIMIT`
/// (the only part that differs between the engines). A row written before
/// the outbox captured its delivery (its `signing_key_merchant_id` is NULL)
/// gets its URL from the shipment here, in the same statement.
macro_rules! claim_sql {
    ($lock:literal) => {
        concat!(
            "UPDATE outbox SET claimed_by = $1, claimed_until = $2 WHERE id IN (",
            "SELECT o.id FROM outbox o ",
            "WHERE o.done_at IS NULL AND (o.claimed_until IS NULL OR o.claimed_until < $3) ",
            "AND o.id <= (SELECT MIN(e.id) FROM outbox e ",
            "WHERE e.shipment_id = o.shipment_id AND e.done_at IS NULL) ",
            "ORDER BY o.id LIMIT $4",
            $lock,
            ") RETURNING id, shipment_id, merchant_id, shipment_code, version, payload, ",
            "only_webhook_id, redelivery_of, trace_parent, ",
            "CASE WHEN outbox.signing_key_merchant_id IS NULL ",
            "THEN (SELECT s.webhook_url FROM shipments s WHERE s.id = outbox.shipment_id) ",
            "ELSE outbox.webhook_url END AS webhook_url, ",
            "(SELECT k.signing_key_encrypted FROM shipment_signing_keys k WHERE k.merchant_id = ",
            "COALESCE(outbox.signing_key_merchant_id, outbox.merchant_id)) AS signing_key_sealed, ",
            "(SELECT COUNT(*) FROM webhook_deliveries d WHERE d.outbox_id = outbox.id) AS attempts",
        )
    };
}

/// A redelivery of one delivery of the merchant's webhook: the change's
/// outbox row copied (shipment, version, payload byte for byte), for that
/// webhook only, naming the delivery it repeats. `$1` delivery, `$2`
/// webhook, `$3` merchant, `$4` now, `$5` the trace of the request asking
/// for it (a redelivery continues that trace, not the change's). The
/// shipment's own URL is left out
/// (`webhook_url` NULL) and `signing_key_merchant_id` is set, so the claim
/// adds no target of its own.
const REDELIVER: &str = "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, \
                         payload, signing_key_merchant_id, only_webhook_id, redelivery_of, \
                         created_at, trace_parent) \
                         SELECT o.shipment_id, o.merchant_id, o.shipment_code, o.version, \
                         o.payload, o.merchant_id, d.webhook_id, d.id, $4, $5 \
                         FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id \
                         WHERE d.id = $1 AND d.webhook_id = $2 AND d.merchant_id = $3 \
                         RETURNING id";

/// The change of delivery `$1` of webhook `$2` of merchant `$3`: its
/// shipment and version, from the delivery's outbox row.
const DELIVERED_CHANGE: &str = "SELECT o.shipment_id, o.version \
                                FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id \
                                WHERE d.id = $1 AND d.webhook_id = $2 AND d.merchant_id = $3";

/// The redelivery of shipment `$1`'s version `$2` to webhook `$3` still
/// waiting (queued, or being sent), if there is one: a probe of
/// `outbox_pending_by_shipment`.
const WAITING: &str = "SELECT id, shipment_code, version, redelivery_of, created_at FROM outbox \
                       WHERE shipment_id = $1 AND done_at IS NULL AND version = $2 \
                       AND only_webhook_id = $3 ORDER BY id LIMIT 1";

/// The changes whose delivery to webhook `$1` (of merchant `$2`) failed
/// between `$3` and `$4` (inclusive), each with its latest failed attempt
/// in the range (`d`) and that attempt's outbox row (`o`); less those
/// delivered successfully to the webhook after that attempt, and those
/// with a redelivery to it still waiting in the outbox (so a second call
/// does not queue them twice, and a call cut at the limit can be
/// repeated for the rest).
///
/// A change is its shipment and version: every outbox row of one change,
/// its own and each redelivery's, carries both, so grouping the log by
/// them groups a change's attempts without walking `redelivery_of`
/// chains. `first_row` (the change's earliest outbox row failing in the
/// range) orders them oldest first. The failures come from the partial
/// index `webhook_deliveries_failed`; the later-success and waiting
/// checks are probes of `webhook_deliveries_by_shipment` and
/// `outbox_pending_by_shipment`.
macro_rules! failed_changes {
    () => {
        concat!(
            "FROM (SELECT MAX(f.id) AS latest, MIN(f.outbox_id) AS first_row ",
            "FROM webhook_deliveries f WHERE f.webhook_id = $1 AND f.merchant_id = $2 ",
            "AND f.error IS NOT NULL ",
            "AND f.delivered_at >= $3 AND f.delivered_at <= $4 ",
            "GROUP BY f.shipment_code, f.version) failed ",
            "JOIN webhook_deliveries d ON d.id = failed.latest ",
            "JOIN outbox o ON o.id = d.outbox_id ",
            "WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries s WHERE s.merchant_id = $2 ",
            "AND s.shipment_code = d.shipment_code AND s.version = d.version ",
            "AND s.webhook_id = $1 AND s.error IS NULL AND s.id > d.id) ",
            "AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.shipment_id = o.shipment_id ",
            "AND p.done_at IS NULL AND p.only_webhook_id = $1 AND p.version = o.version) ",
        )
    };
}

/// Queues a redelivery of each of [`failed_changes!`], oldest first, at
/// most `$6`, at `$5`, in the trace `$7` of the request asking for them.
/// (Rows are numbered in the `ORDER BY`'s order, so the dispatcher sends a
/// shipment's versions in order.)
const REDELIVER_FAILED: &str = concat!(
    "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, payload, ",
    "signing_key_merchant_id, only_webhook_id, redelivery_of, created_at, trace_parent) ",
    "SELECT o.shipment_id, o.merchant_id, o.shipment_code, o.version, o.payload, ",
    "o.merchant_id, d.webhook_id, d.id, $5, $7 ",
    failed_changes!(),
    "ORDER BY failed.first_row LIMIT $6 RETURNING id"
);

/// Whether any of [`failed_changes!`] is left (after [`REDELIVER_FAILED`],
/// in its transaction: what it queued is waiting, so no longer counts).
const MORE_FAILED: &str = concat!("SELECT EXISTS (SELECT 1 ", failed_changes!(), ")");

/// The advisory lock of one merchant's redeliveries (PostgreSQL; on SQLite
/// every write transaction is alone already): tagged so it meets no other
/// lock of the store, and the merchant's id below. Per merchant, not per
/// webhook, because the budget spans the merchant's webhooks.
const REDELIVERY_LOCK_TAG: i64 = 0x5244_4C56 << 32;

/// SQLite has no row locks: its claim runs in an immediate transaction.
const CLAIM_SQLITE: &str = claim_sql!("");
/// PostgreSQL skips the rows other processes are claiming.
const CLAIM_POSTGRES: &str = claim_sql!(" FOR UPDATE SKIP LOCKED");

impl Store {
    /// Claims up to `limit` rows for `worker` until now + `lease`, and
    /// commits the claim before returning, so no network call happens inside
    /// a transaction. The claim rides in a group commit (`Store::write`)
    /// with the writes of requests; on PostgreSQL it is announced to every
    /// process's listeners when it commits.
    ///
    /// Only the oldest undelivered row of each shipment is claimable, so the
    /// changes of one shipment leave in order even across processes. A row
    /// whose lease ran out (its process died) is claimable again. On
    /// PostgreSQL, `FOR UPDATE SKIP LOCKED` lets several processes claim at
    /// once without waiting on or taking each other's rows; on SQLite the
    /// claim runs in an immediate transaction, so claims are serialized.
    ///
    /// "Oldest of its shipment" is a correlated `MIN` rather than `NOT
    /// EXISTS` on purpose: PostgreSQL turns `NOT EXISTS` into an anti-join
    /// whose plan depends on statistics, and a plan cached while the outbox
    /// was small went quadratic once a burst left 20k rows waiting; the
    /// scalar subquery stays one index probe per candidate row. So are the
    /// signing key and the count of earlier attempts it returns per row.
    ///
    /// The test is written `o.id <= MIN(...)`, which means `=` here (the
    /// row is among the ones `MIN` sees), because PostgreSQL guesses an
    /// equality with a subquery to pass 0.5% of rows and an inequality a
    /// third: with `=`, during a burst whose statistics were still those of
    /// a small outbox, it ran the subquery for every waiting row and sorted
    /// them (70 ms per claim with 12k rows waiting, docs/src/appendix/benchmarks-history.md); with
    /// `<=` it walks `outbox_pending` in id order and stops at the limit.
    pub async fn claim_outbox(
        &self,
        worker: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        let worker = worker.to_owned();
        let mut rows = self
            .write(move |tx| Box::pin(claim(tx, worker.clone(), lease, limit)))
            .await?;
        rows.sort_by_key(|r| r.id);
        Ok(rows)
    }

    /// Every place each claimed row goes, in the order of `rows`: its
    /// merchant's active webhooks, then the shipment's own `webhook_url`
    /// with the shipment signing key; less the URLs a process that died
    /// already attempted for that row, so a re-claim does not send them
    /// twice.
    ///
    /// A redelivery goes to its one webhook only, signed with that
    /// webhook's current key, whether or not the webhook is active (a
    /// person asked for it); to nothing if the webhook was deleted since,
    /// and the row is then simply finished.
    ///
    /// A merchant's webhooks are read once for the whole batch, however
    /// many of its rows the batch holds; attempted URLs only for the rarely
    /// re-claimed rows that have some.
    pub(crate) async fn outbox_targets(
        &self,
        rows: &[OutboxRow],
    ) -> Result<Vec<Vec<Target>>, StoreError> {
        let mut webhooks: HashMap<i64, Vec<Target>> = HashMap::new();
        for row in rows.iter().filter(|r| r.only_webhook_id.is_none()) {
            if let Entry::Vacant(merchant) = webhooks.entry(row.merchant_id) {
                merchant.insert(self.active_webhooks(row.merchant_id).await?);
            }
        }
        let mut targets = Vec::with_capacity(rows.len());
        for row in rows {
            let attempted = if row.attempts > 0 {
                self.attempted_urls(row.id).await?
            } else {
                Vec::new()
            };
            let all: Vec<Target> = match row.only_webhook_id {
                Some(id) => self
                    .webhook_target(row.merchant_id, id)
                    .await?
                    .into_iter()
                    .collect(),
                None => webhooks
                    .get(&row.merchant_id)
                    .into_iter()
                    .flatten()
                    .cloned()
                    .chain(row.own_target())
                    .collect(),
            };
            targets.push(
                all.into_iter()
                    .filter(|t| !attempted.contains(&t.url))
                    .collect(),
            );
        }
        Ok(targets)
    }

    /// One of the merchant's webhooks as a target, active or not.
    async fn webhook_target(
        &self,
        merchant_id: i64,
        webhook_id: i64,
    ) -> Result<Option<Target>, StoreError> {
        let sql = "SELECT id AS webhook_id, url, signing_key_encrypted AS signing_key_sealed \
                   FROM webhooks WHERE merchant_id = $1 AND id = $2";
        Ok(self
            .query(sql)
            .bind(merchant_id)
            .bind(webhook_id)
            .fetch_optional()
            .await?)
    }

    /// The merchant's active webhooks as targets, oldest first.
    async fn active_webhooks(&self, merchant_id: i64) -> Result<Vec<Target>, StoreError> {
        let sql = "SELECT id AS webhook_id, url, signing_key_encrypted AS signing_key_sealed \
                   FROM webhooks WHERE merchant_id = $1 AND active ORDER BY id";
        Ok(self.query(sql).bind(merchant_id).fetch_all().await?)
    }

    /// URLs already attempted for a row.
    async fn attempted_urls(&self, outbox_id: i64) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT url FROM webhook_deliveries WHERE outbox_id = $1";
        Ok(self.query(sql).bind(outbox_id).scalars().await?)
    }

    /// Logs one attempt, with the delivery a redelivery repeats. A second
    /// record for the same row and URL is ignored. Committed with other
    /// writes (`Store::write`). The dispatcher logs this way each attempt
    /// of a row but the last, which rides with [`Store::finish_outbox_logging`].
    pub(crate) async fn record_delivery(
        &self,
        row: &OutboxRow,
        target: &Target,
        attempt: &Attempt,
    ) -> Result<(), StoreError> {
        self.write_at_commit(logged(row, target, attempt)).await
    }

    /// Queues a redelivery of delivery `delivery_id`, which must be one of
    /// webhook `webhook_id`'s (of merchant `merchant_id`): the change's
    /// snapshot, byte for byte, to that webhook alone.
    ///
    /// Any delivery may be sent again, a successful one too (someone asked
    /// for it), but not while a redelivery of the same change to the same
    /// webhook is waiting ([`Redelivery::Waiting`], which names it), nor
    /// beyond the merchant's `budget` ([`Redelivery::OverBudget`]). Checked
    /// and written in one transaction under the merchant's lock, so
    /// requests at once, in one process or several, cannot both pass. The
    /// caller wakes the dispatcher.
    pub async fn redeliver(
        &self,
        merchant_id: MerchantId,
        webhook_id: WebhookId,
        delivery_id: DeliveryId,
        budget: RedeliveryBudget,
    ) -> Result<Redelivery, StoreError> {
        let mut tx = self.begin().await?;
        tx.lock_exclusively(REDELIVERY_LOCK_TAG | merchant_id.get())
            .await?;
        let change: Option<(i64, i64)> = tx
            .query(DELIVERED_CHANGE)
            .bind(delivery_id.get())
            .bind(webhook_id.get())
            .bind(merchant_id.get())
            .fetch_optional()
            .await?;
        let Some((shipment_id, version)) = change else {
            return Ok(Redelivery::NoSuchDelivery);
        };
        let waiting: Option<WaitingRedelivery> = tx
            .query(WAITING)
            .bind(shipment_id)
            .bind(version)
            .bind(webhook_id.get())
            .fetch_optional()
            .await?;
        if let Some(waiting) = waiting {
            return Ok(Redelivery::Waiting(waiting));
        }
        let at = now();
        let used = budget::used(&mut tx, merchant_id.get(), at).await?;
        if used >= budget.get() {
            let wait = budget::retry_after(&mut tx, merchant_id.get(), at, used, budget).await?;
            return Ok(Redelivery::OverBudget(wait));
        }
        let id: i64 = tx
            .query(REDELIVER)
            .bind(delivery_id.get())
            .bind(webhook_id.get())
            .bind(merchant_id.get())
            .bind(at)
            .bind(crate::telemetry::current_traceparent())
            .scalar()
            .await?;
        tx.commit().await?;
        Ok(Redelivery::Queued(EventId::new(id)))
    }

    /// Queues one redelivery per change whose delivery to webhook
    /// `webhook_id` (of merchant `merchant_id`) failed in `[since, until]`
    /// and was not delivered successfully to it afterwards, however many of
    /// its attempts failed, naming the latest failed one; oldest change
    /// first, at most `limit`, and at most what the merchant's `budget`
    /// has left of the minute. Changes with a redelivery to this webhook
    /// still waiting are left out. Says how many were queued, and whether
    /// more were left (so calling again queues the rest), with how long
    /// until the budget has room when it is what stopped the call; or,
    /// when changes matched and the budget has no room at all,
    /// [`BulkRedelivery::OverBudget`].
    ///
    /// The selection is one statement on either engine, and the rows are
    /// written in one transaction; on PostgreSQL an advisory lock per
    /// merchant keeps two calls at once from queuing a change twice or
    /// both spending the same room in the budget.
    pub async fn redeliver_failures(
        &self,
        merchant_id: MerchantId,
        webhook_id: WebhookId,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
        budget: RedeliveryBudget,
    ) -> Result<BulkRedelivery, StoreError> {
        let mut tx = self.begin().await?;
        tx.lock_exclusively(REDELIVERY_LOCK_TAG | merchant_id.get())
            .await?;
        let at = now();
        let used = budget::used(&mut tx, merchant_id.get(), at).await?;
        let room = budget.get().saturating_sub(used);
        let allowed = limit.min(room);
        let queued: Vec<i64> = if allowed == 0 {
            Vec::new()
        } else {
            tx.query(REDELIVER_FAILED)
                .bind(webhook_id.get())
                .bind(merchant_id.get())
                .bind(since)
                .bind(until)
                .bind(at)
                .bind(i64::from(allowed))
                .bind(crate::telemetry::current_traceparent())
                .scalars()
                .await?
        };
        let queued = u32::try_from(queued.len()).unwrap_or(u32::MAX);
        let more = if queued < allowed {
            false
        } else {
            tx.query(MORE_FAILED)
                .bind(webhook_id.get())
                .bind(merchant_id.get())
                .bind(since)
                .bind(until)
                .scalar()
                .await?
        };
        // Cut by the budget (not only by the limit of one call): say when
        // it has room again.
        let retry_after = if more && queued >= room {
            Some(budget::retry_after(&mut tx, merchant_id.get(), at, used + queued, budget).await?)
        } else {
            None
        };
        tx.commit().await?;
        Ok(match retry_after {
            Some(wait) if queued == 0 => BulkRedelivery::OverBudget(wait),
            retry_after => BulkRedelivery::Queued {
                queued,
                truncated: more,
                retry_after,
            },
        })
    }

    /// Marks a row delivered, if `worker` still holds it, and logs the
    /// attempts of `unlogged` in the same write, so a row with one target
    /// costs the dispatcher one write after its claim.
    /// Committed with other writes (`Store::write`).
    ///
    /// A row's other attempts were logged as each ended
    /// ([`Store::record_delivery`]), so a process that dies while a row has
    /// deliveries in flight leaves only those unlogged, and a re-claim sends
    /// only them again (the receiver spots the repeat by its delivery id).
    ///
    /// `unlogged` holds the last attempt (none when the row had no target)
    /// and any whose own record failed (the database was unreachable for a
    /// moment). Writing it again after a
    /// failure is harmless: the row is marked done again, and an attempt
    /// logged already is not logged twice.
    pub(crate) async fn finish_outbox_logging<'a>(
        &self,
        row: &OutboxRow,
        worker: &str,
        unlogged: impl IntoIterator<Item = (&'a Target, &'a Attempt)>,
    ) -> Result<(), StoreError> {
        let finished = Finished {
            id: row.id,
            worker: worker.to_owned(),
            unlogged: unlogged
                .into_iter()
                .map(|(target, attempt)| logged(row, target, attempt))
                .collect(),
        };
        self.write_at_commit(finished).await
    }

    /// Extends `worker`'s claim on row `id` to now + `lease`; returns
    /// whether `worker` still held it (false: its lease ran out and another
    /// process took the row, or the row is done). Committed with other
    /// writes (`Store::write`).
    ///
    /// The dispatcher renews the claim of a row whose delivery outlasts a
    /// third of its lease (a slow receiver, or a wait for its turn at one),
    /// so no other process takes a row that is still being delivered.
    pub(crate) async fn renew_outbox(
        &self,
        id: EventId,
        worker: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let worker = worker.to_owned();
        self.write(move |tx| Box::pin(renew(tx, id.get(), worker.clone(), lease)))
            .await
    }

    /// Lets go of every row `worker` holds but `keep` (the rows its
    /// process is delivering), so that the next claim takes them at once;
    /// returns how many it released.
    ///
    /// For a claim whose answer was lost (the database went away as it
    /// committed): its rows are held by `worker` until their lease runs
    /// out, and with them every later change of their shipments, though
    /// nobody is delivering them. Rows a process holds are few, and this
    /// runs only after a claim failed, so they are read and released one
    /// by one.
    pub(crate) async fn release_outbox(
        &self,
        worker: &str,
        keep: &[EventId],
    ) -> Result<u32, StoreError> {
        let held: Vec<i64> = self
            .query("SELECT id FROM outbox WHERE claimed_by = $1 AND done_at IS NULL")
            .bind(worker)
            .scalars()
            .await?;
        let release = "UPDATE outbox SET claimed_until = NULL \
                       WHERE id = $1 AND claimed_by = $2 AND done_at IS NULL";
        let mut released = 0;
        for id in held
            .into_iter()
            .filter(|&id| !keep.contains(&EventId::new(id)))
        {
            let q = self.query(release).bind(id).bind(worker);
            released += u32::from(q.execute().await? == 1);
        }
        Ok(released)
    }

    /// How many rows wait, and since when (for `/metrics` and tests).
    pub async fn outbox_backlog(&self) -> Result<Backlog, StoreError> {
        let sql = "SELECT COUNT(*) AS depth, MIN(created_at) AS oldest FROM outbox \
                   WHERE done_at IS NULL";
        Ok(self.query(sql).fetch_one().await?)
    }
}

/// See [`Store::claim_outbox`].
async fn claim(
    tx: &mut Tx,
    worker: String,
    lease: Duration,
    limit: u32,
) -> Result<Vec<OutboxRow>, StoreError> {
    let backend = tx.backend();
    let at = now();
    let query = match backend {
        Backend::Sqlite => tx.query(CLAIM_SQLITE),
        // Planned each time: a generic plan cached while the outbox was
        // nearly empty scanned it whole for every candidate row once a
        // burst had filled it (a claim ran for minutes).
        Backend::Postgres => tx.query(CLAIM_POSTGRES).planned_each_time(),
    };
    let rows: Vec<OutboxRow> = query
        .bind(worker.as_str())
        .bind(at + lease)
        .bind(at)
        .bind(i64::from(limit))
        .fetch_all()
        .await?;
    if tx.backend() == Backend::Postgres && !rows.is_empty() {
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        super::listen::announce_claimed(tx, &ids).await?;
    }
    Ok(rows)
}

/// See [`Store::renew_outbox`].
async fn renew(tx: &mut Tx, id: i64, worker: String, lease: Duration) -> Result<bool, StoreError> {
    let sql = "UPDATE outbox SET claimed_until = $1 \
               WHERE id = $2 AND claimed_by = $3 AND done_at IS NULL";
    let q = tx.query(sql).bind(now() + lease).bind(id);
    Ok(q.bind(worker.as_str()).execute().await? == 1)
}

/// `attempt` of delivering `row` to `target`, for the delivery log.
fn logged(row: &OutboxRow, target: &Target, attempt: &Attempt) -> Logged {
    Logged {
        outbox_id: row.id,
        webhook_id: target.webhook_id,
        merchant_id: row.merchant_id,
        url: target.url.clone(),
        shipment_code: row.shipment_code.clone(),
        version: row.version,
        redelivery_of: row.redelivery_of,
        attempt: attempt.clone(),
        at: now(),
    }
}
