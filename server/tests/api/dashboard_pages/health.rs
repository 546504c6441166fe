//! Delivery health on the pages, over plain HTTP: a webhook's charts, read
//! back from the page (each bar's SVG, its drawn height and its table
//! row), hold what its delivery log holds, counted here afresh from the
//! log, after deliveries that really succeeded (a receiver answering 200),
//! failed (one answering 500, one gone) and were spread over the week; its
//! success rates and last failure; the overview's shipments by status and
//! webhooks failing now, and its limit; another merchant's page refused.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use reqwest::{Method, StatusCode};
use serde_json::json;
use shipment_sdk::model::{MerchantId, WebhookId};
use shipment_server::harness::{DeliveryRecord, MAX_FAILING_SHOWN, Pool, Store};
use shipment_testkit::{Fixture, TestApp, db_tests, send};

use super::browser::{Browser, signed_in};
use crate::receiver::Receiver;
use crate::wait_for_empty_outbox;

db_tests!(
    the_charts_count_what_the_delivery_log_holds,
    the_overview_lists_a_bounded_number_of_failing_webhooks,
);

/// One bar as the page draws it.
#[derive(Debug, Clone, PartialEq)]
struct Bar {
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    succeeded: u64,
    failed: u64,
    /// The drawn heights of its delivered and failed parts (0 when not
    /// drawn).
    ok_height: f64,
    failed_height: f64,
}

/// The value of attribute `name` in the tag `tag` (its text up to `>`).
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let marker = format!(" {name}=\"");
    let start = tag.find(&marker)? + marker.len();
    let end = tag[start..].find('"')? + start;
    Some(&tag[start..end])
}

fn time(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .to_utc()
}

/// The figure `id` of the page.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<figure class=\"chart\" id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no chart {id}:\n{html}"));
    let end = html[start..].find("</figure>").unwrap() + start;
    &html[start..end]
}

/// The bars of chart `id`, oldest first, as its SVG draws them.
fn bars(html: &str, id: &str) -> Vec<Bar> {
    let chart = figure(html, id);
    chart
        .split("<g class=\"bar\"")
        .skip(1)
        .map(|bar| {
            let tag = &bar[..bar.find('>').unwrap()];
            let number = |name| attr(tag, name).unwrap().parse::<u64>().unwrap();
            let body = &bar[..bar.find("</g>").unwrap()];
            let height = |class: &str| {
                body.find(&format!("<rect class=\"{class}\""))
                    .map_or(0.0, |at| {
                        let rect = &body[at..];
                        let rect = &rect[..rect.find('>').unwrap()];
                        attr(rect, "height").unwrap().parse::<f64>().unwrap()
                    })
            };
            Bar {
                from: time(attr(tag, "data-from").unwrap()),
                to: time(attr(tag, "data-to").unwrap()),
                succeeded: number("data-succeeded"),
                failed: number("data-failed"),
                ok_height: height("bar-ok"),
                failed_height: height("bar-failed"),
            }
        })
        .collect()
}

/// The numbers of chart `id`'s table, row by row: (delivered, failed).
fn table(html: &str, id: &str) -> Vec<(u64, u64)> {
    let chart = figure(html, id);
    let cells = |label: &str| -> Vec<u64> {
        let marker = format!("data-label=\"{label}\">");
        chart
            .match_indices(&marker)
            .map(|(at, _)| {
                let text = &chart[at + marker.len()..];
                text[..text.find('<').unwrap()].parse().unwrap()
            })
            .collect()
    };
    cells("Delivered")
        .into_iter()
        .zip(cells("Failed"))
        .collect()
}

/// The text of the element with id `id` (tags left out).
fn text_of(html: &str, id: &str) -> String {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}:\n{html}"));
    let start = html[start..].find('>').unwrap() + start + 1;
    let end = html[start..].find("</dd>").unwrap() + start;
    let mut text = String::new();
    let mut in_tag = false;
    for c in html[start..end].chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

/// Every attempt webhook `id` has logged.
async fn log_of(app: &TestApp, id: i64) -> Vec<DeliveryRecord> {
    let (rows, total) = app
        .store
        .webhook_deliveries(WebhookId::new(id), 1000, 0)
        .await
        .unwrap();
    assert_eq!(rows.len() as u64, total, "the whole log on one page");
    rows
}

/// Moves attempt `id` of the log to `at`, as if it had been made then.
async fn logged_at(store: &Store, id: i64, at: DateTime<Utc>) {
    let sql = "UPDATE webhook_deliveries SET delivered_at = $1 WHERE id = $2";
    let n = match store.pool() {
        Pool::Sqlite(pool) => sqlx::query(sql)
            .bind(at)
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()),
        Pool::Postgres(pool) => sqlx::query(sql)
            .bind(at)
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()),
    };
    assert_eq!(n.unwrap(), 1);
}

/// Checks chart `id` of `page` against `log`: each bar holds the log's
/// attempts in its time, succeeded and failed; its table says the same; its
/// parts are drawn to one scale; the bars follow one another. Returns the
/// bars.
fn check_chart(page: &str, id: &str, log: &[DeliveryRecord], bars_shown: usize) -> Vec<Bar> {
    let bars = bars(page, id);
    assert_eq!(bars.len(), bars_shown, "{id}");
    assert!(
        bars.windows(2).all(|w| w[0].to == w[1].from),
        "{id}: {bars:?}"
    );
    for bar in &bars {
        let within: Vec<&DeliveryRecord> = log
            .iter()
            .filter(|d| bar.from <= d.delivered_at && d.delivered_at < bar.to)
            .collect();
        let failed = within.iter().filter(|d| d.error.is_some()).count() as u64;
        let succeeded = within.len() as u64 - failed;
        assert_eq!(
            (bar.succeeded, bar.failed),
            (succeeded, failed),
            "{id}: the bar from {} against the delivery log",
            bar.from
        );
    }
    let numbers: Vec<(u64, u64)> = bars.iter().map(|b| (b.succeeded, b.failed)).collect();
    assert_eq!(
        table(page, id),
        numbers,
        "{id}: the table says what the bars draw"
    );
    // One scale: every drawn part is as tall per attempt as every other.
    let per_attempt: Vec<f64> = bars
        .iter()
        .flat_map(|b| {
            [(b.ok_height, b.succeeded), (b.failed_height, b.failed)]
                .into_iter()
                .map(move |(height, n)| {
                    assert_eq!(height > 0.0, n > 0, "{id}: {b:?}");
                    height / n.max(1) as f64
                })
                .filter(|h| *h > 0.0)
        })
        .collect();
    assert!(!per_attempt.is_empty(), "{id} draws nothing");
    assert!(
        per_attempt
            .iter()
            .all(|h| (h - per_attempt[0]).abs() < 0.01),
        "{id}: {per_attempt:?}"
    );
    bars
}

/// How many attempts of `log` fall in `[from, to)`: (succeeded, failed).
fn count(log: &[DeliveryRecord], from: DateTime<Utc>, to: DateTime<Utc>) -> (u64, u64) {
    let within: Vec<_> = log
        .iter()
        .filter(|d| from <= d.delivered_at && d.delivered_at < to)
        .collect();
    let failed = within.iter().filter(|d| d.error.is_some()).count() as u64;
    (within.len() as u64 - failed, failed)
}

/// Registers `url` from the webhooks page; its id.
async fn register(app: &TestApp, browser: &Browser, f: &Fixture, url: &str) -> i64 {
    let created = browser
        .submit("/webhooks", "/webhooks", &[("url", url)])
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let hooks = app
        .store
        .webhooks(MerchantId::new(f.merchant_id))
        .await
        .unwrap();
    hooks.iter().find(|w| w.url == url).unwrap().id
}

async fn the_charts_count_what_the_delivery_log_holds(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let up = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let down = Receiver::start(StatusCode::INTERNAL_SERVER_ERROR, Duration::ZERO).await;
    let flaky = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let up_id = register(app, &browser, &f, &up.url).await;
    let down_id = register(app, &browser, &f, &down.url).await;
    let flaky_id = register(app, &browser, &f, &flaky.url).await;
    let flaky_url = flaky.url.clone();

    // Twelve changes, each delivered to all three: four creates, one
    // walked to delivered (three changes), one cancelled, one to failed
    // (three changes, with its pickup).
    let mut codes = Vec::new();
    for _ in 0..4 {
        codes.push(
            app.create_default(&f).await["code"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    app.advance(&f, &codes[0], "delivered").await;
    app.advance(&f, &codes[1], "cancelled").await;
    app.advance(&f, &codes[2], "failed").await;
    wait_for_empty_outbox(app).await;
    assert!(!up.received().is_empty() && !down.received().is_empty());
    // Gone: what follows fails to connect.
    drop(flaky);
    app.advance(&f, &codes[3], "in_transit").await;
    wait_for_empty_outbox(app).await;

    // Spread over the week (and one beyond it), so bars of every kind
    // count: on the hour, the last instant of an hour, a day back, days
    // back, eight days back.
    let now = Utc::now();
    let hour = now.duration_trunc(TimeDelta::hours(1)).unwrap();
    let flaky_log = log_of(app, flaky_id).await;
    let spread = [
        hour - TimeDelta::hours(2),
        hour - TimeDelta::hours(2) - TimeDelta::microseconds(1),
        now - TimeDelta::hours(30),
        now - TimeDelta::days(3),
        now - TimeDelta::days(3),
        now - TimeDelta::days(8),
    ];
    for (d, at) in flaky_log.iter().zip(spread) {
        logged_at(&app.store, d.id, at).await;
    }
    // The newest failure, moved back: the last failure is the latest by
    // time, whatever order the log was written in.
    let down_log = log_of(app, down_id).await;
    logged_at(&app.store, down_log[0].id, now - TimeDelta::days(2)).await;

    for (id, failing) in [(up_id, false), (down_id, true), (flaky_id, true)] {
        let before = Utc::now();
        let page = browser.get(&format!("/webhooks/{id}")).await;
        let after = Utc::now();
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let log = log_of(app, id).await;
        let hours = check_chart(&page.body, "chart-hours", &log, 24);
        let days = check_chart(&page.body, "chart-days", &log, 7);
        let last = &hours[23];
        assert!(
            last.from <= after && before < last.to,
            "the last bar is now: {last:?}"
        );
        assert_eq!(
            days[6].from,
            last.from.duration_trunc(TimeDelta::days(1)).unwrap()
        );

        // The totals the page says, as the log counts them.
        let in_hours = count(&log, hours[0].from, last.to);
        let in_days = count(&log, days[0].from, days[6].to);
        let said = |(s, f): (u64, u64)| match s + f {
            0 => "no deliveries".to_owned(),
            all => format!("({s} of {all} delivered)"),
        };
        assert!(
            text_of(&page.body, "rate-hours").ends_with(&said(in_hours)),
            "{id}"
        );
        assert!(
            text_of(&page.body, "rate-days").ends_with(&said(in_days)),
            "{id}"
        );
        let caption = format!(
            "{} deliveries in the last 7 days: {} delivered, {} failed.",
            in_days.0 + in_days.1,
            in_days.0,
            in_days.1
        );
        assert!(
            figure(&page.body, "chart-days").contains(&caption),
            "{caption}"
        );

        let last_failure = log
            .iter()
            .filter(|d| d.error.is_some())
            .max_by_key(|d| d.delivered_at);
        let shown = text_of(&page.body, "last-failure");
        match last_failure {
            Some(d) => assert!(shown.contains(&format!("attempt #{} of", d.id)), "{shown}"),
            None => assert_eq!(shown, "never"),
        }
        assert_eq!(page.body.contains("Failing now."), failing, "{id}");
        if id == flaky_id {
            // Its log reaches outside the week, and both kinds are drawn.
            assert!(in_days.0 + in_days.1 < log.len() as u64);
            assert!(in_days.0 > 0 && in_days.1 > 0, "{in_days:?}");
        }
    }

    // The overview: the webhooks failing now, and the shipments by status
    // as the shipment list counts them.
    let overview = browser.get("/").await;
    assert_eq!(overview.status, StatusCode::OK);
    let body = &overview.body;
    assert!(body.contains("Webhooks failing now"));
    for (url, failing) in [(&up.url, false), (&down.url, true), (&flaky_url, true)] {
        assert_eq!(body.contains(url.as_str()), failing, "{url}");
    }
    let (status, list) = send(app.req(Method::GET, "/shipments?page_size=100", &f.key)).await;
    assert_eq!(status, StatusCode::OK);
    let mut by_status: BTreeMap<String, u64> = BTreeMap::new();
    for s in list["data"].as_array().unwrap() {
        *by_status
            .entry(s["status"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(by_status.len(), 4, "{by_status:?}");
    for (status, n) in &by_status {
        let link = format!("href=\"/shipments?status={status}&amp;page=1\"");
        let at = body
            .find(&link)
            .unwrap_or_else(|| panic!("no {status}:\n{body}"));
        let row = &body[at..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(
            row.contains(&format!("data-label=\"Shipments\">{n}<")),
            "{status}: {row}"
        );
    }

    // Another merchant's webhook page is refused, and shows nothing of it.
    let (other, _) = signed_in(app).await;
    let refused = other.get(&format!("/webhooks/{flaky_id}")).await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND);
    assert!(!refused.body.contains("chart-hours"));
    let theirs = other.get("/").await;
    assert!(!theirs.body.contains("Webhooks failing now"));
}

/// More webhooks failing than the overview lists: it lists
/// [`MAX_FAILING_SHOWN`], and says there are more.
async fn the_overview_lists_a_bounded_number_of_failing_webhooks(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let failing = MAX_FAILING_SHOWN as usize + 1;
    for i in 0..failing {
        // Nothing listens on port 9: every attempt fails.
        let (status, hook) = send(
            app.bearer(Method::POST, "/webhooks", &token)
                .json(&json!({ "url": format!("https://127.0.0.1:9/hook-{i}") })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{hook}");
    }
    app.create_default(&f).await;
    wait_for_empty_outbox(app).await;
    let browser = Browser::new(app);
    let signed = browser.sign_in(&email, &password).await;
    assert_eq!(signed.status, StatusCode::SEE_OTHER);
    let overview = browser.get("/").await;
    let listed = overview.body.matches("href=\"/webhooks/").count();
    // The list's links, and none elsewhere on the page.
    assert_eq!(listed, MAX_FAILING_SHOWN as usize, "{}", overview.body);
    assert!(
        overview
            .body
            .contains("More webhooks are failing than are listed here")
    );
    assert!(
        overview
            .body
            .contains(&format!("{MAX_FAILING_SHOWN} or more failing now"))
    );
}
