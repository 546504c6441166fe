//! [`TestApp`]: the real server on port 0 over a [`FreshDb`], its fixtures,
//! and the request helpers tests share.

use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};
use shipment_server::Environment;
use shipment_server::Store;
use shipment_server::{Application, Config, StartError};
use tokio::sync::oneshot;

use crate::{Db, FreshDb};

/// A merchant with an API key, a courier company linked to it with a
/// courier key, and one driver: the cast of most tests. Every call of
/// [`TestApp::fixture`] makes a new, unrelated cast, so two fixtures are two
/// merchants who must not see each other's shipments.
///
/// The names are always the same: the merchant "Test Shop", its key "e2e",
/// the courier company "Swift Couriers" (5.00 + 1.50/kg + 0.10/km), the
/// driver "Ada".
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The merchant.
    pub merchant_id: i64,
    /// The merchant's staging API key (`sk_test_...`).
    pub key: String,
    /// The courier company linked to the merchant.
    pub courier_id: i64,
    /// The courier company's key (`ck_test_...`) for `/courier/...` routes.
    pub courier_key: String,
    /// A driver of that courier company.
    pub driver_id: i64,
    /// The merchant's dashboard e-mail (unique per fixture).
    pub email: String,
    /// The dashboard password, for fixtures made with
    /// [`TestApp::fixture_with_login`]; `None` means the merchant cannot
    /// sign in.
    pub password: Option<String>,
}

impl Fixture {
    /// The dashboard sign-in, `(email, password)`.
    ///
    /// # Panics
    ///
    /// For a fixture made with [`TestApp::fixture`], which has no password.
    #[track_caller]
    pub fn credentials(&self) -> (String, String) {
        let password = self
            .password
            .clone()
            .expect("a fixture made with fixture_with_login");
        (self.email.clone(), password)
    }
}

/// The reference server, running in this process on `127.0.0.1:<free
/// port>` with a database of its own. It trusts the test [`ca`](crate::ca)
/// for webhook targets and polls its outbox every 50 ms.
///
/// Stop it with [`TestApp::stop`]; if a test panics first, dropping it still
/// stops the server and drops a PostgreSQL database.
pub struct TestApp {
    /// `http://127.0.0.1:<port>/api/v1`.
    pub base: String,
    /// `http://127.0.0.1:<port>` (health checks, metrics, dashboard pages).
    pub root: String,
    /// The database it runs on (a second server may share it).
    pub database_url: String,
    /// The backend of that database.
    pub db: Db,
    /// The server's store, for fixtures and for checking what was written.
    pub store: Store,
    /// A plain HTTP client that ignores proxy settings.
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    fresh: Option<FreshDb>,
}

impl TestApp {
    /// Starts a server on a fresh database of `db`; `None` (after printing
    /// `SKIPPED (PostgreSQL)`) when PostgreSQL is asked for and
    /// `TEST_DATABASE_URL` is not set.
    pub async fn spawn(db: Db) -> Option<TestApp> {
        TestApp::spawn_with(db, |_| {}).await
    }

    /// Like [`TestApp::spawn`], with the configuration adjusted first (it
    /// starts as [`Config::local`]: port 0, private webhook targets allowed,
    /// a fresh data key; plus the test CA and a 50 ms outbox poll).
    ///
    /// # Panics
    ///
    /// When the server does not start.
    pub async fn spawn_with(db: Db, configure: impl FnOnce(&mut Config)) -> Option<TestApp> {
        TestApp::try_spawn_with(db, configure)
            .await
            .expect("the server starts")
    }

    /// Like [`TestApp::spawn_with`], with the reason when the server does
    /// not start (its database is removed then).
    pub(crate) async fn try_spawn_with(
        db: Db,
        configure: impl FnOnce(&mut Config),
    ) -> Result<Option<TestApp>, StartError> {
        // From here on, a panic or an error drops `fresh`, which removes
        // the database.
        let Some(fresh) = FreshDb::create(db).await else {
            return Ok(None);
        };
        let url = fresh.url.clone();
        let mut config = Config::local(&url);
        config.webhooks.webhook_ca_file = Some(crate::ca().pem_file.clone());
        config.webhooks.outbox_poll_ms = 50;
        configure(&mut config);
        let app = Application::build(&config).await?;
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
        Ok(Some(TestApp {
            base: format!("http://{addr}/api/v1"),
            root: format!("http://{addr}"),
            database_url: url,
            db,
            store,
            client: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("an HTTP client"),
            stop: Some(tx),
            server: Some(server),
            fresh: Some(fresh),
        }))
    }

    /// Stops the server (finishing in-flight requests and deliveries) and
    /// removes its database.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        if let Some(fresh) = self.fresh.take() {
            fresh.drop_database().await;
        }
    }

    /// A new merchant with a key, a linked courier with a key, and a driver;
    /// the merchant cannot sign in to the dashboard.
    pub async fn fixture(&self) -> Fixture {
        let email = format!("m-{}@example.com", uuid::Uuid::new_v4().simple());
        self.fixture_for(email, None).await
    }

    /// Like [`TestApp::fixture`], with a dashboard password (in
    /// [`Fixture::password`]; [`Fixture::credentials`] gives both) so the
    /// merchant can sign in.
    pub async fn fixture_with_login(&self) -> Fixture {
        let email = format!("login-{}@example.com", uuid::Uuid::new_v4().simple());
        self.fixture_for(email, Some("correct horse battery".to_owned()))
            .await
    }

    async fn fixture_for(&self, email: String, password: Option<String>) -> Fixture {
        let s = &self.store;
        let hash = match &password {
            Some(p) => shipment_server::harness::hash_password(p.clone())
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
            merchant_id: merchant_id.get(),
            key: key.key.expose().to_owned(),
            courier_id: courier_id.get(),
            courier_key: courier_key.key.expose().to_owned(),
            driver_id: driver.id,
            email,
            password,
        }
    }

    /// Signs in to the dashboard API and returns the Bearer token; panics
    /// unless the answer is 200.
    pub async fn login(&self, email: &str, password: &str) -> String {
        let (status, body) = send(
            self.client
                .post(format!("{}/auth/login", self.base))
                .json(&json!({"email": email, "password": password})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["token"]
            .as_str()
            .expect("a token in the answer")
            .to_owned()
    }

    /// An SDK client for `api_key` against this server, with short
    /// back-offs so retry paths do not slow tests down.
    pub fn sdk(&self, api_key: &str) -> shipment_sdk::Client {
        shipment_sdk::Client::builder()
            .api_key(api_key)
            .base_url(&self.base)
            .timeout(Duration::from_secs(30))
            .retry_backoff(Duration::from_millis(10), Duration::from_millis(100))
            .build()
            .expect("an SDK client")
    }

    /// A request to `path` under `/api/v1` with a dashboard Bearer token.
    pub fn bearer(&self, method: Method, path: &str, token: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token)
    }

    /// A request to `path` under `/api/v1` with `key` as `X-API-KEY` (a
    /// merchant key or a courier key).
    pub fn req(&self, method: Method, path: &str, key: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .header("X-API-KEY", key)
    }

    /// Creates a shipment for the fixture's merchant (`body` as given) and
    /// returns it; panics unless the answer is 201.
    pub async fn create(&self, f: &Fixture, body: Value) -> Value {
        let (status, json) = send(self.req(Method::POST, "/shipments", &f.key).json(&body)).await;
        assert_eq!(status, StatusCode::CREATED, "create: {json}");
        json
    }

    /// A minimal shipment of the fixture's courier.
    pub async fn create_default(&self, f: &Fixture) -> Value {
        self.create(f, json!({"courier_company_id": f.courier_id}))
            .await
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

    /// Like [`TestApp::courier_op`], and panics unless it succeeds; returns
    /// the shipment.
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
    /// # Panics
    ///
    /// On an unknown target or a refused step.
    pub async fn advance(&self, f: &Fixture, code: &str, target: &str) -> Value {
        let steps: &[&str] = match target {
            "assigned_to_courier" => &[],
            "assigned_to_driver" => &["assign-driver"],
            "in_transit" => &["assign-driver", "pickup"],
            "delivered" => &["assign-driver", "pickup", "deliver"],
            "failed" => &["assign-driver", "pickup", "fail"],
            "returned" => &["assign-driver", "pickup", "fail", "return"],
            "cancelled" => {
                let got =
                    send(self.req(Method::POST, &format!("/shipments/{code}/cancel"), &f.key))
                        .await;
                assert_eq!(got.0, StatusCode::OK, "cancel {code}: {}", got.1);
                return got.1;
            }
            other => panic!("advance: no route to `{other}`"),
        };
        let mut last = send(self.req(Method::GET, &format!("/shipments/{code}"), &f.key))
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

impl Drop for TestApp {
    /// The path of a test that panicked before [`TestApp::stop`]: stop
    /// serving; the database goes with the [`FreshDb`] dropped after this.
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Sends a request and returns its status and JSON body (`Null` when empty,
/// a JSON string when not JSON).
///
/// # Panics
///
/// When the server does not answer.
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

/// Asserts that an answer of [`send`] is an RFC 9457 problem with `status`
/// and `code` (and a request id), and returns its body.
#[track_caller]
pub fn assert_problem(got: &(StatusCode, Value), status: u16, code: &str) -> Value {
    assert_eq!(got.0.as_u16(), status, "{}", got.1);
    assert_eq!(got.1["code"], code, "{}", got.1);
    assert_eq!(got.1["status"], status);
    assert_eq!(got.1["type"], "about:blank");
    assert!(got.1["request_id"].is_string(), "{}", got.1);
    got.1.clone()
}
