//! The store's handle: the pools and the queues the resources write and
//! read through. Each resource file adds the statements of its own tables
//! to it (`impl Store` in `shipments.rs`, `outbox/claim.rs`, …); this file
//! holds only what every resource shares.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use sqlx::{PgPool, Postgres};

use super::Backend;
use super::engine::group_commit::GroupCommit;
use super::engine::query::{Query, Text};
use super::engine::{AtCommit, Db, Pool, PoolSettings, PoolUsage, Reads, Tx};
use super::error::StoreError;
use super::shipments::by_code::ByCode;

/// A handle on the database; cheap to clone.
///
/// Besides the pools it holds the queue of `Store::write`, where the
/// writes of concurrent requests wait to be committed together, and the
/// queue of `Store::shipment`, where reads by code wait to be read
/// together (see `engine`).
#[derive(Debug, Clone)]
pub struct Store {
    pub(super) db: Db,
    /// The queue of `Store::write` (`engine::group_commit`).
    group: Arc<GroupCommit>,
    /// The queue of shipment reads by code, served in batches
    /// (`engine::reads`).
    pub(super) by_code: Arc<Reads<ByCode>>,
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

    /// `sql` on the pool: each statement takes any free connection.
    pub(crate) fn query(&self, sql: impl Text) -> Query<'_> {
        self.db.query(sql)
    }

    /// Runs `job` in the next group commit's transaction, and returns its
    /// result once that is committed.
    ///
    /// `job` may run more than once (see `engine::group_commit`), each time
    /// in a transaction that it must leave open; it must not use the store
    /// itself, only the transaction.
    pub(crate) async fn write<F, T>(&self, job: F) -> Result<T, StoreError>
    where
        F: for<'a> FnMut(&'a mut Tx) -> BoxFuture<'a, Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        self.group.write(&self.db, job).await
    }

    /// Queues `row` at the commit of the next group commit, with the rows
    /// of its kind of the group's other writes (one statement for all of
    /// them, [`AtCommit`]), and returns what writing it made once that is
    /// committed.
    pub(crate) async fn write_at_commit<R: AtCommit + Clone>(
        &self,
        row: R,
    ) -> Result<R::Made, StoreError> {
        self.group.write_at_commit(&self.db, row).await
    }
}
