//! Creates without an `Idempotency-Key`, written when their transaction
//! commits: every create of a group commit in one `INSERT … RETURNING *`.
//!
//! Why: a statement is a hand-off to SQLite's worker thread and back, or a
//! round trip to PostgreSQL, and the group's transaction runs its writes
//! one after another; a group of 64 creates took 64 of them for the rows
//! alone (BENCHMARKS.md has the profile). A create with an
//! `Idempotency-Key` stays immediate: it reads the key first and stores
//! the answer with it, in its own turn.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, OnceLock};

use chrono::{DateTime, Utc};
use shipment_sdk::model::{Shipment, Status};

use super::{NewRow, ShipmentRecord};
use crate::domain::code;
use crate::store::{StoreError, Tx, group_commit, now, outbox, query};

/// A create waiting for its transaction's commit, and where the shipment
/// it made goes.
pub(crate) struct Deferred {
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
    at: DateTime<Utc>,
    made: Arc<OnceLock<Shipment>>,
}

/// Most rows one statement writes (12 parameters each); a group commit
/// holds at most this many writes.
const PER_INSERT: usize = group_commit::MAX_GROUP;

/// The `INSERT` of `n` shipments, for each `n` up to [`PER_INSERT`].
static INSERT: LazyLock<Vec<String>> = LazyLock::new(|| {
    let head = "INSERT INTO shipments (code, merchant_id, courier_company_id, status, \
                description, weight_kg, dimensions, items, start_address, end_address, \
                total_fee_minor, webhook_url, version, created_at, assigned_to_courier_at, \
                updated_at)";
    let status = Status::AssignedToCourier.as_str();
    // Twelve parameters: the last, the time, is all three timestamps.
    let all = query::multi_row(head, PER_INSERT, 12, |p| {
        let [a, b, c, d, e, f, g, h, i, j, k, at] = std::array::from_fn(|n| p + n + 1);
        format!(
            "(${a}, ${b}, ${c}, '{status}', ${d}, ${e}, ${f}, ${g}, ${h}, ${i}, ${j}, ${k}, \
             1, ${at}, ${at}, ${at})"
        )
    });
    all.into_iter().map(|sql| sql + " RETURNING *").collect()
});

/// Queues the create of `row` in `tx`, with a new code; the shipment is in
/// the returned cell once `tx` has committed.
pub(super) fn defer(tx: &mut Tx, row: &NewRow) -> Arc<OnceLock<Shipment>> {
    let made = Arc::new(OnceLock::new());
    let new = &row.new;
    tx.shipments.push(Deferred {
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
        made: made.clone(),
    });
    made
}

/// Writes a transaction's deferred creates, in as few statements as
/// [`PER_INSERT`] allows, each with its count and outbox row (enqueued in
/// the order of the creates). A code already taken fails the statement,
/// and so the transaction: the group commit then runs each write again on
/// its own, with a new code.
pub(crate) async fn write(tx: &mut Tx, creates: Vec<Deferred>) -> Result<(), StoreError> {
    for chunk in creates.chunks(PER_INSERT) {
        let mut q = tx.query(INSERT[chunk.len() - 1].as_str());
        for d in chunk {
            q = q
                .bind(d.code.as_str())
                .bind(d.merchant_id)
                .bind(d.courier_company_id)
                .bind(d.description.as_deref())
                .bind(d.weight_kg.as_deref())
                .bind(d.dimensions.as_deref())
                .bind(d.items.as_str())
                .bind(d.start_address.as_deref())
                .bind(d.end_address.as_deref())
                .bind(d.total_fee_minor)
                .bind(d.webhook_url.as_deref())
                .bind(d.at);
        }
        let records: Vec<ShipmentRecord> = q.fetch_all().await?;
        // `RETURNING` promises no order: match the rows by their codes.
        let mut by_code: HashMap<String, ShipmentRecord> =
            records.into_iter().map(|r| (r.code.clone(), r)).collect();
        for d in chunk {
            let record = by_code.remove(&d.code).ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "shipment {} was not returned by its insert",
                    d.code
                ))
            })?;
            let shipment = record.to_model()?;
            tx.count(record.counter(), 1);
            outbox::enqueue(tx, record.id, record.merchant_id, &shipment);
            // Set once: each deferred create has its own cell.
            let _ = d.made.set(shipment);
        }
    }
    Ok(())
}
