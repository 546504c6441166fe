//! Typed shipments and de-duplication.

use std::sync::Arc;

use webhook_verify::shipment::{Deduplicator, ShipmentError, Status};
use webhook_verify::{Verifier, VerifyError, sign};

use crate::helpers::KEY;

/// A delivery body as the reference server sends it: every key present.
const DELIVERY: &[u8] = br#"{
  "id": 42, "code": "SHP-7K3M-Q9ZX", "merchant_id": 3, "status": "in_transit",
  "courier_company_id": 7, "assigned_driver_id": 12, "description": "Two boxes of books",
  "weight_kg": 4.5, "dimensions": null, "items": ["book"], "start_address": "52.5200,13.4050",
  "end_address": "52.3759,4.8975", "total_fee": 12.75, "webhook_url": null, "version": 4,
  "rating": null, "failure_reason": null,
  "created_at": "2026-11-21T09:30:12.123456Z",
  "assigned_to_courier_at": "2026-11-21T09:30:12.123456Z",
  "assigned_to_driver_at": "2026-11-21T09:31:02.120000Z",
  "picked_up_at": "2026-11-21T10:02:00.000000Z", "delivered_at": null, "failed_at": null,
  "returned_at": null, "cancelled_at": null, "rated_at": null,
  "updated_at": "2026-11-21T10:02:00.000000Z"
}"#;

#[test]
fn a_verified_delivery_parses_into_a_shipment() {
    let shipment = Verifier::new(KEY)
        .verify_shipment(DELIVERY, sign(KEY, DELIVERY))
        .unwrap();
    assert_eq!(shipment.code, "SHP-7K3M-Q9ZX");
    assert_eq!(shipment.version, 4);
    assert_eq!(shipment.status, Status::InTransit);
}

#[test]
fn a_forged_delivery_is_not_parsed() {
    let refused = Verifier::new(KEY).verify_shipment(DELIVERY, sign("whsec_other", DELIVERY));
    assert!(matches!(
        refused,
        Err(ShipmentError::Signature(VerifyError::Mismatch))
    ));
}

#[test]
fn a_signed_body_that_is_not_a_shipment_is_a_json_error() {
    let body = br#"{"code":"SHP-7K3M-Q9ZX"}"#;
    let refused = Verifier::new(KEY).verify_shipment(body, sign(KEY, body));
    assert!(
        matches!(refused, Err(ShipmentError::Json(_))),
        "{refused:?}"
    );
}

#[test]
fn duplicates_and_late_arrivals_are_dropped() {
    let verifier = Verifier::new(KEY);
    let shipment = verifier
        .verify_shipment(DELIVERY, sign(KEY, DELIVERY))
        .unwrap();
    let seen = Deduplicator::new();
    assert!(seen.accept_shipment(&shipment));
    assert!(!seen.accept_shipment(&shipment), "a duplicate");
    let mut older = shipment.clone();
    older.version = 3;
    assert!(!seen.accept_shipment(&older), "arrived late");
    let mut newer = shipment;
    newer.version = 5;
    assert!(seen.accept_shipment(&newer));
    assert_eq!(seen.highest_version("SHP-7K3M-Q9ZX"), Some(5));
}

#[test]
fn a_deduplicator_is_shared_between_threads() {
    let seen = Arc::new(Deduplicator::new());
    let threads: Vec<_> = (1..=4)
        .map(|version| {
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || seen.accept("SHP-7K3M-Q9ZX", version))
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(seen.highest_version("SHP-7K3M-Q9ZX"), Some(4));
}

#[cfg(feature = "axum")]
#[tokio::test]
async fn a_shipment_can_be_extracted_in_a_handler() {
    use axum::Router;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::post;
    use tower::ServiceExt as _;
    use webhook_verify::SIGNATURE_HEADER;
    use webhook_verify::axum::VerifiedJson;
    use webhook_verify::shipment::Shipment;

    async fn handle(VerifiedJson(shipment): VerifiedJson<Shipment>) -> String {
        shipment.code.to_string()
    }
    let app = Router::new()
        .route("/", post(handle))
        .with_state(Verifier::new(KEY));
    let request = Request::post("/")
        .header(SIGNATURE_HEADER, sign(KEY, DELIVERY))
        .body(Body::from(DELIVERY))
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}
