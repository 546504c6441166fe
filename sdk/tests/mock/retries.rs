//! Retries: which failures are sent again, how often, after how long, and
//! with which idempotency key.

use std::time::{Duration, Instant};

use serde_json::json;
use shipment_sdk::model::{CourierId, CreateShipment, ProblemCode, Status};
use shipment_sdk::{Client, Error};
use wiremock::matchers::{body_json, header, header_exists, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{CODE, KEY, catch_all, client, error_chain, problem, requests, shipment};

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
    let page = client(&server).shipments().list().send().await.unwrap();
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
    let err = client(&server).shipments().list().send().await.unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert!(err.is_rate_limited());
    assert_eq!(err.code(), Some(&ProblemCode::RateLimited));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(3600)));
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
    assert!(err.is_timeout());
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
    assert!(!err.is_timeout());
    // The cause stays reachable without naming the HTTP library: the chain
    // goes on below the SDK's TransportError, each message shown once.
    let chain = error_chain(&err);
    assert!(chain.len() >= 3, "{chain:?}");
    assert!(chain[0].starts_with("cannot connect"), "{chain:?}");
    assert!(
        chain.windows(2).all(|w| w[0] != w[1]),
        "a message repeats: {chain:?}"
    );
    let transport = std::error::Error::source(&err).unwrap();
    assert!(
        transport.is::<shipment_sdk::TransportError>(),
        "{transport:?}"
    );
    assert!(
        std::iter::successors(Some(transport), |e| e.source()).any(|e| e
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            == Some(std::io::ErrorKind::ConnectionRefused)),
        "{chain:?}"
    );
}

#[tokio::test]
async fn create_reuses_one_idempotency_key_across_retries() {
    let server = MockServer::start().await;
    let request = CreateShipment::new(CourierId::new(7))
        .description("books")
        .item("book");
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

    let created = client.shipments().create(&request).send().await.unwrap();
    assert_eq!(created.status, Status::AssignedToCourier);
    let keys: Vec<String> = requests(&server)
        .await
        .iter()
        .map(|r| r.headers["idempotency-key"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| k == &keys[0]), "{keys:?}");

    // A second call is a second shipment: it gets a key of its own.
    client.shipments().create(&request).send().await.unwrap();
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
