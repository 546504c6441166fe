//! Starting the real server on port 0 with a fresh database per test, on
//! SQLite always and on PostgreSQL when `TEST_DATABASE_URL` names a server.

use std::sync::Arc;

use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};
use shipment_server::domain::keys::Environment;
use shipment_server::store::Store;
use shipment_server::{Application, Config};
use tokio::sync::oneshot;

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// Runs a test body once per backend: `db_tests!(name, ...)` makes
/// `name::sqlite` and `name::postgres`; `db_tests!(config = |c| ...; name,
/// ...)` adjusts the configuration first, as [`TestApp::spawn_with`] does.
#[macro_export]
macro_rules! db_tests {
    (config = $configure:expr; $($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    if let Some(app) = $crate::helpers::TestApp::spawn_with($crate::helpers::Db::Sqlite, $configure).await {
                        super::$name(&app).await;
                        app.stop().await;
                    }
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(app) = $crate::helpers::TestApp::spawn_with($crate::helpers::Db::Postgres, $configure).await {
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

/// A merchant with a key and a linked courier company with a key and a
/// driver: the cast of most tests.
pub struct Fixture {
    pub merchant_id: i64,
    pub key: String,
    pub courier_id: i64,
    pub courier_key: String,
    pub driver_id: i64,
}

/// A running server and what is needed to talk to it.
pub struct TestApp {
    pub base: String,
    pub root: String,
    /// The database it runs on (a second server may share it).
    pub database_url: String,
    pub store: Store,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    cleanup: Option<Cleanup>,
}

/// A new, empty database: a SQLite file in a temporary directory, or a
/// uniquely named PostgreSQL database (dropped by [`FreshDb::drop_database`]).
pub struct FreshDb {
    pub url: String,
    cleanup: Option<Cleanup>,
}

impl FreshDb {
    /// `None` (with a note on stderr) for PostgreSQL without
    /// `TEST_DATABASE_URL`.
    pub async fn create(db: Db) -> Option<FreshDb> {
        let (url, cleanup) = match db {
            Db::Sqlite => {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let url = format!("sqlite://{}", dir.path().join("test.db").display());
                (url, Cleanup::Sqlite(Arc::new(dir)))
            }
            Db::Postgres => {
                let Ok(admin_url) = std::env::var("TEST_DATABASE_URL") else {
                    eprintln!("SKIPPED (PostgreSQL): TEST_DATABASE_URL is not set");
                    return None;
                };
                let name = format!("shipments_test_{}", uuid::Uuid::new_v4().simple());
                let admin = sqlx::PgPool::connect(&admin_url)
                    .await
                    .expect("TEST_DATABASE_URL must be reachable");
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&admin)
                    .await
                    .expect("create the test database");
                admin.close().await;
                let url = with_database(&admin_url, &name);
                (url, Cleanup::Postgres { admin_url, name })
            }
        };
        Some(FreshDb {
            url,
            cleanup: Some(cleanup),
        })
    }

    /// Drops a PostgreSQL database (a SQLite one goes with its directory).
    pub async fn drop_database(mut self) {
        if let Some(cleanup) = self.cleanup.take() {
            cleanup.run().await;
        }
    }
}

enum Cleanup {
    Sqlite(#[allow(dead_code)] Arc<tempfile::TempDir>),
    Postgres { admin_url: String, name: String },
}

impl Drop for FreshDb {
    fn drop(&mut self) {
        drop_in_background(self.cleanup.take());
    }
}

/// Drops a database from synchronous code (a `Drop`), on a thread with a
/// runtime of its own, since a future cannot be blocked on inside one.
fn drop_in_background(cleanup: Option<Cleanup>) {
    if let Some(cleanup) = cleanup {
        let _ = std::thread::spawn(move || {
            if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                runtime.block_on(cleanup.run());
            }
        })
        .join();
    }
}

/// A test that panicked never reaches `stop()`: drop its PostgreSQL
/// database anyway, so failed runs leave nothing behind on the server.
impl Drop for TestApp {
    fn drop(&mut self) {
        drop_in_background(self.cleanup.take());
    }
}

impl Cleanup {
    async fn run(self) {
        if let Cleanup::Postgres { admin_url, name } = self {
            let admin = sqlx::PgPool::connect(&admin_url).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
            )))
            .execute(&admin)
            .await
            .unwrap();
            admin.close().await;
        }
    }
}

impl TestApp {
    /// Starts a server on a fresh database; `None` (with a note on stderr)
    /// when PostgreSQL is asked for and `TEST_DATABASE_URL` is not set.
    pub async fn spawn(db: Db) -> Option<TestApp> {
        TestApp::spawn_with(db, |_| {}).await
    }

    /// Like [`TestApp::spawn`], with the configuration adjusted first.
    pub async fn spawn_with(db: Db, configure: impl FnOnce(&mut Config)) -> Option<TestApp> {
        let mut fresh = FreshDb::create(db).await?;
        let (url, cleanup) = (
            fresh.url.clone(),
            fresh.cleanup.take().expect("a new database"),
        );
        let mut config = Config::local(&url);
        config.request_timeout_secs = 30;
        config.webhooks.webhook_ca_file = Some(crate::receiver::ca().pem_file.clone());
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
        Some(TestApp {
            base: format!("http://{addr}/api/v1"),
            root: format!("http://{addr}"),
            database_url: url,
            store,

            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            stop: Some(tx),
            server: Some(server),
            cleanup: Some(cleanup),
        })
    }

    /// Stops the server and drops its database.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        if let Some(cleanup) = self.cleanup.take() {
            cleanup.run().await;
        }
    }

    /// A merchant with a key, a linked courier with a key and a driver.
    pub async fn fixture(&self) -> Fixture {
        let email = format!("m-{}@example.com", uuid::Uuid::new_v4().simple());
        self.fixture_for(&email, "not-a-real-hash").await
    }

    async fn fixture_for(&self, email: &str, password_hash: &str) -> Fixture {
        let s = &self.store;
        let merchant_id = s
            .create_merchant("Shop", email, password_hash)
            .await
            .unwrap();
        let key = s
            .create_api_key(merchant_id, "test", Environment::Staging)
            .await
            .unwrap();
        let courier_id = s.create_courier("Swift", 500, 150, 10).await.unwrap();
        s.link_courier(merchant_id, courier_id).await.unwrap();
        let courier_key = s
            .create_courier_key(courier_id, Environment::Staging)
            .await
            .unwrap();
        let driver = s.create_driver(courier_id, "Ada").await.unwrap();
        Fixture {
            merchant_id,
            key: key.key.expose().to_owned(),
            courier_id,
            courier_key: courier_key.key.expose().to_owned(),
            driver_id: driver.id,
        }
    }

    /// A merchant who can sign in to the dashboard with the returned
    /// (email, password), plus the usual fixture.
    pub async fn fixture_with_login(&self) -> (Fixture, String, String) {
        let email = format!("login-{}@example.com", uuid::Uuid::new_v4().simple());
        let password = "correct horse battery".to_owned();
        let hash = shipment_server::admin::hash_password(password.clone())
            .await
            .unwrap();
        let f = self.fixture_for(&email, &hash).await;
        (f, email, password)
    }

    /// Signs in and returns the Bearer token.
    pub async fn login(&self, email: &str, password: &str) -> String {
        let (status, body) = send(
            self.client
                .post(format!("{}/auth/login", self.base))
                .json(&json!({"email": email, "password": password})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["token"].as_str().unwrap().to_owned()
    }

    /// A request to `path` under `/api/v1` with a Bearer token.
    pub fn bearer(&self, method: Method, path: &str, token: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token)
    }

    /// A request to `path` under `/api/v1` with `key` as `X-API-KEY`.
    pub fn req(&self, method: Method, path: &str, key: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .header("X-API-KEY", key)
    }

    /// Creates a shipment for the fixture's merchant and returns it.
    pub async fn create(&self, f: &Fixture, body: Value) -> Value {
        let (status, json) = send(self.req(Method::POST, "/shipments", &f.key).json(&body)).await;
        assert_eq!(status, StatusCode::CREATED, "{json}");
        json
    }

    /// A minimal shipment of the fixture's courier.
    pub async fn create_default(&self, f: &Fixture) -> Value {
        self.create(f, json!({"courier_company_id": f.courier_id}))
            .await
    }

    /// A courier-side operation on `code`.
    pub async fn courier_op(
        &self,
        f: &Fixture,
        code: &str,
        op: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut r = self.req(
            Method::POST,
            &format!("/courier/shipments/{code}/{op}"),
            &f.courier_key,
        );
        if let Some(b) = body {
            r = r.json(&b);
        }
        send(r).await
    }
}

fn with_database(url: &str, name: &str) -> String {
    let mut u = url::Url::parse(url).expect("TEST_DATABASE_URL is a URL");
    u.set_path(&format!("/{name}"));
    u.to_string()
}

/// Sends a request and returns its status and JSON body (`Null` if empty).
pub async fn send(r: RequestBuilder) -> (StatusCode, Value) {
    let response = r.send().await.expect("the server answers");
    let status = response.status();
    let text = response.text().await.unwrap();
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, json)
}

/// Asserts a problem body's status and code, and returns the body.
#[track_caller]
pub fn assert_problem(got: &(StatusCode, Value), status: u16, code: &str) -> Value {
    assert_eq!(got.0.as_u16(), status, "{}", got.1);
    assert_eq!(got.1["code"], code, "{}", got.1);
    assert_eq!(got.1["status"], status);
    assert_eq!(got.1["type"], "about:blank");
    assert!(got.1["request_id"].is_string(), "{}", got.1);
    got.1.clone()
}
