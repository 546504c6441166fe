//! One delivery sent again: the same bytes, newly signed and logged as a
//! redelivery; the 404s for what is not the merchant's; a redelivery whose
//! webhook was deleted before it left; and at most one waiting redelivery
//! per change and webhook.

use std::time::Duration;

use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde_json::json;
use shipment_sdk::model::{DeliveryId, MerchantId, WebhookId};
use shipment_server::harness::{Redelivery, RedeliveryBudget};

use shipment_testkit::{Db, TestApp, assert_problem, db_tests, send};

use super::{
    Switchable, accepted, code_of, drain, first_failures, header, idle_app, log_of,
    merchant_with_webhook, redeliver, redeliver_failures, snapshot, ts, version_of,
};

db_tests!(
    a_redelivery_sends_the_same_snapshot_again_and_is_logged,
    redeliveries_of_what_is_not_yours_are_404,
);

db_tests!(
    db;
    a_redelivery_to_a_deleted_webhook_is_finished_unsent,
    a_waiting_redelivery_is_not_queued_again,
);

async fn a_redelivery_sends_the_same_snapshot_again_and_is_logged(app: &TestApp) {
    let receiver = Switchable::start(500).await;
    let (f, token, hook, key) = merchant_with_webhook(app, &receiver.url).await;
    let code = code_of(&app.create_default(&f).await);
    app.advance(&f, &code, "assigned_to_driver").await;
    let first = receiver.wait_for(2).await;
    let log = log_of(app, &token, hook, 2).await;
    let v1 = log.iter().find(|d| d["version"] == 1).unwrap();
    assert_eq!(v1["success"], false);
    assert!(v1["redelivery_of"].is_null() && v1["webhook_id"] == hook);
    let v1_id = v1["id"].as_i64().unwrap();

    // The receiver is back; support sends version 1 again.
    receiver.answer(200);
    let answered = redeliver(app, &token, hook, v1_id).await;
    assert_eq!(answered.0, StatusCode::ACCEPTED, "{}", answered.1);
    assert_eq!(answered.1, json!({"queued": 1, "truncated": false}));
    let got = receiver.wait_for(3).await;
    let again = &got[2];
    let original = first.iter().find(|g| version_of(g) == 1).unwrap();
    assert_eq!(
        again.body, original.body,
        "the same bytes as the first time"
    );
    let signature = header(again, "x-service-signature");
    assert_eq!(webhook_verify::verify(&key, &again.body, signature), Ok(()));
    let (again_id, original_id) = (
        header(again, "x-service-delivery-id"),
        header(original, "x-service-delivery-id"),
    );
    assert_ne!(again_id, original_id, "a new delivery id");
    assert!(again_id.starts_with("dlv_") && again_id.ends_with(&format!("_w{hook}")));

    // Logged as a redelivery of that attempt, newest first.
    let log = log_of(app, &token, hook, 3).await;
    let newest = &log[0];
    assert_eq!(newest["redelivery_of"], v1_id, "{newest}");
    assert_eq!(newest["version"], 1);
    assert_eq!(newest["shipment_code"], code.as_str());
    assert_eq!(
        (&newest["success"], &newest["status_code"]),
        (&json!(true), &json!(200))
    );
    assert_eq!(newest["webhook_id"], hook);
    assert!(log[1..].iter().all(|d| d["redelivery_of"].is_null()));

    // A successful delivery may be sent again too, and a disabled webhook
    // still gets what a person asked for.
    let (status, _) = send(
        app.bearer(Method::PATCH, &format!("/webhooks/{hook}"), &token)
            .json(&json!({"active": false})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let newest_id = newest["id"].as_i64().unwrap();
    let answered = redeliver(app, &token, hook, newest_id).await;
    assert_eq!(answered.0, StatusCode::ACCEPTED, "{}", answered.1);
    let got = receiver.wait_for(4).await;
    assert_eq!(got[3].body, original.body);
    let log = log_of(app, &token, hook, 4).await;
    assert_eq!(log[0]["redelivery_of"], newest_id);
    // Ordinary changes still skip the disabled webhook.
    app.create_default(&f).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.received().len(), 4);
}

async fn redeliveries_of_what_is_not_yours_are_404(app: &TestApp) {
    let receiver = Switchable::start(500).await;
    let (f, token, hook, _) = merchant_with_webhook(app, &receiver.url).await;
    let (_, other_hook) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({"url": "https://127.0.0.1:9/other"})),
    )
    .await;
    let other_hook = other_hook["webhook_id"].as_i64().unwrap();
    app.create_default(&f).await;
    let delivery = log_of(app, &token, hook, 1).await[0]["id"]
        .as_i64()
        .unwrap();
    let others = log_of(app, &token, other_hook, 1).await[0]["id"]
        .as_i64()
        .unwrap();

    let no_webhook = assert_problem(
        &redeliver(app, &token, 999_999, delivery).await,
        404,
        "not_found",
    );
    snapshot("redeliver_unknown_webhook", &no_webhook);
    // A delivery of the merchant's other webhook is not one of this one's.
    let not_its_own = assert_problem(
        &redeliver(app, &token, hook, others).await,
        404,
        "not_found",
    );
    snapshot("redeliver_another_webhooks_delivery", &not_its_own);
    assert_problem(
        &redeliver(app, &token, hook, 999_999).await,
        404,
        "not_found",
    );
    let bulk = json!({"failed_since": "2000-01-01T00:00:00Z"});
    assert_problem(
        &redeliver_failures(app, &token, 999_999, bulk.clone()).await,
        404,
        "not_found",
    );

    // Another merchant sees neither the webhook nor its deliveries.
    let stranger = app.fixture_with_login().await;
    let (email, password) = stranger.credentials();
    let theirs = app.login(&email, &password).await;
    assert_problem(
        &redeliver(app, &theirs, hook, delivery).await,
        404,
        "not_found",
    );
    assert_problem(
        &redeliver_failures(app, &theirs, hook, bulk).await,
        404,
        "not_found",
    );

    // Malformed ids, like every other id route; API keys are not sessions.
    for path in [
        "/webhooks/abc/deliveries/1/redeliver",
        "/webhooks/1/deliveries/0/redeliver",
        "/webhooks/1/deliveries/-3/redeliver",
    ] {
        let got = send(app.bearer(Method::POST, path, &token)).await;
        assert_problem(&got, 400, "invalid_identifier");
    }
    let got = send(app.req(
        Method::POST,
        &format!("/webhooks/{hook}/deliveries/{delivery}/redeliver"),
        &f.key,
    ))
    .await;
    assert_problem(&got, 401, "unauthenticated");
    let got = send(app.bearer(
        Method::GET,
        &format!("/webhooks/{hook}/deliveries/{delivery}/redeliver"),
        &token,
    ))
    .await;
    assert_problem(&got, 405, "method_not_allowed");

    // Nothing was queued by any of it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 0);
    assert_eq!(log_of(app, &token, hook, 1).await.len(), 1);
}

/// A redelivery to a webhook deleted before it left goes nowhere and is
/// finished, not retried; the change's other targets get nothing again.
async fn a_redelivery_to_a_deleted_webhook_is_finished_unsent(db: Db) {
    let Some((app, key)) = idle_app(db).await else {
        return;
    };
    let receiver = Switchable::start(500).await;
    let (f, token, hook, _) = merchant_with_webhook(&app, &receiver.url).await;
    let other = Switchable::start(200).await;
    let (status, _) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({"url": other.url})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    app.create_default(&f).await;
    assert_eq!(drain(&app, &key).await, 1);
    assert_eq!((receiver.received().len(), other.received().len()), (1, 1));
    let delivery = log_of(&app, &token, hook, 1).await[0]["id"]
        .as_i64()
        .unwrap();

    // Queued, then the webhook goes before the dispatcher gets to it.
    let queued = app
        .store
        .redeliver(
            MerchantId::new(f.merchant_id),
            WebhookId::new(hook),
            DeliveryId::new(delivery),
            RedeliveryBudget::default(),
            None,
        )
        .await
        .unwrap();
    assert!(matches!(queued, Redelivery::Queued(_)), "{queued:?}");
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 1);
    let (status, _) = send(app.bearer(Method::DELETE, &format!("/webhooks/{hook}"), &token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(drain(&app, &key).await, 1, "the row is handled");
    assert_eq!(
        app.store.outbox_backlog().await.unwrap().depth,
        0,
        "and finished"
    );
    assert_eq!(
        (receiver.received().len(), other.received().len()),
        (1, 1),
        "sent nowhere"
    );
    app.stop().await;
}

/// However often one delivery is asked for again (many clicks at once
/// here), one redelivery of it waits at a time: the others are 409
/// `invalid_state` naming the waiting one, and a bulk call skips it. Once
/// it has been attempted it may be asked for again.
async fn a_waiting_redelivery_is_not_queued_again(db: Db) {
    let Some((app, key)) = idle_app(db).await else {
        return;
    };
    let (f, token, hook, _) = merchant_with_webhook(&app, "https://127.0.0.1:9/down").await;
    let since = Utc::now() - chrono::Duration::seconds(1);
    let code = code_of(&app.create_default(&f).await);
    assert_eq!(drain(&app, &key).await, 1);
    let delivery = first_failures(&app, &token, hook, 1).await[0];

    let clicks = (0..12).map(|_| redeliver(&app, &token, hook, delivery));
    let answers = futures_util::future::join_all(clicks).await;
    assert_eq!(accepted(&answers), 1, "one redelivery waits: {answers:?}");
    for refused in answers.iter().filter(|(s, _)| *s != StatusCode::ACCEPTED) {
        let problem = assert_problem(refused, 409, "invalid_state");
        let detail = problem["detail"].as_str().unwrap();
        for named in [
            code.as_str(),
            &format!("_w{hook}"),
            &format!("delivery {delivery}"),
        ] {
            assert!(detail.contains(named), "{named} in {detail}");
        }
    }
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 1);
    let bulk = json!({ "failed_since": ts(since) });
    let skipped = redeliver_failures(&app, &token, hook, bulk.clone()).await;
    assert_eq!(
        (skipped.0, &skipped.1),
        (
            StatusCode::ACCEPTED,
            &json!({"queued": 0, "truncated": false})
        )
    );
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 1);

    // Attempted (and failed again): no longer waiting.
    assert_eq!(drain(&app, &key).await, 1);
    let again = redeliver(&app, &token, hook, delivery).await;
    assert_eq!(again.0, StatusCode::ACCEPTED, "{}", again.1);
    app.stop().await;
}
