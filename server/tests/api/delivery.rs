//! Signed webhook delivery over real HTTPS (a local CA made at test time):
//! what arrives, in which order, what is logged, and that nothing is lost or
//! sent twice when a dispatcher dies or several run at once.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::MerchantId;
use shipment_server::harness::DataKey;
use shipment_server::harness::{DispatchSettings, Dispatcher};

use crate::receiver::{Received, Receiver, ca};
use crate::wait_for_empty_outbox;
use shipment_testkit::{Db, Fixture, TestApp, db_tests, send};

db_tests!(
    every_change_is_delivered_signed_and_in_order,
    a_shipments_own_url_gets_deliveries_signed_with_the_shipment_key,
    failures_are_logged_and_not_retried,
    inactive_webhooks_get_nothing,
);

/// Signs in, registers `url` and returns (token, webhook id, signing key).
async fn register(app: &TestApp, email: &str, password: &str, url: &str) -> (String, i64, String) {
    let token = app.login(email, password).await;
    let (status, hook) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({ "url": url })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    (
        token,
        hook["webhook_id"].as_i64().unwrap(),
        hook["signing_key"].as_str().unwrap().to_owned(),
    )
}

fn body_of(r: &Received) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

fn assert_signed(r: &Received, key: &str) {
    let header = r.headers["x-service-signature"].to_str().unwrap();
    assert_eq!(webhook_verify::verify(key, &r.body, header), Ok(()));
    assert_eq!(r.headers["content-type"], "application/json");
    assert!(
        r.headers["user-agent"]
            .to_str()
            .unwrap()
            .starts_with("shipment-server/")
    );
    assert!(
        r.headers["x-service-delivery-id"]
            .to_str()
            .unwrap()
            .starts_with("dlv_")
    );
}

/// The delivery id of everything `receiver` got, in arrival order.
fn delivery_ids(receiver: &Receiver) -> Vec<String> {
    let id = |r: &Received| {
        r.headers["x-service-delivery-id"]
            .to_str()
            .unwrap()
            .to_owned()
    };
    receiver.received().iter().map(id).collect()
}

async fn walk_to_delivered(app: &TestApp, f: &Fixture, code: &str) {
    for (op, body) in [
        ("assign-driver", Some(json!({"driver_id": f.driver_id}))),
        ("pickup", None),
        ("deliver", None),
    ] {
        let (status, s) = app.courier_op(f, code, op, body).await;
        assert_eq!(status, StatusCode::OK, "{op}: {s}");
    }
}

async fn every_change_is_delivered_signed_and_in_order(app: &TestApp) {
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let (token, hook_id, key) = register(app, &email, &password, &receiver.url).await;

    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    walk_to_delivered(app, &f, &code).await;
    let (status, _) = send(
        app.req(Method::POST, &format!("/shipments/{code}/rate"), &f.key)
            .json(&json!({"rating": 9})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let got = receiver.wait_for(5).await;
    let bodies: Vec<Value> = got.iter().map(body_of).collect();
    let seen: Vec<(i64, &str)> = bodies
        .iter()
        .map(|b| {
            (
                b["version"].as_i64().unwrap(),
                b["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (1, "assigned_to_courier"),
            (2, "assigned_to_driver"),
            (3, "in_transit"),
            (4, "delivered"),
            (5, "delivered"),
        ]
    );
    for r in &got {
        assert_signed(r, &key);
    }
    // The last delivery is the shipment exactly as GET shows it.
    let (_, current) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
    assert_eq!(bodies[4], current);
    assert_eq!(bodies[4]["rating"], 9);

    // The delivery log shows each attempt, newest first.
    let log = wait_for_log(app, &token, hook_id, 5).await;
    assert_eq!(log["total"], 5);
    let first = &log["data"][0];
    assert_eq!(first["shipment_code"], code.as_str());
    assert_eq!(first["version"], 5);
    assert_eq!(first["status_code"], 200);
    assert_eq!(first["success"], true);
    assert!(first["error"].is_null());
    assert!(first["duration_ms"].as_i64().unwrap() >= 0);
}

async fn wait_for_log(app: &TestApp, token: &str, hook_id: i64, n: u64) -> Value {
    for _ in 0..200 {
        let (status, log) = send(app.bearer(
            Method::GET,
            &format!("/webhooks/{hook_id}/deliveries"),
            token,
        ))
        .await;
        assert_eq!(status, StatusCode::OK, "{log}");
        if log["total"].as_u64().unwrap() >= n {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the delivery log never reached {n} entries");
}

async fn a_shipments_own_url_gets_deliveries_signed_with_the_shipment_key(app: &TestApp) {
    let receiver = Receiver::start(StatusCode::NO_CONTENT, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let (_, signing) =
        send(app.bearer(Method::POST, "/webhooks/shipment-signing-key", &token)).await;
    let key = signing["signing_key"].as_str().unwrap();
    let created = app
        .create(
            &f,
            json!({"courier_company_id": f.courier_id, "webhook_url": receiver.url}),
        )
        .await;
    let code = created["code"].as_str().unwrap();
    assert_eq!(created["webhook_url"], receiver.url.as_str());
    let (status, _) =
        send(app.req(Method::POST, &format!("/shipments/{code}/cancel"), &f.key)).await;
    assert_eq!(status, StatusCode::OK);
    let got = receiver.wait_for(2).await;
    for r in &got {
        assert_signed(r, key);
    }
    assert_eq!(body_of(&got[1])["status"], "cancelled");
}

async fn failures_are_logged_and_not_retried(app: &TestApp) {
    let receiver = Receiver::start(StatusCode::INTERNAL_SERVER_ERROR, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let (token, hook_id, _) = register(app, &email, &password, &receiver.url).await;
    // A second webhook nobody listens on: a connection error.
    let (_, dead) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({"url": "https://localhost:9/nobody"})),
    )
    .await;
    let dead_id = dead["webhook_id"].as_i64().unwrap();
    app.create_default(&f).await;

    let log = wait_for_log(app, &token, hook_id, 1).await;
    let entry = &log["data"][0];
    assert_eq!(entry["status_code"], 500);
    assert_eq!(entry["success"], false);
    assert_eq!(entry["error"], "the receiver answered 500");
    let log = wait_for_log(app, &token, dead_id, 1).await;
    let entry = &log["data"][0];
    assert!(entry["status_code"].is_null());
    assert!(
        entry["error"]
            .as_str()
            .unwrap()
            .starts_with("connection failed"),
        "{entry}"
    );

    // Not retried: the outbox is drained and nothing more arrives.
    wait_for_empty_outbox(app).await;
    assert_eq!(receiver.received().len(), 1);
}

async fn inactive_webhooks_get_nothing(app: &TestApp) {
    let off = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let on = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let (token, off_id, _) = register(app, &email, &password, &off.url).await;
    register(app, &email, &password, &on.url).await;
    let (status, _) = send(
        app.bearer(Method::PATCH, &format!("/webhooks/{off_id}"), &token)
            .json(&json!({"active": false})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    app.create_default(&f).await;
    on.wait_for(1).await;
    wait_for_empty_outbox(app).await;
    assert!(off.received().is_empty());
}

/// A server that does not deliver itself, so the test drives dispatchers by
/// hand; returns it with the data key it seals with.
async fn idle_app(db: Db) -> Option<(TestApp, DataKey)> {
    let key = DataKey::generate();
    let hex_key = key.to_hex();
    let app = TestApp::spawn_with(db, move |c| {
        c.webhooks.no_webhook_delivery = true;
        c.data_key.data_key = Some(hex_key);
    })
    .await?;
    Some((app, key))
}

fn settings(lease: Duration) -> DispatchSettings {
    DispatchSettings {
        allow_private_targets: true,
        extra_roots_pem: Some(std::fs::read(&ca().pem_file).unwrap()),
        lease,
        ..DispatchSettings::default()
    }
}

/// A dispatcher that claims a row and dies: the row is delivered by another
/// once the lease runs out, and not before.
async fn a_claim_whose_process_died_is_delivered_after_its_lease(db: Db) {
    let Some((app, key)) = idle_app(db).await else {
        return;
    };
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    register(&app, &email, &password, &receiver.url).await;
    app.create_default(&f).await;

    let lease = chrono::Duration::milliseconds(500);
    let claimed = app
        .store
        .claim_outbox("dead-process", lease, 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);

    let alive = Dispatcher::new(app.store.clone(), key, settings(Duration::from_secs(60))).unwrap();
    assert_eq!(alive.run_once().await.unwrap(), 0, "a leased row was taken");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(alive.run_once().await.unwrap(), 1);
    assert_eq!(receiver.received().len(), 1);
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 0);
    app.stop().await;
}

/// Several dispatchers on one database deliver every change exactly once,
/// and each shipment's changes in order.
async fn concurrent_dispatchers_deliver_each_change_once_in_order(db: Db) {
    let Some((app, key)) = idle_app(db).await else {
        return;
    };
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    register(&app, &email, &password, &receiver.url).await;
    let mut codes = Vec::new();
    for _ in 0..6 {
        let code = app.create_default(&f).await["code"]
            .as_str()
            .unwrap()
            .to_owned();
        walk_to_delivered(&app, &f, &code).await;
        codes.push(code);
    }
    let expected = codes.len() * 4;

    let mut workers = Vec::new();
    for _ in 0..3 {
        let d = Dispatcher::new(
            app.store.clone(),
            key.clone(),
            settings(Duration::from_secs(60)),
        )
        .unwrap();
        workers.push(tokio::spawn(async move {
            let mut idle_rounds = 0;
            while idle_rounds < 5 {
                if d.run_once().await.unwrap() == 0 {
                    idle_rounds += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                } else {
                    idle_rounds = 0;
                }
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let got = receiver.wait_for(expected).await;
    assert_eq!(got.len(), expected, "a change was delivered twice");
    let mut versions: HashMap<String, Vec<i64>> = HashMap::new();
    for r in &got {
        let b = body_of(r);
        versions
            .entry(b["code"].as_str().unwrap().to_owned())
            .or_default()
            .push(b["version"].as_i64().unwrap());
    }
    for code in &codes {
        assert_eq!(
            versions[code],
            [1, 2, 3, 4],
            "{code} out of order or incomplete"
        );
    }
    app.stop().await;
}

/// A receiver slower than the time-out: logged as a time-out.
#[tokio::test]
async fn slow_receivers_time_out() {
    let receiver = Receiver::start(StatusCode::OK, Duration::from_secs(5)).await;
    let app = TestApp::spawn_with(Db::Sqlite, |c| c.webhooks.webhook_timeout_secs = 1)
        .await
        .unwrap();
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let (token, hook_id, _) = register(&app, &email, &password, &receiver.url).await;
    app.create_default(&f).await;
    let log = wait_for_log(&app, &token, hook_id, 1).await;
    assert_eq!(log["data"][0]["error"], "timed out after 1 s");
    app.stop().await;
}

/// A slow receiver holds up only its own deliveries: another merchant's
/// change, made after, arrives while the slow one is still waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_receiver_does_not_hold_up_the_others() {
    let slow = Receiver::start(StatusCode::OK, Duration::from_secs(5)).await;
    let fast = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let app = TestApp::spawn(Db::Sqlite).await.unwrap();
    let a = app.fixture_with_login().await;
    let (email_a, password_a) = a.credentials();
    let b = app.fixture_with_login().await;
    let (email_b, password_b) = b.credentials();
    register(&app, &email_a, &password_a, &slow.url).await;
    register(&app, &email_b, &password_b, &fast.url).await;
    app.create_default(&a).await;
    // Let the dispatcher start the slow delivery first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    app.create_default(&b).await;
    fast.wait_for(1).await;
    assert!(
        slow.received().is_empty(),
        "the fast delivery waited for the slow one"
    );
    slow.wait_for(1).await;
    app.stop().await;
}

/// A change wakes the dispatcher at once: with polling all but off, the
/// delivery still arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_wakes_the_dispatcher_without_waiting_for_a_poll() {
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let app = TestApp::spawn_with(Db::Sqlite, |c| c.webhooks.outbox_poll_ms = 3_600_000)
        .await
        .unwrap();
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    register(&app, &email, &password, &receiver.url).await;
    // Let the dispatcher finish its first poll and start waiting.
    tokio::time::sleep(Duration::from_millis(200)).await;
    app.create_default(&f).await;
    receiver.wait_for(1).await;
    app.stop().await;
}

/// The SSRF guard at connection time: a webhook stored with a private
/// target (as if its name had changed to a private address after
/// registration) is refused when delivering, and the refusal is logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_targets_are_refused_again_when_connecting() {
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let key = DataKey::generate();
    let hex_key = key.to_hex();
    let app = TestApp::spawn_with(Db::Sqlite, move |c| {
        c.webhooks.allow_private_webhook_targets = false;
        c.data_key.data_key = Some(hex_key);
    })
    .await
    .unwrap();
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let port = receiver
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let by_name = app
        .store
        .create_webhook(
            MerchantId::new(f.merchant_id),
            &receiver.url,
            &key.seal("whsec_a"),
        )
        .await
        .unwrap();
    let by_address = app
        .store
        .create_webhook(
            MerchantId::new(f.merchant_id),
            &format!("https://127.0.0.1:{port}/hook"),
            &key.seal("whsec_b"),
        )
        .await
        .unwrap();
    app.create_default(&f).await;
    let token = app.login(&email, &password).await;
    // One reason whatever the cause, as at registration: the delivery log
    // must not tell which internal names exist either.
    let log = wait_for_log(&app, &token, by_name.id, 1).await;
    let error = log["data"][0]["error"].as_str().unwrap();
    assert_eq!(
        error,
        "connection failed: its host does not resolve to a public internet address"
    );
    let log = wait_for_log(&app, &token, by_address.id, 1).await;
    let error = log["data"][0]["error"].as_str().unwrap();
    assert_eq!(
        error,
        "its host does not resolve to a public internet address"
    );
    assert!(
        receiver.received().is_empty(),
        "a private target was reached"
    );
    app.stop().await;
}

/// Rows waiting their turn for a slow receiver (one request at a time,
/// 300 ms each) outlive their 200 ms lease, and the dispatcher's next
/// claims take them again: each is still sent once.
async fn a_row_that_outlives_its_lease_while_waiting_is_sent_once(db: Db) {
    let Some((app, key)) = idle_app(db).await else {
        return;
    };
    let receiver = Receiver::start(StatusCode::OK, Duration::from_millis(300)).await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    register(&app, &email, &password, &receiver.url).await;
    for _ in 0..3 {
        app.create_default(&f).await;
    }
    let slow = DispatchSettings {
        per_target: 1,
        poll_interval: Duration::from_millis(20),
        ..settings(Duration::from_millis(200))
    };
    let dispatcher = Dispatcher::new(app.store.clone(), key, slow).unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(dispatcher.run(stopped));
    receiver.wait_for(3).await;
    // Time for a second copy of the last row to arrive, had one been sent.
    tokio::time::sleep(Duration::from_millis(700)).await;
    stop.send(true).unwrap();
    running.await.unwrap();

    let ids = delivery_ids(&receiver);
    assert_eq!(ids.len(), 3, "sent more than once: {ids:?}");
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 0);
    app.stop().await;
}

/// Two processes' dispatchers on one database, a slow receiver: rows
/// waiting for their turn in one process outlive their lease, but renew
/// it, so the other process does not take and send them as well.
async fn a_row_still_being_delivered_is_not_taken_by_another_process(db: Db) {
    let Some((app, key)) = idle_app(db).await else {
        return;
    };
    let receiver = Receiver::start(StatusCode::OK, Duration::from_millis(400)).await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    register(&app, &email, &password, &receiver.url).await;
    for _ in 0..4 {
        app.create_default(&f).await;
    }
    // The last of 4 rows waits 1.2 s for its turn, three leases.
    let slow = DispatchSettings {
        per_target: 1,
        poll_interval: Duration::from_millis(20),
        ..settings(Duration::from_millis(400))
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let first = Dispatcher::new(app.store.clone(), key.clone(), slow.clone()).unwrap();
    let first = tokio::spawn(first.run(stopped.clone()));
    receiver.wait_for(1).await;
    let second = Dispatcher::new(app.store.clone(), key, slow).unwrap();
    let second = tokio::spawn(second.run(stopped));
    receiver.wait_for(4).await;
    // Time for a second copy of the last row to arrive, had one been sent.
    tokio::time::sleep(Duration::from_millis(900)).await;
    stop.send(true).unwrap();
    first.await.unwrap();
    second.await.unwrap();

    let ids = delivery_ids(&receiver);
    assert_eq!(ids.len(), 4, "a row was sent twice: {ids:?}");
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 0);
    app.stop().await;
}

shipment_testkit::db_tests!(
    db;
    a_claim_whose_process_died_is_delivered_after_its_lease,
    a_row_still_being_delivered_is_not_taken_by_another_process,
    a_row_that_outlives_its_lease_while_waiting_is_sent_once,
    concurrent_dispatchers_deliver_each_change_once_in_order,
);
