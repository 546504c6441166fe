//! Group commit: the writes of concurrent requests queue to one task, which
//! runs them one after another in one transaction and commits them
//! together, then answers each request with its own result.
//!
//! A write is a closure on the open transaction, run through
//! [`Store::write`], or a row written at commit whose result the request
//! waits for ([`Store::write_at_commit`]). It must be repeatable: when one
//! write of a group fails (a unique key taken, a database error), the
//! group is rolled back and each of its writes runs again in a transaction
//! of its own, so every request gets its own answer and no request's
//! failure undoes another's write. A write that fails with a passing
//! conflict ([`StoreError::is_transient`]: a new shipment's code taken, an
//! idempotency key stored meanwhile by another process, a PostgreSQL
//! deadlock) is tried again, up to [`ATTEMPTS`] times.
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
//!
//! Each write runs in the span of the request that asked for it, so the
//! request's trace shows its statements; what the group does together
//! (`BEGIN`, the rows written at commit, `COMMIT`) runs in the request's
//! span too when the group is that one write, and else in a `group_commit`
//! span that follows from each request's.

use futures_util::future::BoxFuture;
use tracing::{Instrument as _, Span};

use super::db::Db;
use super::lanes::{self, Lanes, Reply};
use super::tx::{AtCommit, Made, Tx};
use crate::store::error::StoreError;

/// Most writes committed together; bounds how long the first of a group
/// waits for the last, and how many rows of one kind a commit writes
/// (see [`AtCommit`]).
pub(crate) const MAX_GROUP: usize = 64;

/// Groups committed at once on PostgreSQL, each on a connection of its
/// own: a PostgreSQL statement is a round trip to another process, and one
/// committer alone leaves the database idle between them. (SQLite has one:
/// it lets one writer in at a time anyway.)
pub(crate) const POSTGRES_COMMITTERS: usize = 4;

/// Attempts of a write that meets passing conflicts.
pub(crate) const ATTEMPTS: usize = 8;

/// The queue to the committer tasks (see [`Lanes`]), which hold the
/// [`Db`], not the store's handle.
#[derive(Default)]
pub(in crate::store) struct GroupCommit(Lanes<Box<dyn Queued>>);

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GroupCommit")
    }
}

/// A queued write, its kind erased.
pub(in crate::store) trait Queued: Send {
    /// The span of the request that asked for the write.
    fn span(&self) -> &Span;
    /// Runs the write in `tx`, keeping what it needs for
    /// [`Queued::answer`].
    fn run<'a>(&'a mut self, tx: &'a mut Tx) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Answers the request once its transaction committed (with what the
    /// rows written at the commit made), or with why it did not.
    fn answer(self: Box<Self>, committed: Result<&mut Made, StoreError>);
}

/// A write of [`Store::write`]: a closure and its result.
struct Job<F, T> {
    job: F,
    output: Option<T>,
    reply: Reply<T>,
    span: Span,
}

impl<F, T> Queued for Job<F, T>
where
    F: for<'a> FnMut(&'a mut Tx) -> BoxFuture<'a, Result<T, StoreError>> + Send,
    T: Send,
{
    fn span(&self) -> &Span {
        &self.span
    }

    fn run<'a>(&'a mut self, tx: &'a mut Tx) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let output = (self.job)(tx).instrument(self.span.clone()).await?;
            self.output = Some(output);
            Ok(())
        })
    }

    fn answer(self: Box<Self>, committed: Result<&mut Made, StoreError>) {
        let Job { output, reply, .. } = *self;
        let result = committed.and_then(|_| {
            output.ok_or_else(|| StoreError::Corrupt("a committed write left no result".into()))
        });
        // The request may have gone (its client hung up): its write stays.
        let _ = reply.send(result);
    }
}

/// A write of [`Store::write_at_commit`]: a row, its place among the rows
/// of its kind in the transaction, and what writing it made.
struct Row<R: AtCommit> {
    row: R,
    place: usize,
    reply: Reply<R::Made>,
    span: Span,
}

impl<R: AtCommit + Clone> Queued for Row<R> {
    fn span(&self) -> &Span {
        &self.span
    }

    fn run<'a>(&'a mut self, tx: &'a mut Tx) -> BoxFuture<'a, Result<(), StoreError>> {
        self.place = tx.queue_at_commit(self.row.clone());
        Box::pin(std::future::ready(Ok(())))
    }

    fn answer(self: Box<Self>, committed: Result<&mut Made, StoreError>) {
        let result = committed.and_then(|made| {
            made.take::<R>(self.place)
                .ok_or_else(|| StoreError::Corrupt("a row written at commit made nothing".into()))
        });
        let _ = self.reply.send(result);
    }
}

impl GroupCommit {
    /// Runs `job` in the next group commit's transaction on `db`, and
    /// returns its result once that is committed.
    ///
    /// `job` may run more than once (see the [module](self)
    /// documentation), each time in a transaction that it must leave open;
    /// it must not use the store itself, only the transaction.
    pub(crate) async fn write<F, T>(&self, db: &Db, job: F) -> Result<T, StoreError>
    where
        F: for<'a> FnMut(&'a mut Tx) -> BoxFuture<'a, Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let queued = |reply| -> Box<dyn Queued> {
            Box::new(Job {
                job,
                output: None,
                reply,
                span: Span::current(),
            })
        };
        self.queue_write(db, queued).await
    }

    /// Queues `row` at the commit of the next group commit, with the rows
    /// of its kind of the group's other writes (one statement for all of
    /// them, [`AtCommit`]), and returns what writing it made once that is
    /// committed.
    pub(crate) async fn write_at_commit<R: AtCommit + Clone>(
        &self,
        db: &Db,
        row: R,
    ) -> Result<R::Made, StoreError> {
        let queued = |reply| -> Box<dyn Queued> {
            Box::new(Row {
                row,
                place: 0,
                reply,
                span: Span::current(),
            })
        };
        self.queue_write(db, queued).await
    }

    async fn queue_write<T>(
        &self,
        db: &Db,
        queued: impl FnOnce(Reply<T>) -> Box<dyn Queued>,
    ) -> Result<T, StoreError> {
        let tasks = [1, POSTGRES_COMMITTERS];
        let serving = || lanes::on(db, tasks, MAX_GROUP, commit);
        self.0.ask(queued, serving, "the group-commit tasks").await
    }
}

/// Commits `group` in one transaction, or else each of its writes alone.
async fn commit(db: Db, mut group: Vec<Box<dyn Queued>>) {
    if group.len() > 1 {
        let span = tracing::debug_span!("group_commit", writes = group.len());
        for queued in &group {
            span.follows_from(queued.span());
        }
        let together = async {
            let mut tx = db.begin().await?;
            for queued in &mut group {
                queued.run(&mut tx).await?;
            }
            tx.commit_made().await
        };
        if let Ok(mut made) = together.instrument(span).await {
            for queued in group {
                queued.answer(Ok(&mut made));
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

/// Commits one write in a transaction of its own, in its request's span,
/// trying again after a passing conflict.
async fn alone(db: &Db, mut queued: Box<dyn Queued>) {
    let span = queued.span().clone();
    let mut result = Err(StoreError::Contended(String::new()));
    for _ in 0..ATTEMPTS {
        result = async {
            let mut tx = db.begin().await?;
            queued.run(&mut tx).await?;
            tx.commit_made().await
        }
        .instrument(span.clone())
        .await;
        match &result {
            Err(e) if e.is_transient() => continue,
            _ => break,
        }
    }
    match result {
        Ok(mut made) => queued.answer(Ok(&mut made)),
        Err(e) if e.is_transient() => queued.answer(Err(StoreError::Contended(e.to_string()))),
        Err(e) => queued.answer(Err(e)),
    }
}
