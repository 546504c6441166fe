//! Restricted and expiring keys, from the client's side: refusals with a
//! variant of their own (and what happens when the answer does not say
//! enough), the expiry warning, and the introspection call.

use std::sync::{Arc, Mutex};

use serde_json::json;
use shipment_sdk::Error;
use shipment_sdk::model::{Access, ProblemCode, Resource};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{CODE, catch_all, client, requests};

const WARNING: &str = "this API key expires at 2026-12-01T00:00:00Z, in 3 days";

/// A 403 `insufficient_permission` whose `required_permission` member is
/// `required` (left out when `None`).
fn insufficient(required: Option<serde_json::Value>) -> ResponseTemplate {
    let mut body = json!({
        "type": "about:blank", "title": "Forbidden", "status": 403,
        "detail": "this API key has shipments: read; this operation needs shipments: write",
        "code": "insufficient_permission", "request_id": "req-perm"
    });
    if let Some(required) = required {
        body["required_permission"] = required;
    }
    ResponseTemplate::new(403)
        .insert_header("x-request-id", "req-perm")
        .insert_header("x-accepted-permissions", "shipments: write")
        .set_body_raw(body.to_string(), "application/problem+json")
}

#[tokio::test]
async fn a_refused_permission_names_it_and_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/api/v1/shipments/{CODE}/cancel")))
        .respond_with(insufficient(Some(json!("shipments: write"))))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let err = client(&server).shipments().cancel(CODE).await.unwrap_err();
    match &err {
        Error::InsufficientPermission { required, error } => {
            assert_eq!(required, "shipments: write");
            assert_eq!(error.status, 403);
        }
        other => panic!("not InsufficientPermission: {other:?}"),
    }
    assert_eq!(err.required_permission(), Some("shipments: write"));
    assert_eq!(err.status(), Some(403));
    assert_eq!(err.code(), Some(&ProblemCode::InsufficientPermission));
    assert!(err.is_forbidden() && !err.is_unauthenticated() && !err.is_key_expired());
    assert_eq!(err.request_id(), Some("req-perm"));
    assert!(!err.is_retryable());
    assert_eq!(
        err.to_string(),
        "HTTP 403 insufficient_permission: this API key has shipments: read; this operation \
         needs shipments: write (request id req-perm)"
    );
}

#[tokio::test]
async fn a_refusal_that_does_not_name_a_permission_stays_a_plain_api_error() {
    // Absent, another JSON type, empty, too long, or with a control
    // character: none is a permission to name, or to print on a terminal.
    let cases = [
        None,
        Some(json!(null)),
        Some(json!(7)),
        Some(json!({"shipments": "write"})),
        Some(json!("   ")),
        Some(json!("x".repeat(65))),
        Some(json!("shipments: write\u{1b}[2J")),
    ];
    for required in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(format!("/api/v1/shipments/{CODE}/cancel")))
            .respond_with(insufficient(required.clone()))
            .mount(&server)
            .await;
        let err = client(&server).shipments().cancel(CODE).await.unwrap_err();
        assert!(matches!(err, Error::Api(_)), "{required:?}: {err:?}");
        assert_eq!(err.required_permission(), None, "{required:?}");
        assert_eq!(err.status(), Some(403), "{required:?}");
    }
    // The longest name kept is 64 characters, spaces trimmed.
    let server = MockServer::start().await;
    let longest = format!(" {} ", "s".repeat(64));
    Mock::given(method("POST"))
        .respond_with(insufficient(Some(json!(longest))))
        .mount(&server)
        .await;
    let err = client(&server).shipments().cancel(CODE).await.unwrap_err();
    assert_eq!(err.required_permission(), Some("s".repeat(64).as_str()));
}

#[tokio::test]
async fn the_code_on_another_status_is_no_permission_refusal() {
    // The variants stand for what the contract says: 403 with the code,
    // 401 with the code. Anything else keeps the answer as it came.
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(400).set_body_raw(
                json!({"title": "Bad Request", "status": 400, "detail": "odd",
                   "code": "insufficient_permission",
                   "required_permission": "shipments: read"})
                .to_string(),
                "application/problem+json",
            ),
        )
        .mount(&server)
        .await;
    let err = client(&server).shipments().get(CODE).await.unwrap_err();
    assert!(matches!(err, Error::Api(_)), "{err:?}");
    assert_eq!(err.required_permission(), None);

    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(403).set_body_raw(
                json!({"title": "Forbidden", "status": 403, "detail": "odd",
                   "code": "api_key_expired"})
                .to_string(),
                "application/problem+json",
            ),
        )
        .mount(&server)
        .await;
    let err = client(&server).shipments().get(CODE).await.unwrap_err();
    assert!(
        matches!(err, Error::Api(_)) && !err.is_key_expired(),
        "{err:?}"
    );
}

/// A 401 `api_key_expired`, with `X-Key-Expires-At` when `expires_at` is
/// given.
fn expired(expires_at: Option<&str>) -> ResponseTemplate {
    let mut answer = ResponseTemplate::new(401)
        .insert_header("x-request-id", "req-exp")
        .set_body_raw(
            json!({
                "type": "about:blank", "title": "Unauthorized", "status": 401,
                "detail": "this API key expired at 2026-12-01T00:00:00Z",
                "code": "api_key_expired", "request_id": "req-exp"
            })
            .to_string(),
            "application/problem+json",
        );
    if let Some(at) = expires_at {
        answer = answer.insert_header("x-key-expires-at", at);
    }
    answer
}

#[tokio::test]
async fn an_expired_key_is_its_own_error_with_the_time_when_the_answer_gives_it() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/merchant-couriers"))
        .respond_with(expired(Some("2026-12-01T00:00:00Z")))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(expired(Some("not a time")))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .respond_with(expired(None))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let client = client(&server);

    let err = client.couriers().list().await.unwrap_err();
    match &err {
        Error::ApiKeyExpired { expired_at, .. } => assert_eq!(
            expired_at.map(|t| t.to_rfc3339()),
            Some("2026-12-01T00:00:00+00:00".to_owned())
        ),
        other => panic!("not ApiKeyExpired: {other:?}"),
    }
    assert!(err.is_key_expired() && err.is_unauthenticated());
    assert_eq!(err.code(), Some(&ProblemCode::ApiKeyExpired));
    assert_eq!(err.request_id(), Some("req-exp"));
    assert!(!err.is_retryable());

    // A header that is not a time, or none: still expired, time unknown.
    for err in [
        client.shipments().get(CODE).await.unwrap_err(),
        client.shipments().list().send().await.unwrap_err(),
    ] {
        assert!(
            matches!(
                err,
                Error::ApiKeyExpired {
                    expired_at: None,
                    ..
                }
            ),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn an_unknown_key_is_not_an_expired_one() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(crate::helpers::problem(401, "unauthenticated"))
        .mount(&server)
        .await;
    let err = client(&server).couriers().list().await.unwrap_err();
    assert!(matches!(err, Error::Api(_)), "{err:?}");
    assert!(err.is_unauthenticated() && !err.is_key_expired());
}

#[tokio::test]
async fn the_expiry_warning_reaches_the_hook_on_each_answer_and_the_last_is_kept() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/merchant-couriers"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-key-expiry-warning", WARNING)
                .set_body_json(json!({"data": []})),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(crate::helpers::problem(404, "not_found").insert_header(
            "x-key-expiry-warning",
            "this API key expires at 2026-12-01T00:00:00Z, in 2 days",
        ))
        .mount(&server)
        .await;
    catch_all(&server).await;
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let hook_seen = seen.clone();
    let client = shipment_sdk::Client::builder()
        .api_key(crate::helpers::KEY)
        .base_url(format!("{}/api/v1", server.uri()))
        .on_key_expiry_warning(move |w| hook_seen.lock().unwrap().push(w.to_owned()))
        .build()
        .unwrap();

    assert_eq!(client.key_expiry_warning(), None);
    client.couriers().list().await.unwrap();
    client.couriers().list().await.unwrap();
    assert_eq!(client.key_expiry_warning().as_deref(), Some(WARNING));
    // A refusal carries it too.
    client.shipments().get(CODE).await.unwrap_err();
    assert_eq!(
        client.key_expiry_warning().as_deref(),
        Some("this API key expires at 2026-12-01T00:00:00Z, in 2 days")
    );
    assert_eq!(seen.lock().unwrap().len(), 3);
    assert_eq!(seen.lock().unwrap()[0], WARNING);
    // Clones share what they saw: they are one client.
    assert!(client.clone().key_expiry_warning().is_some());
}

#[tokio::test]
async fn an_answer_without_the_header_runs_no_hook_and_a_long_one_is_cut() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/merchant-couriers"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": []})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-key-expiry-warning", "w".repeat(5000))
                .set_body_json(
                    json!({"data": [], "page": 1, "page_size": 20, "total": 0, "total_pages": 0}),
                ),
        )
        .mount(&server)
        .await;
    catch_all(&server).await;
    let calls = Arc::new(Mutex::new(0));
    let counter = calls.clone();
    let client = shipment_sdk::Client::builder()
        .api_key(crate::helpers::KEY)
        .base_url(format!("{}/api/v1", server.uri()))
        .on_key_expiry_warning(move |_| *counter.lock().unwrap() += 1)
        .build()
        .unwrap();
    client.couriers().list().await.unwrap();
    assert_eq!(
        (*calls.lock().unwrap(), client.key_expiry_warning()),
        (0, None)
    );
    client.shipments().list().send().await.unwrap();
    assert_eq!(*calls.lock().unwrap(), 1);
    assert_eq!(client.key_expiry_warning().map(|w| w.len()), Some(200));
}

#[tokio::test]
async fn the_current_key_is_read_with_the_api_key() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/api-keys/current"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": 12, "name": "support", "merchant_id": 3, "prefix": "rk_test_",
            "last4": "Ab3Z", "environment": "staging", "restricted": true,
            "permissions": {"shipments": "read", "couriers": "read", "listen": "none", "testing": "none"},
            "expires_at": "2026-12-01T00:00:00Z", "created_at": "2026-11-21T09:30:12.123456Z"
        })))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let key = client(&server).current_key().await.unwrap();
    assert_eq!((key.id.get(), key.name.as_str()), (12, "support"));
    assert!(key.restricted);
    assert_eq!(key.permissions.get(Resource::Shipments), Access::Read);
    assert!(!key.permissions.allows(Resource::Shipments, Access::Write));
    assert_eq!(
        key.expires_at.map(|t| t.to_rfc3339()),
        Some("2026-12-01T00:00:00+00:00".to_owned())
    );
    let sent = requests(&server).await;
    assert_eq!(sent[0].headers["x-api-key"], crate::helpers::KEY);
}

#[test]
fn a_restricted_key_is_taken_and_checked_for_its_environment() {
    let rk_test = "rk_test_0123456789abcdefghijABCDEFGHIJ";
    shipment_sdk::Client::builder()
        .api_key(rk_test)
        .build()
        .unwrap();
    let err = shipment_sdk::Client::builder()
        .api_key("rk_live_0123456789abcdefghijABCDEFGHIJ")
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::WrongEnvironment {
                key_kind: "a restricted live (rk_live_)",
                ..
            }
        ),
        "{err}"
    );
    let err = shipment_sdk::Client::builder()
        .api_key("ck_test_0123456789abcdefghijABCDEFGHIJ")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("rk_test_"), "{err}");
}
