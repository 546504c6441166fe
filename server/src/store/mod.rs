//! The database: one [`Store`] over SQLite (embedded default) or PostgreSQL.
//!
//! The store is two layers:
//!
//! - The resource files say what is read and written, as plain statements
//!   on a transaction ([`Tx`]) or on the pool, readable top to bottom:
//!   `shipments.rs` (create, read by code, change; the list in
//!   `shipments/list.rs`), `outbox.rs` (the outbox row of a change, the
//!   dispatcher's claims and finishes, redeliveries), `webhooks.rs`,
//!   `merchants.rs`, `couriers.rs`, `api_keys.rs`, `auth.rs`, `listen.rs`.
//! - `engine` decides how: group commit, rows written at commit, batched
//!   reads, padded `IN` lists, one statement text for both engines, the
//!   pools. Its module documentation lists the small interface the
//!   resource files use, and why each piece exists.
//!
//! A shipment create, for one: `Store::create_shipment` (`shipments.rs`)
//! hands its row to the next group commit (`Store::write_at_commit`); at
//! the commit, `NewRow`'s `AtCommit::write`, next to it, inserts the
//! group's rows in one `INSERT … RETURNING *` and queues each shipment's
//! outbox row (`outbox::enqueue`, whose `INSERT` is in `outbox.rs`) and its
//! count.
//!
//! Every statement is written once, in SQL both engines understand (`$1`
//! parameters, `RETURNING`), as a `&'static str` (two constants where the
//! engines differ, as for `FOR UPDATE SKIP LOCKED`), and run through the
//! engine's `Query` on whichever pool the URL chose, or on an open [`Tx`];
//! rows come back as `#[derive(sqlx::FromRow)]` structs, one per table,
//! converted to the wire model in one place each way (for shipments,
//! `ShipmentRecord::into_model` and `NewRow`'s `INSERT`). The shipment
//! list, whose filters vary per request, is built with `sqlx::QueryBuilder`
//! instead (`shipments/list.rs`). Every error passes through
//! [`StoreError`]'s `From<sqlx::Error>`, which names the unique constraint
//! a write ran into (`unique_violation`). Timestamps are truncated to
//! microseconds in Rust ([`now`]) so both engines store exactly what the
//! API shows.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use sqlx::{PgPool, Postgres};

pub mod api_keys;
pub mod auth;
pub mod couriers;
pub(crate) mod engine;
pub mod listen;
pub mod merchants;
pub mod outbox;
pub mod shipments;
pub mod webhooks;

use engine::group_commit::GroupCommit;
use engine::{Db, Reads, reach};
pub use engine::{Pool, Tx};

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
/// Besides the pools it holds the queue of `Store::write`, where the
/// writes of concurrent requests wait to be committed together, and the
/// queue of [`Store::shipment`], where reads by code wait to be read
/// together (see `engine`).
#[derive(Debug, Clone)]
pub struct Store {
    db: Db,
    /// The queue of `Store::write` (`engine::group_commit`).
    group: Arc<GroupCommit>,
    /// The queue of shipment reads by code, served in batches
    /// (`engine::reads`).
    by_code: Arc<Reads<shipments::ByCode>>,
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
        Ok(Store {
            db: Db::connect(url, settings).await?,
            group: Arc::default(),
            by_code: Arc::default(),
        })
    }

    /// The pool, for statements of its own (tests, the listener relay).
    pub fn pool(&self) -> &Pool {
        self.db.pool()
    }

    /// A connection of `pool` (this store's PostgreSQL pool), for
    /// statements built at run time: at once an error while the database is
    /// known to be unreachable (the store's `Query` takes its connections
    /// so too).
    pub(crate) async fn postgres_connection(
        &self,
        pool: &PgPool,
    ) -> Result<sqlx::pool::PoolConnection<Postgres>, StoreError> {
        self.db.postgres_connection(pool).await
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
        self.db.close().await;
    }
}

#[cfg(test)]
mod tests;
