//! Writing the outbox: a change's row waits in its transaction and is
//! written at commit, with the other rows of its group, in one statement.

use shipment_sdk::model::Shipment;

use crate::store::query::Sql;
use crate::store::{StoreError, Tx, now};

/// The outbox row for a change, written when the change's transaction
/// commits ([`Tx::commit`], with the other rows of its group commit).
///
/// It captures the shipment's own URL and whose shipment signing key signs
/// the delivery to it, so the dispatcher need not read the shipment back.
/// The key is referenced, not copied: a key rotated before the delivery
/// leaves signs it with the new key, as receivers expect.
pub(crate) fn enqueue(tx: &mut Tx, shipment_id: i64, merchant_id: i64, shipment: &Shipment) {
    tx.outbox.push(Enqueued {
        shipment_id,
        merchant_id,
        shipment_code: shipment.code.as_str().to_owned(),
        version: shipment.version,
        payload: serde_json::to_string(shipment).expect("shipments serialize"),
        webhook_url: shipment.webhook_url.clone(),
    });
}

/// An outbox row waiting for its transaction's commit.
#[derive(Debug)]
pub(crate) struct Enqueued {
    shipment_id: i64,
    merchant_id: i64,
    shipment_code: String,
    version: i64,
    payload: String,
    webhook_url: Option<String>,
}

/// Most rows written by one statement of [`write_enqueued`] (8 parameters
/// each); a group commit holds at most this many writes.
const ENQUEUED_PER_INSERT: usize = crate::store::group_commit::MAX_GROUP;

/// The `INSERT` of `n` outbox rows, for each `n` up to
/// [`ENQUEUED_PER_INSERT`].
static INSERT_ENQUEUED: std::sync::LazyLock<Vec<Sql>> = std::sync::LazyLock::new(|| {
    let head = "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, payload, \
                webhook_url, signing_key_merchant_id, created_at)";
    let row = |p| {
        let [a, b, c, d, e, f, g, h] = std::array::from_fn(|i| p + i + 1);
        format!("(${a}, ${b}, ${c}, ${d}, ${e}, ${f}, ${g}, ${h})")
    };
    crate::store::query::multi_row(head, ENQUEUED_PER_INSERT, 8, row, "")
});

/// Writes a transaction's outbox rows, in the order they were enqueued (so
/// a shipment's changes keep their order in the outbox), in as few
/// statements as [`ENQUEUED_PER_INSERT`] allows: a group of creates costs
/// one statement here instead of one each, which on SQLite is one hand-off
/// to its worker thread, and on PostgreSQL one round trip.
pub(crate) async fn write_enqueued(tx: &mut Tx, rows: Vec<Enqueued>) -> Result<(), StoreError> {
    let at = now();
    for chunk in rows.chunks(ENQUEUED_PER_INSERT) {
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
                .bind(at);
        }
        q.execute().await?;
    }
    Ok(())
}
