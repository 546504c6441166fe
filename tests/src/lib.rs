//! End-to-end test harness: the real reference server, in process, on a
//! free port and a fresh database per test, for tests of the SDK, `shipctl`
//! and the dashboard.
//!
//! SQLite (in a temporary directory) always works; PostgreSQL is used when
//! `TEST_DATABASE_URL` names a server whose user may create databases (each
//! test gets its own, dropped when the test ends, even on failure).
//!
//! ```no_run
//! # async fn run() {
//! use e2e::{Db, TestServer};
//! let Some(server) = TestServer::start(Db::Sqlite).await else { return };
//! let f = server.fixture().await;
//! let client = server.sdk(&f.api_key);
//! let created = client
//!     .shipments()
//!     .create(&shipment_sdk::model::CreateShipment::new(f.courier_id))
//!     .await
//!     .unwrap();
//! server.advance(&f, &created.code, "delivered").await;
//! server.stop().await;
//! # }
//! ```
//!
//! [`db_tests!`] turns `async fn name(server: &TestServer)` into two tests,
//! `name::sqlite` and `name::postgres`. The calling crate needs `tokio`
//! with the `macros` and `rt-multi-thread` features.
#![warn(missing_docs)]

use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};
use shipment_server::domain::keys::Environment;
use shipment_server::store::Store;
use shipment_server::{Application, Config};
use tokio::sync::oneshot;

pub use shipment_server;

/// The environment variable naming the PostgreSQL server for tests.
pub const TEST_DATABASE_URL: &str = "TEST_DATABASE_URL";

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    /// A SQLite file in a temporary directory.
    Sqlite,
    /// A database of its own on the server named by `TEST_DATABASE_URL`.
    Postgres,
}

/// Runs each named `async fn(&TestServer)` once per backend:
/// `db_tests!(creates_a_shipment)` makes `creates_a_shipment::sqlite` and
/// `creates_a_shipment::postgres` (which prints `SKIPPED (PostgreSQL)` and
/// passes when `TEST_DATABASE_URL` is not set).
#[macro_export]
macro_rules! db_tests {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    if let Some(server) = $crate::TestServer::start($crate::Db::Sqlite).await {
                        super::$name(&server).await;
                        server.stop().await;
                    }
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(server) = $crate::TestServer::start($crate::Db::Postgres).await {
                        super::$name(&server).await;
                        server.stop().await;
                    }
                }
            }
        )*
    };
}

/// A merchant with an API key, a courier company linked to it with a
/// courier key, and one driver: the cast of most tests. Every call of
/// [`TestServer::fixture`] makes a new, unrelated cast, so two fixtures are
/// two merchants who must not see each other's shipments.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The merchant.
    pub merchant_id: i64,
    /// The merchant's staging API key (`sk_test_...`).
    pub api_key: String,
    /// The courier company linked to the merchant.
    pub courier_id: i64,
    /// The courier company's key (`ck_test_...`) for `/courier/...` routes.
    pub courier_key: String,
    /// A driver of that courier company.
    pub driver_id: i64,
    /// The merchant's dashboard e-mail.
    pub email: String,
    /// The dashboard password, for fixtures made with
    /// [`TestServer::fixture_with_login`].
    pub password: Option<String>,
}

/// The reference server, running in this process on `127.0.0.1:<free
/// port>` with a database of its own. Stop it with [`TestServer::stop`];
/// if a test panics first, dropping it still stops the server and drops a
/// PostgreSQL database.
pub struct TestServer {
    /// `http://127.0.0.1:<port>/api/v1`.
    pub base_url: String,
    /// `http://127.0.0.1:<port>` (health checks, dashboard pages).
    pub root_url: String,
    /// The server's store, for fixtures and for checking what was written.
    pub store: Store,
    /// A plain HTTP client that ignores proxy settings.
    pub http: reqwest::Client,
    /// The backend this server runs on.
    pub db: Db,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    guard: DbGuard,
}

/// Removes the test database when dropped, also when a test panics.
struct DbGuard(Option<Cleanup>);

enum Cleanup {
    /// Deleted with the directory when dropped.
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres {
        admin_url: String,
        name: String,
    },
}

impl TestServer {
    /// Starts a server on a fresh database of `db`; `None` (after printing
    /// `SKIPPED (PostgreSQL)`) when PostgreSQL is asked for and
    /// `TEST_DATABASE_URL` is not set.
    pub async fn start(db: Db) -> Option<TestServer> {
        TestServer::start_with(db, |_| {}).await
    }

    /// Like [`TestServer::start`], adjusting the configuration first (the
    /// defaults are [`Config::local`]: port 0, private webhook targets
    /// allowed, a fresh data key).
    pub async fn start_with(db: Db, configure: impl FnOnce(&mut Config)) -> Option<TestServer> {
        let (url, cleanup) = match db {
            Db::Sqlite => {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let url = format!("sqlite://{}", dir.path().join("e2e.db").display());
                (url, Cleanup::Sqlite(dir))
            }
            Db::Postgres => {
                let Ok(admin_url) = std::env::var(TEST_DATABASE_URL) else {
                    eprintln!("SKIPPED (PostgreSQL): {TEST_DATABASE_URL} is not set");
                    return None;
                };
                let name = format!("shipments_e2e_{}", uuid::Uuid::new_v4().simple());
                admin_sql(&admin_url, &format!("CREATE DATABASE {name}")).await;
                let url = with_database(&admin_url, &name);
                (url, Cleanup::Postgres { admin_url, name })
            }
        };
        // From here on, a panic drops `guard`, which removes the database.
        let guard = DbGuard(Some(cleanup));
        let mut config = Config::local(&url);
        config.webhooks.outbox_poll_ms = 50;
        configure(&mut config);
        let app = Application::build(&config)
            .await
            .expect("the server starts");
        let addr = app.local_addr();
        let store = app.store().clone();
        let (tx, rx) = oneshot::channel();
        let server = tokio::spawn(async move {
            app.run_until(async {
                let _ = rx.await;
            })
            .await
            .expect("the server runs");
        });
        Some(TestServer {
            base_url: format!("http://{addr}/api/v1"),
            root_url: format!("http://{addr}"),
            store,
            http: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("an HTTP client"),
            db,
            stop: Some(tx),
            server: Some(server),
            guard,
        })
    }

    /// Stops the server (finishing in-flight requests) and removes its
    /// database.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        if let Some(Cleanup::Postgres { admin_url, name }) = self.guard.0.take() {
            admin_sql(
                &admin_url,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            )
            .await;
        }
    }

    /// A new merchant with a key, a linked courier with a key, and a driver.
    pub async fn fixture(&self) -> Fixture {
        let email = format!("m-{}@example.com", uuid::Uuid::new_v4().simple());
        self.fixture_for(email, None).await
    }

    /// Like [`TestServer::fixture`], with a dashboard password (in
    /// [`Fixture::password`]) so the merchant can sign in.
    pub async fn fixture_with_login(&self) -> Fixture {
        let email = format!("login-{}@example.com", uuid::Uuid::new_v4().simple());
        self.fixture_for(email, Some("correct horse battery".to_owned()))
            .await
    }

    async fn fixture_for(&self, email: String, password: Option<String>) -> Fixture {
        let s = &self.store;
        let hash = match &password {
            Some(p) => shipment_server::admin::hash_password(p.clone())
                .await
                .expect("hash the password"),
            None => "no password: this merchant cannot sign in".to_owned(),
        };
        let merchant_id = s
            .create_merchant("Test Shop", &email, &hash)
            .await
            .expect("create a merchant");
        let key = s
            .create_api_key(merchant_id, "e2e", Environment::Staging)
            .await
            .expect("create an API key");
        // 5.00 + 1.50/kg + 0.10/km.
        let courier_id = s
            .create_courier("Swift Couriers", 500, 150, 10)
            .await
            .expect("create a courier company");
        s.link_courier(merchant_id, courier_id)
            .await
            .expect("link the courier company");
        let courier_key = s
            .create_courier_key(courier_id, Environment::Staging)
            .await
            .expect("create a courier key");
        let driver = s
            .create_driver(courier_id, "Ada")
            .await
            .expect("create a driver");
        Fixture {
            merchant_id,
            api_key: key.key.expose().to_owned(),
            courier_id,
            courier_key: courier_key.key.expose().to_owned(),
            driver_id: driver.id,
            email,
            password,
        }
    }

    /// An SDK client for `api_key` against this server, with short
    /// back-offs so retry paths do not slow tests down.
    pub fn sdk(&self, api_key: &str) -> shipment_sdk::Client {
        shipment_sdk::Client::builder()
            .api_key(api_key)
            .base_url(&self.base_url)
            .timeout(Duration::from_secs(30))
            .retry_backoff(Duration::from_millis(10), Duration::from_millis(100))
            .build()
            .expect("an SDK client")
    }

    /// A request to `path` under `/api/v1` with `key` as `X-API-KEY` (a
    /// merchant key or a courier key).
    pub fn request(&self, method: Method, path: &str, key: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base_url))
            .header("X-API-KEY", key)
    }

    /// A request to `path` under `/api/v1` with a dashboard Bearer token.
    pub fn bearer(&self, method: Method, path: &str, token: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base_url))
            .bearer_auth(token)
    }

    /// Creates a shipment with plain HTTP (`body` as given) and returns it;
    /// panics unless the answer is 201.
    pub async fn create_shipment(&self, f: &Fixture, body: Value) -> Value {
        let got = send(
            self.request(Method::POST, "/shipments", &f.api_key)
                .json(&body),
        )
        .await;
        assert_eq!(got.0, StatusCode::CREATED, "create: {}", got.1);
        got.1
    }

    /// A courier-side operation (`assign-driver`, `unassign-driver`,
    /// `pickup`, `deliver`, `fail`, `return`) on `code` with the fixture's
    /// courier key; returns the status and body, whatever they are.
    pub async fn courier_op(
        &self,
        f: &Fixture,
        code: &str,
        op: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut r = self.request(
            Method::POST,
            &format!("/courier/shipments/{code}/{op}"),
            &f.courier_key,
        );
        if let Some(b) = body {
            r = r.json(&b);
        }
        send(r).await
    }

    /// Like [`TestServer::courier_op`], and panics unless it succeeds;
    /// returns the shipment.
    pub async fn courier_step(
        &self,
        f: &Fixture,
        code: &str,
        op: &str,
        body: Option<Value>,
    ) -> Value {
        let (status, json) = self.courier_op(f, code, op, body).await;
        assert_eq!(status, StatusCode::OK, "{op} {code}: {json}");
        json
    }

    /// Moves a new (`assigned_to_courier`) shipment to `target` the way the
    /// workflow would, and returns it as the last step answered:
    ///
    /// | target | steps |
    /// |---|---|
    /// | `assigned_to_courier` | none |
    /// | `assigned_to_driver` | assign the fixture's driver |
    /// | `in_transit` | ... then pick up |
    /// | `delivered` | ... then deliver (no confirmation code) |
    /// | `failed` | ... pick up, then fail with a reason |
    /// | `returned` | ... fail, then return |
    /// | `cancelled` | the merchant cancels |
    ///
    /// Panics on an unknown target or a refused step.
    pub async fn advance(&self, f: &Fixture, code: &str, target: &str) -> Value {
        let steps: &[&str] = match target {
            "assigned_to_courier" => &[],
            "assigned_to_driver" => &["assign-driver"],
            "in_transit" => &["assign-driver", "pickup"],
            "delivered" => &["assign-driver", "pickup", "deliver"],
            "failed" => &["assign-driver", "pickup", "fail"],
            "returned" => &["assign-driver", "pickup", "fail", "return"],
            "cancelled" => {
                let got = send(self.request(
                    Method::POST,
                    &format!("/shipments/{code}/cancel"),
                    &f.api_key,
                ))
                .await;
                assert_eq!(got.0, StatusCode::OK, "cancel {code}: {}", got.1);
                return got.1;
            }
            other => panic!("advance: no route to `{other}`"),
        };
        let mut last = send(self.request(Method::GET, &format!("/shipments/{code}"), &f.api_key))
            .await
            .1;
        for op in steps {
            let body = match *op {
                "assign-driver" => Some(json!({"driver_id": f.driver_id})),
                "fail" => Some(json!({"reason": "nobody home"})),
                _ => None,
            };
            last = self.courier_step(f, code, op, body).await;
        }
        assert_eq!(last["status"], target, "{last}");
        last
    }
}

impl Drop for TestServer {
    /// The path of a test that panicked: stop serving (the database goes
    /// with `DbGuard`).
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for DbGuard {
    fn drop(&mut self) {
        if let Some(Cleanup::Postgres { admin_url, name }) = self.0.take() {
            // Inside a runtime we cannot block on a future, so use a thread
            // with a runtime of its own.
            let _ = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                if let Ok(runtime) = runtime {
                    runtime.block_on(admin_sql(
                        &admin_url,
                        &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                    ));
                }
            })
            .join();
        }
    }
}

/// Runs one statement on the PostgreSQL server of `admin_url`.
async fn admin_sql(admin_url: &str, sql: &str) {
    let admin = sqlx::PgPool::connect(admin_url)
        .await
        .unwrap_or_else(|e| panic!("{TEST_DATABASE_URL} must be reachable: {e}"));
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&admin)
        .await
        .unwrap_or_else(|e| panic!("`{sql}` failed: {e}"));
    admin.close().await;
}

/// `url` with its database name replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let mut u = url::Url::parse(url).expect("TEST_DATABASE_URL is a URL");
    u.set_path(&format!("/{name}"));
    u.to_string()
}

/// Sends a request and returns its status and JSON body (`Null` when
/// empty, a JSON string when not JSON).
pub async fn send(r: RequestBuilder) -> (StatusCode, Value) {
    let response = r.send().await.expect("the server answers");
    let status = response.status();
    let text = response.text().await.expect("a readable body");
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, json)
}
