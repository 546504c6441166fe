//! A change's outbox row: queued in the change's own transaction, written
//! when it commits with the other rows of its group commit.

use std::sync::LazyLock;

use shipment_sdk::model::Shipment;

use crate::store::engine::{AtCommit, Kind, MAX_GROUP, Sql, multi_row};
use crate::store::{StoreError, Tx, now};

/// Queues the outbox row for a change, written when the change's
/// transaction commits, with the other rows of its group commit
/// ([`Enqueued`]).
///
/// It captures the shipment's own URL and whose shipment signing key signs
/// the delivery to it, so the dispatcher need not read the shipment back.
/// The key is referenced, not copied: a key rotated before the delivery
/// leaves signs it with the new key, as receivers expect. `trace_parent`
/// is the trace of the request that made the change, which the use-case
/// took in the request's task and passed down (a group commit writes the
/// row on another task): the deliveries and listener events of the change
/// continue it.
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

    const KIND: Kind = Kind::Outbox;

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
