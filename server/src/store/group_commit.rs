//! Group commit: the writes of concurrent requests queue to one task, which
//! runs them one after another in one transaction and commits them
//! together, then answers each request with its own result.
//!
//! A write is a function of its input and the open transaction, run through
//! [`Store::write`]. It must be repeatable: when one write of a group fails
//! (a unique key taken, a database error), the group is rolled back and
//! each of its writes runs again in a transaction of its own, so every
//! request gets its own answer and no request's failure undoes another's
//! write. A write that fails with a passing conflict ([`StoreError::is_transient`]:
//! a new shipment's code taken, an idempotency key stored meanwhile by
//! another process, a PostgreSQL deadlock) is tried again, up to
//! [`ATTEMPTS`] times.
//!
//! Why: on SQLite every commit writes every page it changed to the WAL,
//! and every write transaction waits its turn for the one write lock; a
//! group shares both. On PostgreSQL a group is one `BEGIN`/`COMMIT` and one
//! flush of the WAL to disk for many requests.
//!
//! Nothing waits on purpose to gather a group: the groups are batches of
//! [`Lanes`], which take everything queued while the previous group ran (at
//! most [`MAX_GROUP`]), so an idle server commits each write at once and a
//! busy one in groups.

use futures_util::future::BoxFuture;

use super::lanes::{self, Lanes, Reply};
use super::{Db, Store, StoreError, Tx};

/// Most writes committed together; bounds how long the first of a group
/// waits for the last.
pub const MAX_GROUP: usize = 64;

/// Groups committed at once on PostgreSQL, each on a connection of its
/// own: a PostgreSQL statement is a round trip to another process, and one
/// committer alone leaves the database idle between them. (SQLite has one:
/// it lets one writer in at a time anyway.)
pub const POSTGRES_COMMITTERS: usize = 4;

/// Attempts of a write that meets passing conflicts.
pub const ATTEMPTS: usize = 8;

/// One write: its input and what it does with it in a transaction.
pub(crate) type Job<S, T> = for<'a> fn(&'a mut Tx, &'a S) -> BoxFuture<'a, Result<T, StoreError>>;

/// The queue to the committer tasks (see [`Lanes`]), which hold the
/// [`Db`], not the [`Store`].
pub(super) type GroupCommit = Lanes<Box<dyn Queued>>;

/// A queued write, with its input's type erased.
pub(super) trait Queued: Send {
    /// Runs the write in `tx`, keeping its result for [`Queued::answer`].
    fn run<'a>(&'a mut self, tx: &'a mut Tx) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Answers the request: the kept result once the write committed, or
    /// why it did not.
    fn answer(self: Box<Self>, committed: Result<(), StoreError>);
}

struct Pending<S, T> {
    input: S,
    job: Job<S, T>,
    output: Option<T>,
    reply: Reply<T>,
}

impl<S: Send + Sync, T: Send> Queued for Pending<S, T> {
    fn run<'a>(&'a mut self, tx: &'a mut Tx) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let output = (self.job)(tx, &self.input).await?;
            self.output = Some(output);
            Ok(())
        })
    }

    fn answer(self: Box<Self>, committed: Result<(), StoreError>) {
        let Pending { output, reply, .. } = *self;
        let result = committed.and_then(|()| {
            output.ok_or_else(|| StoreError::Corrupt("a committed write left no result".into()))
        });
        // The request may have gone (its client hung up): its write stays.
        let _ = reply.send(result);
    }
}

impl Store {
    /// Runs `job` on `input` in the next group commit, and returns its
    /// result once it is committed.
    ///
    /// `job` may run more than once (see the [module](self) documentation),
    /// each time in a transaction that it must leave open; it must not use
    /// the store itself, only the transaction.
    pub(crate) async fn write<S, T>(&self, input: S, job: Job<S, T>) -> Result<T, StoreError>
    where
        S: Send + Sync + 'static,
        T: Send + 'static,
    {
        let queued = |reply| -> Box<dyn Queued> {
            Box::new(Pending {
                input,
                job,
                output: None,
                reply,
            })
        };
        let tasks = [1, POSTGRES_COMMITTERS];
        let serving = || lanes::on(&self.db, tasks, MAX_GROUP, commit);
        (self.group)
            .ask(queued, serving, "the group-commit tasks")
            .await
    }
}

/// Commits `group` in one transaction, or else each of its writes alone.
async fn commit(db: Db, mut group: Vec<Box<dyn Queued>>) {
    if group.len() > 1 {
        let together = async {
            let mut tx = db.begin().await?;
            for queued in &mut group {
                queued.run(&mut tx).await?;
            }
            tx.commit().await
        };
        if together.await.is_ok() {
            for queued in group {
                queued.answer(Ok(()));
            }
            return;
        }
        // The transaction rolled back (dropped): nothing of the group is
        // written, and each write runs again on its own below.
    }
    for queued in group {
        alone(&db, queued).await;
    }
}

/// Commits one write in a transaction of its own, trying again after a
/// passing conflict.
async fn alone(db: &Db, mut queued: Box<dyn Queued>) {
    let mut result = Ok(());
    for _ in 0..ATTEMPTS {
        result = async {
            let mut tx = db.begin().await?;
            queued.run(&mut tx).await?;
            tx.commit().await
        }
        .await;
        match &result {
            Err(e) if e.is_transient() => continue,
            _ => return queued.answer(result),
        }
    }
    let contended = result.map_err(|e| StoreError::Contended(e.to_string()));
    queued.answer(contended);
}
