//! The dashboard endpoints (Bearer): sign-in and its throttle, API keys,
//! webhooks and the shipment signing key.

use reqwest::{Method, StatusCode};
use serde_json::json;

use shipment_testkit::{Db, TestApp, assert_problem, db_tests, send};

db_tests!(
    sign_in_gives_a_bearer_token_that_sign_out_ends,
    wrong_passwords_are_refused_and_the_sixth_try_is_throttled,
    api_keys_and_bearer_tokens_do_not_mix,
    api_keys_are_listed_without_secrets_created_once_and_deleted_at_once,
    a_pasted_key_is_verified,
    webhooks_are_registered_once_toggled_and_deleted,
    webhook_urls_must_be_https,
    webhook_urls_a_browser_would_open_are_accepted_normalised,
    shipment_webhook_url_needs_the_signing_key_first,
    dashboard_ids_of_other_merchants_are_not_found,
    expired_tokens_are_refused,
);

db_tests!(
    config = |c| c.webhooks.allow_private_webhook_targets = false;
    unusable_webhook_hosts_all_get_the_same_answer,
);

async fn expired_tokens_are_refused(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    let token = app.login(&email, &password).await;
    let past = chrono::Utc::now() - chrono::Duration::minutes(1);
    crate::execute(&app.store, "UPDATE sessions SET expires_at = $1", past).await;
    let got = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    let problem = assert_problem(&got, 401, "unauthenticated");
    assert!(problem["detail"].as_str().unwrap().contains("expired"));
}

async fn sign_in_gives_a_bearer_token_that_sign_out_ends(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    // E-mail matching ignores case and surrounding spaces.
    let (status, body) =
        send(app.client.post(format!("{}/auth/login", app.base)).json(
            &json!({"email": format!("  {}  ", email.to_uppercase()), "password": password}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["token_type"], "Bearer");
    assert!(body["expires_at"].as_str().unwrap().ends_with('Z'));
    let token = body["token"].as_str().unwrap();

    let (status, _) = send(app.bearer(Method::GET, "/api-keys", token)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(app.bearer(Method::POST, "/auth/logout", token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let got = send(app.bearer(Method::GET, "/api-keys", token)).await;
    assert_problem(&got, 401, "unauthenticated");
}

async fn wrong_passwords_are_refused_and_the_sixth_try_is_throttled(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    let attempt = |password: String| {
        send(
            app.client
                .post(format!("{}/auth/login", app.base))
                .json(&json!({"email": email, "password": password})),
        )
    };
    for _ in 0..5 {
        let got = attempt("wrong password".into()).await;
        assert_problem(&got, 401, "unauthenticated");
    }
    // Now even the right password waits for the window to pass.
    let response = app
        .client
        .post(format!("{}/auth/login", app.base))
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=15 * 60 + 1).contains(&retry_after), "{retry_after}");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["code"], "rate_limited");
    // Unknown e-mails are refused the same way as wrong passwords.
    let got = send(
        app.client
            .post(format!("{}/auth/login", app.base))
            .json(&json!({"email": "nobody@example.com", "password": "whatever!"})),
    )
    .await;
    assert_problem(&got, 401, "unauthenticated");
}

async fn api_keys_and_bearer_tokens_do_not_mix(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    // An API key on a Bearer route.
    let got = send(app.req(Method::GET, "/api-keys", &f.key)).await;
    assert_problem(&got, 401, "unauthenticated");
    let got = send(app.bearer(Method::GET, "/api-keys", &f.key)).await;
    assert_problem(&got, 401, "unauthenticated");
    // A Bearer token on an API-key route.
    let got = send(app.bearer(Method::GET, "/shipments", &token)).await;
    assert_problem(&got, 401, "unauthenticated");
    // Malformed and unknown tokens.
    for auth in ["Bearer", "Basic abc", "Bearer not-a-token"] {
        let got = send(
            app.client
                .get(format!("{}/api-keys", app.base))
                .header("Authorization", auth),
        )
        .await;
        assert_problem(&got, 401, "unauthenticated");
    }
}

async fn api_keys_are_listed_without_secrets_created_once_and_deleted_at_once(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;

    let (status, created) = send(
        app.bearer(Method::POST, "/api-keys", &token)
            .json(&json!({"name": "checkout"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let key = created["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("sk_test_") && key.len() == 40, "{key}");
    assert_eq!(created["name"], "checkout");
    assert_eq!(created["prefix"], "sk_test_");
    assert_eq!(created["last4"], key[key.len() - 4..]);
    assert!(created["last_used_at"].is_null());

    // A body is optional; the name then has a default.
    let (status, unnamed) = send(app.bearer(Method::POST, "/api-keys", &token)).await;
    assert_eq!(status, StatusCode::CREATED, "{unnamed}");
    assert_eq!(unnamed["name"], "API key");

    // The new key works on the API.
    let (status, _) = send(app.req(Method::GET, "/shipments", &key)).await;
    assert_eq!(status, StatusCode::OK);

    let (status, list) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    assert_eq!(status, StatusCode::OK);
    let listed = list["data"].as_array().unwrap();
    assert_eq!(listed.len(), 3, "{list}");
    let text = list.to_string();
    assert!(
        !text.contains(&key) && !text.contains(&f.key),
        "a secret leaked: {text}"
    );
    assert!(listed.iter().all(|k| k.get("key").is_none()));

    // Delete: the key fails at once; a second delete is 404.
    let id = created["id"].as_i64().unwrap();
    let (status, _) = send(app.bearer(Method::DELETE, &format!("/api-keys/{id}"), &token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let got = send(app.req(Method::GET, "/shipments", &key)).await;
    assert_problem(&got, 401, "unauthenticated");
    let got = send(app.bearer(Method::DELETE, &format!("/api-keys/{id}"), &token)).await;
    assert_problem(&got, 404, "not_found");
    let got = send(app.bearer(Method::DELETE, "/api-keys/abc", &token)).await;
    assert_problem(&got, 400, "invalid_identifier");

    // Limits on the name.
    let got = send(
        app.bearer(Method::POST, "/api-keys", &token)
            .json(&json!({"name": "x".repeat(101)})),
    )
    .await;
    assert_problem(&got, 400, "invalid_field");
    let got = send(
        app.bearer(Method::POST, "/api-keys", &token)
            .json(&json!({"label": "x"})),
    )
    .await;
    assert_problem(&got, 400, "unknown_field");
}

async fn a_pasted_key_is_verified(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let other = app.fixture().await;
    let token = app.login(&email, &password).await;
    let verify = |key: String| {
        send(
            app.bearer(Method::POST, "/api-keys/verify", &token)
                .json(&json!({ "key": key })),
        )
    };
    let (status, body) = verify(f.key.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["valid"], true);
    assert_eq!(body["name"], "e2e");
    assert!(body["id"].is_i64());
    for key in [
        other.key.clone(),
        "sk_test_nope".to_owned(),
        f.key.replace("sk_test_", "sk_live_"),
        String::new(),
    ] {
        let (status, body) = verify(key).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, json!({"valid": false}));
    }
}

async fn webhooks_are_registered_once_toggled_and_deleted(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    let token = app.login(&email, &password).await;
    let url = "https://localhost:9/hook";
    let (status, created) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({ "url": url })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let key = created["signing_key"].as_str().unwrap();
    assert!(key.starts_with("whsec_") && key.len() == 38, "{key}");
    assert_eq!(created["active"], true);
    let id = created["webhook_id"].as_i64().unwrap();

    let got = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({ "url": url })),
    )
    .await;
    assert_problem(&got, 409, "webhook_url_taken");

    let (_, list) = send(app.bearer(Method::GET, "/webhooks", &token)).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert!(!list.to_string().contains(key), "the signing key leaked");
    assert_eq!(list["data"][0]["url"], url);

    let (status, off) = send(
        app.bearer(Method::PATCH, &format!("/webhooks/{id}"), &token)
            .json(&json!({"active": false})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{off}");
    assert_eq!(off["active"], false);
    let got = send(
        app.bearer(Method::PATCH, &format!("/webhooks/{id}"), &token)
            .json(&json!({"active": "no"})),
    )
    .await;
    assert_problem(&got, 400, "invalid_field");

    let (status, log) = send(app.bearer(
        Method::GET,
        &format!("/webhooks/{id}/deliveries?page_size=5"),
        &token,
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{log}");
    assert_eq!(log["total"], 0);
    assert_eq!(log["page_size"], 5);
    let got = send(app.bearer(
        Method::GET,
        &format!("/webhooks/{id}/deliveries?page_size=101"),
        &token,
    ))
    .await;
    assert_problem(&got, 400, "invalid_field");

    let (status, _) = send(app.bearer(Method::DELETE, &format!("/webhooks/{id}"), &token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let got = send(app.bearer(Method::DELETE, &format!("/webhooks/{id}"), &token)).await;
    assert_problem(&got, 404, "not_found");
    // Deleted, the URL may be registered again.
    let (status, _) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({ "url": url })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
}

async fn webhook_urls_must_be_https(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    let token = app.login(&email, &password).await;
    for url in [
        "http://example.com/hook",
        "not a url",
        "https://user:pw@example.com/",
        "",
    ] {
        let got = send(
            app.bearer(Method::POST, "/webhooks", &token)
                .json(&json!({ "url": url })),
        )
        .await;
        let problem = assert_problem(&got, 400, "invalid_field");
        assert_eq!(problem["field"], "url");
    }
}

async fn webhook_urls_a_browser_would_open_are_accepted_normalised(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    let token = app.login(&email, &password).await;
    for (sent, stored) in [
        (
            "https://hooks.eu-west-1.prod.example.co.uk/shipments",
            "https://hooks.eu-west-1.prod.example.co.uk/shipments",
        ),
        (
            "https://shop.example.com/hooks/%7Eme",
            "https://shop.example.com/hooks/%7Eme",
        ),
        ("HTTPS://Example.COM/x", "https://example.com/x"),
        (
            "https://bücher.example/x?q=a%20b",
            "https://xn--bcher-kva.example/x?q=a%20b",
        ),
        (
            "https://[2606:4700::1111]:8443/h",
            "https://[2606:4700::1111]:8443/h",
        ),
    ] {
        let (status, body) = send(
            app.bearer(Method::POST, "/webhooks", &token)
                .json(&json!({ "url": sent })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{sent}: {body}");
        assert_eq!(body["url"], stored, "{sent}");
    }
    // The normalised form is what makes two spellings one webhook.
    let got = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({ "url": "https://EXAMPLE.com:443/x" })),
    )
    .await;
    assert_problem(&got, 409, "webhook_url_taken");
    let (_, listed) = send(app.bearer(Method::GET, "/webhooks", &token)).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 5, "{listed}");
}

/// Without `--allow-private-webhook-targets`: a name that does not resolve,
/// names and literals that are private, and IPv6 forms that embed a
/// private IPv4 address all get the very same answer, so registration
/// tells a merchant nothing about which internal names exist.
async fn unusable_webhook_hosts_all_get_the_same_answer(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let (status, _) =
        send(app.bearer(Method::POST, "/webhooks/shipment-signing-key", &token)).await;
    assert_eq!(status, StatusCode::CREATED);
    for url in [
        "https://no-such-host.invalid/h",
        "https://localhost/h",
        "https://127.0.0.1/h",
        "https://[::ffff:10.0.0.1]/h",
        "https://[64:ff9b::a9fe:a9fe]/latest",
        "https://[2002:c0a8:101::]/h",
    ] {
        let got = send(
            app.bearer(Method::POST, "/webhooks", &token)
                .json(&json!({ "url": url })),
        )
        .await;
        let problem = assert_problem(&got, 400, "invalid_field");
        assert_eq!(problem["field"], "url");
        assert_eq!(
            problem["detail"],
            "`url` cannot be used: its host does not resolve to a public internet address",
            "{url}"
        );
        let body = json!({"courier_company_id": f.courier_id, "webhook_url": url});
        let got = send(app.req(Method::POST, "/shipments", &f.key).json(&body)).await;
        let problem = assert_problem(&got, 400, "invalid_field");
        assert_eq!(problem["field"], "webhook_url");
        assert_eq!(
            problem["detail"],
            "`webhook_url` cannot be used: its host does not resolve to a public internet \
             address",
            "{url}"
        );
    }
    // A public literal passes the guard (and is never connected to here).
    let (status, body) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({ "url": "https://[64:ff9b::808:808]/h" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

async fn shipment_webhook_url_needs_the_signing_key_first(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let body =
        json!({"courier_company_id": f.courier_id, "webhook_url": "https://localhost:9/own"});
    let got = send(app.req(Method::POST, "/shipments", &f.key).json(&body)).await;
    let problem = assert_problem(&got, 400, "invalid_field");
    assert_eq!(problem["field"], "webhook_url");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("/webhooks/shipment-signing-key")
    );

    let token = app.login(&email, &password).await;
    let (status, first) =
        send(app.bearer(Method::POST, "/webhooks/shipment-signing-key", &token)).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert!(first["signing_key"].as_str().unwrap().starts_with("whsec_"));
    let (status, _) = send(app.req(Method::POST, "/shipments", &f.key).json(&body)).await;
    assert_eq!(status, StatusCode::CREATED);
    // Rotating gives a new key.
    let (_, second) =
        send(app.bearer(Method::POST, "/webhooks/shipment-signing-key", &token)).await;
    assert_ne!(first["signing_key"], second["signing_key"]);
}

async fn dashboard_ids_of_other_merchants_are_not_found(app: &TestApp) {
    let (email_a, password_a) = app.fixture_with_login().await.credentials();
    let b = app.fixture_with_login().await;
    let (email_b, password_b) = b.credentials();
    let token_a = app.login(&email_a, &password_a).await;
    let token_b = app.login(&email_b, &password_b).await;
    let (_, hook) = send(
        app.bearer(Method::POST, "/webhooks", &token_b)
            .json(&json!({"url": "https://localhost:9/b"})),
    )
    .await;
    let hook_id = hook["webhook_id"].as_i64().unwrap();
    let (_, keys) = send(app.bearer(Method::GET, "/api-keys", &token_b)).await;
    let key_id = keys["data"][0]["id"].as_i64().unwrap();

    for (method, path) in [
        (Method::DELETE, format!("/api-keys/{key_id}")),
        (Method::DELETE, format!("/webhooks/{hook_id}")),
        (Method::GET, format!("/webhooks/{hook_id}/deliveries")),
    ] {
        let got = send(app.bearer(method, &path, &token_a)).await;
        assert_problem(&got, 404, "not_found");
    }
    // B's key still works.
    let (status, _) = send(app.req(Method::GET, "/shipments", &b.key)).await;
    assert_eq!(status, StatusCode::OK);
}

/// Without `--allow-private-webhook-targets`, loopback targets are refused.
#[tokio::test]
async fn private_webhook_targets_are_refused_by_default() {
    let app = TestApp::spawn_with(Db::Sqlite, |c| {
        c.webhooks.allow_private_webhook_targets = false;
    })
    .await
    .unwrap();
    let (email, password) = app.fixture_with_login().await.credentials();
    let token = app.login(&email, &password).await;
    for url in [
        "https://127.0.0.1/hook",
        "https://localhost/hook",
        "https://169.254.169.254/latest",
    ] {
        let got = send(
            app.bearer(Method::POST, "/webhooks", &token)
                .json(&json!({ "url": url })),
        )
        .await;
        let problem = assert_problem(&got, 400, "invalid_field");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .ends_with("does not resolve to a public internet address"),
            "{problem}"
        );
    }
    // IPv6 literals are accepted URLs, and judged like any address.
    let got = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({ "url": "https://[::1]/hook" })),
    )
    .await;
    assert_problem(&got, 400, "invalid_field");
    app.stop().await;
}
