//! The dashboard client: sign-in, API keys and webhooks.

use futures_util::TryStreamExt as _;
use serde_json::json;
use shipment_sdk::model::{ApiKeyId, ProblemCode, WebhookId};
use shipment_sdk::{DashboardClient, Error};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{CODE, catch_all, problem, requests};

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
    assert_eq!((keys[0].id.get(), keys[0].last4.as_str()), (5, "WXYZ"));
    let created = dashboard.api_keys().create("deploy").await.unwrap();
    assert_eq!(created.api_key.id.get(), 6);
    assert_eq!(created.key.expose(), "sk_test_0123456789abcdefghijABCDABCD");
    assert!(!format!("{created:?}").contains("0123456789"));
    let verdict = dashboard.api_keys().verify("sk_test_nope").await.unwrap();
    assert!(!verdict.valid);
    assert_eq!(verdict.id, None);
    dashboard.api_keys().delete(ApiKeyId::new(5)).await.unwrap();
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
    assert_eq!(created.webhook.webhook_id, WebhookId::new(3));
    assert!(created.signing_key.expose().starts_with("whsec_"));
    assert_eq!(hooks.list().await.unwrap().len(), 1);
    assert!(
        !hooks
            .set_active(WebhookId::new(3), false)
            .await
            .unwrap()
            .active
    );
    let log = hooks
        .deliveries(WebhookId::new(3))
        .page(2)
        .send()
        .await
        .unwrap();
    assert_eq!(log.data[0].status_code, Some(500));
    assert!(!log.data[0].success);
    assert!(matches!(
        hooks.deliveries(WebhookId::new(3)).page(0).send().await,
        Err(Error::InvalidPage)
    ));
    for size in [0, 101] {
        assert!(matches!(
            hooks.deliveries(WebhookId::new(3)).page_size(size).send().await,
            Err(Error::InvalidPageSize(s)) if s == size
        ));
    }
    let key = hooks.rotate_shipment_signing_key().await.unwrap();
    assert!(key.signing_key.expose().starts_with("whsec_"));
    hooks.delete(WebhookId::new(3)).await.unwrap();
    let err = hooks.delete(WebhookId::new(4)).await.unwrap_err();
    assert_eq!(err.code(), Some(&ProblemCode::NotFound));
    assert!(err.is_not_found());
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

fn delivery(id: i64) -> serde_json::Value {
    json!({
        "id": id, "shipment_code": CODE, "version": id,
        "url": "https://shop.example.com/hooks", "success": true,
        "status_code": 200, "error": null, "duration_ms": 12,
        "delivered_at": "2026-11-21T09:31:00.000000Z"
    })
}

#[tokio::test]
async fn the_delivery_log_takes_a_page_size_and_streams_every_page() {
    let server = MockServer::start().await;
    for (page, ids) in [(1, [9, 8]), (2, [7, 6])] {
        Mock::given(method("GET"))
            .and(path("/api/v1/webhooks/3/deliveries"))
            .and(query_param("page", page.to_string()))
            .and(query_param("page_size", "2"))
            .and(header("authorization", "Bearer sess_abc"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "data": ids.map(delivery),
                "page": page, "page_size": 2, "total": 5, "total_pages": 3
            })))
            .expect(1)
            .mount(&server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path("/api/v1/webhooks/3/deliveries"))
        .and(query_param("page", "3"))
        .and(query_param("page_size", "2"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [delivery(5)],
            "page": 3, "page_size": 2, "total": 5, "total_pages": 3
        })))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let dashboard = DashboardClient::builder()
        .base_url(format!("{}/api/v1", server.uri()))
        .token("sess_abc")
        .unwrap();
    let first = dashboard
        .webhooks()
        .deliveries(WebhookId::new(3))
        .page_size(2)
        .send()
        .await
        .unwrap();
    assert_eq!((first.page, first.page_size, first.total_pages), (1, 2, 3));
    let ids: Vec<i64> = first
        .into_stream()
        .map_ok(|d| d.id.get())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(ids, [9, 8, 7, 6, 5]);
    assert_eq!(requests(&server).await.len(), 3);
}

#[tokio::test]
async fn the_dashboard_builder_takes_the_settings_of_the_client_builder() {
    use shipment_sdk::Environment;
    use std::time::Duration;

    let dashboard = DashboardClient::builder()
        .environment(Environment::Staging)
        .base_url("http://127.0.0.1:9/api/v1/")
        .timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(1))
        .max_retries(1)
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(2))
        .max_retry_after(Duration::from_secs(1))
        .user_agent("shipctl-test")
        .token("sess_abc")
        .unwrap();
    assert_eq!(dashboard.base_url(), "http://127.0.0.1:9/api/v1");
    assert_eq!(dashboard.environment(), &Environment::Staging);
    let shown = format!("{dashboard:?}");
    assert!(
        shown.contains("staging") && !shown.contains("sess_abc"),
        "{shown}"
    );

    let err = DashboardClient::builder()
        .environment(Environment::Production(
            "http://shipments.example.com/api/v1".into(),
        ))
        .token("sess_abc")
        .unwrap_err();
    assert!(err.to_string().contains("https"), "{err}");
}
