//! Batched reads by key: concurrent reads of one kind queue to a few tasks
//! ([`Lanes`]), and each task reads everything queued meanwhile in one
//! statement (`SELECT … WHERE key IN (…)`, a [`PaddedIn`](super::PaddedIn)),
//! then answers each read with its own row. Shipments by code are read so
//! (`shipments::ByCode`).
//!
//! Why: on SQLite a statement is a hand-off to the worker thread of a pooled
//! connection and back, and under load those wake-ups (futex, scheduler)
//! cost more than SQLite's own work; on PostgreSQL it is a round trip.
//! A batch pays them once. docs/src/appendix/benchmarks-history.md ("Reads
//! by code in batches, prices from memory, …") has the profile and the
//! figures.
//!
//! A read still sees every write answered before it was asked: a task takes
//! a request off the queue before it starts the statement that serves it.
//!
//! A read alone in its batch runs in its request's span; a batch of
//! several runs in a `batched_read` span that follows from each request's.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;

use tracing::{Instrument as _, Span};

use super::db::Db;
use super::lanes::{self, Lanes, Reply};
use crate::store::error::StoreError;

/// Most reads served by one statement.
pub(crate) const BATCH: usize = 64;

/// Tasks reading at once: on SQLite, each on a pooled connection of its
/// own (WAL lets them read side by side); on PostgreSQL, round trips in
/// flight at once.
const SQLITE_TASKS: usize = 2;
const POSTGRES_TASKS: usize = 4;

/// A kind of row read in batches by a key.
pub(crate) trait ReadMany: Send + Sync + 'static {
    /// What a read asks for (a shipment's code).
    type Key: Clone + Ord + Hash + Send + Sync + 'static;
    /// What it gets, if there is one.
    type Row: Clone + Send + 'static;

    /// The key of `row`.
    fn key(row: &Self::Row) -> &Self::Key;

    /// The rows of `keys` (1 to [`BATCH`], distinct) in one statement, in
    /// any order; keys without a row are left out.
    fn read(
        db: &Db,
        keys: &[Self::Key],
    ) -> impl Future<Output = Result<Vec<Self::Row>, StoreError>> + Send;
}

/// The queue of reads of kind `R` (see the [module](self) documentation).
pub(crate) struct Reads<R: ReadMany> {
    lanes: Lanes<Read<R>>,
}

impl<R: ReadMany> Default for Reads<R> {
    fn default() -> Self {
        Reads {
            lanes: Lanes::default(),
        }
    }
}

impl<R: ReadMany> std::fmt::Debug for Reads<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reads").finish_non_exhaustive()
    }
}

/// One read: the key, where its answer goes, and the span of its request.
struct Read<R: ReadMany> {
    key: R::Key,
    reply: Reply<Option<R::Row>>,
    span: Span,
}

impl<R: ReadMany> Reads<R> {
    /// The row of `key` on `db`, if there is one; read together with the
    /// reads of concurrent requests.
    pub(crate) async fn read(&self, db: &Db, key: R::Key) -> Result<Option<R::Row>, StoreError> {
        let read = |reply| Read {
            key,
            reply,
            span: Span::current(),
        };
        let tasks = [SQLITE_TASKS, POSTGRES_TASKS];
        let serving = || lanes::on(db, tasks, BATCH, serve::<R>);
        self.lanes
            .ask(read, serving, "the tasks of batched reads")
            .await
    }
}

/// Reads `batch` in one statement and answers each read; if the statement
/// fails, each read is tried alone, so each gets its own answer.
async fn serve<R: ReadMany>(db: Db, batch: Vec<Read<R>>) {
    let span = match &batch[..] {
        [one] => one.span.clone(),
        _ => {
            let span = tracing::debug_span!("batched_read", reads = batch.len());
            for read in &batch {
                span.follows_from(&read.span);
            }
            span
        }
    };
    let mut keys: Vec<R::Key> = batch.iter().map(|r| r.key.clone()).collect();
    keys.sort_unstable();
    keys.dedup();
    match read_keys::<R>(&db, &keys).instrument(span).await {
        Ok(found) => {
            for read in batch {
                let row = found.get(&read.key).cloned();
                let _ = read.reply.send(Ok(row));
            }
        }
        Err(_) if batch.len() > 1 => {
            for read in batch {
                let key = std::slice::from_ref(&read.key);
                let alone = read_keys::<R>(&db, key).instrument(read.span).await;
                let _ = read
                    .reply
                    .send(alone.map(|mut found| found.remove(&read.key)));
            }
        }
        Err(e) => {
            if let Some(read) = batch.into_iter().next() {
                let _ = read.reply.send(Err(e));
            }
        }
    }
}

/// The rows of `keys`, by key.
async fn read_keys<R: ReadMany>(
    db: &Db,
    keys: &[R::Key],
) -> Result<HashMap<R::Key, R::Row>, StoreError> {
    let rows = R::read(db, keys).await?;
    Ok(rows.into_iter().map(|r| (R::key(&r).clone(), r)).collect())
}
