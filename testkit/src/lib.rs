//! The reference server in-process, for tests: a free port, a fresh
//! database, and typed access to everything a merchant's integration tests
//! need.
//!
//! # For a merchant's tests: [`TestServer`]
//!
//! Add the kit as a dev-dependency (and tokio with `macros` and
//! `rt-multi-thread`):
//!
//! ```toml
//! [dev-dependencies]
//! shipment-testkit = "0.1"
//! ```
//!
//! [`TestServer::start`] runs the real `shipment-server` on
//! `127.0.0.1:<free port>`, on SQLite in a temporary directory (or a
//! PostgreSQL database of its own when `TEST_DATABASE_URL` names a server),
//! with declared [`Fixtures`] (a merchant with an API key and password, a
//! linked courier company with a driver, by default; any others from
//! code), and its test controls on:
//!
//! - [`TestServer::sdk`]: a ready [`shipment_sdk::Client`];
//! - [`TestServer::advance`]: a shipment moved through the real lifecycle
//!   to any reachable state, with every delivery on the way;
//! - [`TestServer::fault`]: the next matching requests answered 429/5xx,
//!   delayed, or cut off, to test retries and `Retry-After`;
//! - [`TestServer::duplicate_deliveries`]: deliveries sent twice, to prove a
//!   receiver de-duplicates;
//! - [`TestServer::webhook_inbox`]: an HTTPS receiver registered as a
//!   webhook, whose deliveries arrive verified with `webhook-verify`, in
//!   both schemes (`X-Service-Signature` and Standard Webhooks, whose
//!   `webhook-id` each [`Delivery`] names); its
//!   [`signing_key`](WebhookInbox::signing_key) lets your own webhook
//!   handler verify the same real deliveries;
//! - [`TestServer::new_merchant`]: a fresh merchant per test
//!   ([`TestMerchant`]), so tests sharing one server run in parallel
//!   without seeing each other's shipments or deliveries;
//! - [`TestServer::root_url`] beside [`TestServer::base_url`]: `/readyz`,
//!   `/metrics`.
//!
//! Every type of another crate in the kit's API is re-exported
//! ([`StatusCode`], [`HeaderMap`], [`Bytes`], [`reqwest`], [`serde_json`],
//! [`shipment_sdk`], [`webhook_verify`]), so your tests need not match
//! their versions.
//!
//! # Copy the workspace's profile settings
//!
//! Password hashing (argon2id at 19 MiB for every sign-in, and every
//! merchant [`TestServer::new_merchant`] makes), SHA-256 (every API key and
//! signature) and SQLite run unoptimised in a test build; the workspace
//! builds those few crates optimised (a merchant's suite ran 2.5 times
//! slower without it). Copy this into your `Cargo.toml` (a
//! `[profile.dev.package.*]` setting is read from the root manifest only);
//! name these crates rather than `"*"`, which optimises every dependency
//! and build script and makes a cold build far longer:
//!
//! ```toml
//! [profile.dev.package.argon2]
//! opt-level = 2
//! [profile.dev.package.blake2]
//! opt-level = 2
//! [profile.dev.package.sha2]
//! opt-level = 2
//! [profile.dev.package.rustls-pki-types]
//! opt-level = 2
//! [profile.dev.package.libsqlite3-sys]
//! opt-level = 1
//! ```
//!
//! Fixtures come from code ([`Fixtures::empty`] and its builders) or from
//! the fixtures file a CI job already uses
//! ([`TestServerBuilder::fixtures_file`], [`Fixtures::from_file`]). A file
//! is checked when it is read, as the server checks it: an unknown field
//! (`api_key` for `api_keys`), a malformed key or a name with a control
//! character is refused then, and it reaches the server exactly as written.
//! Every message names the merchant's file (or "fixtures built in code")
//! and its line, never a key, signing key or password of it.
//!
//! ```no_run
//! use shipment_sdk::model::Status;
//! use shipment_testkit::TestServer;
//!
//! #[tokio::test]
//! async fn my_integration_sees_a_delivery() {
//!     let server = TestServer::start().await;
//!     let mut inbox = server.webhook_inbox().await;
//!     let shipment = server.create_shipment().await; // or your code, with server.sdk()
//!     server.advance(&shipment.code, Status::Delivered).await;
//!     let seen = inbox.wait_for(&shipment.code, Status::Delivered).await;
//!     assert_eq!(seen.shipment.code, shipment.code);
//! }
//! # fn main() {}
//! ```
//!
//! # For this repository's own tests: [`TestApp`] and [`db_tests!`]
//!
//! [`TestApp`] is the same server with direct access to its store, the
//! fixtures most tests share ([`TestApp::fixture`]), and request helpers;
//! [`db_tests!`] runs one test body on SQLite and on PostgreSQL. The
//! server's API tests, `shipctl`'s and the end-to-end tests run on it.
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

/// The README's Rust example, compiled (not run) with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod app;
mod ca;
mod db;
mod fixtures;
mod inbox;
mod merchant;
mod receiver;
mod server;

pub use app::{Fixture, TestApp, assert_problem, send};
pub use ca::{LocalCa, ca};
pub use db::{Db, FreshDb, TEST_DATABASE_URL};
pub use fixtures::{
    ApiKeyFixture, BUILT_IN_CODE, CourierFixture, DEFAULT_COURIER, DEFAULT_PASSWORD, Fixtures,
    MerchantFixture, TOML_TEXT, new_signing_key,
};
pub use inbox::{DELIVERY_ID_HEADER, Delivery, WebhookInbox};
pub use merchant::TestMerchant;
pub use receiver::{Received, WAIT, WebhookReceiver};
pub use server::{Fault, TestServer, TestServerBuilder};
// The types of other crates that the kit's public API takes or gives, so a
// merchant's tests need not depend on (and match the versions of) `http`,
// `bytes`, `reqwest`, `serde_json` or the SDK themselves.
/// The bytes of a [`Received`] body.
pub use axum::body::Bytes;
/// HTTP types of [`WebhookReceiver::start`] and [`Received`].
pub use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
/// The HTTP client of [`TestApp`] (its `client`, `req`, `bearer`).
pub use reqwest;
/// The JSON values of [`TestApp`]'s helpers and [`TestMerchant::delete`].
pub use serde_json;
/// The SDK whose clients and models the kit gives ([`TestServer::sdk`]).
pub use shipment_sdk;
/// Why fixtures were refused: the server's own error, naming the file (or
/// what stands for it) and its lines.
pub use shipment_server::FixtureError;
/// The verifier of [`Received::verify`] and
/// [`WebhookReceiver::verify_with`] (both signature schemes), so your tests
/// check deliveries with the same version the kit does.
pub use webhook_verify;

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
///
/// Tests that start their servers (or only a database) themselves take
/// the backend instead, with `db;` first; the PostgreSQL one is skipped
/// (with `SKIPPED (PostgreSQL)`) without `TEST_DATABASE_URL`:
///
/// ```no_run
/// use shipment_testkit::{Db, FreshDb, db_tests};
///
/// db_tests!(db; a_fresh_database_opens);
///
/// async fn a_fresh_database_opens(db: Db) {
///     let fresh = FreshDb::create(db).await.expect("a database");
///     fresh.drop_database().await;
/// }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! db_tests {
    (db; $($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name($crate::Db::Sqlite).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if std::env::var_os($crate::TEST_DATABASE_URL).is_none() {
                        eprintln!("SKIPPED (PostgreSQL)");
                        return;
                    }
                    super::$name($crate::Db::Postgres).await;
                }
            }
        )*
    };
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
