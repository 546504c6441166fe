//! Shipments through the SDK's `Client` against the real reference server,
//! on SQLite and PostgreSQL: create (idempotency included), get, cancel,
//! rate and confirmation codes.

use chrono::Utc;
use shipment_sdk::Error;
use shipment_sdk::model::ProblemCode;
use shipment_sdk::model::{CreateShipment, MerchantId, Status};
use shipment_testkit::{TestApp, db_tests};

use crate::dec;

db_tests!(
    create_returns_the_full_shipment_and_get_reads_it_back,
    create_with_the_same_idempotency_key_returns_the_first_shipment,
    cancel_is_idempotent_and_refused_after_pickup,
    rate_applies_once_to_a_delivered_shipment,
    a_confirmation_code_is_needed_at_delivery,
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
