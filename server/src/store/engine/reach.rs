//! Whether PostgreSQL is known to be unreachable, so that requests answer
//! 503 at once while it is, instead of each waiting out the pool's acquire
//! time-out (5 s) in sqlx's own retries of a refused connection.
//!
//! The first failed connect marks it, a successful one clears it: when an
//! acquire is slow or fails with a lost connection, a probe (one connection
//! of its own, outside the pool) tries the database; if that fails, the
//! database is marked unreachable, and acquires fail at once with
//! [`unreachable`] until a probe, repeated every [`PROBE_EVERY`], or the
//! pool connects again.
//!
//! The normal path pays one atomic load, and a timer only for an acquire
//! that is not ready on its first poll (on PostgreSQL, one that pings an
//! idle connection or opens one, a round trip anyway). SQLite, embedded,
//! cannot be unreachable this way, and has none of it.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions as _, Connection as _, PgPool, Postgres, Transaction};

/// How long an acquire waits before a probe is sent to see whether the
/// database is there at all. A busy pool makes acquires wait too: the probe
/// then finds the database reachable and the acquire waits on.
const SUSPECT_AFTER: Duration = Duration::from_millis(300);
/// How often an acquire that is waiting looks whether a probe found the
/// database unreachable meanwhile.
const LOOK_EVERY: Duration = Duration::from_millis(100);
/// The longest a probe's connect may take before the database counts as
/// unreachable.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Pause between the probes while the database is unreachable: how soon
/// after its return requests are served again.
const PROBE_EVERY: Duration = Duration::from_millis(250);
/// Least time between two probes that found the database reachable, so a
/// pool busy for a long while costs one extra connect a second at most.
const REPROBE_AFTER: Duration = Duration::from_secs(1);

/// The reachability of one store's PostgreSQL; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Reach(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    /// What a probe connects with: the pool's own options.
    options: PgConnectOptions,
    /// Known unreachable: the last probe failed, and no connect succeeded
    /// since.
    down: AtomicBool,
    /// A probe is running.
    probing: AtomicBool,
    /// When the last probe that reached the database ended, in milliseconds
    /// since `started`.
    reached_at_ms: AtomicU64,
    started: Instant,
}

/// The error of an acquire while the database is known to be unreachable:
/// an I/O error, which the HTTP layer answers with 503 like any lost
/// connection.
pub(crate) fn unreachable() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::NotConnected,
        "the database is unreachable (a connection to it failed moments ago)",
    ))
}

/// Whether `e` says the database could not be reached or the connection to
/// it was lost (as opposed to a statement it refused, or a bug): an I/O
/// error (refused, reset, closed, "expected to read 5 bytes, got 0 bytes at
/// EOF"), the pool's time-out or closing, or PostgreSQL's own errors of a
/// broken connection (class 08), of a server shutting down, crashed or
/// starting up (57P01 to 57P03) and of too many connections (53300).
pub(crate) fn connection_lost(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
        // SQLite's codes are numbers without leading zeros, so they never
        // look like these.
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("08") || matches!(&*code, "57P01" | "57P02" | "57P03" | "53300")
        }),
        _ => false,
    }
}

impl Reach {
    /// The reachability of the database `options` connect to, taken to be
    /// reachable.
    pub(crate) fn new(options: PgConnectOptions) -> Reach {
        Reach(Arc::new(Inner {
            options,
            down: AtomicBool::new(false),
            probing: AtomicBool::new(false),
            reached_at_ms: AtomicU64::new(0),
            started: Instant::now(),
        }))
    }

    /// Whether the database is known to be unreachable now.
    pub(crate) fn is_down(&self) -> bool {
        self.0.down.load(Ordering::Relaxed)
    }

    /// A connection to the database was made: it is reachable.
    pub(crate) fn connected(&self) {
        if self.0.down.swap(false, Ordering::AcqRel) {
            tracing::info!("the database is reachable again");
        }
    }

    /// A connection from `pool`: at once an error while the database is
    /// known to be unreachable, else the pool's, given up as soon as a
    /// probe finds the database unreachable.
    pub(crate) async fn acquire(&self, pool: &PgPool) -> sqlx::Result<PoolConnection<Postgres>> {
        self.guard(pool.acquire()).await
    }

    /// A transaction on a connection from `pool`, as [`Reach::acquire`].
    pub(crate) async fn begin(
        &self,
        pool: &PgPool,
    ) -> sqlx::Result<Transaction<'static, Postgres>> {
        self.guard(pool.begin()).await
    }

    /// Runs `acquire` (something that takes a connection from the pool),
    /// unless the database is known to be unreachable; a slow one sends a
    /// probe, and is given up if the probe fails.
    async fn guard<T>(&self, acquire: impl Future<Output = sqlx::Result<T>>) -> sqlx::Result<T> {
        if self.is_down() {
            self.probe();
            return Err(unreachable());
        }
        let mut acquire = pin!(acquire);
        let mut waited = Duration::ZERO;
        loop {
            let wait = if waited < SUSPECT_AFTER {
                SUSPECT_AFTER
            } else {
                LOOK_EVERY
            };
            match tokio::time::timeout(wait, &mut acquire).await {
                Ok(Err(e)) => {
                    if connection_lost(&e) {
                        self.probe();
                    }
                    return Err(e);
                }
                Ok(done) => return done,
                Err(_) if self.is_down() => return Err(unreachable()),
                Err(_) => {
                    waited += wait;
                    self.probe();
                }
            }
        }
    }

    /// Starts a probe, unless one is running or one reached the database
    /// less than [`REPROBE_AFTER`] ago (while it is up).
    fn probe(&self) {
        let inner = &self.0;
        if !self.is_down() {
            let since = inner.started.elapsed().as_millis();
            let reached = u128::from(inner.reached_at_ms.load(Ordering::Relaxed));
            if reached > 0 && since.saturating_sub(reached) < REPROBE_AFTER.as_millis() {
                return;
            }
        }
        if inner.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        // A probe outlives the request that started it; a runtime that is
        // going away takes it along, which is fine.
        tokio::spawn(self.clone().probing());
    }

    /// Connects until a connect succeeds, marking the database unreachable
    /// meanwhile.
    async fn probing(self) {
        let inner = &self.0;
        loop {
            let reached = match tokio::time::timeout(PROBE_TIMEOUT, inner.options.connect()).await {
                Ok(Ok(conn)) => {
                    let _ = conn.close().await;
                    true
                }
                // An answer that is not about reaching it (a wrong
                // password, a missing database): reachable, and the
                // requests' own connects report it.
                Ok(Err(e)) => !connection_lost(&e),
                Err(_) => false,
            };
            if reached {
                let ms = u64::try_from(inner.started.elapsed().as_millis()).unwrap_or(u64::MAX);
                inner.reached_at_ms.store(ms.max(1), Ordering::Relaxed);
                self.connected();
                break;
            }
            if !inner.down.swap(true, Ordering::AcqRel) {
                tracing::warn!(
                    "the database is unreachable; requests answer 503 until a connection to it succeeds"
                );
            }
            tokio::time::sleep(PROBE_EVERY).await;
        }
        inner.probing.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

    use super::Reach;

    /// Options for a PostgreSQL nobody listens for: a port just freed.
    fn nobody_there() -> PgConnectOptions {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        PgConnectOptions::new()
            .host("127.0.0.1")
            .port(port)
            .username("postgres")
    }

    #[tokio::test]
    async fn a_refused_connect_marks_the_database_unreachable_and_later_acquires_fail_at_once() {
        let options = nobody_there();
        let reach = Reach::new(options.clone());
        // sqlx alone retries a refused connect until the acquire time-out.
        let pool = PgPoolOptions::new()
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy_with(options);

        let started = Instant::now();
        let first = reach.acquire(&pool).await.map(drop).unwrap_err();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "{took:?}: {first}");
        assert!(reach.is_down());
        assert!(super::connection_lost(&first), "{first}");

        let started = Instant::now();
        let again = reach.acquire(&pool).await.map(drop).unwrap_err();
        let took = started.elapsed();
        assert!(took < Duration::from_millis(100), "{took:?}: {again}");
        assert!(
            matches!(&again, sqlx::Error::Io(e) if e.kind() == std::io::ErrorKind::NotConnected),
            "{again}"
        );
        assert!(reach.begin(&pool).await.is_err());
    }

    #[test]
    fn only_connection_failures_count_as_lost() {
        assert!(super::connection_lost(&super::unreachable()));
        assert!(super::connection_lost(&sqlx::Error::PoolTimedOut));
        assert!(!super::connection_lost(&sqlx::Error::RowNotFound));
        assert!(!super::connection_lost(&sqlx::Error::Protocol(
            "unexpected".into()
        )));
    }
}
