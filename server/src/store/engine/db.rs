//! The connections: the pool of either engine, SQLite's one writer
//! connection, and PostgreSQL's reachability ([`Reach`]).

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, Postgres, SqlitePool};

use super::backend::Backend;
use super::reach::Reach;
use super::tx::{Tx, TxConn};
use crate::store::error::StoreError;

/// The pool of one engine: every read, and writes made of one statement.
#[derive(Debug, Clone)]
pub enum Pool {
    /// The embedded default.
    Sqlite(SqlitePool),
    /// For production and several server processes.
    Postgres(PgPool),
}

/// The connections a store writes and reads with; what the tasks of the
/// group commit and of batched reads hold (not the `Store`, whose last
/// clone going away ends them).
#[derive(Debug, Clone)]
pub(crate) struct Db {
    pool: Pool,
    /// PostgreSQL: whether the database is known to be unreachable, which
    /// every acquire from `pool` goes through.
    reach: Option<Reach>,
    /// SQLite: the one connection this process begins write transactions
    /// on. SQLite lets one writer at a time in, and makes the others wait
    /// in its busy handler, which sleeps (up to 100 ms a turn) instead of
    /// queueing: under load a write waited up to 0.7 s. Waiting for this
    /// connection instead queues the process's writers in order, and
    /// readers keep the pool's other connections (WAL lets them read
    /// while it writes).
    sqlite_writer: Option<SqlitePool>,
}

impl Db {
    /// Connects to `url` (creating a SQLite file if missing).
    pub(in crate::store) async fn connect(
        url: &str,
        settings: PoolSettings,
    ) -> Result<Db, StoreError> {
        Ok(match Backend::of(url) {
            Some(Backend::Sqlite) if matches!(url, "sqlite::memory:" | "sqlite://:memory:") => {
                connect_memory(settings).await?
            }
            Some(Backend::Sqlite) => {
                let options = SqliteConnectOptions::from_str(url)?;
                if !url.contains(":memory:") && !url.contains("mode=memory") {
                    create_private(options.get_filename()).map_err(sqlx::Error::Io)?;
                }
                let options = options
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .busy_timeout(Duration::from_secs(10))
                    .foreign_keys(true);
                Db {
                    pool: Pool::Sqlite(sqlite_pool(&options, settings).await?),
                    reach: None,
                    sqlite_writer: Some(sqlite_pool(&options, settings.writer()).await?),
                }
            }
            Some(Backend::Postgres) => {
                let options = PgConnectOptions::from_str(url)?;
                let reach = Reach::new(options.clone());
                let connected = reach.clone();
                let pool = PgPoolOptions::new()
                    .max_connections(settings.max_connections)
                    .acquire_timeout(settings.acquire_timeout)
                    // A connection made is the database reached.
                    .after_connect(move |_, _| {
                        connected.connected();
                        Box::pin(std::future::ready(Ok(())))
                    })
                    .connect_with(options)
                    .await?;
                Db {
                    pool: Pool::Postgres(pool),
                    reach: Some(reach),
                    sqlite_writer: None,
                }
            }
            None => {
                return Err(StoreError::Database(sqlx::Error::Configuration(
                    "the database URL must start with sqlite:// or postgres://".into(),
                )));
            }
        })
    }

    /// The pool, for statements of its own.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// PostgreSQL's reachability, which every acquire from the pool goes
    /// through (`None` on SQLite).
    pub(super) fn reach(&self) -> Option<&Reach> {
        self.reach.as_ref()
    }

    /// Which engine this is.
    pub(crate) fn backend(&self) -> Backend {
        match self.pool {
            Pool::Sqlite(_) => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    /// A connection of `pool` (this store's PostgreSQL pool), for
    /// statements built at run time: at once an error while the database is
    /// known to be unreachable (`Query` takes its connections so too).
    pub(crate) async fn postgres_connection(
        &self,
        pool: &PgPool,
    ) -> Result<sqlx::pool::PoolConnection<Postgres>, StoreError> {
        Ok(match &self.reach {
            Some(reach) => reach.acquire(pool).await?,
            None => pool.acquire().await?,
        })
    }

    /// Begins a write transaction: on SQLite `IMMEDIATE` on the one writer
    /// connection, on PostgreSQL through [`Reach`].
    pub(crate) async fn begin(&self) -> Result<Tx, StoreError> {
        let conn = match &self.pool {
            Pool::Sqlite(pool) => {
                let writer = self.sqlite_writer.as_ref().unwrap_or(pool);
                TxConn::Sqlite(writer.begin_with("BEGIN IMMEDIATE").await?)
            }
            Pool::Postgres(pool) => TxConn::Postgres(match &self.reach {
                Some(reach) => reach.begin(pool).await?,
                None => pool.begin().await?,
            }),
        };
        Ok(Tx::new(conn))
    }

    /// Closes every connection (graceful shutdown).
    pub(crate) async fn close(&self) {
        match &self.pool {
            Pool::Sqlite(pool) => pool.close().await,
            Pool::Postgres(pool) => pool.close().await,
        }
        if let Some(writer) = &self.sqlite_writer {
            writer.close().await;
        }
    }
}

impl PoolSettings {
    /// The settings of SQLite's one-connection writer pool.
    fn writer(self) -> PoolSettings {
        PoolSettings {
            max_connections: 1,
            ..self
        }
    }
}

/// A pool of SQLite connections with `options`.
async fn sqlite_pool(
    options: &SqliteConnectOptions,
    settings: PoolSettings,
) -> Result<SqlitePool, StoreError> {
    Ok(SqlitePoolOptions::new()
        // An embedded database cannot drop a connection the way a network
        // can, and the ping before every acquire is one more hop to
        // SQLite's worker thread per query.
        .test_before_acquire(false)
        .max_connections(settings.max_connections)
        .acquire_timeout(settings.acquire_timeout)
        .connect_with(options.clone())
        .await?)
}

/// `sqlite::memory:`: one database in this process's memory, shared by
/// every connection of the pool and by nothing else, gone when the pool
/// closes. It is SQLite's `memdb` VFS under a unique name that starts with
/// `/`, which the connections of one process share with SQLite's ordinary
/// database locks: a writer (`BEGIN IMMEDIATE`) and readers take turns,
/// waiting on the busy timeout, as on a file without WAL (sqlx's own
/// `:memory:` is a shared cache instead, with table locks of its own). An
/// in-memory database lives only while a connection to it is open, and the
/// pool closes idle and old connections, so one is held outside the pool
/// until the pool closes.
async fn connect_memory(settings: PoolSettings) -> Result<Db, StoreError> {
    use sqlx::{ConnectOptions as _, Connection as _};
    let name = format!("/shipment-server-{}", uuid::Uuid::new_v4().simple());
    let options = SqliteConnectOptions::new()
        .filename(name)
        .vfs("memdb")
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Memory)
        .busy_timeout(Duration::from_secs(10))
        .foreign_keys(true);
    let keeper = options.connect().await?;
    let pool = sqlite_pool(&options, settings).await?;
    let writer = sqlite_pool(&options, settings.writer()).await?;
    let closed = pool.close_event();
    tokio::spawn(async move {
        closed.await;
        let _ = keeper.close().await;
    });
    Ok(Db {
        pool: Pool::Sqlite(pool),
        reach: None,
        sqlite_writer: Some(writer),
    })
}

/// Creates an empty database file readable and writable by its owner only,
/// if there is none: it holds password hashes, key digests and sealed
/// signing keys. SQLite gives its `-wal` and `-shm` files the database
/// file's mode, so they are private too. An existing file is left as it is,
/// with a warning if others may read it.
fn create_private(path: &std::path::Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    tracing::warn!(
                        path = %path.display(),
                        mode = format!("{mode:03o}"),
                        "the database file can be read by others; `chmod 600` it (and its -wal and -shm files)"
                    );
                }
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Connections of the pool at one moment.
#[derive(Debug, Clone, Copy)]
pub struct PoolUsage {
    /// Handed out to a query or transaction.
    pub in_use: u32,
    /// Open and waiting.
    pub idle: u32,
    /// The most the pool opens.
    pub max: u32,
}

/// Settings of the connection pool.
#[derive(Debug, Clone, Copy)]
pub struct PoolSettings {
    /// Most connections held open.
    pub max_connections: u32,
    /// How long a request waits for a connection before failing with 503.
    pub acquire_timeout: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(5),
        }
    }
}
