//! The axum extractors, driven through a router with `oneshot`.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::FromRef;
use axum::http::{Request, StatusCode};
use axum::routing::post;
use http_body_util::BodyExt as _;
use serde::Deserialize;
use tower::ServiceExt as _;
use webhook_verify::axum::{VerifiedBody, VerifiedDelivery, VerifiedJson};
use webhook_verify::{SIGNATURE_HEADER, Verifier, sign};

use crate::helpers::{BODY, KEY};

#[derive(Deserialize)]
struct Delivery {
    code: String,
    version: i64,
}

/// A state with the verifier inside, as a real receiver has.
#[derive(Clone)]
struct AppState {
    verifier: Verifier,
}

impl FromRef<AppState> for Verifier {
    fn from_ref(state: &AppState) -> Self {
        state.verifier.clone()
    }
}

async fn echo(VerifiedBody(body): VerifiedBody) -> Bytes {
    body
}

async fn summary(VerifiedJson(delivery): VerifiedJson<Delivery>) -> String {
    format!("{} v{}", delivery.code, delivery.version)
}

async fn traced(delivery: VerifiedDelivery<Delivery>) -> String {
    let parent = delivery.traceparent().unwrap_or("none").to_owned();
    let body = delivery.into_body();
    format!("{} v{} {parent}", body.code, body.version)
}

fn app() -> Router {
    Router::new()
        .route("/raw", post(echo))
        .route("/traced", post(traced))
        .route("/json", post(summary))
        .with_state(AppState {
            verifier: Verifier::new(KEY),
        })
}

fn delivery(path: &str, body: &'static [u8], signatures: &[&str]) -> Request<Body> {
    let mut request = Request::post(path).header("content-type", "application/json");
    for signature in signatures {
        request = request.header(SIGNATURE_HEADER, *signature);
    }
    request.body(Body::from(body)).unwrap()
}

async fn send(request: Request<Body>) -> (StatusCode, String) {
    let response = app().oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn a_valid_delivery_reaches_the_handler_with_its_body() {
    let (status, body) = send(delivery("/raw", BODY, &[&sign(KEY, BODY)])).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.as_bytes(), BODY);
}

#[tokio::test]
async fn a_valid_delivery_reaches_the_handler_parsed() {
    let (status, body) = send(delivery("/json", BODY, &[&sign(KEY, BODY)])).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "SHP-7K3M-Q9ZX v3");
}

#[tokio::test]
async fn a_delivery_without_signature_is_unauthorized() {
    let (status, body) = send(delivery("/raw", BODY, &[])).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body, "missing X-Service-Signature header");
}

#[tokio::test]
async fn a_delivery_with_a_bad_signature_is_unauthorized() {
    let (status, body) = send(delivery("/json", BODY, &[&sign("whsec_other", BODY)])).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body, "signature does not match the body");
}

#[tokio::test]
async fn a_delivery_with_a_malformed_signature_is_unauthorized() {
    let upper = sign(KEY, BODY).to_uppercase();
    let (status, body) = send(delivery("/raw", BODY, &[&upper])).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body.starts_with("malformed X-Service-Signature header"),
        "{body}"
    );
}

#[tokio::test]
async fn a_signature_header_sent_twice_is_unauthorized() {
    let good = sign(KEY, BODY);
    let (status, _) = send(delivery("/raw", BODY, &[&good, &good])).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_signed_body_that_is_not_the_expected_json_is_a_bad_request() {
    const NOT_A_DELIVERY: &[u8] = br#"{"code": 7}"#;
    let (status, body) = send(delivery(
        "/json",
        NOT_A_DELIVERY,
        &[&sign(KEY, NOT_A_DELIVERY)],
    ))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.starts_with("the body is not the JSON"), "{body}");
}

#[tokio::test]
async fn a_verifier_can_be_the_whole_state() {
    let app = Router::new()
        .route("/", post(echo))
        .with_state(Verifier::new(KEY));
    let response = app
        .oneshot(delivery("/", BODY, &[&sign(KEY, BODY)]))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn traced_delivery(traceparents: &[&str]) -> Request<Body> {
    let mut request = delivery("/traced", BODY, &[&sign(KEY, BODY)]);
    for value in traceparents {
        request
            .headers_mut()
            .append("traceparent", value.parse().unwrap());
    }
    request
}

#[tokio::test]
async fn a_verified_delivery_hands_over_its_traceparent() {
    let (status, body) = send(traced_delivery(&[PARENT])).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, format!("SHP-7K3M-Q9ZX v3 {PARENT}"));
}

#[tokio::test]
async fn a_missing_or_malformed_traceparent_is_none_and_the_delivery_still_verified() {
    let malformed = [
        "",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
    ];
    for value in malformed {
        let (status, body) = send(traced_delivery(&[value])).await;
        assert_eq!(status, StatusCode::OK, "{value:?}");
        assert_eq!(body, "SHP-7K3M-Q9ZX v3 none", "{value:?}");
    }
    let (_, body) = send(traced_delivery(&[])).await;
    assert_eq!(body, "SHP-7K3M-Q9ZX v3 none");
    let (_, body) = send(traced_delivery(&[PARENT, PARENT])).await;
    assert_eq!(body, "SHP-7K3M-Q9ZX v3 none", "sent twice");
}

#[tokio::test]
async fn a_traced_delivery_with_a_bad_signature_is_unauthorized() {
    let mut request = delivery("/traced", BODY, &[&sign(KEY, b"other")]);
    request
        .headers_mut()
        .insert("traceparent", PARENT.parse().unwrap());
    let (status, _) = send(request).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
