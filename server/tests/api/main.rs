//! Integration tests: the real server on port 0, a fresh database per test,
//! every body run on SQLite and (with `TEST_DATABASE_URL`) on PostgreSQL,
//! through the `shipment-testkit` harness.

mod receiver;

mod binary;
mod courier;
mod dashboard;
mod dashboard_pages;
mod delivery;
mod errors;
mod fixtures;
mod generated;
mod hardening;
mod lifecycle;
mod listen;
mod openapi;
mod operations;
mod processes;
mod redelivery;
mod revocation;
mod shipments;
mod testing;
mod testing_deliveries;

use shipment_server::store::{Pool, Store};

/// Runs `sql`, with `value` as its one parameter, on the test's database,
/// whichever engine it is: for tests that change rows by hand, as no
/// endpoint does (an expired session, a repriced courier company).
async fn execute<T>(store: &Store, sql: &'static str, value: T)
where
    T: for<'q> sqlx::Encode<'q, sqlx::Sqlite>
        + sqlx::Type<sqlx::Sqlite>
        + for<'q> sqlx::Encode<'q, sqlx::Postgres>
        + sqlx::Type<sqlx::Postgres>
        + Send
        + 'static,
{
    match store.pool() {
        Pool::Sqlite(pool) => drop(sqlx::query(sql).bind(value).execute(pool).await.unwrap()),
        Pool::Postgres(pool) => drop(sqlx::query(sql).bind(value).execute(pool).await.unwrap()),
    }
}
