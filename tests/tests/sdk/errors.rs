//! How the server's refusals and a broken connection reach the SDK's
//! caller, against the real reference server on SQLite and PostgreSQL:
//! typed errors, and which calls the SDK sends again.

use reqwest::{Method, StatusCode};
use serde_json::json;
use shipment_sdk::Error;
use shipment_sdk::model::ProblemCode;
use shipment_sdk::model::{CreateShipment, Status};
use shipment_testkit::{Fixture, TestApp, db_tests, send};

use crate::dec;

db_tests!(the_servers_refusals_arrive_as_typed_errors);

db_tests!(
    config = |c| c.test_controls = true;
    a_dropped_connection_is_retried_when_the_call_is_idempotent,
);

async fn the_servers_refusals_arrive_as_typed_errors(server: &TestApp) {
    let f = server.fixture().await;
    let other = server.fixture().await;
    let client = server.sdk(&f.key);
    let theirs = server
        .sdk(&other.key)
        .shipments()
        .create(&CreateShipment::new(other.courier_id.into()))
        .send()
        .await
        .unwrap()
        .into_inner();

    // 404: well-formed, but nobody's.
    let err = client.shipments().get("SHP-0000-0000").await.unwrap_err();
    let api = err.api().expect("an API error");
    assert_eq!(
        (api.status, api.code.as_ref()),
        (404, Some(&ProblemCode::NotFound))
    );
    assert!(api.detail.as_deref().unwrap().contains("SHP-0000-0000"));
    assert!(api.request_id.is_some());
    assert!(!err.is_retryable());

    // 403: another merchant's shipment, for reads and changes alike.
    for err in [
        client.shipments().get(&theirs.code).await.unwrap_err(),
        client.shipments().cancel(&theirs.code).await.unwrap_err(),
        client.shipments().rate(&theirs.code, 5).await.unwrap_err(),
        client
            .shipments()
            .generate_confirmation_code(&theirs.code)
            .await
            .unwrap_err(),
    ] {
        assert_eq!(
            (err.status(), err.code()),
            (Some(403), Some(&ProblemCode::Forbidden)),
            "{err}"
        );
    }
    assert_eq!(
        server
            .sdk(&other.key)
            .shipments()
            .get(&theirs.code)
            .await
            .unwrap()
            .status,
        Status::AssignedToCourier,
        "nothing changed"
    );

    // 400 with the field at fault: a courier company not linked to us.
    let err = client
        .shipments()
        .create(&CreateShipment::new(other.courier_id.into()))
        .send()
        .await
        .unwrap_err();
    let api = err.api().expect("an API error");
    assert_eq!(
        (api.status, api.code.as_ref()),
        (400, Some(&ProblemCode::InvalidField))
    );
    assert_eq!(api.field.as_deref(), Some("courier_company_id"));
    let err = client
        .shipments()
        .create(&CreateShipment::new(f.courier_id.into()).weight_kg(dec("-1")))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.api().unwrap().field.as_deref(), Some("weight_kg"));

    // 401: a key of the right shape that the server does not know.
    let stranger = server.sdk("sk_test_00000000000000000000000000000000");
    let err = stranger.couriers().list().await.unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(401), Some(&ProblemCode::Unauthenticated))
    );
    assert!(!format!("{err} {err:?}").contains("sk_test_0000"));
    let err = stranger.shipments().get(&theirs.code).await.unwrap_err();
    assert_eq!(err.status(), Some(401));

    // A key of the other environment never leaves the process.
    let err = shipment_sdk::Client::builder()
        .api_key(f.key.replace("sk_test_", "sk_live_"))
        .base_url(&server.base)
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::WrongEnvironment { .. }), "{err}");
}

/// Arms a test-control fault on `f`'s next matching requests.
async fn arm(server: &TestApp, f: &Fixture, fault: serde_json::Value) {
    let (status, body) = send(
        server
            .req(Method::POST, "/testing/faults", &f.key)
            .json(&fault),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

async fn a_dropped_connection_is_retried_when_the_call_is_idempotent(server: &TestApp) {
    let f = server.fixture().await;
    let client = server.sdk(&f.key);
    let drop = |method: &str, path: &str, times: u32| json!({"method": method, "path": path, "drop_connection": true, "times": times});

    // A create whose connection the server closes without an answer (the
    // request not run) is sent again with its key, and makes one shipment.
    arm(server, &f, drop("POST", "/shipments", 1)).await;
    let request = CreateShipment::new(f.courier_id.into()).description("dropped once");
    let created = client.shipments().create(&request).send().await.unwrap();
    assert!(!created.replayed, "made by this call");
    assert_eq!(created.status, Status::AssignedToCourier);
    assert_eq!(client.shipments().list().send().await.unwrap().total, 1);

    // Reads too, as often as the retries allow (3 by default).
    arm(server, &f, drop("GET", "/shipments/{code}", 2)).await;
    let fetched = client.shipments().get(&created.code).await.unwrap();
    assert_eq!(fetched.code, created.code);

    // A key of the caller's that the service has seen: the retry after the
    // drop is answered from the first create, and says so.
    let first = client
        .shipments()
        .create(&request)
        .idempotency_key("order-2001")
        .send()
        .await
        .unwrap();
    assert!(!first.replayed);
    arm(server, &f, drop("POST", "/shipments", 1)).await;
    let again = client
        .shipments()
        .create(&request)
        .idempotency_key("order-2001")
        .send()
        .await
        .unwrap();
    assert!(again.replayed, "the caller's key was used before");
    assert_eq!(again.code, first.code);
    assert_eq!(client.shipments().list().send().await.unwrap().total, 2);

    // A change without an idempotency key is not sent again: the one drop
    // armed is its only attempt, and the shipment is untouched.
    arm(server, &f, drop("POST", "/shipments/{code}/cancel", 1)).await;
    let err = client.shipments().cancel(&created.code).await.unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
    assert!(
        err.is_retryable(),
        "safe to send again by the caller's judgement"
    );
    assert_eq!(
        client.shipments().get(&created.code).await.unwrap().status,
        Status::AssignedToCourier
    );
    let cancelled = client.shipments().cancel(&created.code).await.unwrap();
    assert_eq!(cancelled.status, Status::Cancelled);
}
