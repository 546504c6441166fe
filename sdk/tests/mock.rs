//! The client against a wiremock server, for what the real server will not
//! do on demand: failures, retries, slow and broken answers.

use std::time::{Duration, Instant};

use futures_util::TryStreamExt as _;
use serde_json::{Value, json};
use shipment_sdk::model::{CreateShipment, ListShipments, Status};
use shipment_sdk::{Client, DashboardClient, Error};
use wiremock::matchers::{body_json, header, header_exists, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const KEY: &str = "sk_test_0123456789abcdefghijABCDEFGHIJ";
const CODE: &str = "SHP-7K3M-Q9ZX";

/// A client of `server` that retries quickly.
fn client(server: &MockServer) -> Client {
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
async fn catch_all(server: &MockServer) {
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

fn shipment(code: &str, status: &str) -> Value {
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

fn problem(status: u16, code: &str) -> ResponseTemplate {
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

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap()
}

#[tokio::test]
async fn a_5xx_gateway_error_is_retried_until_success() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .and(header("x-api-key", KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(shipment(CODE, "in_transit")))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let got = client(&server).shipments().get(CODE).await.unwrap();
    assert_eq!(got.status, Status::InTransit);
    assert_eq!(requests(&server).await.len(), 3);
}

#[tokio::test]
async fn retries_stop_at_max_retries_and_report_the_last_answer() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/merchant-couriers"))
        .respond_with(
            ResponseTemplate::new(502)
                .set_body_raw("<html><h1>502 Bad Gateway</h1></html>", "text/html"),
        )
        .expect(3)
        .mount(&server)
        .await;
    let client = Client::builder()
        .api_key(KEY)
        .base_url(format!("{}/api/v1", server.uri()))
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(2))
        .max_retries(2)
        .build()
        .unwrap();

    let err = client.couriers().list().await.unwrap_err();
    // An HTML page from a proxy is an error of its status, not a decode error.
    assert!(matches!(err, Error::Api(_)), "{err:?}");
    assert_eq!(err.status(), Some(502));
    assert_eq!(err.code(), None);
    assert!(err.is_retryable());
    assert_eq!(requests(&server).await.len(), 3);
}

#[tokio::test]
async fn retry_after_on_429_is_honoured() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .respond_with(problem(429, "rate_limited").insert_header("retry-after", "1"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [], "page": 1, "page_size": 20, "total": 0, "total_pages": 0
        })))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let started = Instant::now();
    let page = client(&server)
        .shipments()
        .list(&ListShipments::default())
        .await
        .unwrap();
    // Our jittered back-off is at most 5 ms here, so a full second of
    // waiting can only come from Retry-After.
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(page.total, 0);
    assert!(page.data.is_empty());
}

#[tokio::test]
async fn a_retry_after_longer_than_the_limit_returns_the_429_at_once() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .respond_with(problem(429, "rate_limited").insert_header("retry-after", "3600"))
        .expect(1)
        .mount(&server)
        .await;
    let err = client(&server)
        .shipments()
        .list(&ListShipments::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.code(), Some("rate_limited"));
    assert_eq!(
        err.api().unwrap().retry_after,
        Some(Duration::from_secs(3600))
    );
}

#[tokio::test]
async fn a_slow_answer_is_a_timeout() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(shipment(CODE, "in_transit"))
                .set_delay(Duration::from_secs(10)),
        )
        .mount(&server)
        .await;
    let client = Client::builder()
        .api_key(KEY)
        .base_url(format!("{}/api/v1", server.uri()))
        .timeout(Duration::from_millis(200))
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(2))
        .max_retries(1)
        .build()
        .unwrap();

    let err = client.shipments().get(CODE).await.unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    assert!(err.is_retryable());
    assert_eq!(err.status(), None);
    // The time-out is retried like a connection failure (a read is safe).
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_after_retries() {
    // Bind a port, then free it, so nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = Client::builder()
        .api_key(KEY)
        .base_url(format!("http://127.0.0.1:{port}/api/v1"))
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(2))
        .build()
        .unwrap();
    let err = client.couriers().list().await.unwrap_err();
    assert!(matches!(err, Error::Connect(_)), "{err:?}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn a_malformed_success_body_is_a_decode_error() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-request-id", "req-42")
                .set_body_raw("{\"id\": 42, \"code\": ", "application/json"),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/merchant-couriers"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("<html>hello</html>", "text/html"))
        .expect(1)
        .mount(&server)
        .await;
    let client = client(&server);

    let err = client.shipments().get(CODE).await.unwrap_err();
    assert!(matches!(err, Error::Decode { status: 200, .. }), "{err:?}");
    assert_eq!(err.request_id(), Some("req-42"));
    assert!(!err.is_retryable());

    let err = client.couriers().list().await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
}

#[tokio::test]
async fn a_client_error_is_not_retried_and_carries_the_problem() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/shipments"))
        .respond_with(problem(400, "invalid_field"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(problem(404, "not_found"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/merchant-couriers"))
        .respond_with(problem(500, "internal"))
        .expect(1)
        .mount(&server)
        .await;
    let client = client(&server);

    let err = client
        .shipments()
        .create(&CreateShipment::new(99))
        .await
        .unwrap_err();
    let api = err.api().expect("an API error");
    assert_eq!(api.status, 400);
    assert_eq!(api.code.as_deref(), Some("invalid_field"));
    assert_eq!(api.field.as_deref(), Some("courier_company_id"));
    assert_eq!(api.detail.as_deref(), Some("it went wrong: invalid_field"));
    assert_eq!(err.request_id(), Some("req-problem"));
    assert!(!err.is_retryable());

    let err = client.shipments().get(CODE).await.unwrap_err();
    assert_eq!((err.status(), err.code()), (Some(404), Some("not_found")));

    // 500 is a bug on the server, not a blip: not retried either.
    let err = client.couriers().list().await.unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn create_reuses_one_idempotency_key_across_retries() {
    let server = MockServer::start().await;
    let request = CreateShipment::new(7).description("books").item("book");
    Mock::given(method("POST"))
        .and(path("/api/v1/shipments"))
        .respond_with(ResponseTemplate::new(504))
        .up_to_n_times(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v1/shipments"))
        .and(header_exists("idempotency-key"))
        .and(header("content-type", "application/json"))
        .and(body_json(
            json!({"courier_company_id": 7, "description": "books", "items": ["book"]}),
        ))
        .respond_with(
            ResponseTemplate::new(201).set_body_json(shipment(CODE, "assigned_to_courier")),
        )
        .expect(2)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let client = client(&server);

    let created = client.shipments().create(&request).await.unwrap();
    assert_eq!(created.status, Status::AssignedToCourier);
    let keys: Vec<String> = requests(&server)
        .await
        .iter()
        .map(|r| r.headers["idempotency-key"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| k == &keys[0]), "{keys:?}");

    // A second call is a second shipment: it gets a key of its own.
    client.shipments().create(&request).await.unwrap();
    let all = requests(&server).await;
    let last = all.last().unwrap().headers["idempotency-key"]
        .to_str()
        .unwrap();
    assert_ne!(last, keys[0]);
}

#[tokio::test]
async fn changes_without_an_idempotency_key_are_never_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/api/v1/shipments/{CODE}/rate")))
        .respond_with(ResponseTemplate::new(503))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("/api/v1/shipments/{CODE}/cancel")))
        .respond_with(ResponseTemplate::new(502))
        .expect(1)
        .mount(&server)
        .await;
    let client = client(&server);
    let err = client.shipments().rate(CODE, 7).await.unwrap_err();
    assert_eq!(err.status(), Some(503));
    let err = client.shipments().cancel(CODE).await.unwrap_err();
    assert_eq!(err.status(), Some(502));
}

#[tokio::test]
async fn invalid_input_sends_no_request() {
    let server = MockServer::start().await;
    catch_all(&server).await;
    let client = client(&server);
    let shipments = client.shipments();

    for rating in [0, 11, 255] {
        let err = shipments.rate(CODE, rating).await.unwrap_err();
        assert!(
            matches!(err, Error::InvalidRating(r) if r == rating),
            "{err:?}"
        );
    }
    for size in [0, 101] {
        let err = shipments
            .list(&ListShipments::default().page_size(size))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidPageSize(s) if s == size),
            "{err:?}"
        );
    }
    let err = shipments
        .list(&ListShipments::default().page(0))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidPage), "{err:?}");
    let mut walk = std::pin::pin!(shipments.list_all(ListShipments::default().page_size(500)));
    let err = walk.try_next().await.unwrap_err();
    assert!(matches!(err, Error::InvalidPageSize(500)), "{err:?}");
    assert!(walk.try_next().await.unwrap().is_none());

    for code in [
        "SHP-7K3M-Q9Z",
        "shp-7k3m-q9zx",
        "SHP-IIII-LLLL",
        "../api-keys",
    ] {
        for err in [
            shipments.get(code).await.unwrap_err(),
            shipments.cancel(code).await.unwrap_err(),
            shipments.rate(code, 5).await.unwrap_err(),
            shipments
                .generate_confirmation_code(code)
                .await
                .unwrap_err(),
        ] {
            assert!(
                matches!(&err, Error::InvalidShipmentCode(c) if c == code),
                "{err:?}"
            );
            assert_eq!(err.status(), None);
        }
    }
    assert!(requests(&server).await.is_empty());
}

#[tokio::test]
async fn an_unknown_status_round_trips() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(shipment(CODE, "held_at_customs")))
        .mount(&server)
        .await;
    let got = client(&server).shipments().get(CODE).await.unwrap();
    assert_eq!(got.status, Status::Unknown("held_at_customs".into()));
    assert_eq!(
        serde_json::to_value(&got).unwrap(),
        shipment(CODE, "held_at_customs")
    );
}

#[tokio::test]
async fn list_all_walks_every_page_and_stops_at_the_last() {
    let server = MockServer::start().await;
    let codes = [
        "SHP-AAAA-0001",
        "SHP-AAAA-0002",
        "SHP-AAAA-0003",
        "SHP-AAAA-0004",
        "SHP-AAAA-0005",
    ];
    for (page, chunk) in codes.chunks(2).enumerate() {
        let page = page + 1;
        Mock::given(method("GET"))
            .and(path("/api/v1/shipments"))
            .and(query_param("page", page.to_string()))
            .and(query_param("page_size", "2"))
            .and(query_param("status", "delivered"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "data": chunk.iter().map(|c| shipment(c, "delivered")).collect::<Vec<_>>(),
                "page": page, "page_size": 2, "total": 5, "total_pages": 3
            })))
            .expect(1)
            .mount(&server)
            .await;
    }
    catch_all(&server).await;

    let all: Vec<_> = client(&server)
        .shipments()
        .list_all(
            ListShipments::default()
                .status(Status::Delivered)
                .page_size(2),
        )
        .try_collect()
        .await
        .unwrap();
    let got: Vec<&str> = all.iter().map(|s| s.code.as_str()).collect();
    assert_eq!(got, codes);
}

#[tokio::test]
async fn list_all_over_nothing_is_one_request_and_an_empty_stream() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "1"))
        .and(query_param("page_size", "100"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [], "page": 1, "page_size": 100, "total": 0, "total_pages": 0
        })))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let all: Vec<_> = client(&server)
        .shipments()
        .list_all(ListShipments::default())
        .try_collect()
        .await
        .unwrap();
    assert!(all.is_empty());
}

#[tokio::test]
async fn list_all_yields_a_failing_page_as_its_last_item() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [shipment("SHP-AAAA-0001", "delivered")],
            "page": 1, "page_size": 1, "total": 2, "total_pages": 2
        })))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "2"))
        .respond_with(problem(403, "forbidden"))
        .expect(1)
        .mount(&server)
        .await;
    let mut walk = std::pin::pin!(
        client(&server)
            .shipments()
            .list_all(ListShipments::default().page_size(1))
    );
    assert_eq!(
        walk.try_next().await.unwrap().unwrap().code,
        "SHP-AAAA-0001"
    );
    assert_eq!(walk.try_next().await.unwrap_err().status(), Some(403));
    assert!(walk.try_next().await.unwrap().is_none());
}

#[tokio::test]
async fn the_dashboard_signs_in_and_sends_its_bearer_token() {
    let server = MockServer::start().await;
    let token = "sess_0123456789abcdefghijABCDEFGHIJ";
    Mock::given(method("POST"))
        .and(path("/api/v1/auth/login"))
        .and(body_json(
            json!({"email": "me@example.com", "password": "pw"}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "token": token, "token_type": "Bearer",
            "expires_at": "2026-11-21T21:30:12.123456Z"
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/api-keys"))
        .and(header("authorization", format!("Bearer {token}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [{
            "id": 5, "name": "ci", "prefix": "sk_test_", "last4": "WXYZ",
            "created_at": "2026-11-21T09:30:12.123456Z", "last_used_at": null
        }]})))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v1/api-keys"))
        .and(body_json(json!({"name": "deploy"})))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({
            "id": 6, "name": "deploy", "prefix": "sk_test_", "last4": "ABCD",
            "created_at": "2026-11-21T09:30:12.123456Z", "last_used_at": null,
            "key": "sk_test_0123456789abcdefghijABCDABCD"
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v1/api-keys/verify"))
        .and(body_json(json!({"key": "sk_test_nope"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"valid": false})))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path("/api/v1/api-keys/5"))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v1/auth/logout"))
        .and(header("authorization", format!("Bearer {token}")))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let dashboard =
        DashboardClient::login(&format!("{}/api/v1", server.uri()), "me@example.com", "pw")
            .await
            .unwrap();
    assert_eq!(dashboard.token().expose(), token);
    assert!(!format!("{dashboard:?}").contains(token));
    assert!(dashboard.expires_at().is_some());

    let keys = dashboard.api_keys().list().await.unwrap();
    assert_eq!((keys[0].id, keys[0].last4.as_str()), (5, "WXYZ"));
    let created = dashboard.api_keys().create("deploy").await.unwrap();
    assert_eq!(created.api_key.id, 6);
    assert_eq!(created.key.expose(), "sk_test_0123456789abcdefghijABCDABCD");
    assert!(!format!("{created:?}").contains("0123456789"));
    let verdict = dashboard.api_keys().verify("sk_test_nope").await.unwrap();
    assert!(!verdict.valid);
    assert_eq!(verdict.id, None);
    dashboard.api_keys().delete(5).await.unwrap();
    dashboard.logout().await.unwrap();
}

#[tokio::test]
async fn the_dashboard_manages_webhooks() {
    let server = MockServer::start().await;
    let hook = json!({
        "webhook_id": 3, "url": "https://shop.example.com/hooks", "active": true,
        "created_at": "2026-11-21T09:30:12.123456Z"
    });
    let mut new_hook = hook.clone();
    new_hook["signing_key"] = "whsec_0123456789abcdefghijABCDEFGHIJ".into();
    let mut paused = hook.clone();
    paused["active"] = false.into();
    Mock::given(method("POST"))
        .and(path("/api/v1/webhooks"))
        .and(body_json(json!({"url": "https://shop.example.com/hooks"})))
        .respond_with(ResponseTemplate::new(201).set_body_json(new_hook))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/webhooks"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [hook]})))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path("/api/v1/webhooks/3"))
        .and(body_json(json!({"active": false})))
        .respond_with(ResponseTemplate::new(200).set_body_json(paused))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/webhooks/3/deliveries"))
        .and(query_param("page", "2"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{
                "id": 9, "shipment_code": CODE, "version": 2,
                "url": "https://shop.example.com/hooks", "success": false,
                "status_code": 500, "error": "HTTP 500", "duration_ms": 12,
                "delivered_at": "2026-11-21T09:31:00.000000Z"
            }],
            "page": 2, "page_size": 20, "total": 21, "total_pages": 2
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v1/webhooks/shipment-signing-key"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({
            "signing_key": "whsec_ABCDEFGHIJ0123456789abcdefghijKL",
            "created_at": "2026-11-21T09:30:12.123456Z"
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path("/api/v1/webhooks/3"))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path("/api/v1/webhooks/4"))
        .respond_with(problem(404, "not_found"))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let dashboard = DashboardClient::builder()
        .base_url(format!("{}/api/v1", server.uri()))
        .token("sess_abc")
        .unwrap();
    let hooks = dashboard.webhooks();
    let created = hooks
        .register("https://shop.example.com/hooks")
        .await
        .unwrap();
    assert_eq!(created.webhook.webhook_id, 3);
    assert!(created.signing_key.expose().starts_with("whsec_"));
    assert_eq!(hooks.list().await.unwrap().len(), 1);
    assert!(!hooks.set_active(3, false).await.unwrap().active);
    let log = hooks.deliveries(3, 2).await.unwrap();
    assert_eq!(log.data[0].status_code, Some(500));
    assert!(!log.data[0].success);
    assert!(matches!(
        hooks.deliveries(3, 0).await,
        Err(Error::InvalidPage)
    ));
    let key = hooks.rotate_shipment_signing_key().await.unwrap();
    assert!(key.signing_key.expose().starts_with("whsec_"));
    hooks.delete(3).await.unwrap();
    let err = hooks.delete(4).await.unwrap_err();
    assert_eq!(err.code(), Some("not_found"));
}

#[tokio::test]
async fn a_failed_sign_in_is_never_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/auth/login"))
        .respond_with(problem(429, "rate_limited").insert_header("retry-after", "1"))
        .expect(1)
        .mount(&server)
        .await;
    let err = DashboardClient::builder()
        .base_url(format!("{}/api/v1", server.uri()))
        .login("me@example.com", "hunter2")
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert!(!format!("{err} {err:?}").contains("hunter2"));
}

/// Collects every span's name and fields, as a log backend would see them.
#[derive(Clone, Default)]
struct Spans(std::sync::Arc<std::sync::Mutex<Vec<(u64, String, Fields)>>>);

type Fields = std::collections::BTreeMap<String, String>;

struct Collect<'a>(&'a mut Fields);

impl tracing::field::Visit for Collect<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Spans {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = Fields::new();
        attrs.record(&mut Collect(&mut fields));
        let name = attrs.metadata().name().to_owned();
        self.0.lock().unwrap().push((id.into_u64(), name, fields));
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, _, fields)) = spans.iter_mut().find(|(i, _, _)| *i == id.into_u64()) {
            values.record(&mut Collect(fields));
        }
    }
}

#[tokio::test]
async fn each_call_is_one_span_with_route_attempt_status_and_request_id() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let spans = Spans::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));

    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-request-id", "req-7")
                .set_body_json(shipment(CODE, "delivered")),
        )
        .mount(&server)
        .await;
    client(&server).shipments().get(CODE).await.unwrap();

    let spans = spans.0.lock().unwrap();
    let ours: Vec<&Fields> = spans
        .iter()
        .filter(|(_, name, _)| name == "shipment_sdk.request")
        .map(|(_, _, fields)| fields)
        .collect();
    assert_eq!(ours.len(), 1, "{spans:?}");
    let f = ours[0];
    assert_eq!(f["method"], "GET");
    assert_eq!(f["path"], "/shipments/{code}");
    assert_eq!(f["attempt"], "2");
    assert_eq!(f["status"], "200");
    assert_eq!(f["request_id"], "req-7");
    // The key is in a header, never in a span.
    assert!(!format!("{spans:?}").contains(KEY));
}
