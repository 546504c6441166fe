//! The dispatcher's writes at commit: delivery log rows and finished outbox
//! rows wait in their transaction and are written when it commits, each
//! kind in one statement for the whole group.
//!
//! Why: a group commit runs its writes one after another, and each
//! statement is a hand-off to SQLite's worker thread or a PostgreSQL round
//! trip. Under a stream of creates the dispatcher finishes a row for every
//! create, so a group of 32 creates was followed by a group of 32 finishes
//! of one `UPDATE` each, which took half of a group's time on SQLite
//! (docs/src/appendix/benchmarks-history.md, "Finished rows written at commit").

use std::sync::LazyLock;

use super::Logged;
use crate::store::query::{self, PaddedIn, Sql};
use crate::store::{StoreError, Tx, group_commit, now};

/// A row marked delivered at commit, if its worker still holds it.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(super) id: i64,
    pub(super) worker: String,
}

/// Most rows one statement writes; a group commit holds at most this many
/// writes, so one statement of each kind serves a group.
const PER_STATEMENT: usize = group_commit::MAX_GROUP;

/// The `INSERT` of `n` delivery log rows (11 parameters each), for each `n`
/// up to [`PER_STATEMENT`]; a second record for the same row and URL is
/// ignored.
static LOG: LazyLock<Vec<Sql>> = LazyLock::new(|| {
    let head = "INSERT INTO webhook_deliveries (outbox_id, webhook_id, merchant_id, url, \
                shipment_code, version, status_code, error, duration_ms, delivered_at, \
                redelivery_of)";
    let row = |p| {
        let params: Vec<String> = (p + 1..=p + 11).map(|n| format!("${n}")).collect();
        format!("({})", params.join(", "))
    };
    let tail = " ON CONFLICT (outbox_id, url) DO NOTHING";
    query::multi_row(head, PER_STATEMENT, 11, row, tail)
});

/// `UPDATE … done_at` of rows whose ids follow the done time and the worker,
/// for 1, 2, 4, … [`PER_STATEMENT`] ids.
static FINISH: LazyLock<PaddedIn> = LazyLock::new(|| {
    let head = "UPDATE outbox SET done_at = $1 WHERE claimed_by = $2 AND id";
    PaddedIn::new(head, 3, PER_STATEMENT)
});

/// Writes a transaction's delivery log rows, in the order they were
/// logged, [`PER_STATEMENT`] to a statement.
pub(crate) async fn write_logged(tx: &mut Tx, rows: Vec<Logged>) -> Result<(), StoreError> {
    for chunk in rows.chunks(PER_STATEMENT) {
        let mut q = tx.query(&LOG[chunk.len() - 1]);
        for l in chunk {
            q = q
                .bind(l.outbox_id)
                .bind(l.webhook_id)
                .bind(l.merchant_id)
                .bind(l.url.as_str())
                .bind(l.shipment_code.as_str())
                .bind(l.version)
                .bind(l.attempt.status_code.map(i64::from))
                .bind(l.attempt.error.as_deref())
                .bind(l.attempt.duration_ms)
                .bind(l.at)
                .bind(l.redelivery_of);
        }
        q.execute().await?;
    }
    Ok(())
}

/// Marks a transaction's finished rows done, one statement per worker (a
/// process has one) and [`PER_STATEMENT`] rows.
pub(crate) async fn write_finished(tx: &mut Tx, mut rows: Vec<Finished>) -> Result<(), StoreError> {
    let at = now();
    rows.sort_by(|a, b| (&a.worker, a.id).cmp(&(&b.worker, b.id)));
    for same_worker in rows.chunk_by(|a, b| a.worker == b.worker) {
        for chunk in same_worker.chunks(PER_STATEMENT) {
            let ids: Vec<i64> = chunk.iter().map(|f| f.id).collect();
            let worker = chunk[0].worker.as_str();
            let q = FINISH.query(|sql| tx.query(sql).bind(at).bind(worker), &ids)?;
            q.execute().await?;
        }
    }
    Ok(())
}
