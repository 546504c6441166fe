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

mod standard_webhooks {
    use std::time::{SystemTime, UNIX_EPOCH};

    use axum::Router;
    use axum::body::Body;
    use axum::http::{HeaderMap, Request, StatusCode};
    use axum::routing::post;
    use tower::ServiceExt as _;
    use webhook_verify::axum::{VerifiedBody, VerifiedDelivery};
    use webhook_verify::standard::{self, ID_HEADER, TIMESTAMP_HEADER};
    use webhook_verify::{SIGNATURE_HEADER, Scheme, Verifier, VerifyError, sign};

    use super::Delivery;
    use crate::helpers::{BODY, KEY};

    const ID: &str = "msg_41_w7";

    fn now() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    /// A delivery as the service sends it: both schemes, signed at
    /// `signed_at`.
    fn both(path: &str, signed_at: i64) -> Request<Body> {
        Request::post(path)
            .header(SIGNATURE_HEADER, sign(KEY, BODY))
            .header(ID_HEADER, ID)
            .header(TIMESTAMP_HEADER, signed_at.to_string())
            .header(
                standard::SIGNATURE_HEADER,
                standard::sign(KEY, ID, signed_at, BODY).unwrap(),
            )
            .body(Body::from(BODY))
            .unwrap()
    }

    async fn described(delivery: VerifiedDelivery<Delivery>) -> String {
        let scheme = match delivery.scheme() {
            Scheme::Standard => "standard",
            Scheme::Service => "service",
            _ => "other",
        };
        let id = delivery.webhook_id().unwrap_or("none").to_owned();
        format!("{} {scheme} {id}", delivery.body.code)
    }

    async fn echo(VerifiedBody(body): VerifiedBody) -> axum::body::Bytes {
        body
    }

    fn app(verifier: Verifier) -> Router {
        Router::new()
            .route("/delivery", post(described))
            .route("/raw", post(echo))
            .with_state(verifier)
    }

    async fn send_to(verifier: Verifier, request: Request<Body>) -> (StatusCode, String) {
        let response = app(verifier).oneshot(request).await.unwrap();
        let status = response.status();
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_fresh_delivery_is_verified_with_the_standard_scheme_and_names_its_id() {
        let (status, body) = send_to(Verifier::new(KEY), both("/delivery", now())).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, "SHP-7K3M-Q9ZX standard msg_41_w7");
    }

    #[tokio::test]
    async fn a_delivery_replayed_six_minutes_later_is_refused_despite_its_old_signature() {
        let (status, body) = send_to(Verifier::new(KEY), both("/raw", now() - 360)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(body.starts_with("webhook-timestamp is 36"), "{body}");
        assert!(body.ends_with("refused as a possible replay"), "{body}");
    }

    #[tokio::test]
    async fn a_timestamp_far_in_the_future_is_refused() {
        let (status, body) = send_to(Verifier::new(KEY), both("/raw", now() + 3600)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(body.contains("in the future"), "{body}");
    }

    #[tokio::test]
    async fn a_wrong_standard_signature_is_refused_though_x_service_signature_is_right() {
        let mut request = both("/raw", now());
        request.headers_mut().insert(
            standard::SIGNATURE_HEADER,
            standard::sign("whsec_Z9aY8bX7cW6dV5eU4fT3gS2hR1iQ0jPp", ID, now(), BODY)
                .unwrap()
                .parse()
                .unwrap(),
        );
        let (status, body) = send_to(Verifier::new(KEY), request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body, VerifyError::NoMatchingSignature.to_string());
    }

    #[tokio::test]
    async fn one_stripped_standard_header_is_named_not_a_fallback() {
        let mut request = both("/raw", now() - 3600);
        request.headers_mut().remove(TIMESTAMP_HEADER);
        let (status, body) = send_to(Verifier::new(KEY), request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body, "missing webhook-timestamp header");
    }

    #[tokio::test]
    async fn a_standard_header_sent_twice_is_malformed() {
        let mut request = both("/raw", now());
        request
            .headers_mut()
            .append(ID_HEADER, "msg_42_w7".parse().unwrap());
        let (status, body) = send_to(Verifier::new(KEY), request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body, "malformed webhook-id header: expected one value");
    }

    #[tokio::test]
    async fn without_the_standard_headers_the_old_scheme_still_passes_unless_required() {
        let old_style = || {
            Request::post("/delivery")
                .header(SIGNATURE_HEADER, sign(KEY, BODY))
                .body(Body::from(BODY))
                .unwrap()
        };
        let (status, body) = send_to(Verifier::new(KEY), old_style()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, "SHP-7K3M-Q9ZX service none");

        // The replay of a captured delivery with the three headers
        // stripped: refused by a receiver that requires them.
        let (status, body) = send_to(Verifier::new(KEY).require_standard(), old_style()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body, "missing webhook-id header");
    }

    #[tokio::test]
    async fn a_receiver_that_requires_the_standard_scheme_accepts_what_the_service_sends() {
        let (status, body) = send_to(
            Verifier::new(KEY).require_standard(),
            both("/delivery", now()),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, "SHP-7K3M-Q9ZX standard msg_41_w7");
    }

    #[tokio::test]
    async fn the_tolerance_of_the_state_verifier_applies() {
        let verifier = Verifier::new(KEY).with_tolerance(std::time::Duration::from_secs(30));
        let (status, body) = send_to(verifier, both("/raw", now() - 120)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(body.contains("beyond the tolerance of 30 s"), "{body}");
    }

    #[test]
    fn verify_header_map_picks_the_scheme_as_the_extractor_does() {
        let request = both("/raw", 1_764_324_120);
        let headers: &HeaderMap = request.headers();
        let verifier = Verifier::new(KEY);
        assert_eq!(
            verifier.verify_header_map_at(headers, BODY, 1_764_324_150),
            Ok(Scheme::Standard)
        );
        assert!(matches!(
            verifier.verify_header_map_at(headers, BODY, 1_764_324_120 + 360),
            Err(VerifyError::TimestampTooOld { age_secs: 360, .. })
        ));
        let mut old_style = HeaderMap::new();
        old_style.insert(SIGNATURE_HEADER, sign(KEY, BODY).parse().unwrap());
        assert_eq!(
            verifier.verify_header_map_at(&old_style, BODY, 0),
            Ok(Scheme::Service)
        );
        assert_eq!(
            verifier
                .clone()
                .require_standard()
                .verify_header_map_at(&old_style, BODY, 0),
            Err(VerifyError::MissingStandardHeader { name: ID_HEADER })
        );
        // An empty header still claims the scheme.
        let mut empty = old_style.clone();
        empty.insert(ID_HEADER, "".parse().unwrap());
        assert_eq!(
            verifier.verify_header_map_at(&empty, BODY, 0),
            Err(VerifyError::MissingStandardHeader { name: ID_HEADER })
        );
    }
}
