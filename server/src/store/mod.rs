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

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, Postgres, Sqlite, SqlitePool, Transaction};

pub mod api_keys;
pub mod auth;
pub mod couriers;
mod group_commit;
mod lanes;
pub mod listen;
pub mod merchants;
pub mod outbox;
mod query;
mod reach;
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

impl StoreError {
    /// Whether the database could not be reached, or the connection to it
    /// was lost or refused (the pool timed out, an I/O error, PostgreSQL
    /// shutting down or starting up): a passing fault that the same request
    /// may well get through shortly, answered 503 with `Retry-After`.
    /// (Whether a write in flight was committed is then unknown; a retry
    /// with the same `Idempotency-Key` finds out.)
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Database(e) => reach::connection_lost(e),
            _ => false,
        }
    }

    /// A conflict with a concurrent write that trying again (in a new
    /// transaction) resolves: a new shipment's random code or an
    /// idempotency key stored meanwhile, a PostgreSQL deadlock or
    /// serialization failure.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::ShipmentCodeTaken | StoreError::IdempotencyKeyTaken => true,
            StoreError::Database(sqlx::Error::Database(db)) => {
                matches!(db.code().as_deref(), Some("40001" | "40P01"))
            }
            _ => false,
        }
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
///
/// Besides the pool it holds the queue of `Store::write`, where the
/// writes of concurrent requests wait to be committed together, and the
/// queue of [`Store::shipment`], where reads by code wait to be read
/// together.
#[derive(Debug, Clone)]
pub struct Store {
    db: Db,
    group: Arc<group_commit::GroupCommit>,
    /// The queue of shipment reads by code, served in batches.
    by_code: Arc<shipments::by_code::Reads>,
}

/// The pool of one engine: every read, and writes made of one statement.
#[derive(Debug, Clone)]
pub enum Pool {
    /// The embedded default.
    Sqlite(SqlitePool),
    /// For production and several server processes.
    Postgres(PgPool),
}

/// The connections a store writes and reads with; what the group-commit
/// task holds (not the [`Store`], whose last clone going away ends it).
#[derive(Debug, Clone)]
struct Db {
    pool: Pool,
    /// PostgreSQL: whether the database is known to be unreachable, which
    /// every acquire from `pool` goes through.
    reach: Option<reach::Reach>,
    /// SQLite: the one connection this process begins write transactions
    /// on. SQLite lets one writer at a time in, and makes the others wait
    /// in its busy handler, which sleeps (up to 100 ms a turn) instead of
    /// queueing: under load a write waited up to 0.7 s. Waiting for this
    /// connection instead queues the process's writers in order, and
    /// readers keep the pool's other connections (WAL lets them read
    /// while it writes).
    sqlite_writer: Option<SqlitePool>,
}

/// One kept count of shipments: a merchant's, with one courier company,
/// in one status (`shipment_counts_by_courier`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Counter {
    pub merchant_id: i64,
    pub courier_company_id: i64,
    pub status: String,
}

/// An open write transaction.
pub struct Tx {
    conn: TxConn,
    /// Changes to `shipment_counts_by_courier` made in this transaction, by
    /// merchant, courier company and status, written when it commits: in
    /// one statement per counter however many shipments a group commit
    /// holds, and in one order, so two transactions never wait on each
    /// other's counters.
    counts: BTreeMap<Counter, i64>,
    /// Outbox rows of this transaction's changes, written when it commits,
    /// all in one statement.
    outbox: Vec<outbox::Enqueued>,
    /// Creates of this transaction, written when it commits, all in one
    /// statement (before the outbox rows, which they add to).
    shipments: Vec<shipments::batched::Deferred>,
    /// Delivery attempts logged in this transaction, written when it
    /// commits, all in one statement.
    logged: Vec<outbox::Logged>,
    /// Outbox rows finished in this transaction, marked done when it
    /// commits, all in one statement.
    finished: Vec<outbox::Finished>,
}

enum TxConn {
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
        let db = match Backend::of(url) {
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
                let reach = reach::Reach::new(options.clone());
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
        };
        Ok(Store {
            db,
            group: Arc::default(),
            by_code: Arc::default(),
        })
    }

    /// The pool, for statements of its own (tests, the listener relay).
    pub fn pool(&self) -> &Pool {
        &self.db.pool
    }

    /// A connection of `pool` (this store's PostgreSQL pool), for
    /// statements built at run time: at once an error while the database is
    /// known to be unreachable (the store's `Query` takes its connections
    /// so too).
    pub(crate) async fn postgres_connection(
        &self,
        pool: &PgPool,
    ) -> Result<sqlx::pool::PoolConnection<Postgres>, StoreError> {
        Ok(match &self.db.reach {
            Some(reach) => reach.acquire(pool).await?,
            None => pool.acquire().await?,
        })
    }

    /// Creates or upgrades the schema.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match self.pool() {
            Pool::Sqlite(pool) => sqlx::migrate!("migrations/sqlite").run(pool).await?,
            Pool::Postgres(pool) => sqlx::migrate!("migrations/postgres").run(pool).await?,
        }
        Ok(())
    }

    /// Which engine this is.
    pub fn backend(&self) -> Backend {
        self.db.backend()
    }

    /// Begins a write transaction.
    pub async fn begin(&self) -> Result<Tx, StoreError> {
        self.db.begin().await
    }

    /// Whether the database answers (for `/readyz`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.query("SELECT 1").execute().await?;
        Ok(())
    }

    /// How many connections are open, idle and allowed (for `/metrics`).
    pub fn pool_usage(&self) -> PoolUsage {
        let (size, idle, max) = match self.pool() {
            Pool::Sqlite(p) => (p.size(), p.num_idle(), p.options().get_max_connections()),
            Pool::Postgres(p) => (p.size(), p.num_idle(), p.options().get_max_connections()),
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
        match self.pool() {
            Pool::Sqlite(pool) => pool.close().await,
            Pool::Postgres(pool) => pool.close().await,
        }
        if let Some(writer) = &self.db.sqlite_writer {
            writer.close().await;
        }
    }
}

impl Db {
    fn backend(&self) -> Backend {
        match self.pool {
            Pool::Sqlite(_) => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    async fn begin(&self) -> Result<Tx, StoreError> {
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
        Ok(Tx {
            conn,
            counts: BTreeMap::new(),
            outbox: Vec::new(),
            shipments: Vec::new(),
            logged: Vec::new(),
            finished: Vec::new(),
        })
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

impl Tx {
    /// Which engine this is.
    pub fn backend(&self) -> Backend {
        match self.conn {
            TxConn::Sqlite(_) => Backend::Sqlite,
            TxConn::Postgres(_) => Backend::Postgres,
        }
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

    /// Adds `delta` to a count of shipments (of one merchant, with one
    /// courier company, in one status), when the transaction commits.
    pub(crate) fn count(&mut self, counter: Counter, delta: i64) {
        *self.counts.entry(counter).or_default() += delta;
    }

    /// Makes the transaction's writes durable, with its deferred creates,
    /// outbox rows and counts.
    pub async fn commit(mut self) -> Result<(), StoreError> {
        let creates = std::mem::take(&mut self.shipments);
        if !creates.is_empty() {
            shipments::batched::write(&mut self, creates).await?;
        }
        let enqueued = std::mem::take(&mut self.outbox);
        if !enqueued.is_empty() {
            outbox::write_enqueued(&mut self, enqueued).await?;
        }
        let logged = std::mem::take(&mut self.logged);
        if !logged.is_empty() {
            outbox::write_logged(&mut self, logged).await?;
        }
        let finished = std::mem::take(&mut self.finished);
        if !finished.is_empty() {
            outbox::write_finished(&mut self, finished).await?;
        }
        for (counter, delta) in std::mem::take(&mut self.counts) {
            if delta != 0 {
                shipments::bump_count(&mut self, &counter, delta).await?;
            }
        }
        match self.conn {
            TxConn::Sqlite(t) => t.commit().await?,
            TxConn::Postgres(t) => t.commit().await?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
