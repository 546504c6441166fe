//! Redelivery and a shipment's delivery history through the SDK's
//! `DashboardClient`, against the real server and a real HTTPS receiver
//! that is down (answers 503), on SQLite and PostgreSQL.

use std::time::Duration;

use futures_util::TryStreamExt as _;
use reqwest::StatusCode;
use shipment_sdk::DashboardClient;
use shipment_sdk::model::{Delivery, DeliveryId, ProblemCode, RedeliveryQueued, WebhookId};
use shipment_testkit::{Fixture, TestApp, WebhookReceiver, db_tests};

db_tests!(support_sends_failed_deliveries_again_through_the_sdk);

db_tests!(
    config = |c| c.webhooks.redeliveries_per_minute = 1;
    a_bulk_redelivery_the_budget_cuts_says_when_it_has_room,
);

/// The webhook's log once it has `n` attempts, newest first.
async fn log(dashboard: &DashboardClient, id: WebhookId, n: u64) -> Vec<Delivery> {
    for _ in 0..200 {
        let page = dashboard.webhooks().deliveries(id).send().await.unwrap();
        if page.total >= n {
            return page.data;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the delivery log never reached {n} attempts");
}

/// A signed-in merchant with one webhook whose receiver answers every
/// delivery 503, so every change's deliveries fail.
async fn failing_webhook(
    server: &TestApp,
) -> (WebhookReceiver, Fixture, DashboardClient, WebhookId) {
    let receiver = WebhookReceiver::start(StatusCode::SERVICE_UNAVAILABLE, Duration::ZERO).await;
    let f = server.fixture_with_login().await;
    let dashboard = DashboardClient::login(&server.base, &f.email, f.password.as_deref().unwrap())
        .await
        .unwrap();
    let hook = dashboard
        .webhooks()
        .register(&receiver.url)
        .await
        .unwrap()
        .webhook
        .webhook_id;
    (receiver, f, dashboard, hook)
}

async fn support_sends_failed_deliveries_again_through_the_sdk(server: &TestApp) {
    let (receiver, f, dashboard, hook) = failing_webhook(server).await;
    let hooks = dashboard.webhooks();
    let shipment = server.create_default(&f).await;
    let raw_code = shipment["code"].as_str().unwrap();
    server.advance(&f, raw_code, "assigned_to_driver").await;
    let code = raw_code.parse().unwrap();
    let first = log(&dashboard, hook, 2).await;
    let v1 = first.iter().find(|d| d.version == 1).unwrap();
    assert_eq!((v1.webhook_id, v1.redelivery_of), (Some(hook), None));

    let queued = hooks.redeliver(hook, v1.id).await.unwrap();
    assert_eq!(queued, RedeliveryQueued::new(1, false));
    let got = receiver.wait_for(3).await;
    assert_eq!(got[2].body, got[0].body, "version 1 again, byte for byte");
    let again = &log(&dashboard, hook, 3).await[0];
    assert_eq!((again.redelivery_of, again.version), (Some(v1.id), 1));

    // Both changes have failed and are sent again once each; version 1
    // names its latest failed attempt.
    let since = shipment["created_at"].as_str().unwrap().parse().unwrap();
    let queued = hooks.redeliver_failures(hook, since, None).await.unwrap();
    assert_eq!((queued.queued, queued.truncated), (2, false));
    receiver.wait_for(5).await;
    let latest = log(&dashboard, hook, 5).await;
    let mut repeated: Vec<Option<DeliveryId>> =
        latest[..2].iter().map(|d| d.redelivery_of).collect();
    repeated.sort();
    let v2 = first.iter().find(|d| d.version == 2).unwrap().id;
    let mut expected = vec![Some(again.id), Some(v2)];
    expected.sort();
    assert_eq!(repeated, expected);

    // The shipment's history, a page at a time and streamed.
    let history = hooks
        .shipment_deliveries(&code)
        .page_size(2)
        .send()
        .await
        .unwrap();
    assert_eq!((history.total, history.total_pages), (5, 3));
    let all: Vec<Delivery> = history.into_stream().try_collect().await.unwrap();
    let ids: Vec<DeliveryId> = all.iter().map(|d| d.id).collect();
    let logged: Vec<DeliveryId> = latest.iter().map(|d| d.id).collect();
    assert_eq!(ids, logged, "the same attempts, newest first");

    let err = hooks
        .redeliver(hook, DeliveryId::new(999_999))
        .await
        .unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(404), Some(&ProblemCode::NotFound))
    );
    let err = hooks
        .redeliver_failures(hook, since, Some(since - chrono::Duration::seconds(1)))
        .await
        .unwrap_err();
    assert_eq!(err.field(), Some("failed_until"));
    let other = "SHP-0000-0000".parse().unwrap();
    let err = hooks.shipment_deliveries(&other).send().await.unwrap_err();
    assert!(err.is_not_found());
}

/// A budget of one redelivered change a minute and two failed changes: the
/// first call queues one and is `truncated` with the 202's `Retry-After`
/// in `retry_after`; the second, with no room left, is a 429 saying the
/// same.
async fn a_bulk_redelivery_the_budget_cuts_says_when_it_has_room(server: &TestApp) {
    let (_receiver, f, dashboard, hook) = failing_webhook(server).await;
    let hooks = dashboard.webhooks();
    let first = server.create_default(&f).await;
    server.create_default(&f).await;
    log(&dashboard, hook, 2).await;

    let since = first["created_at"].as_str().unwrap().parse().unwrap();
    let queued = hooks.redeliver_failures(hook, since, None).await.unwrap();
    assert_eq!((queued.queued, queued.truncated), (1, true));
    let wait = queued
        .retry_after
        .expect("cut by the budget: a Retry-After");
    assert!(wait <= Duration::from_secs(60), "{wait:?}");

    let err = hooks
        .redeliver_failures(hook, since, None)
        .await
        .unwrap_err();
    assert!(err.is_rate_limited(), "{err}");
    assert!(
        err.retry_after()
            .is_some_and(|d| d <= Duration::from_secs(60))
    );
}
