//! Integration tests: the real server on port 0, a fresh database per test,
//! every body run on SQLite and (with `TEST_DATABASE_URL`) on PostgreSQL,
//! through the `shipment-testkit` harness.

mod receiver;

mod authz;
mod binary;
mod caches;
mod cluster;
mod courier;
mod dashboard;
mod dashboard_pages;
mod delivery;
mod errors;
mod fixtures;
mod flags;
mod generated;
mod hardening;
mod layers;
mod lifecycle;
mod listen;
mod listen_processes;
mod lists;
mod openapi;
mod operations;
// The server binary exports spans only when built with `otlp`.
#[cfg(feature = "otlp")]
mod otlp;
mod outage;
mod oversize;
mod processes;
mod redelivery;
mod restricted_keys;
mod revocation;
mod shipments;
mod standard_libraries;
mod standard_webhooks;
mod testing;
mod testing_deliveries;
mod testing_merchants;
mod trace_context;

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_server::harness::{Pool, Store};
use shipment_server::{Application, Config};
use shipment_testkit::{Fixture, TestApp, send};

/// Another server process on a test's database, as `config` sets it up: its
/// own pool and memory; only the database is shared.
struct OtherProcess {
    /// Its API root (`http://…/api/v1`).
    base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    running: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl OtherProcess {
    /// Starts it.
    async fn start(config: &Config) -> OtherProcess {
        let app = Application::build(config)
            .await
            .expect("another server starts");
        let base = format!("http://{}/api/v1", app.local_addr());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(app.run_until(async {
            let _ = stopped.await;
        }));
        OtherProcess {
            base,
            stop,
            running,
        }
    }

    /// A test app on `db` and another process on its database, both with
    /// one data key (so each opens what the other sealed); `tweak` adjusts
    /// the other process's settings. `None` where `db` is skipped.
    async fn beside(
        db: shipment_testkit::Db,
        tweak: impl FnOnce(&mut Config),
    ) -> Option<(shipment_testkit::TestApp, OtherProcess)> {
        let data_key = shipment_server::harness::DataKey::generate().to_hex();
        let key = data_key.clone();
        let a = shipment_testkit::TestApp::spawn_with(db, move |c| c.data_key.data_key = Some(key))
            .await?;
        let mut config = Config::local(&a.database_url);
        config.data_key.data_key = Some(data_key);
        tweak(&mut config);
        let b = OtherProcess::start(&config).await;
        Some((a, b))
    }

    /// Shuts it down, and checks that it stopped cleanly.
    async fn stop(self) {
        let _ = self.stop.send(());
        self.running.await.unwrap().unwrap();
    }
}

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

/// Waits up to `within` until the outbox of `store` is empty: every change
/// written so far has been delivered (for a test that then counts what
/// arrived, or that nothing more does).
async fn outbox_drained(store: &Store, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    while store.outbox_backlog().await.unwrap().depth > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the outbox never drained"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// [`outbox_drained`] for a test's own server, within 20 s.
async fn wait_for_empty_outbox(app: &TestApp) {
    outbox_drained(&app.store, Duration::from_secs(20)).await;
}

/// The test control that moves shipment `code` of `f`'s merchant through
/// the real lifecycle to state `to` (`POST
/// /testing/shipments/{code}/advance`); the answer, unchecked.
async fn advance(app: &TestApp, f: &Fixture, code: &str, to: &str) -> (StatusCode, Value) {
    send(
        app.req(
            Method::POST,
            &format!("/testing/shipments/{code}/advance"),
            &f.key,
        )
        .json(&json!({ "to": to })),
    )
    .await
}

/// The test control that sends the next `times` webhook deliveries of
/// `f`'s merchant twice (`POST /testing/webhooks/duplicates`); the answer,
/// unchecked.
async fn duplicates(app: &TestApp, f: &Fixture, times: u32) -> (StatusCode, Value) {
    send(
        app.req(Method::POST, "/testing/webhooks/duplicates", &f.key)
            .json(&json!({ "times": times })),
    )
    .await
}

/// A webhook the merchant of `f` (a fixture with a password) registers at
/// `url` once signed in: its dashboard token, the webhook's id and its
/// signing key.
async fn signed_in_webhook(app: &TestApp, f: &Fixture, url: &str) -> (String, i64, String) {
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let (status, hook) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({ "url": url })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    let id = hook["webhook_id"].as_i64().unwrap();
    let key = hook["signing_key"].as_str().unwrap().to_owned();
    (token, id, key)
}
