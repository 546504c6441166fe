//! Every failure since a time sent again: once per change, unless it was
//! delivered since, the oldest change first; the range checked field by
//! field; and the bound of one call, on the store with a small limit.

use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::{MerchantId, WebhookId};
use shipment_server::harness::{BulkRedelivery, RedeliveryBudget};

use shipment_testkit::{Db, TestApp, assert_problem, db_tests, send};

use super::{
    Switchable, code_of, drain, failed_changes, header, idle_app, log_of, merchant_with_webhook,
    redeliver, redeliver_failures, snapshot, ts,
};

db_tests!(
    failures_since_a_time_are_redelivered_once_per_change_unless_delivered_since,
    a_bad_range_is_400_with_the_field_named,
);

db_tests!(db; the_bulk_limit_cuts_and_says_so);

async fn failures_since_a_time_are_redelivered_once_per_change_unless_delivered_since(
    app: &TestApp,
) {
    let receiver = Switchable::start(503).await;
    let (f, token, hook, _) = merchant_with_webhook(app, &receiver.url).await;
    let before = Utc::now() - chrono::Duration::seconds(1);
    // Three changes fail: a, b, c (in that order).
    let mut codes = Vec::new();
    for _ in 0..3 {
        codes.push(code_of(&app.create_default(&f).await));
        // One at a time, so the log's order is the changes' order.
        log_of(app, &token, hook, codes.len()).await;
    }
    let (a, b, c) = (&codes[0], &codes[1], &codes[2]);
    let failed = |log: &[Value], code: &str| -> Vec<i64> {
        log.iter()
            .filter(|d| d["shipment_code"] == code && d["success"] == false)
            .map(|d| d["id"].as_i64().unwrap())
            .collect()
    };
    // c fails a second time; a is sent again once the receiver is back.
    let log = log_of(app, &token, hook, 3).await;
    let c_first = failed(&log, c)[0];
    assert_eq!(
        redeliver(app, &token, hook, c_first).await.0,
        StatusCode::ACCEPTED
    );
    let log = log_of(app, &token, hook, 4).await;
    let c_latest = log[0]["id"].as_i64().unwrap();
    assert_eq!(log[0]["redelivery_of"], c_first);
    receiver.answer(204);
    let a_first = failed(&log, a)[0];
    assert_eq!(
        redeliver(app, &token, hook, a_first).await.0,
        StatusCode::ACCEPTED
    );
    let log = log_of(app, &token, hook, 5).await;
    assert_eq!(
        (&log[0]["shipment_code"], &log[0]["success"]),
        (&json!(a), &json!(true))
    );

    // A range that ends before the failures matches nothing.
    let earlier = json!({
        "failed_since": ts(before - chrono::Duration::hours(1)),
        "failed_until": ts(before),
    });
    let none = redeliver_failures(app, &token, hook, earlier).await;
    assert_eq!(
        (none.0, &none.1),
        (
            StatusCode::ACCEPTED,
            &json!({"queued": 0, "truncated": false})
        )
    );

    // b and c, once each (c failed twice); a was delivered since.
    let since = json!({ "failed_since": ts(before) });
    let queued = redeliver_failures(app, &token, hook, since.clone()).await;
    assert_eq!(queued.0, StatusCode::ACCEPTED, "{}", queued.1);
    assert_eq!(queued.1, json!({"queued": 2, "truncated": false}));
    let got = receiver.wait_for(7).await;
    let log = log_of(app, &token, hook, 7).await;
    let b_first = failed(&log, b)[0];
    let redelivered: Vec<(&str, i64)> = log[..2]
        .iter()
        .map(|d| {
            assert_eq!(d["success"], true, "{d}");
            (
                d["shipment_code"].as_str().unwrap(),
                d["redelivery_of"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(
        redelivered.contains(&(b.as_str(), b_first)),
        "{redelivered:?}"
    );
    assert!(
        redelivered.contains(&(c.as_str(), c_latest)),
        "the latest failed attempt of c: {redelivered:?}"
    );
    // Oldest change first: b's redelivery was queued (numbered) before c's.
    let outbox_id = |code: &str| -> i64 {
        let got = got[5..]
            .iter()
            .find(|g| serde_json::from_slice::<Value>(&g.body).unwrap()["code"] == code)
            .unwrap();
        let id = header(got, "x-service-delivery-id");
        id["dlv_".len()..id.find("_w").unwrap()].parse().unwrap()
    };
    assert!(outbox_id(b) < outbox_id(c));

    // Everything was delivered since: nothing is left to send.
    let again = redeliver_failures(app, &token, hook, since).await;
    assert_eq!(again.1, json!({"queued": 0, "truncated": false}));
}

async fn a_bad_range_is_400_with_the_field_named(app: &TestApp) {
    let (_, token, hook, _) = merchant_with_webhook(app, "https://127.0.0.1:9/hook").await;
    let backwards = redeliver_failures(
        app,
        &token,
        hook,
        json!({"failed_since": "2026-11-23T07:00:00Z", "failed_until": "2026-11-23T06:59:59Z"}),
    )
    .await;
    let body = assert_problem(&backwards, 400, "invalid_field");
    assert_eq!(body["field"], "failed_until");
    snapshot("redeliver_failures_backwards", &body);
    // The same instant is a range of one instant: fine.
    let same = redeliver_failures(
        app,
        &token,
        hook,
        json!({"failed_since": "2026-11-23T07:00:00Z", "failed_until": "2026-11-23T08:00:00+01:00"}),
    )
    .await;
    assert_eq!(same.0, StatusCode::ACCEPTED, "{}", same.1);
    for (body, code, field) in [
        (json!({}), "missing_field", "failed_since"),
        (
            json!({"failed_since": "yesterday"}),
            "invalid_field",
            "failed_since",
        ),
        (
            json!({"failed_since": "2026-11-23"}),
            "invalid_field",
            "failed_since",
        ),
        (
            json!({"failed_since": "2026-11-23T07:00:00Z", "failed_untill": "2026-11-24T07:00:00Z"}),
            "unknown_field",
            "failed_untill",
        ),
    ] {
        let got = redeliver_failures(app, &token, hook, body.clone()).await;
        let problem = assert_problem(&got, 400, code);
        assert_eq!(problem["field"], field, "{body}: {problem}");
    }
    let no_body =
        send(app.bearer(Method::POST, &format!("/webhooks/{hook}/redeliver"), &token)).await;
    assert_problem(&no_body, 400, "invalid_json");
}

/// The bound of one call, at its edge, on the store with a small limit:
/// cut one short it says so, and calling again queues the rest (what was
/// queued is waiting, so skipped); exactly at the limit it is not cut.
async fn the_bulk_limit_cuts_and_says_so(db: Db) {
    let Some((app, key)) = idle_app(db).await else {
        return;
    };
    let (f, token, hook, since) = failed_changes(&app, &key, 4).await;
    let store = &app.store;
    let budget = RedeliveryBudget::default();
    let bulk = |limit| {
        store.redeliver_failures(
            MerchantId::new(f.merchant_id),
            WebhookId::new(hook),
            since..=Utc::now(),
            limit,
            budget,
            None,
        )
    };
    // Cut by the limit of one call, not by the budget: no wait to tell.
    let queued = |queued, truncated| BulkRedelivery::Queued {
        queued,
        truncated,
        retry_after: None,
    };
    assert_eq!(bulk(3).await.unwrap(), queued(3, true));
    assert_eq!(
        bulk(3).await.unwrap(),
        queued(1, false),
        "the rest, not the same again"
    );
    assert_eq!(bulk(3).await.unwrap(), queued(0, false));
    // Another merchant's call for this webhook queues nothing.
    let stranger = app.fixture().await;
    let theirs = store.redeliver_failures(
        MerchantId::new(stranger.merchant_id),
        WebhookId::new(hook),
        since..=Utc::now(),
        10,
        budget,
        None,
    );
    assert_eq!(theirs.await.unwrap(), queued(0, false));

    // Each is sent (and fails again), naming the failure it repeats.
    let first_failures: Vec<i64> = log_of(&app, &token, hook, 4)
        .await
        .iter()
        .map(|d| d["id"].as_i64().unwrap())
        .collect();
    assert_eq!(drain(&app, &key).await, 4);
    let log = log_of(&app, &token, hook, 8).await;
    let mut repeated: Vec<i64> = log[..4]
        .iter()
        .map(|d| d["redelivery_of"].as_i64().unwrap())
        .collect();
    repeated.sort_unstable();
    let mut expected = first_failures.clone();
    expected.sort_unstable();
    assert_eq!(repeated, expected);

    // Four changes, a limit of four: all of them, not cut.
    assert_eq!(bulk(4).await.unwrap(), queued(4, false));
    // The latest failed attempt of each change is the one repeated now.
    let claimed = store
        .claim_outbox("test", chrono::Duration::seconds(60), 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 4);
    let latest: Vec<i64> = log[..4].iter().map(|d| d["id"].as_i64().unwrap()).collect();
    for row in &claimed {
        assert_eq!(row.only_webhook_id, Some(hook));
        assert!(latest.contains(&row.redelivery_of.unwrap()), "{row:?}");
        assert!(row.webhook_url.is_none());
    }
    let versions: Vec<i64> = claimed.iter().map(|r| r.version).collect();
    assert_eq!(versions, [1, 1, 1, 1]);
    app.stop().await;
}
