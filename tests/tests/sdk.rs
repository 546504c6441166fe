//! The SDK against the real reference server, on SQLite and PostgreSQL:
//! every API-key endpoint, and how the server's refusals reach the caller.
//! The dashboard calls are in `dashboard.rs`, the lists in `listing.rs` and
//! redelivery in `redelivery.rs`, part of this test binary.

#[path = "dashboard.rs"]
mod dashboard;
#[path = "listing.rs"]
mod listing;
#[path = "redelivery.rs"]
mod redelivery;

use chrono::Utc;
use reqwest::{Method, StatusCode};
use rust_decimal::Decimal;
use serde_json::json;
use shipment_sdk::Error;
use shipment_sdk::model::ProblemCode;
use shipment_sdk::model::{CreateShipment, MerchantId, Status};
use shipment_testkit::{Fixture, TestApp, db_tests, send};

fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

db_tests!(
    create_returns_the_full_shipment_and_get_reads_it_back,
    create_with_the_same_idempotency_key_returns_the_first_shipment,
    cancel_is_idempotent_and_refused_after_pickup,
    rate_applies_once_to_a_delivered_shipment,
    a_confirmation_code_is_needed_at_delivery,
    couriers_lists_the_linked_companies,
    the_servers_refusals_arrive_as_typed_errors,
);

db_tests!(
    config = |c| c.test_controls = true;
    a_dropped_connection_is_retried_when_the_call_is_idempotent,
);

async fn create_returns_the_full_shipment_and_get_reads_it_back(server: &TestApp) {
    let f = server.fixture().await;
    let client = server.sdk(&f.key);
    let request = CreateShipment::new(f.courier_id.into())
        .description("Two boxes of books")
        .weight_kg(dec("4.5"))
        .dimensions("40x30x20 cm")
        .item("book")
        .item("bookend")
        .start_address("Warehouse 3, Berlin")
        .end_address("Damrak 1, Amsterdam");
    let created = client
        .shipments()
        .create(&request)
        .send()
        .await
        .unwrap()
        .into_inner();

    assert_eq!(created.status, Status::AssignedToCourier);
    assert_eq!(created.merchant_id, MerchantId::new(f.merchant_id));
    assert_eq!(created.courier_company_id, f.courier_id.into());
    assert_eq!(created.items, ["book", "bookend"]);
    assert_eq!(created.weight_kg, Some(dec("4.5")));
    assert_eq!(created.dimensions.as_deref(), Some("40x30x20 cm"));
    // 5.00 + 1.50 x 4.5; text addresses add no distance.
    assert_eq!(created.total_fee, dec("11.75"));
    assert_eq!(created.version, 1);
    assert!(created.assigned_to_courier_at.is_some());
    assert!(created.delivered_at.is_none());

    let fetched = client.shipments().get(&created.code).await.unwrap();
    assert_eq!(fetched, created);

    // With lat,lng addresses the distance term counts (Berlin to Amsterdam
    // is about 577 km, so about 57.70 more).
    let far = client
        .shipments()
        .create(
            &CreateShipment::new(f.courier_id.into())
                .weight_kg(dec("4.5"))
                .start_address("52.5200,13.4050")
                .end_address("52.3759,4.8975"),
        )
        .send()
        .await
        .unwrap();
    assert!(
        far.total_fee > dec("60") && far.total_fee < dec("80"),
        "{}",
        far.total_fee
    );
    assert_ne!(far.code, created.code);
}

async fn create_with_the_same_idempotency_key_returns_the_first_shipment(server: &TestApp) {
    let f = server.fixture().await;
    let client = server.sdk(&f.key);
    let request = CreateShipment::new(f.courier_id.into()).description("once only");
    let first = client
        .shipments()
        .create(&request)
        .idempotency_key("order-1001")
        .send()
        .await
        .unwrap();
    assert!(!first.replayed, "created now");
    let again = client
        .shipments()
        .create(&request)
        .idempotency_key("order-1001")
        .send()
        .await
        .unwrap();
    assert!(
        again.replayed,
        "the server says it answered from the first create"
    );
    assert_eq!(again.code, first.code);
    assert_eq!(again.value, first.value);

    let err = client
        .shipments()
        .create(&request.clone().description("another body"))
        .idempotency_key("order-1001")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.code(), Some(&ProblemCode::IdempotencyConflict));

    // Without a key of ours the SDK makes a fresh one per call: two calls,
    // two shipments, neither a replay.
    let a = client.shipments().create(&request).send().await.unwrap();
    let b = client.shipments().create(&request).send().await.unwrap();
    assert_ne!(a.code, b.code);
    assert!(!a.replayed && !b.replayed);
    let all = client.shipments().list().send().await.unwrap();
    assert_eq!(all.total, 3);
}

async fn cancel_is_idempotent_and_refused_after_pickup(server: &TestApp) {
    let f = server.fixture().await;
    let client = server.sdk(&f.key);
    let s = client
        .shipments()
        .create(&CreateShipment::new(f.courier_id.into()))
        .send()
        .await
        .unwrap()
        .into_inner();
    let cancelled = client.shipments().cancel(&s.code).await.unwrap();
    assert_eq!(cancelled.status, Status::Cancelled);
    assert!(cancelled.cancelled_at.is_some());
    assert_eq!(cancelled.version, s.version + 1);
    let again = client.shipments().cancel(&s.code).await.unwrap();
    assert_eq!(again, cancelled);

    // Cancelling with a driver assigned is still allowed.
    let assigned = client
        .shipments()
        .create(&CreateShipment::new(f.courier_id.into()))
        .send()
        .await
        .unwrap()
        .into_inner();
    server
        .advance(&f, assigned.code.as_str(), "assigned_to_driver")
        .await;
    assert_eq!(
        client
            .shipments()
            .cancel(&assigned.code)
            .await
            .unwrap()
            .status,
        Status::Cancelled
    );

    let moving = client
        .shipments()
        .create(&CreateShipment::new(f.courier_id.into()))
        .send()
        .await
        .unwrap()
        .into_inner();
    server.advance(&f, moving.code.as_str(), "in_transit").await;
    let err = client.shipments().cancel(&moving.code).await.unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.code(), Some(&ProblemCode::InvalidState));
    assert!(err.request_id().is_some());
    assert_eq!(
        client.shipments().get(&moving.code).await.unwrap().status,
        Status::InTransit
    );
}

async fn rate_applies_once_to_a_delivered_shipment(server: &TestApp) {
    let f = server.fixture().await;
    let client = server.sdk(&f.key);
    let s = client
        .shipments()
        .create(&CreateShipment::new(f.courier_id.into()))
        .send()
        .await
        .unwrap()
        .into_inner();
    let err = client.shipments().rate(&s.code, 8).await.unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(409), Some(&ProblemCode::InvalidState))
    );

    server.advance(&f, s.code.as_str(), "delivered").await;
    let rated = client.shipments().rate(&s.code, 8).await.unwrap();
    assert_eq!(rated.rating, Some(8));
    assert!(rated.rated_at.is_some());
    assert_eq!(rated.status, Status::Delivered);

    let err = client.shipments().rate(&s.code, 3).await.unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(409), Some(&ProblemCode::AlreadyRated))
    );
    // Out of range never reaches the server.
    assert!(matches!(
        client.shipments().rate(&s.code, 11).await,
        Err(Error::InvalidRating(11))
    ));
    assert_eq!(
        client.shipments().get(&s.code).await.unwrap().rating,
        Some(8)
    );
}

async fn a_confirmation_code_is_needed_at_delivery(server: &TestApp) {
    let f = server.fixture().await;
    let client = server.sdk(&f.key);
    let s = client
        .shipments()
        .create(&CreateShipment::new(f.courier_id.into()))
        .send()
        .await
        .unwrap()
        .into_inner();
    let first = client
        .shipments()
        .generate_confirmation_code(&s.code)
        .await
        .unwrap();
    assert_eq!(first.code, s.code);
    assert_eq!(first.confirmation_code.len(), 6);
    assert!(first.confirmation_code.bytes().all(|b| b.is_ascii_digit()));
    let hours = (first.expires_at - Utc::now()).num_hours();
    assert!((71..=72).contains(&hours), "{hours}");

    // A new code replaces the old one.
    let code = client
        .shipments()
        .generate_confirmation_code(&s.code)
        .await
        .unwrap();
    server.advance(&f, s.code.as_str(), "in_transit").await;
    let (status, body) = server
        .courier_op(&f, s.code.as_str(), "deliver", None)
        .await;
    assert_eq!(status.as_u16(), 400, "{body}");
    let wrong = if code.confirmation_code == "000000" {
        "111111"
    } else {
        "000000"
    };
    let (status, body) = server
        .courier_op(
            &f,
            s.code.as_str(),
            "deliver",
            Some(serde_json::json!({"confirmation_code": wrong})),
        )
        .await;
    assert_eq!(status.as_u16(), 400, "{body}");
    assert_eq!(body["code"], "invalid_confirmation_code");
    let delivered = server
        .courier_step(
            &f,
            s.code.as_str(),
            "deliver",
            Some(serde_json::json!({"confirmation_code": code.confirmation_code})),
        )
        .await;
    assert_eq!(delivered["status"], "delivered");

    // Once delivered, there is nothing left to confirm.
    let err = client
        .shipments()
        .generate_confirmation_code(&s.code)
        .await
        .unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(409), Some(&ProblemCode::InvalidState))
    );
}

async fn couriers_lists_the_linked_companies(server: &TestApp) {
    let f = server.fixture().await;
    let client = server.sdk(&f.key);
    let couriers = client.couriers().list().await.unwrap();
    assert_eq!(couriers.len(), 1);
    let c = &couriers[0];
    assert_eq!(c.id, f.courier_id.into());
    assert_eq!(c.name, "Swift Couriers");
    assert!(c.active);
    assert_eq!(
        (c.base_fee, c.per_kg, c.per_km),
        (dec("5.00"), dec("1.50"), dec("0.10"))
    );

    // A second linked company shows up too; an unlinked one does not.
    let second = server
        .store
        .create_courier("Rapid", 300, 0, 0)
        .await
        .unwrap();
    server
        .store
        .create_courier("Unlinked", 100, 0, 0)
        .await
        .unwrap();
    server
        .store
        .link_courier(f.merchant_id, second)
        .await
        .unwrap();
    let ids: Vec<i64> = client
        .couriers()
        .list()
        .await
        .unwrap()
        .iter()
        .map(|c| c.id.get())
        .collect();
    assert_eq!(ids, [f.courier_id, second]);
}

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
