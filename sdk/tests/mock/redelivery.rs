//! Redelivery and a shipment's delivery history: what the dashboard client
//! sends, what it reads, and that a redelivery is never sent twice by a
//! retry.

use futures_util::TryStreamExt as _;
use serde_json::json;
use shipment_sdk::model::{DeliveryId, RedeliveryQueued, ShipmentCode, WebhookId};
use shipment_sdk::{DashboardClient, Error};
use wiremock::matchers::{body_json, body_string, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{CODE, catch_all, problem};

fn dashboard(server: &MockServer) -> DashboardClient {
    DashboardClient::builder()
        .base_url(format!("{}/api/v1", server.uri()))
        .retry_backoff(
            std::time::Duration::from_millis(1),
            std::time::Duration::from_millis(5),
        )
        .token("sess_abc")
        .unwrap()
}

#[tokio::test]
async fn one_delivery_is_redelivered_with_an_empty_post() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/webhooks/3/deliveries/412/redeliver"))
        .and(header("authorization", "Bearer sess_abc"))
        .and(body_string(""))
        .respond_with(
            ResponseTemplate::new(202).set_body_json(json!({"queued": 1, "truncated": false})),
        )
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let queued = dashboard(&server)
        .webhooks()
        .redeliver(WebhookId::new(3), DeliveryId::new(412))
        .await
        .unwrap();
    assert_eq!(queued, RedeliveryQueued::new(1, false));
}

#[tokio::test]
async fn a_redelivery_is_not_repeated_after_a_retryable_failure() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/webhooks/3/deliveries/412/redeliver"))
        .respond_with(problem(503, "unavailable"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v1/webhooks/3/redeliver"))
        .respond_with(problem(503, "unavailable"))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let hooks = dashboard(&server);
    let err = hooks
        .webhooks()
        .redeliver(WebhookId::new(3), DeliveryId::new(412))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(503));
    let since = "2026-11-23T07:00:00Z".parse().unwrap();
    let err = hooks
        .webhooks()
        .redeliver_failures(WebhookId::new(3), since, None)
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(503));
}

#[tokio::test]
async fn failures_since_a_time_are_redelivered_with_the_range_as_sent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/webhooks/3/redeliver"))
        .and(body_json(
            json!({"failed_since": "2026-11-23T07:00:00.000000Z"}),
        ))
        .respond_with(
            ResponseTemplate::new(202).set_body_json(json!({"queued": 10000, "truncated": true})),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v1/webhooks/3/redeliver"))
        .and(body_json(json!({
            "failed_since": "2026-11-23T07:00:00.000000Z",
            "failed_until": "2026-11-23T09:30:00.000000Z"
        })))
        .respond_with(problem(400, "invalid_field"))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let hooks = dashboard(&server);
    let since = "2026-11-23T08:00:00+01:00".parse().unwrap();
    let queued = hooks
        .webhooks()
        .redeliver_failures(WebhookId::new(3), since, None)
        .await
        .unwrap();
    assert_eq!((queued.queued, queued.truncated), (10_000, true));
    assert_eq!(queued.retry_after, None, "cut by the limit of one call");
    let until = "2026-11-23T09:30:00Z".parse().unwrap();
    let err = hooks
        .webhooks()
        .redeliver_failures(WebhookId::new(3), since, Some(until))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
}

/// Cut by the budget, the 202 says when it has room again; the SDK reads
/// it into the answer (it is not in the body), and does not wait itself.
#[tokio::test]
async fn a_budget_cut_answer_carries_its_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/webhooks/3/redeliver"))
        .respond_with(
            ResponseTemplate::new(202)
                .insert_header("retry-after", "42")
                .set_body_json(json!({"queued": 1000, "truncated": true})),
        )
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let since = "2026-11-23T07:00:00Z".parse().unwrap();
    let queued = dashboard(&server)
        .webhooks()
        .redeliver_failures(WebhookId::new(3), since, None)
        .await
        .unwrap();
    assert_eq!(
        queued,
        RedeliveryQueued::new(1000, true).with_retry_after(std::time::Duration::from_secs(42))
    );
}

fn attempt(id: i64, webhook_id: Option<i64>, redelivery_of: Option<i64>) -> serde_json::Value {
    json!({
        "id": id, "shipment_code": CODE, "version": 2,
        "url": "https://shop.example.com/hooks", "webhook_id": webhook_id,
        "success": false, "status_code": 500, "error": "the receiver answered 500",
        "duration_ms": 12, "delivered_at": "2026-11-21T09:31:00.000000Z",
        "redelivery_of": redelivery_of
    })
}

#[tokio::test]
async fn a_shipments_history_is_paged_and_streamed_by_its_code() {
    let server = MockServer::start().await;
    for (page, data) in [
        (
            1,
            vec![attempt(9, Some(3), Some(7)), attempt(8, None, None)],
        ),
        (2, vec![attempt(7, Some(3), None)]),
    ] {
        Mock::given(method("GET"))
            .and(path("/api/v1/webhooks/deliveries"))
            .and(query_param("shipment_code", CODE))
            .and(query_param("page", page.to_string()))
            .and(query_param("page_size", "2"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "data": data, "page": page, "page_size": 2, "total": 3, "total_pages": 2
            })))
            .expect(1)
            .mount(&server)
            .await;
    }
    catch_all(&server).await;

    let hooks = dashboard(&server);
    let code: ShipmentCode = CODE.parse().unwrap();
    let first = hooks
        .webhooks()
        .shipment_deliveries(&code)
        .page_size(2)
        .send()
        .await
        .unwrap();
    assert_eq!(first.data[0].webhook_id, Some(WebhookId::new(3)));
    assert_eq!(first.data[0].redelivery_of, Some(DeliveryId::new(7)));
    assert_eq!(first.data[1].webhook_id, None, "the shipment's own URL");
    let all: Vec<_> = first.into_stream().try_collect().await.unwrap();
    let ids: Vec<i64> = all.iter().map(|d| d.id.get()).collect();
    assert_eq!(ids, [9, 8, 7]);
    assert!(matches!(
        hooks
            .webhooks()
            .shipment_deliveries(&code)
            .page(0)
            .send()
            .await,
        Err(Error::InvalidPage)
    ));
}

#[tokio::test]
async fn a_delivery_from_an_older_service_has_no_webhook_or_redelivery() {
    // Before redelivery the log had neither field: both read as `None`.
    let old: shipment_sdk::model::Delivery = serde_json::from_value(json!({
        "id": 1, "shipment_code": CODE, "version": 1, "url": "https://shop.example.com/h",
        "success": true, "status_code": 200, "error": null, "duration_ms": 3,
        "delivered_at": "2026-11-21T09:31:00.000000Z"
    }))
    .unwrap();
    assert_eq!((old.webhook_id, old.redelivery_of), (None, None));
    // Written, both are always there (null when absent).
    let written = serde_json::to_value(&old).unwrap();
    assert!(written["webhook_id"].is_null() && written["redelivery_of"].is_null());
    assert!(written.as_object().unwrap().contains_key("redelivery_of"));
}
