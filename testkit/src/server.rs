//! [`TestServer`]: the reference server for a merchant's own integration
//! tests, started with declared fixtures and its test controls on.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::{ApiKey, CreateApiKey, CreateShipment, NewApiKey, Shipment, Status};
use shipment_sdk::{Client, DashboardClient};

use shipment_server::StartError;

use crate::fixtures::Fixtures;
use crate::{Db, TestApp, TestMerchant, WebhookInbox, WebhookReceiver};

/// The real `shipment-server`, in this process on `127.0.0.1:<free port>`,
/// on a fresh database (SQLite in a temporary directory; a PostgreSQL
/// database of its own when `TEST_DATABASE_URL` names a server), with the
/// [`Fixtures`] it was started with and its test controls
/// (`--test-controls`) on. It trusts the test [`ca`](crate::ca) for webhook
/// targets, so [`webhook_inbox`](Self::webhook_inbox) receives real signed
/// HTTPS deliveries. Dropping it stops it and removes its database.
///
/// ```no_run
/// # async fn run() {
/// use shipment_sdk::model::Status;
/// use shipment_testkit::TestServer;
///
/// let server = TestServer::start().await;
/// let mut inbox = server.webhook_inbox().await;
/// let shipment = server.create_shipment().await;
/// server.advance(&shipment.code, Status::Delivered).await;
/// let delivered = inbox.wait_for(&shipment.code, Status::Delivered).await;
/// assert_eq!(delivered.shipment.version, 4); // created, driver, pickup, delivered
/// # }
/// ```
pub struct TestServer {
    app: TestApp,
    fixtures: Fixtures,
    _fixtures_file: tempfile::TempDir,
}

/// How a [`TestServer`] starts; from [`TestServer::builder`].
#[derive(Debug, Default)]
pub struct TestServerBuilder {
    fixtures: Option<Fixtures>,
    db: Option<Db>,
}

impl TestServerBuilder {
    /// Starts with these fixtures instead of [`Fixtures::default`].
    pub fn fixtures(mut self, fixtures: Fixtures) -> Self {
        self.fixtures = Some(fixtures);
        self
    }

    /// Starts with the fixtures file at `path` (the format of
    /// `shipment-server serve --fixtures`), e.g. the `ci.toml` of a CI job
    /// ([`Fixtures::from_file`]): the server reads it as written, and every
    /// message names `path` and its lines.
    ///
    /// # Panics
    ///
    /// When the file cannot be read or the server would refuse it (an
    /// unknown field, a malformed key, ...), with the server's message.
    ///
    /// ```no_run
    /// # async fn run() {
    /// let server = shipment_testkit::TestServer::builder()
    ///     .fixtures_file("ci.toml")
    ///     .start()
    ///     .await;
    /// # }
    /// ```
    pub fn fixtures_file(self, path: impl AsRef<std::path::Path>) -> Self {
        match Fixtures::from_file(path) {
            Ok(fixtures) => self.fixtures(fixtures),
            Err(e) => panic!("{e}"),
        }
    }

    /// Starts with the fixtures of a fixtures file's text
    /// ([`Fixtures::from_toml`]); [`fixtures_file`](Self::fixtures_file)
    /// names the file in messages, which a text cannot.
    ///
    /// # Panics
    ///
    /// When the server would refuse the text, with the server's message.
    pub fn fixtures_toml(self, text: &str) -> Self {
        match Fixtures::from_toml(text) {
            Ok(fixtures) => self.fixtures(fixtures),
            Err(e) => panic!("{e}"),
        }
    }

    /// Runs on this database instead of the one the environment picks
    /// (`TEST_DATABASE_URL` set: PostgreSQL; otherwise SQLite).
    pub fn database(mut self, db: Db) -> Self {
        self.db = Some(db);
        self
    }

    /// Starts the server.
    ///
    /// # Panics
    ///
    /// When it cannot start (a fixture the server refuses, PostgreSQL asked
    /// for without `TEST_DATABASE_URL`, ...). A fixtures message names the
    /// merchant's file (or "fixtures built in code") and its lines, never
    /// the kit's temporary copy.
    pub async fn start(self) -> TestServer {
        let fixtures = self.fixtures.unwrap_or_default();
        let db = self.db.unwrap_or_else(Db::from_env);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let file = dir.path().join("fixtures.toml");
        // The text as read (or as built): the server's lines are the file's.
        std::fs::write(&file, fixtures.to_toml()).expect("write the fixtures file");
        let started = TestApp::try_spawn_with(db, |c| {
            c.fixtures = Some(file.clone());
            c.test_controls = true;
        })
        .await;
        let app = match started {
            Ok(Some(app)) => app,
            Ok(None) => panic!("PostgreSQL needs TEST_DATABASE_URL"),
            Err(StartError::Fixtures(e)) => {
                // The server names the file it read: the kit's copy.
                let copy = file.display().to_string();
                panic!("{}", e.to_string().replace(&copy, fixtures.source_name()))
            }
            Err(e) => panic!("the server starts: {e}"),
        };
        TestServer {
            app,
            fixtures,
            _fixtures_file: dir,
        }
    }
}

impl TestServer {
    /// A server with [`Fixtures::default`], on the database the environment
    /// picks.
    ///
    /// # Panics
    ///
    /// When it cannot start.
    pub async fn start() -> TestServer {
        TestServer::builder().start().await
    }

    /// Chooses fixtures or the database before starting.
    ///
    /// ```no_run
    /// # async fn run() {
    /// use shipment_testkit::{CourierFixture, Fixtures, MerchantFixture, TestServer};
    /// let server = TestServer::builder()
    ///     .fixtures(
    ///         Fixtures::empty()
    ///             .courier(CourierFixture::new("Slow Couriers").driver("Eli"))
    ///             .merchant(MerchantFixture::new("Acme", "dev@acme.test").courier("Slow Couriers")),
    ///     )
    ///     .start()
    ///     .await;
    /// # }
    /// ```
    pub fn builder() -> TestServerBuilder {
        TestServerBuilder::default()
    }

    /// `http://127.0.0.1:<port>/api/v1`, the base URL for any client.
    pub fn base_url(&self) -> &str {
        &self.app.base
    }

    /// `http://127.0.0.1:<port>`, the server's root, for what is not under
    /// the API: `/readyz`, `/healthz`, `/metrics`, the dashboard pages.
    pub fn root_url(&self) -> &str {
        &self.app.root
    }

    /// A fresh merchant for one test (`POST /testing/merchants`, asked with
    /// the first merchant's key): its own key, sign-in, courier companies
    /// of its own priced as the first merchant's, a courier key and a driver,
    /// and a verified webhook inbox of its own. Tests that share one
    /// server each take one and see only their own shipments, deliveries,
    /// faults and listener events.
    ///
    /// ```no_run
    /// # async fn run() {
    /// use shipment_sdk::model::{CreateShipment, Status};
    /// use shipment_testkit::TestServer;
    ///
    /// let server = TestServer::start().await;
    /// let mut merchant = server.new_merchant().await;
    /// let courier = merchant.courier_company_ids[0];
    /// let shipment = merchant.sdk().shipments().create(&CreateShipment::new(courier))
    ///     .send().await.unwrap().into_inner();
    /// merchant.advance(&shipment.code, Status::Delivered).await;
    /// merchant.inbox().wait_for(&shipment.code, Status::Delivered).await;
    /// let removed = merchant.delete().await;
    /// assert_eq!(removed["shipments"], 1);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When the fixtures have no merchant with a key, or the server
    /// refuses.
    pub async fn new_merchant(&self) -> TestMerchant {
        let receiver = WebhookReceiver::start(StatusCode::OK, Duration::ZERO).await;
        TestMerchant::create(
            &self.app.base,
            &self.app.client,
            self.api_key(),
            receiver,
            |key| self.app.sdk(key),
        )
        .await
    }

    /// The fixtures it started with (their keys and passwords).
    pub fn fixtures(&self) -> &Fixtures {
        &self.fixtures
    }

    /// The first merchant's first API key.
    ///
    /// # Panics
    ///
    /// When the fixtures have no merchant with a key.
    pub fn api_key(&self) -> &str {
        self.fixtures
            .merchants()
            .first()
            .and_then(|m| m.api_key_values().first())
            .expect("a merchant with an API key in the fixtures")
    }

    /// An SDK client of the first merchant, with short retry back-offs.
    pub fn sdk(&self) -> Client {
        self.app.sdk(self.api_key())
    }

    /// The first merchant signed in to the dashboard API.
    ///
    /// # Panics
    ///
    /// When the fixtures have no merchant or the sign-in fails.
    pub async fn dashboard(&self) -> DashboardClient {
        let merchant = self
            .fixtures
            .merchants()
            .first()
            .expect("a merchant in the fixtures");
        DashboardClient::builder()
            .base_url(self.base_url())
            .login(merchant.email(), merchant.password_value())
            .await
            .expect("the merchant signs in")
    }

    /// A shipment of the first merchant with its first linked courier
    /// company, made through the SDK.
    ///
    /// # Panics
    ///
    /// When the merchant has no linked courier or the create fails.
    pub async fn create_shipment(&self) -> Shipment {
        let sdk = self.sdk();
        let courier = sdk
            .couriers()
            .list()
            .await
            .expect("the linked couriers")
            .into_iter()
            .next()
            .expect("a courier company linked to the merchant");
        sdk.shipments()
            .create(&CreateShipment::new(courier.id).description("from the test kit"))
            .send()
            .await
            .expect("a shipment")
            .into_inner()
    }

    /// Moves the shipment `code` through the real lifecycle to `to`, each
    /// step a real change with its deliveries
    /// (`POST /testing/shipments/{code}/advance`), and returns it.
    ///
    /// # Panics
    ///
    /// When the server refuses (`to` is not reachable from where it is).
    pub async fn advance(&self, code: impl AsRef<str>, to: Status) -> Shipment {
        let path = format!("/testing/shipments/{}/advance", code.as_ref());
        let body = self
            .control(Method::POST, &path, json!({ "to": to.as_str() }))
            .await;
        serde_json::from_value(body).expect("a shipment")
    }

    /// Arms a fault on the first merchant's next matching requests
    /// (`POST /testing/faults`).
    ///
    /// # Panics
    ///
    /// When the server refuses the fault.
    pub async fn fault(&self, fault: Fault) {
        self.control(Method::POST, "/testing/faults", fault.body)
            .await;
    }

    /// Disarms every fault of the first merchant (`DELETE /testing/faults`).
    pub async fn clear_faults(&self) {
        self.control(Method::DELETE, "/testing/faults", Value::Null)
            .await;
    }

    /// Sends each of the next `times` deliveries to the first merchant's
    /// webhooks twice, byte for byte, with the same delivery id
    /// (`POST /testing/webhooks/duplicates`).
    pub async fn duplicate_deliveries(&self, times: u32) {
        self.control(
            Method::POST,
            "/testing/webhooks/duplicates",
            json!({ "times": times }),
        )
        .await;
    }

    /// Registers a new HTTPS receiver in this process as a webhook of the
    /// first merchant, and returns its inbox: every delivery verified with
    /// the webhook's signing key.
    ///
    /// # Panics
    ///
    /// When the registration fails.
    pub async fn webhook_inbox(&self) -> WebhookInbox {
        let receiver = WebhookReceiver::start(StatusCode::OK, Duration::ZERO).await;
        let registered = self
            .dashboard()
            .await
            .webhooks()
            .register(&receiver.url)
            .await
            .expect("the receiver is registered");
        WebhookInbox::new(receiver, registered.signing_key.expose())
    }

    /// A new API key of the first merchant, made through the dashboard as
    /// `key` describes it: with [`permissions`](CreateApiKey::permissions),
    /// a restricted key (`rk_test_`), with
    /// [`expires_at`](CreateApiKey::expires_at), one that expires. The
    /// answer holds the key.
    ///
    /// ```no_run
    /// # async fn run() {
    /// use shipment_sdk::model::{CreateApiKey, Permissions};
    /// use shipment_testkit::TestServer;
    ///
    /// let server = TestServer::start().await;
    /// let support = server
    ///     .create_api_key(&CreateApiKey {
    ///         name: Some("support".into()),
    ///         permissions: Some(Permissions::read_only()),
    ///         ..CreateApiKey::default()
    ///     })
    ///     .await;
    /// let client = server.sdk_with(support.key.expose());
    /// let err = client.shipments().cancel("SHP-7K3M-Q9ZX").await.unwrap_err();
    /// assert_eq!(err.required_permission(), Some("shipments: write"));
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When the fixtures have no merchant, or the server refuses (an
    /// `expires_at` in the past or more than 366 days ahead, a level the
    /// resource does not have).
    pub async fn create_api_key(&self, key: &CreateApiKey) -> NewApiKey {
        self.dashboard()
            .await
            .api_keys()
            .create_with(key)
            .await
            .expect("the server makes the key")
    }

    /// An SDK client with `api_key` (a key of the fixtures, or one made by
    /// [`create_api_key`](Self::create_api_key)), with short retry
    /// back-offs, as [`sdk`](Self::sdk).
    pub fn sdk_with(&self, api_key: &str) -> Client {
        self.app.sdk(api_key)
    }

    /// Makes the API key `api_key` expire now
    /// (`POST /testing/api-keys/{id}/expire`): from then on every process
    /// of the service refuses it with 401 `api_key_expired`, so a test can
    /// see what its code does then without waiting. Returns the key as
    /// the dashboard lists it ([`expired`](ApiKey::expired) true).
    ///
    /// The key must be one of the first merchant's; the control is asked
    /// with the first merchant's first key, which must be allowed the test
    /// controls (a full key, or one with `testing: write`).
    ///
    /// ```no_run
    /// # async fn run() {
    /// use shipment_testkit::TestServer;
    ///
    /// let server = TestServer::start().await;
    /// let expired = server.expire_api_key(server.api_key()).await;
    /// assert!(expired.expired);
    /// let err = server.sdk().couriers().list().await.unwrap_err();
    /// assert!(err.is_key_expired());
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When `api_key` is not a working key of the first merchant (unknown,
    /// deleted, expired already), or the server refuses.
    pub async fn expire_api_key(&self, api_key: &str) -> ApiKey {
        let id = crate::merchant::key_id(&self.app.base, &self.app.client, api_key).await;
        let path = format!("/testing/api-keys/{}/expire", id.get());
        let answer = self.control(Method::POST, &path, Value::Null).await;
        serde_json::from_value(answer).expect("the key as listed")
    }

    /// Stops the server (finishing in-flight requests and deliveries) and
    /// removes its database; dropping it does the same without waiting.
    pub async fn stop(self) {
        self.app.stop().await;
    }

    /// A test-control call with the first merchant's key; the answer's
    /// JSON (null when empty).
    async fn control(&self, method: Method, path: &str, body: Value) -> Value {
        let mut request = self.app.req(method, path, self.api_key());
        if !body.is_null() {
            request = request.json(&body);
        }
        let (status, answer) = crate::send(request).await;
        assert!(status.is_success(), "{path}: {status} {answer}");
        answer
    }
}

/// A fault to arm with [`TestServer::fault`]: what the next matching
/// requests of the merchant get instead of their answer.
///
/// ```
/// use shipment_testkit::Fault;
/// // The next two creates are 503 with Retry-After: 1.
/// let fault = Fault::status("POST", "/shipments", 503).retry_after(1).times(2);
/// ```
#[derive(Debug, Clone)]
pub struct Fault {
    body: Value,
}

impl Fault {
    fn new(method: &str, path: &str, kind: &Value) -> Fault {
        let mut body = json!({ "method": method, "path": path, "times": 1 });
        if let (Some(body), Some(kind)) = (body.as_object_mut(), kind.as_object()) {
            body.extend(kind.clone());
        }
        Fault { body }
    }

    /// Answers `status` (429, 500, 502, 503 or 504) with a problem body
    /// instead of running the request. `path` is a route template
    /// (`/shipments/{code}`) or a concrete path, under `/api/v1`.
    pub fn status(method: &str, path: &str, status: u16) -> Fault {
        Fault::new(method, path, &json!({ "status": status }))
    }

    /// Runs the request after `delay`.
    pub fn delay(method: &str, path: &str, delay: Duration) -> Fault {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        Fault::new(method, path, &json!({ "delay_ms": ms }))
    }

    /// Closes the connection without an answer, before the request runs.
    ///
    /// The SDK sends an idempotent call (every read, and every create,
    /// which carries an `Idempotency-Key`) again after a dropped
    /// connection, within its `max_retries`, so a test that drops one
    /// attempt sees the call succeed on the retry (one shipment made);
    /// other changes (cancel, rate, the dashboard's) are sent once and fail
    /// with a retryable `Error::Transport`. Drop more attempts than the
    /// retries allow (`.times(n)`) to see the failure through the SDK.
    ///
    /// ```
    /// use shipment_testkit::Fault;
    /// // The next create's connection closes; the SDK's retry creates it.
    /// let fault = Fault::drop_connection("POST", "/shipments");
    /// ```
    pub fn drop_connection(method: &str, path: &str) -> Fault {
        Fault::new(method, path, &json!({ "drop_connection": true }))
    }

    /// With a status fault: send `Retry-After: secs`.
    pub fn retry_after(mut self, secs: u64) -> Fault {
        self.body["retry_after"] = json!(secs);
        self
    }

    /// How many matching requests it hits (default 1).
    pub fn times(mut self, times: u32) -> Fault {
        self.body["times"] = json!(times);
        self
    }
}
