//! What every test uses: a quickly retrying client, the catch-all mock,
//! and bodies the service would send.

use std::time::Duration;

use serde_json::{Value, json};
use shipment_sdk::Client;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

pub const KEY: &str = "sk_test_0123456789abcdefghijABCDEFGHIJ";

pub const CODE: &str = "SHP-7K3M-Q9ZX";

/// A client of `server` that retries quickly.
pub fn client(server: &MockServer) -> Client {
    Client::builder()
        .api_key(KEY)
        .base_url(format!("{}/api/v1", server.uri()))
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(5))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// Anything no other mock expected answers 500 with its method and path,
/// so a test that sends something unplanned says what (octocrab's trick).
pub async fn catch_all(server: &MockServer) {
    Mock::given(wiremock::matchers::any())
        .respond_with(|req: &Request| {
            ResponseTemplate::new(500).set_body_string(format!(
                "no mock expected {} {}",
                req.method,
                req.url.path()
            ))
        })
        .with_priority(u8::MAX)
        .mount(server)
        .await;
}

pub fn shipment(code: &str, status: &str) -> Value {
    json!({
        "id": 42, "code": code, "merchant_id": 3,
        "status": status, "courier_company_id": 7,
        "assigned_driver_id": null, "description": "Two boxes of books",
        "weight_kg": 4.5, "dimensions": null, "items": ["book"],
        "start_address": "52.5200,13.4050", "end_address": "52.3759,4.8975",
        "total_fee": 12.75, "webhook_url": null, "version": 1, "rating": null,
        "failure_reason": null,
        "created_at": "2026-11-21T09:30:12.123456Z",
        "assigned_to_courier_at": "2026-11-21T09:30:12.123456Z",
        "assigned_to_driver_at": null, "picked_up_at": null, "delivered_at": null,
        "failed_at": null, "returned_at": null, "cancelled_at": null, "rated_at": null,
        "updated_at": "2026-11-21T09:30:12.123456Z"
    })
}

pub fn problem(status: u16, code: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("x-request-id", "req-problem")
        .set_body_raw(
            json!({
                "type": "about:blank", "title": "Error", "status": status,
                "detail": format!("it went wrong: {code}"), "code": code,
                "field": "courier_company_id", "request_id": "req-problem"
            })
            .to_string(),
            "application/problem+json",
        )
}

pub async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap()
}

/// Every message of an error and its sources, outermost first.
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> Vec<String> {
    std::iter::successors(Some(err), |e| e.source())
        .map(ToString::to_string)
        .collect()
}
