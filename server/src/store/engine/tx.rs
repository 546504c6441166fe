//! A write transaction, and the rows it writes when it commits
//! ([`AtCommit`], [`AtCommitRows`]).

use std::future::Future;

use sqlx::{Postgres, Sqlite, Transaction};

use super::backend::Backend;
use crate::store::error::StoreError;
use crate::store::outbox::enqueue::Enqueued;
use crate::store::outbox::finished::{Finished, Logged};
use crate::store::shipments::{Count, NewRow};

/// An open write transaction.
///
/// Statements run on it with `Tx::query`; rows of an `AtCommit` kind
/// queued with `Tx::at_commit` wait for [`Tx::commit`], which writes
/// each kind's in one call, however many writes of a group commit queued
/// them.
pub struct Tx {
    pub(super) conn: TxConn,
    /// Rows waiting for the commit.
    at_commit: AtCommitRows,
}

pub(super) enum TxConn {
    /// Begun `IMMEDIATE`, so concurrent writers queue on the busy timeout
    /// instead of failing with "database is locked" when they upgrade.
    Sqlite(Transaction<'static, Sqlite>),
    /// A PostgreSQL transaction (read committed).
    Postgres(Transaction<'static, Postgres>),
}

/// A kind of row that is written when its transaction commits, all of a
/// transaction's in one call of [`AtCommit::write`]: a group commit's
/// transaction holds the writes of many requests, and one statement for
/// the rows of all of them costs one hand-off to SQLite's worker thread
/// or one PostgreSQL round trip instead of one each.
///
/// The row type itself names the kind: `tx.at_commit(row)` queues it in
/// the kind's own queue of [`AtCommitRows`], whose `write_all` says in
/// which order the kinds are written.
pub(crate) trait AtCommit: Sized + Send + 'static {
    /// What writing one row gives back, for a write that waits for it
    /// ([`Store::write_at_commit`](crate::store::Store::write_at_commit));
    /// `()` for rows nobody waits for.
    type Made: Send + 'static;

    /// This kind's queue among a transaction's.
    fn queue(rows: &mut AtCommitRows) -> &mut Queue<Self>;

    /// Writes `rows` (never none), in the order they were queued, and
    /// gives back one [`AtCommit::Made`] per row, in the same order. It may
    /// queue rows of the kinds that [`AtCommitRows`] writes after it.
    fn write(
        tx: &mut Tx,
        rows: Vec<Self>,
    ) -> impl Future<Output = Result<Vec<Self::Made>, StoreError>> + Send;
}

/// The rows of one kind queued in a transaction, and once written what
/// each made.
pub(crate) struct Queue<R: AtCommit> {
    rows: Vec<R>,
    /// Rows queued so far, written or not: the place of the next.
    queued: usize,
    /// What the rows written so far made, by place; taken by their writes.
    made: Vec<Option<R::Made>>,
}

impl<R: AtCommit> Default for Queue<R> {
    fn default() -> Self {
        Queue {
            rows: Vec::new(),
            queued: 0,
            made: Vec::new(),
        }
    }
}

/// The rows a transaction writes at its commit: one queue per kind, in
/// the order [`AtCommitRows::write_all`] writes them. A kind whose writing
/// queues rows of another comes before it, so each kind is written once
/// per commit, in one call.
#[derive(Default)]
pub(crate) struct AtCommitRows {
    /// New shipments; writing them queues their outbox rows and counts.
    pub(in crate::store) shipments: Queue<NewRow>,
    /// Outbox rows, of new shipments and of changes.
    pub(in crate::store) outbox: Queue<Enqueued>,
    /// The dispatcher's finished outbox rows; writing them queues their
    /// delivery log rows.
    pub(in crate::store) finished: Queue<Finished>,
    /// Delivery log rows.
    pub(in crate::store) delivery_log: Queue<Logged>,
    /// Changes to the kept counts, of creates and changes: last, so every
    /// count of the transaction is summed into one statement per counter.
    pub(in crate::store) counts: Queue<Count>,
}

impl AtCommitRows {
    /// Writes every queued row, kind after kind: the order of a commit.
    async fn write_all(tx: &mut Tx) -> Result<(), StoreError> {
        write_queued::<NewRow>(tx).await?;
        write_queued::<Enqueued>(tx).await?;
        write_queued::<Finished>(tx).await?;
        write_queued::<Logged>(tx).await?;
        write_queued::<Count>(tx).await
    }
}

/// Writes the rows of kind `R` queued in `tx`, if any, keeping what they
/// made.
async fn write_queued<R: AtCommit>(tx: &mut Tx) -> Result<(), StoreError> {
    let rows = std::mem::take(&mut R::queue(&mut tx.at_commit).rows);
    if rows.is_empty() {
        return Ok(());
    }
    let made = R::write(tx, rows).await?;
    R::queue(&mut tx.at_commit)
        .made
        .extend(made.into_iter().map(Some));
    Ok(())
}

/// What the rows written at a commit made, for the writes that wait for
/// them ([`Tx::commit_made`]).
pub(in crate::store) struct Made(AtCommitRows);

impl Made {
    /// What the row of kind `R` queued at `place` made, once.
    pub(super) fn take<R: AtCommit>(&mut self, place: usize) -> Option<R::Made> {
        R::queue(&mut self.0).made.get_mut(place)?.take()
    }
}

impl Tx {
    pub(super) fn new(conn: TxConn) -> Tx {
        Tx {
            conn,
            at_commit: AtCommitRows::default(),
        }
    }

    /// Which engine this is.
    pub fn backend(&self) -> Backend {
        match self.conn {
            TxConn::Sqlite(_) => Backend::Sqlite,
            TxConn::Postgres(_) => Backend::Postgres,
        }
    }

    /// Queues `row`, to be written when this transaction commits, with the
    /// other rows of its kind (see [`AtCommit`]).
    pub(crate) fn at_commit<R: AtCommit>(&mut self, row: R) {
        self.queue_at_commit(row);
    }

    /// [`Tx::at_commit`], giving the row's place among the rows of its kind
    /// (for [`Made::take`]).
    pub(super) fn queue_at_commit<R: AtCommit>(&mut self, row: R) -> usize {
        let queue = R::queue(&mut self.at_commit);
        queue.rows.push(row);
        queue.queued += 1;
        queue.queued - 1
    }

    /// Holds the lock `id` until this transaction ends, so transactions
    /// that take the same lock run one after another even where reading
    /// first and writing after would race (declared fixtures): a PostgreSQL
    /// advisory lock; on SQLite every write transaction is alone already
    /// (begun `IMMEDIATE`).
    pub async fn lock_exclusively(&mut self, id: i64) -> Result<(), StoreError> {
        if let TxConn::Postgres(_) = self.conn {
            self.query("SELECT pg_advisory_xact_lock($1)")
                .bind(id)
                .execute()
                .await?;
        }
        Ok(())
    }

    /// Makes the transaction's writes durable, with the rows queued for
    /// its commit.
    pub async fn commit(self) -> Result<(), StoreError> {
        self.commit_made().await.map(drop)
    }

    /// [`Tx::commit`], keeping what the rows written at the commit made.
    pub(super) async fn commit_made(mut self) -> Result<Made, StoreError> {
        AtCommitRows::write_all(&mut self).await?;
        match self.conn {
            TxConn::Sqlite(t) => t.commit().await?,
            TxConn::Postgres(t) => t.commit().await?,
        }
        Ok(Made(self.at_commit))
    }
}
