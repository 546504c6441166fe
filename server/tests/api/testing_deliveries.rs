//! Test controls that act on deliveries: advancing a shipment through the
//! real lifecycle (with a delivery per step) and duplicate webhook
//! deliveries.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::MerchantId;

use crate::receiver::{Received, Receiver};
use crate::{advance, duplicates, signed_in_webhook, wait_for_empty_outbox};
use shipment_testkit::{Fixture, TestApp, assert_problem, db_tests, send};

db_tests!(
    config = |c| c.test_controls = true;
    advance_moves_through_the_real_lifecycle_with_its_deliveries,
    advance_refuses_unreachable_states_and_others_shipments,
    advance_adds_a_test_driver_when_the_courier_has_none,
    duplicates_send_the_next_deliveries_twice,
    duplicates_reach_a_shipments_own_url_too,
);

/// Signs the fixture's merchant in and registers `url` as its webhook;
/// returns the signing key.
async fn register_webhook(app: &TestApp, f: &Fixture, url: &str) -> String {
    signed_in_webhook(app, f, url).await.2
}

fn json_of(r: &Received) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

async fn advance_moves_through_the_real_lifecycle_with_its_deliveries(app: &TestApp) {
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    register_webhook(app, &f, &receiver.url).await;
    // Each target from a new shipment, with the (version, status) of every
    // change it takes.
    let atc = "assigned_to_courier";
    let atd = "assigned_to_driver";
    let expected: [(&str, &[(i64, &str)]); 7] = [
        (atc, &[(1, atc)]),
        (atd, &[(1, atc), (2, atd)]),
        ("in_transit", &[(1, atc), (2, atd), (3, "in_transit")]),
        (
            "delivered",
            &[(1, atc), (2, atd), (3, "in_transit"), (4, "delivered")],
        ),
        (
            "failed",
            &[(1, atc), (2, atd), (3, "in_transit"), (4, "failed")],
        ),
        (
            "returned",
            &[
                (1, atc),
                (2, atd),
                (3, "in_transit"),
                (4, "failed"),
                (5, "returned"),
            ],
        ),
        ("cancelled", &[(1, atc), (2, "cancelled")]),
    ];
    let mut codes = Vec::new();
    for (target, changes) in expected {
        let code = app.create_default(&f).await["code"]
            .as_str()
            .unwrap()
            .to_owned();
        if target == "delivered" {
            // A confirmation code does not stop the advance.
            let (status, _) = send(app.req(
                Method::POST,
                &format!("/shipments/{code}/generate-confirmation-code"),
                &f.key,
            ))
            .await;
            assert_eq!(status, StatusCode::CREATED);
        }
        let (status, shipment) = advance(app, &f, &code, target).await;
        assert_eq!(status, StatusCode::OK, "{target}: {shipment}");
        assert_eq!(shipment["status"], target);
        assert_eq!(shipment["version"], changes.last().unwrap().0, "{target}");
        // The answer is the shipment as GET shows it.
        let (_, current) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
        assert_eq!(shipment, current);
        let driven = changes.iter().any(|(_, s)| *s == atd) && target != "cancelled";
        let driver = if driven {
            json!(f.driver_id)
        } else {
            Value::Null
        };
        assert_eq!(shipment["assigned_driver_id"], driver, "{target}");
        let reason = if matches!(target, "failed" | "returned") {
            json!("test")
        } else {
            Value::Null
        };
        assert_eq!(shipment["failure_reason"], reason, "{target}");
        codes.push((code, changes));
    }
    // Already there: 200, unchanged, nothing delivered.
    let (delivered, _) = &codes[3];
    let (status, same) = advance(app, &f, delivered, "delivered").await;
    assert_eq!(status, StatusCode::OK, "{same}");
    assert_eq!(same["version"], 4);

    let total: usize = codes.iter().map(|(_, changes)| changes.len()).sum();
    receiver.wait_for(total).await;
    wait_for_empty_outbox(app).await;
    let got = receiver.received();
    assert_eq!(got.len(), total, "one delivery per change, no more");
    for (code, changes) in &codes {
        let seen: Vec<(i64, String)> = got
            .iter()
            .map(json_of)
            .filter(|b| b["code"] == code.as_str())
            .map(|b| {
                (
                    b["version"].as_i64().unwrap(),
                    b["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let want: Vec<(i64, String)> = changes.iter().map(|(v, s)| (*v, s.to_string())).collect();
        assert_eq!(seen, want, "{code}");
    }
    // A failed shipment goes on through a new pickup.
    let (failed, _) = &codes[4];
    let (status, shipment) = advance(app, &f, failed, "delivered").await;
    assert_eq!(status, StatusCode::OK, "{shipment}");
    assert_eq!(
        (shipment["version"].as_i64(), shipment["status"].as_str()),
        (Some(6), Some("delivered"))
    );
}

async fn advance_refuses_unreachable_states_and_others_shipments(app: &TestApp) {
    let f = app.fixture().await;
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = advance(app, &f, &code, "delivered").await;
    assert_eq!(status, StatusCode::OK);
    let got = advance(app, &f, &code, "in_transit").await;
    let problem = assert_problem(&got, 409, "invalid_state");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains("delivered") && detail.contains("in_transit"),
        "{detail}"
    );
    let got = advance(app, &f, &code, "pending").await;
    assert_problem(&got, 409, "invalid_state");
    let (_, shipment) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
    assert_eq!(
        (shipment["status"].as_str(), shipment["version"].as_i64()),
        (Some("delivered"), Some(4))
    );

    // Not a state; not a shipment code; nobody's shipment; another
    // merchant's shipment (as GET answers them).
    let got = advance(app, &f, &code, "on_the_moon").await;
    let problem = assert_problem(&got, 400, "invalid_field");
    assert_eq!(problem["field"], "to");
    let got = send(
        app.req(
            Method::POST,
            &format!("/testing/shipments/{code}/advance"),
            &f.key,
        )
        .json(&json!({"to": "delivered", "by": "tomorrow"})),
    )
    .await;
    assert_problem(&got, 400, "unknown_field");
    let got = advance(app, &f, "SHP-1", "delivered").await;
    assert_problem(&got, 400, "invalid_identifier");
    let got = advance(app, &f, "SHP-0000-0000", "delivered").await;
    assert_problem(&got, 404, "not_found");
    let other = app.fixture().await;
    let theirs = app.create_default(&other).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let got = advance(app, &f, &theirs, "cancelled").await;
    let as_get = send(app.req(Method::GET, &format!("/shipments/{theirs}"), &f.key)).await;
    assert_eq!(got.0, as_get.0);
    assert_problem(&got, 403, "forbidden");
    let (_, untouched) =
        send(app.req(Method::GET, &format!("/shipments/{theirs}"), &other.key)).await;
    assert_eq!(untouched["status"], "assigned_to_courier");
}

async fn advance_adds_a_test_driver_when_the_courier_has_none(app: &TestApp) {
    let f = app.fixture().await;
    let courier = app
        .store
        .create_courier("Driverless Couriers", 500, 0, 0)
        .await
        .unwrap();
    app.store
        .link_courier(MerchantId::new(f.merchant_id), courier)
        .await
        .unwrap();
    let created = app.create(&f, json!({"courier_company_id": courier})).await;
    let code = created["code"].as_str().unwrap();
    let (status, shipment) = advance(app, &f, code, "in_transit").await;
    assert_eq!(status, StatusCode::OK, "{shipment}");
    let drivers = app.store.drivers(courier).await.unwrap();
    assert_eq!(drivers.len(), 1);
    assert_eq!(drivers[0].name, "Test driver");
    assert_eq!(shipment["assigned_driver_id"], drivers[0].id);
    // The next shipment takes the same driver.
    let next = app.create(&f, json!({"courier_company_id": courier})).await;
    let (_, next) = advance(
        app,
        &f,
        next["code"].as_str().unwrap(),
        "assigned_to_driver",
    )
    .await;
    assert_eq!(next["assigned_driver_id"], drivers[0].id);
    assert_eq!(app.store.drivers(courier).await.unwrap().len(), 1);
}

async fn arm_duplicates(app: &TestApp, f: &Fixture, times: u32) {
    let (status, body) = duplicates(app, f, times).await;
    assert_eq!((status, body), (StatusCode::OK, json!({ "times": times })));
}

fn header<'a>(r: &'a Received, name: &str) -> &'a str {
    r.headers[name].to_str().unwrap()
}

/// Two deliveries that are one, sent twice.
fn assert_same(first: &Received, second: &Received) {
    assert_eq!(first.body, second.body);
    for name in [
        "x-service-delivery-id",
        "x-service-signature",
        "content-type",
    ] {
        assert_eq!(header(first, name), header(second, name), "{name}");
    }
}

async fn duplicates_send_the_next_deliveries_twice(app: &TestApp) {
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let key = register_webhook(app, &f, &receiver.url).await;
    // Refused counts, and another merchant's count, change nothing here.
    let got = duplicates(app, &f, 1001).await;
    assert_problem(&got, 400, "invalid_field");
    let other = app.fixture().await;
    arm_duplicates(app, &other, 5).await;
    arm_duplicates(app, &f, 1).await;

    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let got = receiver.wait_for(2).await;
    assert_same(&got[0], &got[1]);
    assert_eq!(
        webhook_verify::verify(&key, &got[1].body, header(&got[1], "x-service-signature")),
        Ok(())
    );
    assert_eq!(json_of(&got[0])["version"], 1);

    // Then single deliveries again.
    let (status, _) =
        send(app.req(Method::POST, &format!("/shipments/{code}/cancel"), &f.key)).await;
    assert_eq!(status, StatusCode::OK);
    receiver.wait_for(3).await;
    wait_for_empty_outbox(app).await;
    let got = receiver.received();
    assert_eq!(got.len(), 3, "the second change is delivered once");
    assert_eq!(json_of(&got[2])["version"], 2);
    assert_ne!(
        header(&got[2], "x-service-delivery-id"),
        header(&got[0], "x-service-delivery-id")
    );
}

async fn duplicates_reach_a_shipments_own_url_too(app: &TestApp) {
    let own = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let (status, _) =
        send(app.bearer(Method::POST, "/webhooks/shipment-signing-key", &token)).await;
    assert_eq!(status, StatusCode::CREATED);
    // 0 turns a pending count off.
    arm_duplicates(app, &f, 3).await;
    arm_duplicates(app, &f, 0).await;
    let first = app
        .create(
            &f,
            json!({"courier_company_id": f.courier_id, "webhook_url": own.url}),
        )
        .await;
    own.wait_for(1).await;
    wait_for_empty_outbox(app).await;
    assert_eq!(own.received().len(), 1);

    arm_duplicates(app, &f, 1).await;
    let code = first["code"].as_str().unwrap();
    let (status, _) = advance(app, &f, code, "assigned_to_driver").await;
    assert_eq!(status, StatusCode::OK);
    let got = own.wait_for(3).await;
    assert_same(&got[1], &got[2]);
    assert_eq!(json_of(&got[1])["version"], 2);
    let (status, _) = advance(app, &f, code, "in_transit").await;
    assert_eq!(status, StatusCode::OK);
    own.wait_for(4).await;
    wait_for_empty_outbox(app).await;
    assert_eq!(own.received().len(), 4);
}
