//! Lanes: requests queue to a few tasks, and each task takes everything
//! queued meanwhile (up to a bound) and serves it together. The group
//! commit ([`group_commit`](super::group_commit)) and the batched reads
//! ([`reads`](super::reads)) are built on it.
//!
//! Nothing waits on purpose to gather a batch: a task takes what is queued
//! while it served the previous one, so an idle server serves each request
//! at once and a busy one in batches.
//!
//! The tasks start with the first request (on the runtime that makes it)
//! and end when the [`Lanes`] is dropped, or with their runtime (the next
//! request starts others). They must not hold the [`Lanes`] themselves,
//! or they would never end.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, oneshot};

use super::backend::Backend;
use super::db::Db;
use crate::store::error::StoreError;

/// Requests waiting for the tasks, at most; a request beyond that waits to
/// queue.
const QUEUE: usize = 1024;

/// The queue to a set of tasks serving `T`s in batches.
pub(in crate::store) struct Lanes<T> {
    queue: Mutex<Option<mpsc::Sender<T>>>,
}

impl<T> std::fmt::Debug for Lanes<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes").finish_non_exhaustive()
    }
}

impl<T> Default for Lanes<T> {
    fn default() -> Lanes<T> {
        Lanes {
            queue: Mutex::new(None),
        }
    }
}

/// How the tasks serve: how many run, how many requests a batch holds at
/// most, and what serves a batch (made once per task).
pub(super) struct Serving<F> {
    pub tasks: usize,
    pub batch: usize,
    pub serve: F,
}

/// The tasks of a store's lanes: `sqlite` or `postgres` of them, by `db`'s
/// engine, each serving batches of at most `batch` with `serve` on its own
/// clone of `db`.
pub(super) fn on<T, S, Fut>(
    db: &Db,
    [sqlite, postgres]: [usize; 2],
    batch: usize,
    serve: S,
) -> Serving<impl FnMut(Vec<T>) -> Fut + Clone + Send + 'static>
where
    S: Fn(Db, Vec<T>) -> Fut + Copy + Send + 'static,
{
    let db = db.clone();
    Serving {
        tasks: match db.backend() {
            Backend::Sqlite => sqlite,
            Backend::Postgres => postgres,
        },
        batch,
        serve: move |taken| serve(db.clone(), taken),
    }
}

/// Where a request's answer goes.
pub(super) type Reply<R> = oneshot::Sender<Result<R, StoreError>>;

impl<T: Send + 'static> Lanes<T> {
    /// Queues the request that `make` builds around its reply channel (see
    /// [`Lanes::send`]), and waits for its answer; `tasks` names the tasks
    /// in the error if they stop without answering.
    pub(super) async fn ask<R, F, Fut>(
        &self,
        make: impl FnOnce(Reply<R>) -> T,
        serving: impl FnOnce() -> Serving<F>,
        tasks: &str,
    ) -> Result<R, StoreError>
    where
        F: FnMut(Vec<T>) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.send(make(reply), serving).await;
        answer.await.map_err(|_| {
            StoreError::Database(sqlx::Error::Protocol(format!(
                "{tasks} stopped before answering"
            )))
        })?
    }

    /// Queues `request`, starting the tasks that `serving` describes if
    /// none are running. A request that cannot be queued (its tasks' runtime
    /// shut down twice in a row) is dropped, which its waiter sees as a
    /// closed reply channel.
    pub(super) async fn send<F, Fut>(&self, mut request: T, serving: impl FnOnce() -> Serving<F>)
    where
        F: FnMut(Vec<T>) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut serving = Some(serving);
        for _ in 0..2 {
            let Some(queue) = self.queue(&mut serving) else {
                return;
            };
            match queue.send(request).await {
                Ok(()) => return,
                Err(mpsc::error::SendError(back)) => {
                    self.forget(&queue);
                    request = back;
                }
            }
        }
    }

    /// The queue to the running tasks, starting them if there are none
    /// and `serving` was not used yet.
    fn queue<F, Fut>(
        &self,
        serving: &mut Option<impl FnOnce() -> Serving<F>>,
    ) -> Option<mpsc::Sender<T>>
    where
        F: FnMut(Vec<T>) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = &*queue
            && !sender.is_closed()
        {
            return Some(sender.clone());
        }
        let Serving {
            tasks,
            batch,
            serve,
        } = serving.take()?();
        let (sender, receiver) = mpsc::channel(QUEUE);
        let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
        for _ in 0..tasks.max(1) {
            tokio::spawn(run(receiver.clone(), batch, serve.clone()));
        }
        *queue = Some(sender.clone());
        Some(sender)
    }

    /// Forgets `dead`, whose tasks are gone, unless others replaced them.
    fn forget(&self, dead: &mpsc::Sender<T>) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.as_ref().is_some_and(|q| q.same_channel(dead)) {
            *queue = None;
        }
    }
}

/// A task: takes what is queued, at most `batch` at a time, and serves it;
/// the other tasks take the next batch meanwhile.
async fn run<T, F, Fut>(
    queue: Arc<tokio::sync::Mutex<mpsc::Receiver<T>>>,
    batch: usize,
    mut serve: F,
) where
    F: FnMut(Vec<T>) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut taken = Vec::with_capacity(batch);
    loop {
        if queue.lock().await.recv_many(&mut taken, batch).await == 0 {
            return;
        }
        serve(std::mem::replace(&mut taken, Vec::with_capacity(batch))).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    type Request = (usize, oneshot::Sender<(usize, usize)>);

    /// Answers each request with its number and the size of its batch.
    fn numbered(
        batches: Arc<AtomicUsize>,
    ) -> impl FnMut(Vec<Request>) -> std::future::Ready<()> + Clone + Send + 'static {
        move |batch: Vec<Request>| {
            batches.fetch_add(1, Ordering::Relaxed);
            let size = batch.len();
            for (n, reply) in batch {
                let _ = reply.send((n, size));
            }
            std::future::ready(())
        }
    }

    /// Sends `n` on `lanes` (one task, batches of 4) and returns the
    /// receiver of its answer.
    async fn ask(
        lanes: &Lanes<Request>,
        n: usize,
        batches: &Arc<AtomicUsize>,
    ) -> oneshot::Receiver<(usize, usize)> {
        let (reply, answer) = oneshot::channel();
        lanes
            .send((n, reply), || Serving {
                tasks: 1,
                batch: 4,
                serve: numbered(batches.clone()),
            })
            .await;
        answer
    }

    #[tokio::test]
    async fn every_request_gets_its_own_answer_in_batches_of_at_most_the_bound() {
        let lanes = Lanes::<Request>::default();
        let batches = Arc::new(AtomicUsize::new(0));
        let mut answers = Vec::new();
        for n in 0..10 {
            answers.push(ask(&lanes, n, &batches).await);
        }
        for (n, answer) in answers.into_iter().enumerate() {
            let (got, size) = answer.await.unwrap();
            assert_eq!(got, n);
            assert!((1..=4).contains(&size), "{size}");
        }
        assert!(
            batches.load(Ordering::Relaxed) >= 3,
            "10 requests, 4 a batch"
        );
    }

    #[test]
    fn a_runtime_gone_starts_new_tasks_on_the_next() {
        let lanes = Lanes::<Request>::default();
        let batches = Arc::new(AtomicUsize::new(0));
        for n in 0..2 {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let got = runtime.block_on(async { ask(&lanes, n, &batches).await.await.unwrap() });
            assert_eq!(got, (n, 1));
        }
    }
}
