//! W3C Trace Context through a server that exports no spans (no
//! `--otlp-endpoint`; no test of this binary builds an exporter in
//! process): a caller's valid `traceparent` is passed on unchanged to the
//! webhook deliveries and listener events of the changes its request
//! made, and of the redeliveries it asked for; a request without one (or
//! with an invalid one) passes nothing on. With an exporter, the whole
//! trace is `tests/tests/trace.rs`.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_testkit::{Fixture, TestApp, db_tests, send};

use crate::listen::next;
use crate::receiver::{Received, Receiver};
use crate::signed_in_webhook;

db_tests!(
    a_callers_trace_reaches_its_deliveries_and_listener_events,
    creates_in_one_group_commit_keep_their_own_traces,
    a_redelivery_continues_the_trace_that_asked_for_it,
);

/// A caller's span (`00-{trace}-{span}-{flags}`), one per `n`.
fn traceparent(n: u32) -> String {
    format!("00-{n:032x}-{:016x}-01", u64::from(n) + 0xab00)
}

async fn create_traced(app: &TestApp, key: &str, courier: i64, trace: Option<&str>) -> String {
    let mut request = app
        .req(Method::POST, "/shipments", key)
        .json(&json!({"courier_company_id": courier}));
    if let Some(trace) = trace {
        request = request.header("traceparent", trace);
    }
    let (status, body) = send(request).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["code"].as_str().unwrap().to_owned()
}

fn header(r: &Received, name: &str) -> Option<String> {
    r.headers.get(name).map(|v| v.to_str().unwrap().to_owned())
}

fn code_of(r: &Received) -> String {
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    body["code"].as_str().unwrap().to_owned()
}

/// A merchant with a webhook to a receiver answering 200: the receiver,
/// the merchant, its dashboard token and the webhook's id.
async fn merchant_with_webhook(app: &TestApp) -> (Receiver, Fixture, String, i64) {
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (token, hook, _) = signed_in_webhook(app, &f, &receiver.url).await;
    (receiver, f, token, hook)
}

async fn a_callers_trace_reaches_its_deliveries_and_listener_events(app: &TestApp) {
    let (receiver, f, _, _) = merchant_with_webhook(app).await;
    let mut stream = app.sdk(&f.key).listener().connect(None).await.unwrap();

    let traced = traceparent(1);
    let code = create_traced(app, &f.key, f.courier_id, Some(&traced)).await;
    // A change with an invalid traceparent (an all-zero trace id), and one
    // without, pass nothing on.
    let (status, _) = send(
        app.req(
            Method::POST,
            &format!("/courier/shipments/{code}/assign-driver"),
            &f.courier_key,
        )
        .header(
            "traceparent",
            "00-00000000000000000000000000000000-000000000000ab01-01",
        )
        .json(&json!({"driver_id": f.driver_id})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    app.courier_step(&f, &code, "pickup", None).await;

    let got = receiver.wait_for(3).await;
    let traces: Vec<Option<String>> = got.iter().map(|r| header(r, "traceparent")).collect();
    assert_eq!(traces, [Some(traced.clone()), None, None]);
    let events = [
        next(&mut stream).await,
        next(&mut stream).await,
        next(&mut stream).await,
    ];
    let traces: Vec<Option<&str>> = events
        .iter()
        .map(|e| e.delivery.traceparent.as_deref())
        .collect();
    assert_eq!(traces, [Some(traced.as_str()), None, None]);

    // A listener that reconnects gets the missed change's trace too (read
    // back from the outbox, not from the live feed).
    let first = events[0].id;
    let mut resumed = app
        .sdk(&f.key)
        .listener()
        .connect(Some(first - 1))
        .await
        .unwrap();
    let again = next(&mut resumed).await;
    assert_eq!(again.id, first);
    assert_eq!(again.delivery.traceparent.as_deref(), Some(traced.as_str()));
}

/// Creates at once are written together in one group commit (one
/// `INSERT` for all): each outbox row must still carry the trace of the
/// request that asked for its shipment, not of another in the group.
async fn creates_in_one_group_commit_keep_their_own_traces(app: &TestApp) {
    let (receiver, f, _, _) = merchant_with_webhook(app).await;

    let (key, courier) = (f.key.as_str(), f.courier_id);
    let creates = (1..=24).map(|n| async move {
        let trace = traceparent(100 + n);
        // Every third without a trace: nothing may leak into it.
        let sent = (n % 3 != 0).then_some(trace);
        let code = create_traced(app, key, courier, sent.as_deref()).await;
        (code, sent)
    });
    let expected: HashMap<String, Option<String>> = futures_util::future::join_all(creates)
        .await
        .into_iter()
        .collect();
    let got: HashMap<String, Option<String>> = receiver
        .wait_for(24)
        .await
        .iter()
        .map(|r| (code_of(r), header(r, "traceparent")))
        .collect();
    assert_eq!(got, expected);
}

async fn a_redelivery_continues_the_trace_that_asked_for_it(app: &TestApp) {
    let (receiver, f, token, hook) = merchant_with_webhook(app).await;
    create_traced(app, &f.key, f.courier_id, Some(&traceparent(7))).await;
    receiver.wait_for(1).await;
    let delivery = loop {
        let (_, log) =
            send(app.bearer(Method::GET, &format!("/webhooks/{hook}/deliveries"), &token)).await;
        if let Some(id) = log["data"][0]["id"].as_i64() {
            break id;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    let asking = traceparent(8);
    let (status, body) = send(
        app.bearer(
            Method::POST,
            &format!("/webhooks/{hook}/deliveries/{delivery}/redeliver"),
            &token,
        )
        .header("traceparent", &asking),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let again = receiver.wait_for(2).await;
    assert_eq!(header(&again[1], "traceparent"), Some(asking));
}
