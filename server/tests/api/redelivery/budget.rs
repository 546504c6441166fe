//! The per-merchant budget of redelivered changes per minute, with the
//! dispatcher driven by hand: single redeliveries across webhooks, bulk
//! calls cut by it then refused, what it counts after the sends failed,
//! and one budget for two processes on one database.

use chrono::{DateTime, Utc};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

use shipment_testkit::{Db, TestApp, assert_problem, db_tests, send};

use super::{
    accepted, drain, failed_changes, first_failures, idle_app_with_budget, merchant_with_webhook,
    redeliver, ts,
};

db_tests!(
    db;
    the_budget_bounds_single_redeliveries_across_webhooks,
    a_bulk_call_beyond_the_budget_is_truncated_then_429,
    a_bulk_call_is_idempotent_and_the_budget_outlasts_the_failures,
);

/// An answer with its `Retry-After` (seconds), for the budget's answers.
async fn answer(r: RequestBuilder) -> (StatusCode, Option<u64>, Value) {
    let response = r.send().await.expect("the server answers");
    let status = response.status();
    let retry_after = response.headers().get("retry-after").map(|v| {
        v.to_str()
            .unwrap()
            .parse::<u64>()
            .expect("Retry-After in seconds")
    });
    let text = response.text().await.unwrap();
    (status, retry_after, serde_json::from_str(&text).unwrap())
}

/// The answer to `r`, which must be 429 `rate_limited` with a
/// `Retry-After` within the budget's minute: its body.
async fn rate_limited(r: RequestBuilder) -> Value {
    let (status, retry_after, body) = answer(r).await;
    assert_problem(&(status, body.clone()), 429, "rate_limited");
    within_a_minute(retry_after, &body);
    body
}

/// A bulk redelivery of `hook`'s failures since `since`, as `token`.
fn bulk_since(app: &TestApp, token: &str, hook: i64, since: DateTime<Utc>) -> RequestBuilder {
    app.bearer(Method::POST, &format!("/webhooks/{hook}/redeliver"), token)
        .json(&json!({ "failed_since": ts(since) }))
}

/// A `Retry-After` within the budget's minute.
fn within_a_minute(retry_after: Option<u64>, body: &Value) -> u64 {
    let secs = retry_after.unwrap_or_else(|| panic!("a Retry-After with {body}"));
    assert!((1..=60).contains(&secs), "Retry-After: {secs}");
    secs
}

/// With a budget of 3 a minute, the fourth single redelivery within the
/// minute is 429 `rate_limited` with `Retry-After`, whichever of the
/// merchant's webhooks it is for, and stays so after the three were sent
/// and failed; another merchant has a budget of its own.
async fn the_budget_bounds_single_redeliveries_across_webhooks(db: Db) {
    let Some((app, key)) = idle_app_with_budget(db, 3).await else {
        return;
    };
    let (f, token, a, _) = merchant_with_webhook(&app, "https://127.0.0.1:9/a").await;
    let (status, b) = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({"url": "https://127.0.0.1:9/b"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let b = b["webhook_id"].as_i64().unwrap();
    app.create_default(&f).await;
    app.create_default(&f).await;
    assert_eq!(drain(&app, &key).await, 2);
    let (on_a, on_b) = (
        first_failures(&app, &token, a, 2).await,
        first_failures(&app, &token, b, 2).await,
    );
    for (hook, delivery) in [(a, on_a[0]), (a, on_a[1]), (b, on_b[0])] {
        let got = redeliver(&app, &token, hook, delivery).await;
        assert_eq!(got.0, StatusCode::ACCEPTED, "{}", got.1);
    }
    let path = format!("/webhooks/{b}/deliveries/{}/redeliver", on_b[1]);
    let body = rate_limited(app.bearer(Method::POST, &path, &token)).await;
    assert!(
        body["detail"].as_str().unwrap().contains('3'),
        "the budget is named: {body}"
    );
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 3);

    // Another merchant's budget is its own.
    let (g, theirs, hook, _) = merchant_with_webhook(&app, "https://127.0.0.1:9/c").await;
    app.create_default(&g).await;
    assert_eq!(drain(&app, &key).await, 4, "theirs, and the three");
    let delivery = first_failures(&app, &theirs, hook, 1).await[0];
    assert_eq!(
        redeliver(&app, &theirs, hook, delivery).await.0,
        StatusCode::ACCEPTED
    );

    // Sent and failed again: the minute still counts them.
    rate_limited(app.bearer(
        Method::POST,
        &format!("/webhooks/{a}/deliveries/{}/redeliver", on_a[0]),
        &token,
    ))
    .await;
    app.stop().await;
}

/// With a budget of 3 and 5 failed changes, a bulk call queues 3 and says
/// `truncated` with `Retry-After`; the next call, with nothing left of the
/// budget, is 429 with `Retry-After`, as is a single redelivery.
async fn a_bulk_call_beyond_the_budget_is_truncated_then_429(db: Db) {
    let Some((app, key)) = idle_app_with_budget(db, 3).await else {
        return;
    };
    let (f, token, hook, _) = merchant_with_webhook(&app, "https://127.0.0.1:9/down").await;
    let since = Utc::now() - chrono::Duration::seconds(1);
    // One at a time, so the log's order is the changes' order: the bulk
    // call queues the oldest three, and the fifth is not among them.
    for _ in 0..5 {
        app.create_default(&f).await;
        assert_eq!(drain(&app, &key).await, 1);
    }
    let failures = first_failures(&app, &token, hook, 5).await;
    let bulk = || bulk_since(&app, &token, hook, since);
    let (status, retry_after, body) = answer(bulk()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body, json!({"queued": 3, "truncated": true}));
    within_a_minute(retry_after, &body);
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 3);

    rate_limited(bulk()).await;
    let path = format!("/webhooks/{hook}/deliveries/{}/redeliver", failures[4]);
    rate_limited(app.bearer(Method::POST, &path, &token)).await;
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 3);
    app.stop().await;
}

/// A second bulk call while the first one's redeliveries wait queues
/// nothing; once they were sent and failed, calling again queues only what
/// the minute's budget (6) has left, and then nothing (429).
async fn a_bulk_call_is_idempotent_and_the_budget_outlasts_the_failures(db: Db) {
    let Some((app, key)) = idle_app_with_budget(db, 6).await else {
        return;
    };
    let (_, token, hook, since) = failed_changes(&app, &key, 4).await;
    let bulk = || bulk_since(&app, &token, hook, since);
    let (status, retry_after, body) = answer(bulk()).await;
    assert_eq!(
        (status, &body, retry_after),
        (
            StatusCode::ACCEPTED,
            &json!({"queued": 4, "truncated": false}),
            None
        )
    );
    let (status, _, body) = answer(bulk()).await;
    assert_eq!(
        (status, &body),
        (
            StatusCode::ACCEPTED,
            &json!({"queued": 0, "truncated": false})
        ),
        "what waits is not queued again"
    );
    assert_eq!(drain(&app, &key).await, 4, "sent, and failed again");

    let (status, retry_after, body) = answer(bulk()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body, json!({"queued": 2, "truncated": true}));
    within_a_minute(retry_after, &body);
    assert_eq!(drain(&app, &key).await, 2);
    rate_limited(bulk()).await;
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 0);
    app.stop().await;
}

/// Two processes on one PostgreSQL database share a merchant's budget:
/// redeliveries asked for at once through both are accepted up to the
/// budget, not up to twice it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_holds_across_processes_on_postgres() {
    let Some((a, key)) = idle_app_with_budget(Db::Postgres, 4).await else {
        return;
    };
    let mut config = shipment_server::Config::local(&a.database_url);
    config.data_key.data_key = Some(key.to_hex());
    config.webhooks.no_webhook_delivery = true;
    config.webhooks.redeliveries_per_minute = 4;
    let b = crate::OtherProcess::start(&config).await;

    let (_, token, hook, _) = failed_changes(&a, &key, 8).await;
    let failures = first_failures(&a, &token, hook, 8).await;
    let asks = failures.iter().enumerate().map(|(i, delivery)| {
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        let url = format!("{base}/webhooks/{hook}/deliveries/{delivery}/redeliver");
        send(a.client.post(url).bearer_auth(&token))
    });
    let answers = futures_util::future::join_all(asks).await;
    assert_eq!(accepted(&answers), 4, "{answers:?}");
    for refused in answers.iter().filter(|(s, _)| *s != StatusCode::ACCEPTED) {
        assert_problem(refused, 429, "rate_limited");
    }
    assert_eq!(a.store.outbox_backlog().await.unwrap().depth, 4);
    b.stop().await;
    a.stop().await;
}
