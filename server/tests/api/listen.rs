//! Listeners (`GET /webhooks/listen`, what `shipctl listen` reads): each
//! change as a signed delivery, the stable listener key, resuming after
//! `Last-Event-ID`, the limits, and listeners on a second server process.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use shipment_sdk::{DashboardClient, ListenerEvent, ListenerStream};
use shipment_server::harness::Pool;
use shipment_testkit::{Db, TestApp, assert_problem, db_tests, send};

db_tests!(
    a_listener_gets_every_change_signed_and_in_order,
    a_session_listens_too_and_every_listener_gets_every_change,
    the_key_is_stable_until_replaced_and_replacing_it_disconnects,
    a_reconnecting_listener_gets_what_it_missed,
    listening_needs_a_credential_and_has_limits,
    a_redelivery_goes_to_its_webhook_only,
    resuming_never_skips_a_change_claimed_after_a_later_one,
);

/// The next change on `stream`, within 10 s.
pub(crate) async fn next(stream: &mut ListenerStream) -> ListenerEvent {
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("a change within 10 s")
        .expect("the stream stays open")
        .expect("a well-formed change")
}

/// `(version, status)` of a delivery, after checking its signature.
fn checked(event: &ListenerEvent, key: &str) -> (i64, String) {
    let d = &event.delivery;
    assert_eq!(
        webhook_verify::verify(key, d.body.as_bytes(), &d.signature),
        Ok(())
    );
    // The delivery id names the change (its outbox row), as a webhook
    // delivery's does; the event id is its listen position.
    let change = d
        .delivery_id
        .strip_prefix("dlv_")
        .and_then(|rest| rest.strip_suffix("_l"));
    assert!(
        change.is_some_and(|id| id.parse::<u64>().is_ok()),
        "{}",
        d.delivery_id
    );
    let body: Value = serde_json::from_str(&d.body).unwrap();
    assert_eq!(body["code"], d.shipment_code.as_str());
    assert_eq!(body["version"], d.version);
    (d.version, body["status"].as_str().unwrap().to_owned())
}

async fn a_listener_gets_every_change_signed_and_in_order(app: &TestApp) {
    let f = app.fixture().await;
    let sdk = app.sdk(&f.key);
    let mut stream = sdk.listener().connect(None).await.unwrap();
    let key = stream.signing_key().signing_key.expose().to_owned();
    assert!(key.starts_with("whsec_") && key.len() == 6 + 32, "{key}");

    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    app.advance(&f, &code, "delivered").await;
    let mut seen = Vec::new();
    let mut ids = Vec::new();
    let mut last = None;
    for _ in 0..4 {
        let event = next(&mut stream).await;
        assert_eq!(event.delivery.shipment_code, code);
        seen.push(checked(&event, &key));
        ids.push(event.id);
        last = Some(event);
    }
    let expected = [
        "assigned_to_courier",
        "assigned_to_driver",
        "in_transit",
        "delivered",
    ];
    let expected: Vec<(i64, String)> = (1..).zip(expected.map(str::to_owned)).collect();
    assert_eq!(seen, expected);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(stream.last_event_id(), ids.last().copied());
    // The body is the shipment exactly as GET shows it, byte for byte.
    let current = app
        .client
        .get(format!("{}/shipments/{code}", app.base))
        .header("X-API-KEY", &f.key)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(last.unwrap().delivery.body, current);
}

async fn a_session_listens_too_and_every_listener_gets_every_change(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let dashboard = DashboardClient::builder()
        .base_url(&app.base)
        .login(&email, &password)
        .await
        .unwrap();
    let sdk = app.sdk(&f.key);
    let mut by_session = dashboard.listener().connect(None).await.unwrap();
    let mut by_key = sdk.listener().connect(None).await.unwrap();
    let mut again = sdk.listener().connect(None).await.unwrap();
    // One key per merchant, whoever asks.
    let key = by_key.signing_key().signing_key.expose().to_owned();
    assert_eq!(by_session.signing_key().signing_key.expose(), key);
    assert_eq!(again.signing_key().signing_key.expose(), key);

    // Another merchant's changes go to its own listeners only.
    let other = app.fixture().await;
    app.create_default(&other).await;
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    for stream in [&mut by_session, &mut by_key, &mut again] {
        let event = next(stream).await;
        assert_eq!(event.delivery.shipment_code, code);
        assert_eq!(checked(&event, &key), (1, "assigned_to_courier".into()));
    }
}

async fn the_key_is_stable_until_replaced_and_replacing_it_disconnects(app: &TestApp) {
    let f = app.fixture().await;
    let sdk = app.sdk(&f.key);
    let listener = sdk.listener();
    assert_eq!(listener.signing_key().await.unwrap(), None);
    let got = send(app.req(Method::GET, "/webhooks/listener-signing-key", &f.key)).await;
    let problem = assert_problem(&got, 404, "not_found");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("shipctl listen"),
        "{problem}"
    );

    // The first listener makes the key; later ones get the same.
    let mut first = listener.connect(None).await.unwrap();
    let key = first.signing_key().clone();
    assert_eq!(listener.signing_key().await.unwrap().as_ref(), Some(&key));
    drop(first);
    first = listener.connect(None).await.unwrap();
    assert_eq!(first.signing_key(), &key);

    let (status, rotated) =
        send(app.req(Method::POST, "/webhooks/listener-signing-key", &f.key)).await;
    assert_eq!(status, StatusCode::CREATED, "{rotated}");
    let new_key = rotated["signing_key"].as_str().unwrap();
    assert_ne!(new_key, key.signing_key.expose());
    // The listener signing with the old key is ended...
    let ended = tokio::time::timeout(Duration::from_secs(10), first.next())
        .await
        .expect("the stream ends at once");
    assert!(ended.is_none(), "{ended:?}");
    // ...and the next one signs with the new key.
    let mut second = listener.connect(None).await.unwrap();
    assert_eq!(second.signing_key().signing_key.expose(), new_key);
    // On PostgreSQL the replacement is announced to every process, this one
    // included, and the announcement may come after a listener reconnected
    // (it did, under load): a stream that signs with the new key already
    // is not ended by it. Announced once more here, before the change, so
    // the relay hears it first (PostgreSQL delivers notifications in
    // commit order).
    if let Pool::Postgres(pool) = app.store.pool() {
        sqlx::query("SELECT pg_notify('shipment_listener_key_rotated', $1)")
            .bind(f.merchant_id.to_string())
            .execute(pool)
            .await
            .unwrap();
    }
    app.create_default(&f).await;
    let event = next(&mut second).await;
    checked(&event, new_key);
}

/// Waits until every change written so far has been claimed (so fed to
/// live listeners, or missed by absent ones).
async fn wait_until_claimed(app: &TestApp) {
    for _ in 0..200 {
        if app.store.outbox_backlog().await.unwrap().depth == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the outbox did not drain");
}

async fn a_reconnecting_listener_gets_what_it_missed(app: &TestApp) {
    let f = app.fixture().await;
    let sdk = app.sdk(&f.key);
    let mut stream = sdk.listener().connect(None).await.unwrap();
    let key = stream.signing_key().signing_key.expose().to_owned();
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = next(&mut stream).await;
    drop(stream);

    // Two changes while nobody listens: nothing is kept for a listener...
    app.advance(&f, &code, "in_transit").await;
    wait_until_claimed(app).await;
    let mut fresh = sdk.listener().connect(None).await.unwrap();
    // ...but resuming after the last event seen sends them, in order, once.
    let mut resumed = sdk.listener().connect(Some(first.id)).await.unwrap();
    let missed = [next(&mut resumed).await, next(&mut resumed).await];
    let versions: Vec<_> = missed.iter().map(|e| checked(e, &key)).collect();
    assert_eq!(
        versions,
        [(2, "assigned_to_driver".into()), (3, "in_transit".into())]
    );
    // Both listeners then get the next change, the resumed one once.
    let (status, _) = app.courier_op(&f, &code, "deliver", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(checked(&next(&mut resumed).await, &key).0, 4);
    assert_eq!(checked(&next(&mut fresh).await, &key).0, 4);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), resumed.next())
            .await
            .is_err(),
        "nothing more"
    );
}

async fn listening_needs_a_credential_and_has_limits(app: &TestApp) {
    let f = app.fixture().await;
    let url = format!("{}/webhooks/listen", app.base);
    let got = send(app.client.get(&url)).await;
    assert_problem(&got, 401, "unauthenticated");
    let got = send(app.client.get(&url).header("X-API-KEY", &f.courier_key)).await;
    assert_problem(&got, 403, "forbidden");
    let got = send(app.client.get(&url).bearer_auth("not-a-session")).await;
    assert_problem(&got, 401, "unauthenticated");
    let got = send(
        app.client
            .get(&url)
            .header("X-API-KEY", &f.key)
            .header("Last-Event-ID", "yesterday"),
    )
    .await;
    let problem = assert_problem(&got, 400, "invalid_identifier");
    assert_eq!(problem["field"], "Last-Event-ID");

    // A stream is text/event-stream and starts with `ready`.
    let response = app
        .client
        .get(&url)
        .header("X-API-KEY", &f.key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    drop(response);

    // At most 16 listeners per merchant and process; the 17th is 429.
    let sdk = app.sdk(&f.key);
    let mut held = Vec::new();
    for _ in 0..shipment_server::harness::MAX_LISTENERS_PER_MERCHANT {
        held.push(sdk.listener().connect(None).await.unwrap());
    }
    let got = send(app.client.get(&url).header("X-API-KEY", &f.key)).await;
    let problem = assert_problem(&got, 429, "rate_limited");
    assert!(
        problem["detail"].as_str().unwrap().contains("16 listeners"),
        "{problem}"
    );
    held.pop();
    // A closed stream frees its place once the server notices, when it
    // writes to it: the next change or keep-alive (15 s).
    app.create_default(&f).await;
    let mut reconnected = None;
    for _ in 0..300 {
        match sdk.listener().connect(None).await {
            Ok(stream) => {
                reconnected = Some(stream);
                break;
            }
            Err(e) if e.status() == Some(429) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(reconnected.is_some(), "a place was freed");
}

/// A redelivery repeats a delivery to one webhook: listeners, which got
/// the change when it happened, do not get it again.
async fn a_redelivery_goes_to_its_webhook_only(app: &TestApp) {
    let receiver =
        shipment_testkit::WebhookReceiver::start(StatusCode::INTERNAL_SERVER_ERROR, Duration::ZERO)
            .await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let (status, hook) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&serde_json::json!({ "url": receiver.url })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    let hook_id = hook["webhook_id"].as_i64().unwrap();
    let sdk = app.sdk(&f.key);
    let mut stream = sdk.listener().connect(None).await.unwrap();
    app.create_default(&f).await;
    next(&mut stream).await;
    receiver.nth(0).await;
    wait_until_claimed(app).await;

    let log = format!("/webhooks/{hook_id}/deliveries");
    let (_, page) = send(app.bearer(Method::GET, &log, &token)).await;
    let failed = page["data"][0]["id"].as_i64().unwrap();
    let (status, queued) = send(app.bearer(
        Method::POST,
        &format!("/webhooks/{hook_id}/deliveries/{failed}/redeliver"),
        &token,
    ))
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    // Sent to the webhook (a second attempt arrives)...
    receiver.nth(1).await;
    wait_until_claimed(app).await;
    // ...and not to the listener.
    let more = tokio::time::timeout(Duration::from_millis(500), stream.next()).await;
    assert!(more.is_err(), "a listener got a redelivery: {more:?}");
}

/// PostgreSQL: a listener connected to one server process gets the changes
/// another process's dispatcher claims (announced with `NOTIFY`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_on_another_process_get_every_change() {
    // A second process on the same database that delivers nothing itself:
    // every change is claimed by the first.
    let Some((a, b)) = crate::OtherProcess::beside(Db::Postgres, |config| {
        config.webhooks.no_webhook_delivery = true;
    })
    .await
    else {
        return;
    };
    let b_base = b.base.clone();

    let f = a.fixture().await;
    let on_b = shipment_sdk::Client::builder()
        .api_key(&f.key)
        .base_url(&b_base)
        .build()
        .unwrap();
    let mut stream = on_b.listener().connect(None).await.unwrap();
    let key = stream.signing_key().signing_key.expose().to_owned();
    let code = a.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    a.advance(&f, &code, "in_transit").await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(checked(&next(&mut stream).await, &key).0);
    }
    assert_eq!(seen, [1, 2, 3]);
    drop(stream);
    b.stop().await;
    a.stop().await;
}

/// A change can reach listeners after a change with a higher outbox id: a
/// shipment's next change waits until its previous one was delivered, while
/// other shipments' changes go on. A listener that saw the later one and
/// resumed after it must still get the earlier one.
async fn resuming_never_skips_a_change_claimed_after_a_later_one(app: &TestApp) {
    // X's first delivery takes a second, so its second change waits for it.
    let slow =
        shipment_testkit::WebhookReceiver::start(StatusCode::OK, Duration::from_secs(1)).await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let (status, _) =
        send(app.bearer(Method::POST, "/webhooks/shipment-signing-key", &token)).await;
    assert_eq!(status, StatusCode::CREATED);
    let sdk = app.sdk(&f.key);
    let mut stream = sdk.listener().connect(None).await.unwrap();
    let key = stream.signing_key().signing_key.expose().to_owned();
    let x = app
        .create(
            &f,
            serde_json::json!({"courier_company_id": f.courier_id, "webhook_url": slow.url}),
        )
        .await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(next(&mut stream).await.delivery.shipment_code, x);
    // Written before Y's first change, claimed only after X's first was
    // delivered, so after Y's.
    app.advance(&f, &x, "assigned_to_driver").await;
    let y = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let seen = next(&mut stream).await;
    assert_eq!(
        (seen.delivery.shipment_code.as_str(), seen.delivery.version),
        (y.as_str(), 1),
        "Y's change comes first, while X's second waits"
    );
    drop(stream);
    wait_until_claimed(app).await;

    let mut resumed = sdk.listener().connect(Some(seen.id)).await.unwrap();
    let event = next(&mut resumed).await;
    assert_eq!(
        event.delivery.shipment_code, x,
        "X's second change is not skipped"
    );
    assert_eq!(checked(&event, &key).0, 2);
}
