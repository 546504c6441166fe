//! A write transaction, and the rows it writes when it commits
//! ([`AtCommit`], in the order of [`Kind`]).

use std::any::Any;
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
    /// Rows waiting for the commit: the queue of each [`Kind`], at its
    /// place in the order.
    at_commit: Queues,
}

/// One queue per [`Kind`], indexed by it.
type Queues = [Option<Box<dyn Waiting>>; Kind::ALL.len()];

/// The kinds of rows written at commit, in the order a commit writes them:
/// the one place that says it. A kind whose writing queues rows of another
/// comes before that kind, so one pass writes each kind once, in one call.
///
/// The row types live with their statements in the store's resource files,
/// which use the engine; the engine names only their kinds, so it never
/// depends on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// New shipments (`shipments::NewRow`); writing them queues their
    /// outbox rows and counts.
    NewShipments,
    /// Outbox rows of new shipments and of updates
    /// (`outbox::enqueue::Enqueued`), in the order they were queued.
    Outbox,
    /// The dispatcher's finished outbox rows (`outbox::finished`); writing
    /// them queues their delivery log rows.
    Finished,
    /// Delivery log rows (`outbox::finished`).
    DeliveryLog,
    /// Changes to the kept counts (`shipments::Count`), of creates and
    /// updates: last, so all of a transaction's are summed into one
    /// statement per counter.
    Counts,
}

impl Kind {
    /// Every kind, in the order of a commit.
    const ALL: [Kind; 5] = [
        Kind::NewShipments,
        Kind::Outbox,
        Kind::Finished,
        Kind::DeliveryLog,
        Kind::Counts,
    ];
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
/// the queue of its [`AtCommit::KIND`].
pub(crate) trait AtCommit: Sized + Send + 'static {
    /// What writing one row gives back, for a write that waits for it
    /// ([`Store::write_at_commit`](crate::store::Store::write_at_commit));
    /// `()` for rows nobody waits for.
    type Made: Send + 'static;

    /// Which kind this is, and so when it is written among the others of
    /// one commit (see [`Kind`]). Each row type has a kind of its own.
    const KIND: Kind;

    /// Writes `rows` (never none), in the order they were queued, and
    /// gives back one [`AtCommit::Made`] per row, in the same order. It may
    /// queue rows of the kinds that [`Kind`] puts after its own on `tx`.
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
    fn has_rows(&self) -> bool;
    /// Writes the queue's rows in the transaction that holds it.
    fn writer(&self) -> WriteQueued;
}

type WriteQueued = for<'a> fn(&'a mut Tx) -> BoxFuture<'a, Result<(), StoreError>>;

impl<R: AtCommit> Waiting for Queue<R> {
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

/// The queue of `R`'s kind among `queues`, made if there is none.
fn queue<R: AtCommit>(queues: &mut Queues) -> &mut Queue<R> {
    let slot = queues[R::KIND as usize].get_or_insert_with(|| {
        Box::new(Queue::<R> {
            rows: Vec::new(),
            queued: 0,
            made: Vec::new(),
        })
    });
    let any: &mut dyn Any = &mut **slot;
    any.downcast_mut()
        .expect("each kind has one row type (AtCommit::KIND)")
}

/// What the rows written at a commit made, for the writes that wait for
/// them ([`Tx::commit_made`]).
pub(in crate::store) struct Made(Queues);

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
            at_commit: Default::default(),
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
        for kind in Kind::ALL {
            let write = match &self.at_commit[kind as usize] {
                Some(queue) if queue.has_rows() => queue.writer(),
                _ => continue,
            };
            write(&mut self).await?;
        }
        debug_assert!(
            self.at_commit.iter().flatten().all(|q| !q.has_rows()),
            "a kind queued rows of a kind written before it (see Kind)"
        );
        match self.conn {
            TxConn::Sqlite(t) => t.commit().await?,
            TxConn::Postgres(t) => t.commit().await?,
        }
        Ok(Made(self.at_commit))
    }
}
