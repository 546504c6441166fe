//! The delivery log's counts for the dashboard's charts on real engines:
//! each hour's attempts, the bounds of the range (its start in, its end
//! out), the merchant and the webhook; the query planned as a range of its
//! index; and the latest attempts the pages name.

use chrono::{DateTime, Duration, Utc};
use shipment_sdk::model::{MerchantId, WebhookId};

use super::{on_each_engine, raw_shipment, shop};
use crate::store::webhooks::{HOURLY_COUNTS_POSTGRES, HOURLY_COUNTS_SQLITE};
use crate::store::{Pool, Store, now};

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

/// The range counted: six days and 21 hours, as the charts' span at
/// 20:52 on the 28th.
const SINCE: &str = "2026-11-22T00:00:00Z";
const UNTIL: &str = "2026-11-28T21:00:00Z";

/// A webhook's delivery log written by hand: one outbox row per attempt
/// (the log keeps one row per change and URL), each logged at a chosen
/// time, failed or not.
struct Log<'a> {
    store: &'a Store,
    merchant: MerchantId,
    shipment: i64,
    next_version: i64,
}

impl Log<'_> {
    async fn attempt(
        &mut self,
        webhook: Option<i64>,
        merchant: MerchantId,
        at: DateTime<Utc>,
        ok: bool,
    ) {
        self.next_version += 1;
        let outbox = "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, \
                      payload, created_at, done_at) VALUES ($1, $2, 'SHP-0000-0001', $3, '{}', $4, $4) \
                      RETURNING id";
        let outbox_id: i64 = self
            .store
            .query(outbox)
            .bind(self.shipment)
            .bind(self.merchant.get())
            .bind(self.next_version)
            .bind(now())
            .scalar()
            .await
            .unwrap();
        let log = "INSERT INTO webhook_deliveries (outbox_id, webhook_id, merchant_id, url, \
                   shipment_code, version, status_code, error, duration_ms, delivered_at) \
                   VALUES ($1, $2, $3, 'https://example.com/hook', 'SHP-0000-0001', $4, $5, $6, 3, $7)";
        let (status, error) = if ok {
            (200, None)
        } else {
            (500, Some("the receiver answered 500"))
        };
        let q = self
            .store
            .query(log)
            .bind(outbox_id)
            .bind(webhook)
            .bind(merchant.get())
            .bind(self.next_version)
            .bind(i64::from(status));
        q.bind(error).bind(at).execute().await.unwrap();
    }
}

async fn counted_by_hour_within_its_bounds(store: &Store) {
    let (merchant, courier) = shop(store).await;
    let other = store
        .create_merchant("Other", "other@example.com", "x")
        .await
        .unwrap();
    let hook = store
        .create_webhook(merchant, "https://example.com/hook", "k")
        .await
        .unwrap()
        .id;
    let second = store
        .create_webhook(merchant, "https://example.com/second", "k")
        .await
        .unwrap()
        .id;
    let shipment = raw_shipment(store, (merchant, courier), "SHP-0000-0001", None).await;
    let mut log = Log {
        store,
        merchant,
        shipment,
        next_version: 0,
    };
    let (since, until) = (at(SINCE), at(UNTIL));
    let us = Duration::microseconds(1);
    for (when, ok) in [
        (since - us, true),                           // before the range
        (since, true),                                // hour 0
        (since, false),                               // hour 0
        (since + Duration::hours(1) - us, false),     // hour 0, its last instant
        (since + Duration::hours(1), true),           // hour 1
        (at("2026-11-25T13:30:00.5Z"), true),         // hour 85
        (until - Duration::milliseconds(100), false), // hour 164, not rounded up
        (until - Duration::minutes(30), true),        // hour 164
        (until, true),                                // after the range
    ] {
        log.attempt(Some(hook), merchant, when, ok).await;
    }
    // Not this webhook's, nor (though it names it) this merchant's.
    log.attempt(Some(second), merchant, since, true).await;
    log.attempt(Some(hook), other, since, true).await;

    let counts: Vec<(i64, i64, i64)> = store
        .hourly_delivery_counts(merchant, WebhookId::new(hook), since, until)
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.hour, c.succeeded, c.failed))
        .collect();
    assert_eq!(counts, [(0, 1, 2), (1, 1, 0), (85, 1, 0), (164, 1, 1)]);
    let none = store
        .hourly_delivery_counts(other, WebhookId::new(hook), since, until)
        .await
        .unwrap();
    assert_eq!(none.len(), 1, "the other merchant's own row only");

    // The latest attempt (by log order) succeeded; the latest failure is
    // the latest failed by time, not by order of writing.
    let (latest, failure) = store
        .latest_deliveries(merchant, WebhookId::new(hook))
        .await
        .unwrap();
    assert_eq!(latest.unwrap().delivered_at, until);
    let failure = failure.unwrap();
    assert_eq!(failure.delivered_at, until - Duration::milliseconds(100));
    assert!(
        store
            .failing_webhooks(merchant, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // A failure logged last: the webhook is failing now, and listed once.
    log.attempt(Some(hook), merchant, until, false).await;
    log.attempt(Some(second), merchant, until, false).await;
    let failing = store.failing_webhooks(merchant, 10).await.unwrap();
    let ids: Vec<Option<i64>> = failing.iter().map(|d| d.webhook_id).collect();
    assert_eq!(ids, [Some(hook), Some(second)]);
    assert_eq!(store.failing_webhooks(merchant, 1).await.unwrap().len(), 1);
    // A disabled webhook is not failing: nothing is sent to it.
    store
        .set_webhook_active(merchant, WebhookId::new(second), false)
        .await
        .unwrap();
    let failing = store.failing_webhooks(merchant, 10).await.unwrap();
    assert_eq!(failing.len(), 1);
    assert!(store.failing_webhooks(other, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn each_engine_counts_a_webhooks_log_by_hour_within_its_bounds() {
    on_each_engine(counted_by_hour_within_its_bounds).await;
}

/// The plan of the hourly counts, one line a step.
async fn plan(store: &Store) -> String {
    let (since, until) = (at(SINCE), at(UNTIL));
    match store.pool() {
        Pool::Sqlite(pool) => {
            let sql = format!("EXPLAIN QUERY PLAN {HOURLY_COUNTS_SQLITE}");
            let rows: Vec<(i64, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(1i64)
                .bind(1i64)
                .bind(since)
                .bind(until)
                .fetch_all(pool)
                .await
                .unwrap();
            rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("\n")
        }
        Pool::Postgres(pool) => {
            // A table this small is read whole whatever its indexes; with
            // sequential scans priced out, the plan shows which index the
            // query can use.
            let mut tx = pool.begin().await.unwrap();
            sqlx::query("SET LOCAL enable_seqscan = off")
                .execute(&mut *tx)
                .await
                .unwrap();
            let sql = format!("EXPLAIN {HOURLY_COUNTS_POSTGRES}");
            let rows: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(1i64)
                .bind(1i64)
                .bind(since)
                .bind(until)
                .fetch_all(&mut *tx)
                .await
                .unwrap();
            rows.into_iter().map(|r| r.0).collect::<Vec<_>>().join("\n")
        }
    }
}

async fn counts_read_a_range_of_the_time_index(store: &Store) {
    let plan = plan(store).await;
    assert!(
        plan.contains("webhook_deliveries_by_webhook_time"),
        "the hourly counts do not use their index:\n{plan}"
    );
    match store.pool() {
        // The webhook and both ends of the range bound the search.
        Pool::Sqlite(_) => assert!(
            plan.contains("(webhook_id=? AND delivered_at>? AND delivered_at<?)"),
            "{plan}"
        ),
        // (With the values bound, PostgreSQL prints them in the plan.)
        Pool::Postgres(_) => {
            let cond = plan
                .lines()
                .find(|l| l.contains("Index Cond:"))
                .unwrap_or_else(|| panic!("no index condition:\n{plan}"));
            for bound in ["(webhook_id = ", "(delivered_at >= ", "(delivered_at < "] {
                assert!(
                    cond.contains(bound),
                    "{bound} is not in the index search:\n{plan}"
                );
            }
        }
    }
}

#[tokio::test]
async fn each_engine_counts_a_webhooks_log_from_a_range_of_its_index() {
    on_each_engine(counts_read_a_range_of_the_time_index).await;
}
