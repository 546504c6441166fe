//! Redeliveries: a delivery sent again on request, one or the failures of
//! a time range in bulk, as outbox rows for one webhook only, checked
//! against the redeliveries still waiting and the merchant's budget under
//! the merchant's lock.

use std::ops::RangeInclusive;

use chrono::{DateTime, Utc};
use shipment_sdk::model::{DeliveryId, MerchantId, WebhookId};

use super::budget::{self, RedeliveryBudget};
use crate::domain::ids::EventId;
use crate::store::{Store, StoreError, now};

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

impl Store {
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
    /// caller wakes the dispatcher. `trace_parent` is the trace of the
    /// request, which the redelivery continues.
    pub async fn redeliver(
        &self,
        merchant_id: MerchantId,
        webhook_id: WebhookId,
        delivery_id: DeliveryId,
        budget: RedeliveryBudget,
        trace_parent: Option<&str>,
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
            .bind(trace_parent)
            .scalar()
            .await?;
        tx.commit().await?;
        Ok(Redelivery::Queued(EventId::new(id)))
    }

    /// Queues one redelivery per change whose delivery to webhook
    /// `webhook_id` (of merchant `merchant_id`) failed within `failed`
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
    /// both spending the same room in the budget. `trace_parent` is the
    /// trace of the request, which the redeliveries continue.
    pub async fn redeliver_failures(
        &self,
        merchant_id: MerchantId,
        webhook_id: WebhookId,
        failed: RangeInclusive<DateTime<Utc>>,
        limit: u32,
        budget: RedeliveryBudget,
        trace_parent: Option<&str>,
    ) -> Result<BulkRedelivery, StoreError> {
        let (since, until) = failed.into_inner();
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
                .bind(trace_parent)
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
}
