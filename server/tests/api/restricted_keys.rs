//! Restricted and expiring API keys (issue 40): made through `POST
//! /api-keys`, held to their permissions on every operation with the
//! permission named, refused with `api_key_expired` once expired, the
//! headers that tell a key's holder what it may do, the introspection
//! route and the test control that makes a key expire now. The
//! authorization matrix (`authz.rs`) runs restricted and expired keys over
//! every operation; `revocation.rs` checks an expiry across processes.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use reqwest::header::HeaderMap;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

use shipment_testkit::{Fixture, TestApp, assert_problem, db_tests, send};

db_tests!(
    config = |c| c.test_controls = true;
    a_read_only_key_reads_and_lists_and_every_write_is_refused_naming_the_permission,
    an_expired_key_is_refused_everywhere_with_its_own_code,
    full_keys_are_made_and_answered_as_before,
    bad_permissions_and_expiries_are_400_with_the_field_named,
    headers_tell_the_expiry_and_warn_in_the_last_week_only,
    a_key_tells_what_it_is,
    the_expire_control_takes_only_the_merchants_own_keys,
    a_restricted_key_of_the_other_environment_is_401,
);

/// A merchant that can sign in, and its dashboard token.
async fn merchant(app: &TestApp) -> (Fixture, String) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    (f, token)
}

/// Creates a key with `body` through the dashboard API; the 201's body.
async fn create_key(app: &TestApp, token: &str, body: Value) -> Value {
    let (status, key) = send(app.bearer(Method::POST, "/api-keys", token).json(&body)).await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    key
}

/// Sends a request; its status, headers and JSON body.
async fn answer(r: RequestBuilder) -> (StatusCode, HeaderMap, Value) {
    let response = r.send().await.expect("the server answers");
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, headers, body)
}

/// The key `id` as `GET /api-keys` lists it, once its use is recorded
/// (off the request's path, so a moment after the answer).
async fn listed_once_used(app: &TestApp, token: &str, id: &Value) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let (_, listed) = send(app.bearer(Method::GET, "/api-keys", token)).await;
        let key = listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["id"] == *id)
            .unwrap()
            .clone();
        if key["last_used_at"].is_string() {
            return key;
        }
        assert!(std::time::Instant::now() < deadline, "never used: {key}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn snapshot(name: &str, body: &Value) {
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_json_snapshot!(name, body, { ".request_id" => "[request_id]" });
    });
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

async fn a_read_only_key_reads_and_lists_and_every_write_is_refused_naming_the_permission(
    app: &TestApp,
) {
    let (f, token) = merchant(app).await;
    let made = create_key(
        app,
        &token,
        json!({"name": "support", "permissions": {"shipments": "read", "couriers": "read"}}),
    )
    .await;
    let key = made["key"].as_str().unwrap();
    assert!(key.starts_with("rk_test_"), "{made}");
    assert_eq!(key.len(), "rk_test_".len() + 32);
    assert_eq!(made["prefix"], "rk_test_");
    assert_eq!(
        made["permissions"],
        json!({"shipments": "read", "couriers": "read", "listen": "none", "testing": "none"})
    );
    assert_eq!(made["expires_at"], Value::Null);
    assert_eq!(made["expired"], false);

    let shipment = app.create_default(&f).await;
    let code = shipment["code"].as_str().unwrap();
    for (path, needs) in [
        ("/shipments".to_owned(), "shipments: read"),
        (format!("/shipments/{code}"), "shipments: read"),
        ("/merchant-couriers".to_owned(), "couriers: read"),
    ] {
        let (status, headers, body) = answer(app.req(Method::GET, &path, key)).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        assert_eq!(header(&headers, "x-accepted-permissions"), Some(needs));
        assert_eq!(header(&headers, "x-key-expires-at"), None);
    }
    let (_, _, list) = answer(app.req(Method::GET, "/shipments", key)).await;
    assert_eq!(list["data"][0]["code"], code);

    let writes = [
        (
            Method::POST,
            "/shipments".to_owned(),
            json!({"courier_company_id": f.courier_id}),
        ),
        (Method::POST, format!("/shipments/{code}/cancel"), json!({})),
        (
            Method::POST,
            format!("/shipments/{code}/rate"),
            json!({"rating": 8}),
        ),
        (
            Method::POST,
            format!("/shipments/{code}/generate-confirmation-code"),
            json!({}),
        ),
    ];
    for (method, path, body) in writes {
        let (status, headers, problem) = answer(app.req(method, &path, key).json(&body)).await;
        let problem = assert_problem(&(status, problem), 403, "insufficient_permission");
        assert_eq!(problem["required_permission"], "shipments: write", "{path}");
        assert_eq!(
            problem["detail"],
            "this API key has shipments: read; this operation needs shipments: write"
        );
        assert_eq!(
            header(&headers, "x-accepted-permissions"),
            Some("shipments: write")
        );
        assert_eq!(
            header(&headers, "content-type"),
            Some("application/problem+json")
        );
    }
    let refused = answer(app.req(Method::POST, &format!("/shipments/{code}/cancel"), key)).await;
    snapshot("restricted_key_insufficient_permission", &refused.2);
    for (method, path, needs) in [
        (
            Method::GET,
            "/webhooks/listener-signing-key",
            "listen: read",
        ),
        (
            Method::POST,
            "/webhooks/listener-signing-key",
            "listen: write",
        ),
        (Method::GET, "/webhooks/listen", "listen: read"),
    ] {
        let (status, _, problem) = answer(app.req(method, path, key)).await;
        let problem = assert_problem(&(status, problem), 403, "insufficient_permission");
        assert_eq!(problem["required_permission"], needs);
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .starts_with("this API key has listen: none;"),
            "{problem}"
        );
    }
    // Nothing was written: the shipment is as it was, and the only one.
    let (_, _, after) = answer(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
    assert_eq!(after, shipment);
    let (_, _, list) = answer(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_eq!(list["total"], 1);
    // Listed as it was made, now used.
    let listed = listed_once_used(app, &token, &made["id"]).await;
    assert_eq!(listed["permissions"], made["permissions"]);
    assert_eq!(listed["prefix"], "rk_test_");
}

async fn an_expired_key_is_refused_everywhere_with_its_own_code(app: &TestApp) {
    let (f, token) = merchant(app).await;
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let made = create_key(
        app,
        &token,
        json!({"permissions": {"shipments": "write", "couriers": "read", "listen": "write"}}),
    )
    .await;
    let key = made["key"].as_str().unwrap();
    let id = made["id"].as_i64().unwrap();
    // It works, and is remembered, before it expires.
    for _ in 0..2 {
        assert_eq!(
            send(app.req(Method::GET, "/shipments", key)).await.0,
            StatusCode::OK
        );
    }
    let (status, expired) = send(app.req(
        Method::POST,
        &format!("/testing/api-keys/{id}/expire"),
        &f.key,
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{expired}");
    assert_eq!(expired["id"], id);
    assert_eq!(expired["expired"], true);
    let at: DateTime<Utc> = expired["expires_at"].as_str().unwrap().parse().unwrap();
    assert!(at <= Utc::now());
    let detail = format!("this API key expired at {}", rfc3339(at));

    for (method, path) in [
        (Method::GET, "/shipments".to_owned()),
        (Method::GET, format!("/shipments/{code}")),
        (Method::POST, format!("/shipments/{code}/cancel")),
        (Method::GET, "/merchant-couriers".to_owned()),
        (Method::GET, "/webhooks/listen".to_owned()),
        (Method::GET, "/webhooks/listener-signing-key".to_owned()),
        (Method::GET, "/api-keys/current".to_owned()),
    ] {
        let (status, headers, problem) = answer(app.req(method, &path, key)).await;
        let problem = assert_problem(&(status, problem), 401, "api_key_expired");
        assert_eq!(problem["detail"], detail.as_str(), "{path}");
        assert_eq!(
            header(&headers, "x-key-expires-at"),
            Some(rfc3339(at).as_str())
        );
        assert_eq!(header(&headers, "x-key-expiry-warning"), None);
    }
    let (status, problem) = send(app.req(Method::GET, "/shipments", key)).await;
    let mut problem = problem;
    problem["detail"] = json!("this API key expired at [time]");
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    snapshot("expired_key_api_key_expired", &problem);
    // The shipment was not cancelled.
    let (_, shipment) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
    assert_eq!(shipment["status"], "assigned_to_courier");

    // Listed and verified as expired.
    let (_, listed) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    let listed = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == id)
        .unwrap()
        .clone();
    assert_eq!(listed["expired"], true);
    let (status, verdict) = send(
        app.bearer(Method::POST, "/api-keys/verify", &token)
            .json(&json!({ "key": key })),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(verdict["valid"], false, "{verdict}");
    assert_eq!(verdict["expired"], true);
    assert_eq!(verdict["restricted"], true);
    assert_eq!(verdict["id"], id);
}

async fn full_keys_are_made_and_answered_as_before(app: &TestApp) {
    let (f, token) = merchant(app).await;
    let (status, made) = send(app.bearer(Method::POST, "/api-keys", &token)).await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(made["key"].as_str().unwrap().starts_with("sk_test_"));
    assert_eq!(made["permissions"], Value::Null);
    assert_eq!(made["expires_at"], Value::Null);
    assert_eq!(made["expired"], false);
    for key in [made["key"].as_str().unwrap(), f.key.as_str()] {
        let (status, headers, _) = answer(app.req(Method::GET, "/shipments", key)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            header(&headers, "x-accepted-permissions"),
            Some("shipments: read")
        );
        assert_eq!(header(&headers, "x-key-expires-at"), None);
        assert_eq!(header(&headers, "x-key-expiry-warning"), None);
        let (status, headers, _) = answer(
            app.req(Method::POST, "/shipments", key)
                .json(&json!({"courier_company_id": f.courier_id})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(
            header(&headers, "x-accepted-permissions"),
            Some("shipments: write")
        );
    }
    let (status, verdict) = send(
        app.bearer(Method::POST, "/api-keys/verify", &token)
            .json(&json!({ "key": f.key })),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(verdict["valid"], true);
    assert_eq!(verdict["restricted"], false);
    assert_eq!(verdict["expired"], false);
    assert!(verdict.get("permissions").is_none(), "{verdict}");
    // A key the server does not know: no header tells anything.
    let unknown = format!("rk_test_{}", "A".repeat(32));
    let (status, headers, problem) = answer(app.req(Method::GET, "/shipments", &unknown)).await;
    assert_problem(&(status, problem), 401, "unauthenticated");
    assert_eq!(header(&headers, "x-accepted-permissions"), None);
}

async fn bad_permissions_and_expiries_are_400_with_the_field_named(app: &TestApp) {
    let (_, token) = merchant(app).await;
    let now = Utc::now();
    let cases = [
        (
            "permissions_unknown_resource",
            json!({"permissions": {"refunds": "read"}}),
            "permissions.refunds",
        ),
        (
            "permissions_unknown_level",
            json!({"permissions": {"shipments": "admin"}}),
            "permissions.shipments",
        ),
        (
            "permissions_couriers_write",
            json!({"permissions": {"couriers": "write"}}),
            "permissions.couriers",
        ),
        (
            "permissions_testing_read",
            json!({"permissions": {"testing": "read"}}),
            "permissions.testing",
        ),
        (
            "permissions_not_an_object",
            json!({"permissions": "shipments:read"}),
            "permissions",
        ),
        (
            "expires_at_in_the_past",
            json!({"expires_at": rfc3339(now - Duration::minutes(1))}),
            "expires_at",
        ),
        (
            "expires_at_beyond_366_days",
            json!({"expires_at": rfc3339(now + Duration::days(367))}),
            "expires_at",
        ),
        (
            "expires_at_not_a_time",
            json!({"expires_at": "next week"}),
            "expires_at",
        ),
    ];
    for (name, body, field) in cases {
        let got = send(app.bearer(Method::POST, "/api-keys", &token).json(&body)).await;
        let problem = assert_problem(&got, 400, "invalid_field");
        assert_eq!(problem["field"], field, "{name}: {problem}");
        snapshot(&format!("api_key_{name}"), &problem);
    }
    // The edges that are allowed: 366 days ahead (less the time the request
    // takes), and a key with no permission at all.
    let edge = create_key(
        app,
        &token,
        json!({"expires_at": rfc3339(now + Duration::days(366) - Duration::minutes(1))}),
    )
    .await;
    assert!(edge["key"].as_str().unwrap().starts_with("sk_test_"));
    let nothing = create_key(app, &token, json!({"permissions": {}})).await;
    assert_eq!(
        nothing["permissions"],
        json!({"shipments": "none", "couriers": "none", "listen": "none", "testing": "none"})
    );
    let key = nothing["key"].as_str().unwrap();
    let (status, _) = send(app.req(Method::GET, "/api-keys/current", key)).await;
    assert_eq!(status, StatusCode::OK);
    let got = send(app.req(Method::GET, "/shipments", key)).await;
    assert_eq!(
        assert_problem(&got, 403, "insufficient_permission")["detail"],
        "this API key has shipments: none; this operation needs shipments: read"
    );
    // Nothing was made by the refusals.
    let (_, listed) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 3, "{listed}");
}

async fn headers_tell_the_expiry_and_warn_in_the_last_week_only(app: &TestApp) {
    let (_, token) = merchant(app).await;
    let now = Utc::now();
    let soon = now + Duration::days(3);
    let later = now + Duration::days(30);
    let soon_key = create_key(
        app,
        &token,
        json!({"permissions": {"shipments": "read"}, "expires_at": rfc3339(soon)}),
    )
    .await;
    let later_key = create_key(app, &token, json!({"expires_at": rfc3339(later)})).await;
    assert_eq!(later_key["prefix"], "sk_test_");

    let (status, headers, _) =
        answer(app.req(Method::GET, "/shipments", soon_key["key"].as_str().unwrap())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        header(&headers, "x-key-expires-at"),
        Some(rfc3339(soon).as_str())
    );
    assert_eq!(
        header(&headers, "x-key-expiry-warning"),
        Some(format!("this API key expires at {}, in 3 days", rfc3339(soon)).as_str())
    );
    // On a refusal too, once the key is known.
    let (status, headers, _) = answer(
        app.req(
            Method::POST,
            "/shipments",
            soon_key["key"].as_str().unwrap(),
        )
        .json(&json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(header(&headers, "x-key-expiry-warning").is_some());
    assert_eq!(
        header(&headers, "x-accepted-permissions"),
        Some("shipments: write")
    );

    let (status, headers, _) = answer(app.req(
        Method::GET,
        "/shipments",
        later_key["key"].as_str().unwrap(),
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        header(&headers, "x-key-expires-at"),
        Some(rfc3339(later).as_str())
    );
    assert_eq!(header(&headers, "x-key-expiry-warning"), None);
}

async fn a_key_tells_what_it_is(app: &TestApp) {
    let (f, token) = merchant(app).await;
    let (status, headers, full) = answer(app.req(Method::GET, "/api-keys/current", &f.key)).await;
    assert_eq!(status, StatusCode::OK, "{full}");
    assert_eq!(header(&headers, "x-accepted-permissions"), None);
    assert_eq!(full["merchant_id"], f.merchant_id);
    assert_eq!(full["restricted"], false);
    assert_eq!(full["prefix"], "sk_test_");
    assert_eq!(full["environment"], "staging");
    assert_eq!(full["last4"], &f.key[f.key.len() - 4..]);
    assert_eq!(
        full["permissions"],
        json!({"shipments": "write", "couriers": "read", "listen": "write", "testing": "write"})
    );
    assert_eq!(full["expires_at"], Value::Null);

    let at = Utc::now() + Duration::days(10);
    let made = create_key(
        app,
        &token,
        json!({"name": "support", "permissions": {"shipments": "read", "couriers": "read"},
               "expires_at": rfc3339(at)}),
    )
    .await;
    let (status, headers, me) = answer(app.req(
        Method::GET,
        "/api-keys/current",
        made["key"].as_str().unwrap(),
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(
        header(&headers, "x-key-expires-at"),
        Some(rfc3339(at).as_str())
    );
    assert_eq!(me["id"], made["id"]);
    assert_eq!(me["name"], "support");
    assert_eq!(me["restricted"], true);
    assert_eq!(me["prefix"], "rk_test_");
    assert_eq!(me["permissions"], made["permissions"]);
    assert_eq!(me["expires_at"], made["expires_at"]);
    assert_eq!(me["created_at"], made["created_at"]);
    // It counts as a use.
    listed_once_used(app, &token, &made["id"]).await;
    // A session is not a key.
    let got = send(app.bearer(Method::GET, "/api-keys/current", &token)).await;
    assert_problem(&got, 401, "unauthenticated");
}

async fn the_expire_control_takes_only_the_merchants_own_keys(app: &TestApp) {
    let (f, token) = merchant(app).await;
    let other = app.fixture().await;
    let made = create_key(app, &token, json!({})).await;
    let id = made["id"].as_i64().unwrap();
    for (key, path) in [
        (&other.key, format!("/testing/api-keys/{id}/expire")),
        (&f.key, "/testing/api-keys/999999999/expire".to_owned()),
    ] {
        let got = send(app.req(Method::POST, &path, key)).await;
        assert_problem(&got, 404, "not_found");
    }
    let got = send(app.req(Method::POST, "/testing/api-keys/x/expire", &f.key)).await;
    assert_problem(&got, 400, "invalid_identifier");
    // The key still works; a key may expire itself, and is then refused.
    let key = made["key"].as_str().unwrap();
    assert_eq!(
        send(app.req(Method::GET, "/shipments", key)).await.0,
        StatusCode::OK
    );
    let (status, body) =
        send(app.req(Method::POST, &format!("/testing/api-keys/{id}/expire"), key)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let got = send(app.req(Method::GET, "/shipments", key)).await;
    assert_problem(&got, 401, "api_key_expired");
}

async fn a_restricted_key_of_the_other_environment_is_401(app: &TestApp) {
    let live = format!("rk_live_{}", "A".repeat(32));
    let got = send(app.req(Method::GET, "/shipments", &live)).await;
    let problem = assert_problem(&got, 401, "unauthenticated");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("other environment"),
        "{problem}"
    );
    // And a restricted key is not a courier's.
    let got = send(app.req(
        Method::GET,
        "/courier/shipments",
        &format!("rk_test_{}", "A".repeat(32)),
    ))
    .await;
    assert_problem(&got, 403, "forbidden");
}
