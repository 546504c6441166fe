//! The reference server in-process for tests: [`TestApp`] runs the real
//! `shipment-server` on `127.0.0.1`, port 0, with a fresh database per test
//! (SQLite in a temporary directory always; PostgreSQL when
//! `TEST_DATABASE_URL` names a server whose user may create databases, each
//! test getting its own, dropped when the test ends, even on failure), plus
//! [`db_tests!`], which runs one test body on both.
//!
//! This is the one harness of the repository's own tests (the server's API
//! tests, `shipctl`'s, and the end-to-end tests).
//!
//! ```no_run
//! # async fn run() {
//! use reqwest::Method;
//! use shipment_testkit::{Db, TestApp, send};
//!
//! let Some(app) = TestApp::spawn(Db::Sqlite).await else { return };
//! let f = app.fixture().await;
//! let shipment = app.create_default(&f).await;
//! let code = shipment["code"].as_str().unwrap();
//! app.advance(&f, code, "delivered").await;
//! let (status, body) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
//! assert_eq!((status.as_u16(), body["status"].as_str()), (200, Some("delivered")));
//! app.stop().await;
//! # }
//! ```
#![warn(missing_docs)]

mod app;
mod ca;
mod db;

pub use app::{Fixture, TestApp, assert_problem, send};
pub use ca::{LocalCa, ca};
pub use db::{Db, FreshDb, TEST_DATABASE_URL};

/// Runs each named `async fn(&TestApp)` once per backend:
/// `db_tests!(creates_a_shipment)` makes the tests
/// `creates_a_shipment::sqlite` and `creates_a_shipment::postgres` (which
/// prints `SKIPPED (PostgreSQL)` and passes when `TEST_DATABASE_URL` is not
/// set). `db_tests!(config = |c| ...; name, ...)` adjusts the server's
/// [`Config`](shipment_server::Config) first, as [`TestApp::spawn_with`]
/// does.
///
/// The calling crate needs `tokio` with the `macros` and `rt-multi-thread`
/// features.
///
/// ```no_run
/// use shipment_testkit::{TestApp, db_tests};
///
/// db_tests!(a_fixture_has_a_key);
/// db_tests!(config = |c| c.webhooks.outbox_poll_ms = 10; a_fast_outbox_still_starts);
///
/// async fn a_fixture_has_a_key(app: &TestApp) {
///     assert!(app.fixture().await.key.starts_with("sk_test_"));
/// }
///
/// async fn a_fast_outbox_still_starts(app: &TestApp) {
///     app.fixture().await;
/// }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! db_tests {
    (config = $configure:expr; $($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    if let Some(app) = $crate::TestApp::spawn_with($crate::Db::Sqlite, $configure).await {
                        super::$name(&app).await;
                        app.stop().await;
                    }
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(app) = $crate::TestApp::spawn_with($crate::Db::Postgres, $configure).await {
                        super::$name(&app).await;
                        app.stop().await;
                    }
                }
            }
        )*
    };
    ($($name:ident),* $(,)?) => {
        $crate::db_tests!(config = |_| {}; $($name),*);
    };
}
