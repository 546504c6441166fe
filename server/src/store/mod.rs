//! The database: one [`Store`] over SQLite (embedded default) or PostgreSQL.
//!
//! Every statement is written once, in SQL both engines understand (`$1`
//! parameters, `RETURNING`), as a `&'static str` (two constants where the
//! engines differ, as for `FOR UPDATE SKIP LOCKED`), and run through
//! `query::Query` on whichever pool the URL chose, or on an open [`Tx`];
//! rows come back as `#[derive(sqlx::FromRow)]` structs. The shipment list,
//! whose filters vary per request, is built with `sqlx::QueryBuilder`
//! instead (`shipments/list.rs`). Every error passes
//! through [`StoreError`]'s `From<sqlx::Error>`, which names the unique
//! constraint a write ran into (`unique_violation`). Timestamps are
//! truncated to microseconds in Rust ([`now`]) so both engines store exactly
//! what the API shows.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, Postgres, Sqlite, SqlitePool, Transaction};

pub mod api_keys;
pub mod auth;
pub mod couriers;
pub mod listen;
pub mod merchants;
pub mod outbox;
mod query;
pub mod shipments;
pub mod webhooks;

/// Errors of the store. The `…Taken` variants name the unique constraint a
/// write ran into, for the caller to decide what it means; anything else is
/// a server fault the HTTP layer answers with 500 or 503 without details.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed or is unreachable.
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
    /// Applying migrations failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// `merchants.email`: a merchant has this e-mail already.
    #[error("a merchant has this e-mail already")]
    EmailTaken,
    /// `shipments.code`: a new shipment's random code collided (the store
    /// retries with another).
    #[error("a shipment has this code already")]
    ShipmentCodeTaken,
    /// `webhooks (merchant_id, url)`: the merchant registered this URL already.
    #[error("the merchant has a webhook with this URL already")]
    WebhookUrlTaken,
    /// `idempotency_keys (merchant_id, idem_key)`: a concurrent create with
    /// the same `Idempotency-Key` committed first (the store retries, and
    /// replays its answer).
    #[error("this idempotency key was stored by a concurrent request")]
    IdempotencyKeyTaken,
    /// `api_keys.key_digest`: a new merchant key's digest collided.
    #[error("an API key has this digest already")]
    ApiKeyDigestTaken,
    /// `courier_keys.key_digest`: a new courier key's digest collided.
    #[error("a courier key has this digest already")]
    CourierKeyDigestTaken,
    /// `sessions.token_digest`: a new session token's digest collided.
    #[error("a session has this token digest already")]
    SessionTokenTaken,
    /// A write kept losing races with concurrent writers and gave up; trying
    /// again shortly is likely to succeed.
    #[error("{0}: too many concurrent writes; try again")]
    Contended(String),
    /// Stored data that cannot be read back (a bug or manual editing).
    #[error("corrupt row: {0}")]
    Corrupt(String),
}

impl From<sqlx::Error> for StoreError {
    /// A unique violation becomes the variant of its constraint; anything
    /// else (an unnamed constraint included: the store has no write that
    /// should meet one) stays [`StoreError::Database`].
    fn from(e: sqlx::Error) -> StoreError {
        if let sqlx::Error::Database(db) = &e
            && db.is_unique_violation()
            && let Some(taken) = unique_violation(db.constraint(), db.message())
        {
            return taken;
        }
        StoreError::Database(e)
    }
}

/// The error for a unique violation, from the constraint PostgreSQL names or
/// else from SQLite's message, `UNIQUE constraint failed: table.column, …`
/// (SQLite reports no constraint name). The one place that knows the
/// constraints: PostgreSQL's names are the ones it generated for the
/// migrations' `UNIQUE` and `PRIMARY KEY` clauses.
fn unique_violation(constraint: Option<&str>, message: &str) -> Option<StoreError> {
    let key = constraint.or_else(|| message.strip_prefix("UNIQUE constraint failed: "))?;
    Some(match key {
        "merchants_email_key" | "merchants.email" => StoreError::EmailTaken,
        "shipments_code_key" | "shipments.code" => StoreError::ShipmentCodeTaken,
        "webhooks_merchant_id_url_key" | "webhooks.merchant_id, webhooks.url" => {
            StoreError::WebhookUrlTaken
        }
        "idempotency_keys_pkey" | "idempotency_keys.merchant_id, idempotency_keys.idem_key" => {
            StoreError::IdempotencyKeyTaken
        }
        "api_keys_key_digest_key" | "api_keys.key_digest" => StoreError::ApiKeyDigestTaken,
        "courier_keys_key_digest_key" | "courier_keys.key_digest" => {
            StoreError::CourierKeyDigestTaken
        }
        "sessions_token_digest_key" | "sessions.token_digest" => StoreError::SessionTokenTaken,
        _ => return None,
    })
}

/// Which engine a database URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `sqlite://…`
    Sqlite,
    /// `postgres://…` or `postgresql://…`
    Postgres,
}

impl Backend {
    /// The engine of `url`, or `None` for an unsupported scheme.
    pub fn of(url: &str) -> Option<Backend> {
        if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Backend::Postgres)
        } else {
            None
        }
    }
}

/// A handle on the database; cheap to clone.
#[derive(Debug, Clone)]
pub enum Store {
    /// The embedded default.
    Sqlite(SqlitePool),
    /// For production and several server processes.
    Postgres(PgPool),
}

/// An open write transaction.
pub enum Tx {
    /// Begun `IMMEDIATE`, so concurrent writers queue on the busy timeout
    /// instead of failing with "database is locked" when they upgrade.
    Sqlite(Transaction<'static, Sqlite>),
    /// A PostgreSQL transaction (read committed).
    Postgres(Transaction<'static, Postgres>),
}

/// Now, at the precision both engines keep (microseconds).
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
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

impl Store {
    /// Connects to `url` (creating a SQLite file if missing).
    pub async fn connect(url: &str, settings: PoolSettings) -> Result<Store, StoreError> {
        match Backend::of(url) {
            Some(Backend::Sqlite) if matches!(url, "sqlite::memory:" | "sqlite://:memory:") => {
                Ok(Store::Sqlite(connect_memory(settings).await?))
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
                let pool = SqlitePoolOptions::new()
                    // An embedded database cannot drop a connection the way a
                    // network can, and the ping before every acquire is one
                    // more hop to SQLite's worker thread per query.
                    .test_before_acquire(false)
                    .max_connections(settings.max_connections)
                    .acquire_timeout(settings.acquire_timeout)
                    .connect_with(options)
                    .await?;
                Ok(Store::Sqlite(pool))
            }
            Some(Backend::Postgres) => {
                let options = PgConnectOptions::from_str(url)?;
                let pool = PgPoolOptions::new()
                    .max_connections(settings.max_connections)
                    .acquire_timeout(settings.acquire_timeout)
                    .connect_with(options)
                    .await?;
                Ok(Store::Postgres(pool))
            }
            None => Err(StoreError::Database(sqlx::Error::Configuration(
                "the database URL must start with sqlite:// or postgres://".into(),
            ))),
        }
    }

    /// Creates or upgrades the schema.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match self {
            Store::Sqlite(pool) => sqlx::migrate!("migrations/sqlite").run(pool).await?,
            Store::Postgres(pool) => sqlx::migrate!("migrations/postgres").run(pool).await?,
        }
        Ok(())
    }

    /// Which engine this is.
    pub fn backend(&self) -> Backend {
        match self {
            Store::Sqlite(_) => Backend::Sqlite,
            Store::Postgres(_) => Backend::Postgres,
        }
    }

    /// Begins a write transaction.
    pub async fn begin(&self) -> Result<Tx, StoreError> {
        Ok(match self {
            Store::Sqlite(pool) => Tx::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Store::Postgres(pool) => Tx::Postgres(pool.begin().await?),
        })
    }

    /// Whether the database answers (for `/readyz`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.query("SELECT 1").execute().await?;
        Ok(())
    }

    /// How many connections are open, idle and allowed (for `/metrics`).
    pub fn pool_usage(&self) -> PoolUsage {
        let (size, idle, max) = match self {
            Store::Sqlite(p) => (p.size(), p.num_idle(), p.options().get_max_connections()),
            Store::Postgres(p) => (p.size(), p.num_idle(), p.options().get_max_connections()),
        };
        let idle = u32::try_from(idle).unwrap_or(u32::MAX);
        PoolUsage {
            in_use: size.saturating_sub(idle),
            idle,
            max,
        }
    }

    /// Closes every connection (graceful shutdown).
    pub async fn close(&self) {
        match self {
            Store::Sqlite(pool) => pool.close().await,
            Store::Postgres(pool) => pool.close().await,
        }
    }
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
async fn connect_memory(settings: PoolSettings) -> Result<SqlitePool, StoreError> {
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
    let pool = SqlitePoolOptions::new()
        .test_before_acquire(false)
        .max_connections(settings.max_connections)
        .acquire_timeout(settings.acquire_timeout)
        .connect_with(options)
        .await?;
    let closed = pool.close_event();
    tokio::spawn(async move {
        closed.await;
        let _ = keeper.close().await;
    });
    Ok(pool)
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

impl Tx {
    /// Which engine this is.
    pub fn backend(&self) -> Backend {
        match self {
            Tx::Sqlite(_) => Backend::Sqlite,
            Tx::Postgres(_) => Backend::Postgres,
        }
    }

    /// Holds the lock `id` until this transaction ends, so transactions
    /// that take the same lock run one after another even where reading
    /// first and writing after would race (declared fixtures): a PostgreSQL
    /// advisory lock; on SQLite every write transaction is alone already
    /// (begun `IMMEDIATE`).
    pub async fn lock_exclusively(&mut self, id: i64) -> Result<(), StoreError> {
        if let Tx::Postgres(_) = self {
            self.query("SELECT pg_advisory_xact_lock($1)")
                .bind(id)
                .execute()
                .await?;
        }
        Ok(())
    }

    /// Makes the transaction's writes durable.
    pub async fn commit(self) -> Result<(), StoreError> {
        match self {
            Tx::Sqlite(t) => t.commit().await?,
            Tx::Postgres(t) => t.commit().await?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
