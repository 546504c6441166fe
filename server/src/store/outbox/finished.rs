//! The dispatcher's writes at commit ([`AtCommit`]): delivery log rows and
//! finished outbox rows wait in their transaction and are written when it
//! commits, each kind in one statement for the whole group.
//!
//! Why: a group commit runs its writes one after another, and each
//! statement is a hand-off to SQLite's worker thread or a PostgreSQL round
//! trip. Under a stream of creates the dispatcher finishes a row for every
//! create, so a group of 32 creates was followed by a group of 32 finishes
//! of one `UPDATE` each, which took half of a group's time on SQLite
//! (docs/src/appendix/benchmarks-history.md, "Finished rows written at commit").

use std::sync::LazyLock;

use crate::store::engine::{AtCommit, Kind, MAX_GROUP, PaddedIn, Sql, multi_row};
use chrono::{DateTime, Utc};

use crate::store::{StoreError, Tx, now};

/// What one attempt produced, for the delivery log.
#[derive(Debug, Clone)]
pub(crate) struct Attempt {
    /// The HTTP status, when an answer came.
    pub status_code: Option<u16>,
    /// Why it failed, when it did (a status of 400 or more, a time-out, a
    /// refused or failed connection).
    pub error: Option<String>,
    /// From sending to the answer (or the failure).
    pub duration_ms: i64,
}

/// One attempt for the delivery log, written when its transaction commits
/// (see its [`AtCommit`] in `finished`).
#[derive(Debug, Clone)]
pub(super) struct Logged {
    pub(super) outbox_id: i64,
    pub(super) webhook_id: Option<i64>,
    pub(super) merchant_id: i64,
    pub(super) url: String,
    pub(super) shipment_code: String,
    pub(super) version: i64,
    pub(super) redelivery_of: Option<i64>,
    pub(super) attempt: Attempt,
    /// When it was logged: the attempt had ended.
    pub(super) at: DateTime<Utc>,
}

/// A row marked delivered at commit, if its worker still holds it, with
/// its attempts not logged yet.
#[derive(Debug, Clone)]
pub(super) struct Finished {
    pub(super) id: i64,
    pub(super) worker: String,
    /// Logged at the same commit.
    pub(super) unlogged: Vec<Logged>,
}

/// The `INSERT` of `n` delivery log rows, for each `n` up to a group
/// commit's writes; a second record for the same row and URL is ignored.
static LOG: LazyLock<Vec<Sql>> = LazyLock::new(|| {
    let head = "INSERT INTO webhook_deliveries (outbox_id, webhook_id, merchant_id, url, \
                shipment_code, version, status_code, error, duration_ms, delivered_at, \
                redelivery_of)";
    let row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    multi_row(
        head,
        MAX_GROUP,
        row,
        " ON CONFLICT (outbox_id, url) DO NOTHING",
    )
});

/// `UPDATE … done_at` of rows whose ids follow the done time and the worker,
/// for 1, 2, 4, … a group commit's writes.
static FINISH: LazyLock<PaddedIn> = LazyLock::new(|| {
    let head = "UPDATE outbox SET done_at = $1 WHERE claimed_by = $2 AND id";
    PaddedIn::new(head, 3, MAX_GROUP)
});

/// Delivery log rows, in the order they were logged, [`MAX_GROUP`] to a
/// statement.
impl AtCommit for Logged {
    type Made = ();

    const KIND: Kind = Kind::DeliveryLog;

    async fn write(tx: &mut Tx, rows: Vec<Logged>) -> Result<Vec<()>, StoreError> {
        for chunk in rows.chunks(MAX_GROUP) {
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
        Ok(vec![(); rows.len()])
    }
}

/// Finished rows marked done, one statement per worker (a process has one)
/// and [`MAX_GROUP`] rows; their attempts are queued as [`Logged`] rows.
impl AtCommit for Finished {
    type Made = ();

    const KIND: Kind = Kind::Finished;

    async fn write(tx: &mut Tx, mut rows: Vec<Finished>) -> Result<Vec<()>, StoreError> {
        let n = rows.len();
        for f in &mut rows {
            for logged in std::mem::take(&mut f.unlogged) {
                tx.at_commit(logged);
            }
        }
        let at = now();
        rows.sort_by(|a, b| (&a.worker, a.id).cmp(&(&b.worker, b.id)));
        for same_worker in rows.chunk_by(|a, b| a.worker == b.worker) {
            for chunk in same_worker.chunks(MAX_GROUP) {
                let ids: Vec<i64> = chunk.iter().map(|f| f.id).collect();
                let worker = chunk[0].worker.as_str();
                let q = FINISH.query(|sql| tx.query(sql).bind(at).bind(worker), &ids)?;
                q.execute().await?;
            }
        }
        Ok(vec![(); n])
    }
}
