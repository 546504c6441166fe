//! Redelivery (DESIGN §4): one delivery sent again, every failure since a
//! time, and a shipment's delivery history, over real HTTPS to a receiver
//! whose answer the test switches; and, with the dispatcher driven by hand,
//! the bulk limit, a redelivery whose webhook was deleted, at most one
//! waiting redelivery per change and webhook, and the per-merchant budget
//! of redelivered changes per minute (in one process and across two).

mod budget;
mod bulk;
mod history;
mod single;

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;
use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use shipment_server::harness::DataKey;
use shipment_server::harness::{DispatchSettings, Dispatcher};

use shipment_testkit::{Db, Fixture, TestApp, WAIT, ca, send};

use crate::signed_in_webhook;

/// What the switchable receiver got: headers and the body, byte for byte.
#[derive(Debug, Clone)]
struct Got {
    headers: HeaderMap,
    body: Bytes,
}

#[derive(Clone)]
struct Shared {
    got: Arc<Mutex<Vec<Got>>>,
    status: Arc<AtomicU16>,
}

/// An HTTPS receiver (certificate from the test kit's CA, which the test
/// servers trust) whose answer can be changed while it runs: failures
/// first, success after, as a receiver that was down and came back.
struct Switchable {
    url: String,
    shared: Shared,
    handle: axum_server::Handle<std::net::SocketAddr>,
}

impl Switchable {
    async fn start(status: u16) -> Switchable {
        let (cert, key) = ca().leaf();
        let tls = RustlsConfig::from_pem(cert.into_bytes(), key.into_bytes())
            .await
            .unwrap();
        let shared = Shared {
            got: Arc::default(),
            status: Arc::new(AtomicU16::new(status)),
        };
        let app = Router::new()
            .route("/hook", post(record))
            .with_state(shared.clone());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = axum_server::Handle::new();
        let server = axum_server::from_tcp_rustls(listener, tls)
            .unwrap()
            .handle(handle.clone());
        tokio::spawn(async move {
            let _ = server.serve(app.into_make_service()).await;
        });
        Switchable {
            url: format!("https://localhost:{port}/hook"),
            shared,
            handle,
        }
    }

    fn answer(&self, status: u16) {
        self.shared.status.store(status, Ordering::SeqCst);
    }

    fn received(&self) -> Vec<Got> {
        self.shared
            .got
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until `n` requests have arrived; returns them all.
    async fn wait_for(&self, n: usize) -> Vec<Got> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "expected {n} deliveries, got {}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Switchable {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

async fn record(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> AxumStatus {
    shared
        .got
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Got { headers, body });
    AxumStatus::from_u16(shared.status.load(Ordering::SeqCst)).unwrap()
}

fn header<'a>(got: &'a Got, name: &str) -> &'a str {
    got.headers[name].to_str().unwrap()
}

fn version_of(got: &Got) -> i64 {
    serde_json::from_slice::<Value>(&got.body).unwrap()["version"]
        .as_i64()
        .unwrap()
}

/// A signed-in merchant with a webhook at `url`: (fixture, token, webhook
/// id, signing key).
async fn merchant_with_webhook(app: &TestApp, url: &str) -> (Fixture, String, i64, String) {
    let f = app.fixture_with_login().await;
    let (token, id, key) = signed_in_webhook(app, &f, url).await;
    (f, token, id, key)
}

/// The webhook's delivery log (newest first) once it has `n` entries.
async fn log_of(app: &TestApp, token: &str, hook: i64, n: usize) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (status, log) = send(app.bearer(
            Method::GET,
            &format!("/webhooks/{hook}/deliveries?page_size=100"),
            token,
        ))
        .await;
        assert_eq!(status, StatusCode::OK, "{log}");
        let data = log["data"].as_array().unwrap().clone();
        if data.len() >= n {
            return data;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the log never reached {n} entries: {log}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn redeliver(app: &TestApp, token: &str, hook: i64, delivery: i64) -> (StatusCode, Value) {
    send(app.bearer(
        Method::POST,
        &format!("/webhooks/{hook}/deliveries/{delivery}/redeliver"),
        token,
    ))
    .await
}

async fn redeliver_failures(
    app: &TestApp,
    token: &str,
    hook: i64,
    body: Value,
) -> (StatusCode, Value) {
    send(
        app.bearer(Method::POST, &format!("/webhooks/{hook}/redeliver"), token)
            .json(&body),
    )
    .await
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn code_of(shipment: &Value) -> String {
    shipment["code"].as_str().unwrap().to_owned()
}

/// A snapshot of a problem body, its request id redacted. insta looks for
/// it beside the file its macro is called in, this one, in
/// `tests/api/redelivery/`: `snapshot_path` leads it back to
/// `tests/api/snapshots/`, where these snapshots are, under the same names.
fn snapshot(name: &str, body: &Value) {
    insta::with_settings!({
        prepend_module_to_snapshot => false,
        snapshot_path => "../snapshots",
    }, {
        insta::assert_json_snapshot!(name, body, { ".request_id" => "[request_id]" });
    });
}

/// A server that does not deliver itself, so the test drives a dispatcher
/// by hand; with the data key it seals with.
async fn idle_app(db: Db) -> Option<(TestApp, DataKey)> {
    idle_app_with_budget(db, 1_000).await
}

/// [`idle_app`] with a budget of `per_minute` redelivered changes a minute.
async fn idle_app_with_budget(db: Db, per_minute: u32) -> Option<(TestApp, DataKey)> {
    let key = DataKey::generate();
    let hex_key = key.to_hex();
    let app = TestApp::spawn_with(db, move |c| {
        c.webhooks.no_webhook_delivery = true;
        c.webhooks.redeliveries_per_minute = per_minute;
        c.data_key.data_key = Some(hex_key);
    })
    .await?;
    Some((app, key))
}

/// Delivers everything waiting, as one dispatcher would; returns how many
/// rows it handled.
async fn drain(app: &TestApp, key: &DataKey) -> usize {
    let settings = DispatchSettings {
        allow_private_targets: true,
        extra_roots_pem: Some(std::fs::read(&ca().pem_file).unwrap()),
        ..DispatchSettings::default()
    };
    let dispatcher = Dispatcher::new(app.store.clone(), key.clone(), settings).unwrap();
    let mut handled = 0;
    loop {
        match dispatcher.run_once().await.unwrap() {
            0 => return handled,
            n => handled += n,
        }
    }
}

/// On an idle app, a merchant whose webhook is down (nothing listens on
/// port 9: every attempt fails), and `n` changes of its shipments, each
/// attempted once by [`drain`]: (fixture, token, webhook id, a time just
/// before the changes).
async fn failed_changes(
    app: &TestApp,
    key: &DataKey,
    n: usize,
) -> (Fixture, String, i64, DateTime<Utc>) {
    let (f, token, hook, _) = merchant_with_webhook(app, "https://127.0.0.1:9/down").await;
    let since = Utc::now() - chrono::Duration::seconds(1);
    for _ in 0..n {
        app.create_default(&f).await;
    }
    assert_eq!(drain(app, key).await, n);
    (f, token, hook, since)
}

/// How many of `answers` (to calls made at once) are 202 Accepted.
fn accepted(answers: &[(StatusCode, Value)]) -> usize {
    answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::ACCEPTED)
        .count()
}

/// The ids of the webhook's failed first attempts, oldest first, once it
/// has logged `n` of them.
async fn first_failures(app: &TestApp, token: &str, hook: i64, n: usize) -> Vec<i64> {
    let mut ids: Vec<i64> = log_of(app, token, hook, n)
        .await
        .iter()
        .filter(|d| d["success"] == false && d["redelivery_of"].is_null())
        .map(|d| d["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids.len(), n);
    ids
}
