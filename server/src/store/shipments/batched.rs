//! The `INSERT` of new shipments, for one create or a group's: creates
//! without an `Idempotency-Key` are written when their transaction commits,
//! every one of a group commit in one `INSERT … RETURNING *`.
//!
//! Why: a statement is a hand-off to SQLite's worker thread and back, or a
//! round trip to PostgreSQL, and the group's transaction runs its writes
//! one after another; a group of 64 creates took 64 of them for the rows
//! alone (docs/src/appendix/benchmarks-history.md has the profile). A create with an
//! `Idempotency-Key` is written in its turn, as a group of one: it reads
//! the key first and stores the answer with it.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, OnceLock};

use chrono::{DateTime, Utc};
use shipment_sdk::model::{Shipment, Status};

use super::{NewRow, ShipmentRecord};
use crate::domain::code;
use crate::store::query::Sql;
use crate::store::{StoreError, Tx, group_commit, now, outbox, query};

/// A shipment row to insert: a create's fields, with its new code and the
/// time of the create.
pub(super) struct NewShipmentRow {
    code: String,
    merchant_id: i64,
    courier_company_id: i64,
    description: Option<String>,
    weight_kg: Option<String>,
    dimensions: Option<String>,
    items: String,
    start_address: Option<String>,
    end_address: Option<String>,
    total_fee_minor: i64,
    webhook_url: Option<String>,
    /// Creation, assignment to the courier and last change alike.
    pub(super) at: DateTime<Utc>,
}

impl NewShipmentRow {
    /// The row of `row`, with a new code, made now.
    pub(super) fn new(row: &NewRow) -> NewShipmentRow {
        let new = &row.new;
        NewShipmentRow {
            code: code::generate().as_str().to_owned(),
            merchant_id: row.merchant_id,
            courier_company_id: new.courier_company_id,
            description: new.description.clone(),
            weight_kg: new.weight_kg.map(|w| w.to_string()),
            dimensions: new.dimensions.clone(),
            items: row.items.clone(),
            start_address: new.start_address.clone(),
            end_address: new.end_address.clone(),
            total_fee_minor: row.total_fee_minor,
            webhook_url: new.webhook_url.clone(),
            at: now(),
        }
    }
}

/// A create waiting for its transaction's commit, and where the shipment
/// it made goes.
pub(crate) struct Deferred {
    row: NewShipmentRow,
    made: Arc<OnceLock<Shipment>>,
}

/// Most rows one statement writes (14 parameters each); a group commit
/// holds at most this many writes.
const PER_INSERT: usize = group_commit::MAX_GROUP;

/// The `INSERT` of `n` shipments, for each `n` up to [`PER_INSERT`].
static INSERT: LazyLock<Vec<Sql>> = LazyLock::new(|| {
    let head = "INSERT INTO shipments (code, merchant_id, courier_company_id, status, \
                description, weight_kg, dimensions, items, start_address, end_address, \
                total_fee_minor, webhook_url, version, created_at, assigned_to_courier_at, \
                updated_at)";
    let status = Status::AssignedToCourier.as_str();
    // The time is bound three times, once for each timestamp: each parameter
    // once, in order, is what lets SQLite take anonymous ones (`Sql`).
    let row = |p| {
        let [a, b, c, d, e, f, g, h, i, j, k, t1, t2, t3] = std::array::from_fn(|n| p + n + 1);
        format!(
            "(${a}, ${b}, ${c}, '{status}', ${d}, ${e}, ${f}, ${g}, ${h}, ${i}, ${j}, ${k}, \
             1, ${t1}, ${t2}, ${t3})"
        )
    };
    query::multi_row(head, PER_INSERT, 14, row, " RETURNING *")
});

/// Inserts `rows` (at most [`PER_INSERT`]) in one statement and returns
/// their shipments in the order of `rows`, each counted and with its
/// outbox row enqueued. A code already taken fails the statement.
pub(super) async fn insert(
    tx: &mut Tx,
    rows: &[&NewShipmentRow],
) -> Result<Vec<Shipment>, StoreError> {
    let mut q = tx.query(&INSERT[rows.len() - 1]);
    for r in rows {
        q = q
            .bind(r.code.as_str())
            .bind(r.merchant_id)
            .bind(r.courier_company_id)
            .bind(r.description.as_deref())
            .bind(r.weight_kg.as_deref())
            .bind(r.dimensions.as_deref())
            .bind(r.items.as_str())
            .bind(r.start_address.as_deref())
            .bind(r.end_address.as_deref())
            .bind(r.total_fee_minor)
            .bind(r.webhook_url.as_deref())
            .bind(r.at)
            .bind(r.at)
            .bind(r.at);
    }
    let records: Vec<ShipmentRecord> = q.fetch_all().await?;
    // `RETURNING` promises no order: match the rows by their codes.
    let mut by_code: HashMap<String, ShipmentRecord> =
        records.into_iter().map(|r| (r.code.clone(), r)).collect();
    let mut made = Vec::with_capacity(rows.len());
    for r in rows {
        let record = by_code.remove(&r.code).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "shipment {} was not returned by its insert",
                r.code
            ))
        })?;
        let (id, merchant_id) = (record.id, record.merchant_id);
        tx.count(record.counter(), 1);
        let shipment = record.into_model()?;
        outbox::enqueue(tx, id, merchant_id, &shipment);
        made.push(shipment);
    }
    Ok(made)
}

/// Queues the create of `row` in `tx`, with a new code; the shipment is in
/// the returned cell once `tx` has committed.
pub(super) fn defer(tx: &mut Tx, row: &NewRow) -> Arc<OnceLock<Shipment>> {
    let made = Arc::new(OnceLock::new());
    tx.shipments.push(Deferred {
        row: NewShipmentRow::new(row),
        made: made.clone(),
    });
    made
}

/// Writes a transaction's deferred creates ([`Tx::commit`]), [`PER_INSERT`]
/// to a statement. A code already taken fails the transaction: the group
/// commit then runs each write again on its own, with a new code.
pub(crate) async fn write(tx: &mut Tx, creates: Vec<Deferred>) -> Result<(), StoreError> {
    for chunk in creates.chunks(PER_INSERT) {
        let rows: Vec<&NewShipmentRow> = chunk.iter().map(|d| &d.row).collect();
        let made = insert(tx, &rows).await?;
        for (d, shipment) in chunk.iter().zip(made) {
            // Set once: each deferred create has its own cell.
            let _ = d.made.set(shipment);
        }
    }
    Ok(())
}
