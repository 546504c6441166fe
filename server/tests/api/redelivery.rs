//! Redelivery (DESIGN §4): one delivery sent again, every failure since a
//! time, and a shipment's delivery history, over real HTTPS to a receiver
//! whose answer the test switches; and, with the dispatcher driven by hand,
//! the bulk limit, a redelivery whose webhook was deleted, at most one
//! waiting redelivery per change and webhook, and the per-merchant budget
//! of redelivered changes per minute (in one process and across two).

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
use serde_json::{Value, json};
use shipment_sdk::model::{DeliveryId, MerchantId, WebhookId};
use shipment_server::harness::DataKey;
use shipment_server::harness::{BulkRedelivery, Redelivery, RedeliveryBudget};
use shipment_server::harness::{DispatchSettings, Dispatcher};

use shipment_testkit::{Db, Fixture, TestApp, WAIT, assert_problem, ca, db_tests, send};

db_tests!(
    a_redelivery_sends_the_same_snapshot_again_and_is_logged,
    redeliveries_of_what_is_not_yours_are_404,
    failures_since_a_time_are_redelivered_once_per_change_unless_delivered_since,
    a_bad_range_is_400_with_the_field_named,
    a_shipments_history_spans_its_webhooks_and_its_own_url,
);

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

fn snapshot(name: &str, body: &Value) {
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_json_snapshot!(name, body, { ".request_id" => "[request_id]" });
    });
}

async fn a_redelivery_sends_the_same_snapshot_again_and_is_logged(app: &TestApp) {
    let receiver = Switchable::start(500).await;
    let (f, token, hook, key) = merchant_with_webhook(app, &receiver.url).await;
    let code = code_of(&app.create_default(&f).await);
    app.advance(&f, &code, "assigned_to_driver").await;
    let first = receiver.wait_for(2).await;
    let log = log_of(app, &token, hook, 2).await;
    let v1 = log.iter().find(|d| d["version"] == 1).unwrap();
    assert_eq!(v1["success"], false);
    assert!(v1["redelivery_of"].is_null() && v1["webhook_id"] == hook);
    let v1_id = v1["id"].as_i64().unwrap();

    // The receiver is back; support sends version 1 again.
    receiver.answer(200);
    let answered = redeliver(app, &token, hook, v1_id).await;
    assert_eq!(answered.0, StatusCode::ACCEPTED, "{}", answered.1);
    assert_eq!(answered.1, json!({"queued": 1, "truncated": false}));
    let got = receiver.wait_for(3).await;
    let again = &got[2];
    let original = first.iter().find(|g| version_of(g) == 1).unwrap();
    assert_eq!(
        again.body, original.body,
        "the same bytes as the first time"
    );
    let signature = header(again, "x-service-signature");
    assert_eq!(webhook_verify::verify(&key, &again.body, signature), Ok(()));
    let (again_id, original_id) = (
        header(again, "x-service-delivery-id"),
        header(original, "x-service-delivery-id"),
    );
    assert_ne!(again_id, original_id, "a new delivery id");
    assert!(again_id.starts_with("dlv_") && again_id.ends_with(&format!("_w{hook}")));

    // Logged as a redelivery of that attempt, newest first.
    let log = log_of(app, &token, hook, 3).await;
    let newest = &log[0];
    assert_eq!(newest["redelivery_of"], v1_id, "{newest}");
    assert_eq!(newest["version"], 1);
    assert_eq!(newest["shipment_code"], code.as_str());
    assert_eq!(
        (&newest["success"], &newest["status_code"]),
        (&json!(true), &json!(200))
    );
    assert_eq!(newest["webhook_id"], hook);
    assert!(log[1..].iter().all(|d| d["redelivery_of"].is_null()));

    // A successful delivery may be sent again too, and a disabled webhook
    // still gets what a person asked for.
    let (status, _) = send(
        app.bearer(Method::PATCH, &format!("/webhooks/{hook}"), &token)
            .json(&json!({"active": false})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let newest_id = newest["id"].as_i64().unwrap();
    let answered = redeliver(app, &token, hook, newest_id).await;
    assert_eq!(answered.0, StatusCode::ACCEPTED, "{}", answered.1);
    let got = receiver.wait_for(4).await;
    assert_eq!(got[3].body, original.body);
    let log = log_of(app, &token, hook, 4).await;
    assert_eq!(log[0]["redelivery_of"], newest_id);
    // Ordinary changes still skip the disabled webhook.
    app.create_default(&f).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.received().len(), 4);
}

async fn redeliveries_of_what_is_not_yours_are_404(app: &TestApp) {
    let receiver = Switchable::start(500).await;
    let (f, token, hook, _) = merchant_with_webhook(app, &receiver.url).await;
    let (_, other_hook) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({"url": "https://127.0.0.1:9/other"})),
    )
    .await;
    let other_hook = other_hook["webhook_id"].as_i64().unwrap();
    app.create_default(&f).await;
    let delivery = log_of(app, &token, hook, 1).await[0]["id"]
        .as_i64()
        .unwrap();
    let others = log_of(app, &token, other_hook, 1).await[0]["id"]
        .as_i64()
        .unwrap();

    let no_webhook = assert_problem(
        &redeliver(app, &token, 999_999, delivery).await,
        404,
        "not_found",
    );
    snapshot("redeliver_unknown_webhook", &no_webhook);
    // A delivery of the merchant's other webhook is not one of this one's.
    let not_its_own = assert_problem(
        &redeliver(app, &token, hook, others).await,
        404,
        "not_found",
    );
    snapshot("redeliver_another_webhooks_delivery", &not_its_own);
    assert_problem(
        &redeliver(app, &token, hook, 999_999).await,
        404,
        "not_found",
    );
    let bulk = json!({"failed_since": "2000-01-01T00:00:00Z"});
    assert_problem(
        &redeliver_failures(app, &token, 999_999, bulk.clone()).await,
        404,
        "not_found",
    );

    // Another merchant sees neither the webhook nor its deliveries.
    let stranger = app.fixture_with_login().await;
    let (email, password) = stranger.credentials();
    let theirs = app.login(&email, &password).await;
    assert_problem(
        &redeliver(app, &theirs, hook, delivery).await,
        404,
        "not_found",
    );
    assert_problem(
        &redeliver_failures(app, &theirs, hook, bulk).await,
        404,
        "not_found",
    );

    // Malformed ids, like every other id route; API keys are not sessions.
    for path in [
        "/webhooks/abc/deliveries/1/redeliver",
        "/webhooks/1/deliveries/0/redeliver",
        "/webhooks/1/deliveries/-3/redeliver",
    ] {
        let got = send(app.bearer(Method::POST, path, &token)).await;
        assert_problem(&got, 400, "invalid_identifier");
    }
    let got = send(app.req(
        Method::POST,
        &format!("/webhooks/{hook}/deliveries/{delivery}/redeliver"),
        &f.key,
    ))
    .await;
    assert_problem(&got, 401, "unauthenticated");
    let got = send(app.bearer(
        Method::GET,
        &format!("/webhooks/{hook}/deliveries/{delivery}/redeliver"),
        &token,
    ))
    .await;
    assert_problem(&got, 405, "method_not_allowed");

    // Nothing was queued by any of it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 0);
    assert_eq!(log_of(app, &token, hook, 1).await.len(), 1);
}

async fn failures_since_a_time_are_redelivered_once_per_change_unless_delivered_since(
    app: &TestApp,
) {
    let receiver = Switchable::start(503).await;
    let (f, token, hook, _) = merchant_with_webhook(app, &receiver.url).await;
    let before = Utc::now() - chrono::Duration::seconds(1);
    // Three changes fail: a, b, c (in that order).
    let mut codes = Vec::new();
    for _ in 0..3 {
        codes.push(code_of(&app.create_default(&f).await));
        // One at a time, so the log's order is the changes' order.
        log_of(app, &token, hook, codes.len()).await;
    }
    let (a, b, c) = (&codes[0], &codes[1], &codes[2]);
    let failed = |log: &[Value], code: &str| -> Vec<i64> {
        log.iter()
            .filter(|d| d["shipment_code"] == code && d["success"] == false)
            .map(|d| d["id"].as_i64().unwrap())
            .collect()
    };
    // c fails a second time; a is sent again once the receiver is back.
    let log = log_of(app, &token, hook, 3).await;
    let c_first = failed(&log, c)[0];
    assert_eq!(
        redeliver(app, &token, hook, c_first).await.0,
        StatusCode::ACCEPTED
    );
    let log = log_of(app, &token, hook, 4).await;
    let c_latest = log[0]["id"].as_i64().unwrap();
    assert_eq!(log[0]["redelivery_of"], c_first);
    receiver.answer(204);
    let a_first = failed(&log, a)[0];
    assert_eq!(
        redeliver(app, &token, hook, a_first).await.0,
        StatusCode::ACCEPTED
    );
    let log = log_of(app, &token, hook, 5).await;
    assert_eq!(
        (&log[0]["shipment_code"], &log[0]["success"]),
        (&json!(a), &json!(true))
    );

    // A range that ends before the failures matches nothing.
    let earlier = json!({
        "failed_since": ts(before - chrono::Duration::hours(1)),
        "failed_until": ts(before),
    });
    let none = redeliver_failures(app, &token, hook, earlier).await;
    assert_eq!(
        (none.0, &none.1),
        (
            StatusCode::ACCEPTED,
            &json!({"queued": 0, "truncated": false})
        )
    );

    // b and c, once each (c failed twice); a was delivered since.
    let since = json!({ "failed_since": ts(before) });
    let queued = redeliver_failures(app, &token, hook, since.clone()).await;
    assert_eq!(queued.0, StatusCode::ACCEPTED, "{}", queued.1);
    assert_eq!(queued.1, json!({"queued": 2, "truncated": false}));
    let got = receiver.wait_for(7).await;
    let log = log_of(app, &token, hook, 7).await;
    let b_first = failed(&log, b)[0];
    let redelivered: Vec<(&str, i64)> = log[..2]
        .iter()
        .map(|d| {
            assert_eq!(d["success"], true, "{d}");
            (
                d["shipment_code"].as_str().unwrap(),
                d["redelivery_of"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(
        redelivered.contains(&(b.as_str(), b_first)),
        "{redelivered:?}"
    );
    assert!(
        redelivered.contains(&(c.as_str(), c_latest)),
        "the latest failed attempt of c: {redelivered:?}"
    );
    // Oldest change first: b's redelivery was queued (numbered) before c's.
    let outbox_id = |code: &str| -> i64 {
        let got = got[5..]
            .iter()
            .find(|g| serde_json::from_slice::<Value>(&g.body).unwrap()["code"] == code)
            .unwrap();
        let id = header(got, "x-service-delivery-id");
        id["dlv_".len()..id.find("_w").unwrap()].parse().unwrap()
    };
    assert!(outbox_id(b) < outbox_id(c));

    // Everything was delivered since: nothing is left to send.
    let again = redeliver_failures(app, &token, hook, since).await;
    assert_eq!(again.1, json!({"queued": 0, "truncated": false}));
}

async fn a_bad_range_is_400_with_the_field_named(app: &TestApp) {
    let (_, token, hook, _) = merchant_with_webhook(app, "https://127.0.0.1:9/hook").await;
    let backwards = redeliver_failures(
        app,
        &token,
        hook,
        json!({"failed_since": "2026-11-23T07:00:00Z", "failed_until": "2026-11-23T06:59:59Z"}),
    )
    .await;
    let body = assert_problem(&backwards, 400, "invalid_field");
    assert_eq!(body["field"], "failed_until");
    snapshot("redeliver_failures_backwards", &body);
    // The same instant is a range of one instant: fine.
    let same = redeliver_failures(
        app,
        &token,
        hook,
        json!({"failed_since": "2026-11-23T07:00:00Z", "failed_until": "2026-11-23T08:00:00+01:00"}),
    )
    .await;
    assert_eq!(same.0, StatusCode::ACCEPTED, "{}", same.1);
    for (body, code, field) in [
        (json!({}), "missing_field", "failed_since"),
        (
            json!({"failed_since": "yesterday"}),
            "invalid_field",
            "failed_since",
        ),
        (
            json!({"failed_since": "2026-11-23"}),
            "invalid_field",
            "failed_since",
        ),
        (
            json!({"failed_since": "2026-11-23T07:00:00Z", "failed_untill": "2026-11-24T07:00:00Z"}),
            "unknown_field",
            "failed_untill",
        ),
    ] {
        let got = redeliver_failures(app, &token, hook, body.clone()).await;
        let problem = assert_problem(&got, 400, code);
        assert_eq!(problem["field"], field, "{body}: {problem}");
    }
    let no_body =
        send(app.bearer(Method::POST, &format!("/webhooks/{hook}/redeliver"), &token)).await;
    assert_problem(&no_body, 400, "invalid_json");
}

async fn a_shipments_history_spans_its_webhooks_and_its_own_url(app: &TestApp) {
    let hook_receiver = Switchable::start(200).await;
    let own_receiver = Switchable::start(500).await;
    let (f, token, hook, _) = merchant_with_webhook(app, &hook_receiver.url).await;
    let (status, _) =
        send(app.bearer(Method::POST, "/webhooks/shipment-signing-key", &token)).await;
    assert_eq!(status, StatusCode::CREATED);
    let shipment = app
        .create(
            &f,
            json!({"courier_company_id": f.courier_id, "webhook_url": own_receiver.url}),
        )
        .await;
    let code = code_of(&shipment);
    app.advance(&f, &code, "assigned_to_driver").await;
    hook_receiver.wait_for(2).await;
    own_receiver.wait_for(2).await;
    // Another shipment's deliveries are not in this one's history.
    app.create_default(&f).await;
    hook_receiver.wait_for(3).await;

    let history = |query: String| {
        let token = token.clone();
        async move {
            send(app.bearer(
                Method::GET,
                &format!("/webhooks/deliveries?{query}"),
                &token,
            ))
            .await
        }
    };
    let full = {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let (status, page) = history(format!("shipment_code={code}")).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            if page["total"] == 4 {
                break page;
            }
            assert!(tokio::time::Instant::now() < deadline, "{page}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    assert_eq!(
        (&full["page"], &full["page_size"], &full["total_pages"]),
        (&json!(1), &json!(20), &json!(1))
    );
    let rows = full["data"].as_array().unwrap();
    let ids: Vec<i64> = rows.iter().map(|d| d["id"].as_i64().unwrap()).collect();
    assert!(ids.is_sorted_by(|a, b| a > b), "newest first: {ids:?}");
    let versions: Vec<i64> = rows
        .iter()
        .map(|d| d["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, [2, 2, 1, 1]);
    for d in rows {
        assert_eq!(d["shipment_code"], code.as_str());
        assert!(d["redelivery_of"].is_null());
        if d["webhook_id"] == hook {
            assert_eq!(
                (&d["url"], &d["success"]),
                (&json!(hook_receiver.url), &json!(true))
            );
        } else {
            assert!(d["webhook_id"].is_null(), "{d}");
            assert_eq!(
                (&d["url"], &d["success"]),
                (&json!(own_receiver.url), &json!(false))
            );
        }
    }
    let (_, second) = history(format!("shipment_code={code}&page_size=1&page=2")).await;
    assert_eq!(second["data"][0]["id"], ids[1]);
    assert_eq!(second["total_pages"], 4);

    // The own URL's failures are no webhook's to redeliver; the webhook's
    // deliveries are, and the history shows the redelivery.
    let own_failure = rows.iter().find(|d| d["webhook_id"].is_null()).unwrap()["id"]
        .as_i64()
        .unwrap();
    assert_problem(
        &redeliver(app, &token, hook, own_failure).await,
        404,
        "not_found",
    );
    let hooks_v1 = rows
        .iter()
        .find(|d| d["webhook_id"] == hook && d["version"] == 1)
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        redeliver(app, &token, hook, hooks_v1).await.0,
        StatusCode::ACCEPTED
    );
    hook_receiver.wait_for(4).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let newest = loop {
        let (_, page) = history(format!("shipment_code={code}&page_size=1")).await;
        if page["total"] == 5 {
            break page["data"][0].clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        (&newest["redelivery_of"], &newest["webhook_id"]),
        (&json!(hooks_v1), &json!(hook))
    );

    // The query is checked like the other lists'.
    let missing = assert_problem(&history("page=1".into()).await, 400, "missing_field");
    assert_eq!(missing["field"], "shipment_code");
    snapshot("shipment_deliveries_without_a_code", &missing);
    for (query, code_, field) in [
        (
            "shipment_code=SHP-NOPE".to_owned(),
            "invalid_field",
            "shipment_code",
        ),
        (
            format!("shipment_code={code}&shipment_code={code}"),
            "invalid_field",
            "shipment_code",
        ),
        (
            format!("shipment_code={code}&page=0"),
            "invalid_field",
            "page",
        ),
        (
            format!("shipment_code={code}&page_size=101"),
            "invalid_field",
            "page_size",
        ),
        (
            format!("shipment_code={code}&status=failed"),
            "unknown_field",
            "status",
        ),
    ] {
        let problem = assert_problem(&history(query.clone()).await, 400, code_);
        assert_eq!(problem["field"], field, "{query}");
    }
    // Another merchant's shipment, or none at all: 404 alike.
    let stranger = app.fixture().await;
    let theirs = code_of(&app.create_default(&stranger).await);
    let other = assert_problem(
        &history(format!("shipment_code={theirs}")).await,
        404,
        "not_found",
    );
    assert!(
        other["detail"].as_str().unwrap().contains(&theirs),
        "{other}"
    );
    assert_problem(
        &history("shipment_code=SHP-0000-0000".into()).await,
        404,
        "not_found",
    );
    let got = send(app.req(
        Method::GET,
        &format!("/webhooks/deliveries?shipment_code={code}"),
        &f.key,
    ))
    .await;
    assert_problem(&got, 401, "unauthenticated");
    // The static route sits beside `/webhooks/{id}`: its other methods are
    // 405, not an id that is not a number.
    for method in [Method::PATCH, Method::DELETE, Method::POST] {
        let got = send(
            app.bearer(method.clone(), "/webhooks/deliveries", &token)
                .json(&json!({"active": true})),
        )
        .await;
        assert_problem(&got, 405, "method_not_allowed");
    }
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

/// The bound of one call, at its edge, on the store with a small limit:
/// cut one short it says so, and calling again queues the rest (what was
/// queued is waiting, so skipped); exactly at the limit it is not cut.
async fn the_bulk_limit_cuts_and_says_so(db: Db) {
    let Some((app, key)) = idle_app(db).await else {
        return;
    };
    // Nothing listens on port 9: every attempt fails.
    let (f, token, hook, _) = merchant_with_webhook(&app, "https://127.0.0.1:9/down").await;
    let since = Utc::now() - chrono::Duration::seconds(1);
    for _ in 0..4 {
        app.create_default(&f).await;
    }
    assert_eq!(drain(&app, &key).await, 4);
    let store = &app.store;
    let budget = RedeliveryBudget::default();
    let bulk = |limit| {
        store.redeliver_failures(
            MerchantId::new(f.merchant_id),
            WebhookId::new(hook),
            since,
            Utc::now(),
            limit,
            budget,
        )
    };
    // Cut by the limit of one call, not by the budget: no wait to tell.
    let queued = |queued, truncated| BulkRedelivery::Queued {
        queued,
        truncated,
        retry_after: None,
    };
    assert_eq!(bulk(3).await.unwrap(), queued(3, true));
    assert_eq!(
        bulk(3).await.unwrap(),
        queued(1, false),
        "the rest, not the same again"
    );
    assert_eq!(bulk(3).await.unwrap(), queued(0, false));
    // Another merchant's call for this webhook queues nothing.
    let stranger = app.fixture().await;
    let theirs = store.redeliver_failures(
        MerchantId::new(stranger.merchant_id),
        WebhookId::new(hook),
        since,
        Utc::now(),
        10,
        budget,
    );
    assert_eq!(theirs.await.unwrap(), queued(0, false));

    // Each is sent (and fails again), naming the failure it repeats.
    let first_failures: Vec<i64> = log_of(&app, &token, hook, 4)
        .await
        .iter()
        .map(|d| d["id"].as_i64().unwrap())
        .collect();
    assert_eq!(drain(&app, &key).await, 4);
    let log = log_of(&app, &token, hook, 8).await;
    let mut repeated: Vec<i64> = log[..4]
        .iter()
        .map(|d| d["redelivery_of"].as_i64().unwrap())
        .collect();
    repeated.sort_unstable();
    let mut expected = first_failures.clone();
    expected.sort_unstable();
    assert_eq!(repeated, expected);

    // Four changes, a limit of four: all of them, not cut.
    assert_eq!(bulk(4).await.unwrap(), queued(4, false));
    // The latest failed attempt of each change is the one repeated now.
    let claimed = store
        .claim_outbox("test", chrono::Duration::seconds(60), 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 4);
    let latest: Vec<i64> = log[..4].iter().map(|d| d["id"].as_i64().unwrap()).collect();
    for row in &claimed {
        assert_eq!(row.only_webhook_id, Some(hook));
        assert!(latest.contains(&row.redelivery_of.unwrap()), "{row:?}");
        assert!(row.webhook_url.is_none());
    }
    let versions: Vec<i64> = claimed.iter().map(|r| r.version).collect();
    assert_eq!(versions, [1, 1, 1, 1]);
    app.stop().await;
}

/// A redelivery to a webhook deleted before it left goes nowhere and is
/// finished, not retried; the change's other targets get nothing again.
async fn a_redelivery_to_a_deleted_webhook_is_finished_unsent(db: Db) {
    let Some((app, key)) = idle_app(db).await else {
        return;
    };
    let receiver = Switchable::start(500).await;
    let (f, token, hook, _) = merchant_with_webhook(&app, &receiver.url).await;
    let other = Switchable::start(200).await;
    let (status, _) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({"url": other.url})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    app.create_default(&f).await;
    assert_eq!(drain(&app, &key).await, 1);
    assert_eq!((receiver.received().len(), other.received().len()), (1, 1));
    let delivery = log_of(&app, &token, hook, 1).await[0]["id"]
        .as_i64()
        .unwrap();

    // Queued, then the webhook goes before the dispatcher gets to it.
    let queued = app
        .store
        .redeliver(
            MerchantId::new(f.merchant_id),
            WebhookId::new(hook),
            DeliveryId::new(delivery),
            RedeliveryBudget::default(),
        )
        .await
        .unwrap();
    assert!(matches!(queued, Redelivery::Queued(_)), "{queued:?}");
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 1);
    let (status, _) = send(app.bearer(Method::DELETE, &format!("/webhooks/{hook}"), &token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(drain(&app, &key).await, 1, "the row is handled");
    assert_eq!(
        app.store.outbox_backlog().await.unwrap().depth,
        0,
        "and finished"
    );
    assert_eq!(
        (receiver.received().len(), other.received().len()),
        (1, 1),
        "sent nowhere"
    );
    app.stop().await;
}

shipment_testkit::db_tests!(
    db;
    the_bulk_limit_cuts_and_says_so,
    a_redelivery_to_a_deleted_webhook_is_finished_unsent,
    a_waiting_redelivery_is_not_queued_again,
    the_budget_bounds_single_redeliveries_across_webhooks,
    a_bulk_call_beyond_the_budget_is_truncated_then_429,
    a_bulk_call_is_idempotent_and_the_budget_outlasts_the_failures,
);

/// An answer with its `Retry-After` (seconds), for the budget's answers.
async fn answer(r: reqwest::RequestBuilder) -> (StatusCode, Option<u64>, Value) {
    let response = r.send().await.expect("the server answers");
    let status = response.status();
    let retry_after = response.headers().get("retry-after").map(|v| {
        v.to_str()
            .unwrap()
            .parse::<u64>()
            .expect("Retry-After in seconds")
    });
    let text = response.text().await.unwrap();
    (status, retry_after, serde_json::from_str(&text).unwrap())
}

/// A `Retry-After` within the budget's minute.
fn within_a_minute(retry_after: Option<u64>, body: &Value) -> u64 {
    let secs = retry_after.unwrap_or_else(|| panic!("a Retry-After with {body}"));
    assert!((1..=60).contains(&secs), "Retry-After: {secs}");
    secs
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

/// However often one delivery is asked for again (many clicks at once
/// here), one redelivery of it waits at a time: the others are 409
/// `invalid_state` naming the waiting one, and a bulk call skips it. Once
/// it has been attempted it may be asked for again.
async fn a_waiting_redelivery_is_not_queued_again(db: Db) {
    let Some((app, key)) = idle_app(db).await else {
        return;
    };
    let (f, token, hook, _) = merchant_with_webhook(&app, "https://127.0.0.1:9/down").await;
    let since = Utc::now() - chrono::Duration::seconds(1);
    let code = code_of(&app.create_default(&f).await);
    assert_eq!(drain(&app, &key).await, 1);
    let delivery = first_failures(&app, &token, hook, 1).await[0];

    let clicks = (0..12).map(|_| redeliver(&app, &token, hook, delivery));
    let answers = futures_util::future::join_all(clicks).await;
    let accepted = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::ACCEPTED)
        .count();
    assert_eq!(accepted, 1, "one redelivery waits: {answers:?}");
    for refused in answers.iter().filter(|(s, _)| *s != StatusCode::ACCEPTED) {
        let problem = assert_problem(refused, 409, "invalid_state");
        let detail = problem["detail"].as_str().unwrap();
        for named in [
            code.as_str(),
            &format!("_w{hook}"),
            &format!("delivery {delivery}"),
        ] {
            assert!(detail.contains(named), "{named} in {detail}");
        }
    }
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 1);
    let bulk = json!({ "failed_since": ts(since) });
    let skipped = redeliver_failures(&app, &token, hook, bulk.clone()).await;
    assert_eq!(
        (skipped.0, &skipped.1),
        (
            StatusCode::ACCEPTED,
            &json!({"queued": 0, "truncated": false})
        )
    );
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 1);

    // Attempted (and failed again): no longer waiting.
    assert_eq!(drain(&app, &key).await, 1);
    let again = redeliver(&app, &token, hook, delivery).await;
    assert_eq!(again.0, StatusCode::ACCEPTED, "{}", again.1);
    app.stop().await;
}

/// With a budget of 3 a minute, the fourth single redelivery within the
/// minute is 429 `rate_limited` with `Retry-After`, whichever of the
/// merchant's webhooks it is for, and stays so after the three were sent
/// and failed; another merchant has a budget of its own.
async fn the_budget_bounds_single_redeliveries_across_webhooks(db: Db) {
    let Some((app, key)) = idle_app_with_budget(db, 3).await else {
        return;
    };
    let (f, token, a, _) = merchant_with_webhook(&app, "https://127.0.0.1:9/a").await;
    let (status, b) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({"url": "https://127.0.0.1:9/b"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let b = b["webhook_id"].as_i64().unwrap();
    app.create_default(&f).await;
    app.create_default(&f).await;
    assert_eq!(drain(&app, &key).await, 2);
    let (on_a, on_b) = (
        first_failures(&app, &token, a, 2).await,
        first_failures(&app, &token, b, 2).await,
    );
    for (hook, delivery) in [(a, on_a[0]), (a, on_a[1]), (b, on_b[0])] {
        let got = redeliver(&app, &token, hook, delivery).await;
        assert_eq!(got.0, StatusCode::ACCEPTED, "{}", got.1);
    }
    let path = format!("/webhooks/{b}/deliveries/{}/redeliver", on_b[1]);
    let (status, retry_after, body) = answer(app.bearer(Method::POST, &path, &token)).await;
    assert_problem(&(status, body.clone()), 429, "rate_limited");
    within_a_minute(retry_after, &body);
    assert!(
        body["detail"].as_str().unwrap().contains('3'),
        "the budget is named: {body}"
    );
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 3);

    // Another merchant's budget is its own.
    let (g, theirs, hook, _) = merchant_with_webhook(&app, "https://127.0.0.1:9/c").await;
    app.create_default(&g).await;
    assert_eq!(drain(&app, &key).await, 4, "theirs, and the three");
    let delivery = first_failures(&app, &theirs, hook, 1).await[0];
    assert_eq!(
        redeliver(&app, &theirs, hook, delivery).await.0,
        StatusCode::ACCEPTED
    );

    // Sent and failed again: the minute still counts them.
    let (status, retry_after, body) = answer(app.bearer(
        Method::POST,
        &format!("/webhooks/{a}/deliveries/{}/redeliver", on_a[0]),
        &token,
    ))
    .await;
    assert_problem(&(status, body.clone()), 429, "rate_limited");
    within_a_minute(retry_after, &body);
    app.stop().await;
}

/// With a budget of 3 and 5 failed changes, a bulk call queues 3 and says
/// `truncated` with `Retry-After`; the next call, with nothing left of the
/// budget, is 429 with `Retry-After`, as is a single redelivery.
async fn a_bulk_call_beyond_the_budget_is_truncated_then_429(db: Db) {
    let Some((app, key)) = idle_app_with_budget(db, 3).await else {
        return;
    };
    let (f, token, hook, _) = merchant_with_webhook(&app, "https://127.0.0.1:9/down").await;
    let since = Utc::now() - chrono::Duration::seconds(1);
    // One at a time, so the log's order is the changes' order: the bulk
    // call queues the oldest three, and the fifth is not among them.
    for _ in 0..5 {
        app.create_default(&f).await;
        assert_eq!(drain(&app, &key).await, 1);
    }
    let failures = first_failures(&app, &token, hook, 5).await;
    let bulk = || {
        app.bearer(Method::POST, &format!("/webhooks/{hook}/redeliver"), &token)
            .json(&json!({ "failed_since": ts(since) }))
    };
    let (status, retry_after, body) = answer(bulk()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body, json!({"queued": 3, "truncated": true}));
    within_a_minute(retry_after, &body);
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 3);

    let (status, retry_after, body) = answer(bulk()).await;
    assert_problem(&(status, body.clone()), 429, "rate_limited");
    within_a_minute(retry_after, &body);
    let path = format!("/webhooks/{hook}/deliveries/{}/redeliver", failures[4]);
    let (status, retry_after, body) = answer(app.bearer(Method::POST, &path, &token)).await;
    assert_problem(&(status, body.clone()), 429, "rate_limited");
    within_a_minute(retry_after, &body);
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 3);
    app.stop().await;
}

/// A second bulk call while the first one's redeliveries wait queues
/// nothing; once they were sent and failed, calling again queues only what
/// the minute's budget (6) has left, and then nothing (429).
async fn a_bulk_call_is_idempotent_and_the_budget_outlasts_the_failures(db: Db) {
    let Some((app, key)) = idle_app_with_budget(db, 6).await else {
        return;
    };
    let (f, token, hook, _) = merchant_with_webhook(&app, "https://127.0.0.1:9/down").await;
    let since = Utc::now() - chrono::Duration::seconds(1);
    for _ in 0..4 {
        app.create_default(&f).await;
    }
    assert_eq!(drain(&app, &key).await, 4);
    let bulk = || {
        app.bearer(Method::POST, &format!("/webhooks/{hook}/redeliver"), &token)
            .json(&json!({ "failed_since": ts(since) }))
    };
    let (status, retry_after, body) = answer(bulk()).await;
    assert_eq!(
        (status, &body, retry_after),
        (
            StatusCode::ACCEPTED,
            &json!({"queued": 4, "truncated": false}),
            None
        )
    );
    let (status, _, body) = answer(bulk()).await;
    assert_eq!(
        (status, &body),
        (
            StatusCode::ACCEPTED,
            &json!({"queued": 0, "truncated": false})
        ),
        "what waits is not queued again"
    );
    assert_eq!(drain(&app, &key).await, 4, "sent, and failed again");

    let (status, retry_after, body) = answer(bulk()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body, json!({"queued": 2, "truncated": true}));
    within_a_minute(retry_after, &body);
    assert_eq!(drain(&app, &key).await, 2);
    let (status, retry_after, body) = answer(bulk()).await;
    assert_problem(&(status, body.clone()), 429, "rate_limited");
    within_a_minute(retry_after, &body);
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 0);
    app.stop().await;
}

/// Two processes on one PostgreSQL database share a merchant's budget:
/// redeliveries asked for at once through both are accepted up to the
/// budget, not up to twice it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_holds_across_processes_on_postgres() {
    let Some((a, key)) = idle_app_with_budget(Db::Postgres, 4).await else {
        return;
    };
    let mut config = shipment_server::Config::local(&a.database_url);
    config.data_key.data_key = Some(key.to_hex());
    config.webhooks.no_webhook_delivery = true;
    config.webhooks.redeliveries_per_minute = 4;
    let b = crate::OtherProcess::start(&config).await;

    let (f, token, hook, _) = merchant_with_webhook(&a, "https://127.0.0.1:9/down").await;
    for _ in 0..8 {
        a.create_default(&f).await;
    }
    assert_eq!(drain(&a, &key).await, 8);
    let failures = first_failures(&a, &token, hook, 8).await;
    let asks = failures.iter().enumerate().map(|(i, delivery)| {
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        let url = format!("{base}/webhooks/{hook}/deliveries/{delivery}/redeliver");
        send(a.client.post(url).bearer_auth(&token))
    });
    let answers = futures_util::future::join_all(asks).await;
    let accepted = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::ACCEPTED)
        .count();
    assert_eq!(accepted, 4, "{answers:?}");
    for refused in answers.iter().filter(|(s, _)| *s != StatusCode::ACCEPTED) {
        assert_problem(refused, 429, "rate_limited");
    }
    assert_eq!(a.store.outbox_backlog().await.unwrap().depth, 4);
    b.stop().await;
    a.stop().await;
}
