//! A write transaction, and the rows it writes when it commits
//! ([`AtCommit`]).

use std::any::{Any, TypeId};
use std::future::Future;

use futures_util::future::BoxFuture;
use sqlx::{Postgres, Sqlite, Transaction};

use super::backend::Backend;
use crate::store::error::StoreError;

/// An open write transaction.
///
/// Statements run on it with `Tx::query`; rows of an `AtCommit` kind
/// queued with `Tx::at_commit` wait for [`Tx::commit`], which writes
/// each kind's in one call, however many writes of a group commit queued
/// them.
pub struct Tx {
    pub(super) conn: TxConn,
    /// Rows waiting for the commit, one queue per kind (a handful: found
    /// by a linear search).
    at_commit: Vec<Box<dyn Waiting>>,
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
/// The row type itself names the kind: `tx.at_commit(row)` queues it.
pub(crate) trait AtCommit: Sized + Send + 'static {
    /// What writing one row gives back, for a write that waits for it
    /// ([`Store::write_at_commit`](crate::store::Store::write_at_commit));
    /// `()` for rows nobody waits for.
    type Made: Send + 'static;

    /// When this kind is written among the others of one commit, lowest
    /// first. A kind whose writing queues rows of another (a new shipment
    /// queues its outbox row and its count) ranks below that kind, so each
    /// kind is written once per commit. Today: new shipments 0
    /// (`shipments::NewRow`), outbox rows 1 (`outbox::enqueue::Enqueued`),
    /// finished outbox rows 2, which queue their delivery log rows 3
    /// (`outbox::finished`), counts 4 (`shipments::Count`).
    const RANK: u8;

    /// Writes `rows`, in the order they were queued, and gives back one
    /// [`AtCommit::Made`] per row, in the same order. It may queue rows of
    /// kinds of a higher rank on `tx`.
    fn write(
        tx: &mut Tx,
        rows: Vec<Self>,
    ) -> impl Future<Output = Result<Vec<Self::Made>, StoreError>> + Send;
}

/// The rows of one kind queued in a transaction, and once written what
/// each made.
struct Queue<R: AtCommit> {
    rows: Vec<R>,
    /// Rows queued so far, written or not: the place of the next.
    queued: usize,
    /// What the rows written so far made, by place; taken by their writes.
    made: Vec<Option<R::Made>>,
}

/// A [`Queue`] of some kind.
trait Waiting: Any + Send {
    fn kind(&self) -> TypeId;
    fn rank(&self) -> u8;
    fn has_rows(&self) -> bool;
    /// Writes the queue's rows in the transaction that holds it.
    fn writer(&self) -> WriteQueued;
}

type WriteQueued = for<'a> fn(&'a mut Tx) -> BoxFuture<'a, Result<(), StoreError>>;

impl<R: AtCommit> Waiting for Queue<R> {
    fn kind(&self) -> TypeId {
        TypeId::of::<R>()
    }

    fn rank(&self) -> u8 {
        R::RANK
    }

    fn has_rows(&self) -> bool {
        !self.rows.is_empty()
    }

    fn writer(&self) -> WriteQueued {
        write_queued::<R>
    }
}

/// Writes the rows of kind `R` queued in `tx`, keeping what they made.
fn write_queued<R: AtCommit>(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(async move {
        let rows = std::mem::take(&mut queue::<R>(&mut tx.at_commit).rows);
        let made = R::write(tx, rows).await?;
        queue::<R>(&mut tx.at_commit)
            .made
            .extend(made.into_iter().map(Some));
        Ok(())
    })
}

/// The queue of kind `R` among `queues`, made if there is none.
fn queue<R: AtCommit>(queues: &mut Vec<Box<dyn Waiting>>) -> &mut Queue<R> {
    let at = match queues.iter().position(|q| q.kind() == TypeId::of::<R>()) {
        Some(at) => at,
        None => {
            queues.push(Box::new(Queue::<R> {
                rows: Vec::new(),
                queued: 0,
                made: Vec::new(),
            }));
            queues.len() - 1
        }
    };
    let any: &mut dyn Any = &mut *queues[at];
    any.downcast_mut().expect("a queue is found by its kind")
}

/// What the rows written at a commit made, for the writes that wait for
/// them ([`Tx::commit_made`]).
pub(in crate::store) struct Made(Vec<Box<dyn Waiting>>);

impl Made {
    /// What the row of kind `R` queued at `place` made, once.
    pub(super) fn take<R: AtCommit>(&mut self, place: usize) -> Option<R::Made> {
        queue::<R>(&mut self.0).made.get_mut(place)?.take()
    }
}

impl Tx {
    pub(super) fn new(conn: TxConn) -> Tx {
        Tx {
            conn,
            at_commit: Vec::new(),
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
        let queue = queue::<R>(&mut self.at_commit);
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
        loop {
            let next = (self.at_commit.iter())
                .filter(|q| q.has_rows())
                .min_by_key(|q| q.rank())
                .map(|q| q.writer());
            let Some(write) = next else { break };
            write(&mut self).await?;
        }
        match self.conn {
            TxConn::Sqlite(t) => t.commit().await?,
            TxConn::Postgres(t) => t.commit().await?,
        }
        Ok(Made(self.at_commit))
    }
}
