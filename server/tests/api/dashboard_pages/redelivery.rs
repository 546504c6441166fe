//! Redelivery from the pages, over plain HTTP: the Redeliver button of a
//! failed delivery (on the webhook's log and on the shipment's page),
//! "Redeliver failures since…", what each queues and where it goes back
//! to, and the refusals (no CSRF token, a bad range, not yours, a
//! redelivery waiting already, the budget per minute used).

use std::time::Duration;

use reqwest::StatusCode;
use shipment_sdk::model::{MerchantId, WebhookId};
use shipment_server::harness::DataKey;
use shipment_server::harness::{DispatchSettings, Dispatcher};
use shipment_testkit::{TestApp, WAIT, db_tests};

use super::browser::{Browser, signed_in};
use crate::outbox_drained;

db_tests!(failed_deliveries_are_sent_again_from_the_pages);
db_tests!(
    config = |c| {
        c.webhooks.no_webhook_delivery = true;
        c.webhooks.redeliveries_per_minute = 2;
        c.data_key.data_key = Some(super::DATA_KEY.to_owned());
    };
    what_was_not_queued_is_said_on_the_pages
);

/// The data key of the servers whose dispatcher the test drives.
const DATA_KEY: &str = "5d1c0f4e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d";

/// Delivers everything waiting, as one dispatcher would.
async fn drain(app: &TestApp) {
    let settings = DispatchSettings {
        allow_private_targets: true,
        ..DispatchSettings::default()
    };
    let key = DataKey::from_hex(DATA_KEY).unwrap();
    let dispatcher = Dispatcher::new(app.store.clone(), key, settings).unwrap();
    while dispatcher.run_once().await.unwrap() > 0 {}
}

/// How many attempts webhook `id` has logged, once it has `n`.
async fn logged(app: &TestApp, id: i64, n: u64) -> Vec<shipment_server::harness::DeliveryRecord> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (rows, total) = app
            .store
            .webhook_deliveries(WebhookId::new(id), 100, 0)
            .await
            .unwrap();
        if total >= n {
            return rows;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{total} of {n} attempts"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn failed_deliveries_are_sent_again_from_the_pages(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    // Nothing listens on port 9: every attempt fails.
    let created = browser
        .submit(
            "/webhooks",
            "/webhooks",
            &[("url", "https://127.0.0.1:9/down")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let id = app
        .store
        .webhooks(MerchantId::new(f.merchant_id))
        .await
        .unwrap()[0]
        .id;
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = logged(app, id, 1).await[0].id;
    let page = format!("/webhooks/{id}");
    let shown = browser.get(&page).await;
    let button = format!("action=\"/webhooks/{id}/deliveries/{first}/redeliver\"");
    assert!(shown.body.contains(&button), "{}", shown.body);
    assert!(shown.body.contains("Redeliver failures since"));

    // Without the form's CSRF token: refused, nothing queued.
    let forged = browser
        .post(&format!("/webhooks/{id}/deliveries/{first}/redeliver"), &[])
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 0);

    // The button: back to the log, which shows the new attempt.
    let sent = browser
        .submit(
            &page,
            &format!("/webhooks/{id}/deliveries/{first}/redeliver"),
            &[],
        )
        .await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.body);
    assert_eq!(
        sent.location(),
        format!("/webhooks/{id}?redelivered={first}")
    );
    let again = logged(app, id, 2).await;
    assert_eq!(again[0].redelivery_of, Some(first));
    let shown = browser.get(sent.location()).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert!(
        shown
            .body
            .contains(&format!("Delivery #{first} is being sent again"))
    );
    assert!(
        shown.body.contains(&format!("redelivery of #{first}")),
        "{}",
        shown.body
    );

    // From the shipment's page, back to it; a code that is not a code is
    // not followed into the Location header.
    let from_shipment = browser
        .submit(
            &format!("/shipments/{code}"),
            &format!("/webhooks/{id}/deliveries/{first}/redeliver"),
            &[("back", "shipment"), ("code", &code)],
        )
        .await;
    assert_eq!(
        from_shipment.location(),
        format!("/shipments/{code}?redelivered={first}")
    );
    // Sent before it is asked for again (one waits at a time).
    outbox_drained(&app.store, WAIT).await;
    let crafted = browser
        .submit(
            &page,
            &format!("/webhooks/{id}/deliveries/{first}/redeliver"),
            &[("back", "shipment"), ("code", "//evil.example/")],
        )
        .await;
    assert_eq!(
        crafted.location(),
        format!("/webhooks/{id}?redelivered={first}")
    );
    logged(app, id, 4).await;
    let shipment = browser
        .get(&format!("/shipments/{code}?redelivered={first}"))
        .await;
    assert_eq!(shipment.status, StatusCode::OK);
    let deliveries = &shipment.body[shipment
        .body
        .find("<h2>Deliveries</h2>")
        .expect("a deliveries section")..];
    assert!(deliveries.contains("https://127.0.0.1:9/down"));
    assert!(deliveries.contains(&format!("redelivery of #{first}")));
    assert!(shipment.body.contains("is being sent again"));

    // "Redeliver failures since…": the one change, once, however many of
    // its attempts failed.
    outbox_drained(&app.store, WAIT).await;
    let bulk = browser
        .submit(
            &page,
            &format!("/webhooks/{id}/redeliver"),
            &[("failed_since", "2000-01-01T00:00"), ("failed_until", "")],
        )
        .await;
    assert_eq!(bulk.status, StatusCode::SEE_OTHER, "{}", bulk.body);
    assert_eq!(bulk.location(), format!("/webhooks/{id}?queued=1"));
    let shown = browser.get(bulk.location()).await;
    assert!(shown.body.contains("1 redelivery queued"), "{}", shown.body);
    logged(app, id, 5).await;
    let none = browser
        .submit(
            &page,
            &format!("/webhooks/{id}/redeliver"),
            &[
                ("failed_since", "2000-01-01T00:00"),
                ("failed_until", "2000-01-02T00:00"),
            ],
        )
        .await;
    assert_eq!(none.location(), format!("/webhooks/{id}?queued=0"));
    assert!(
        browser
            .get(none.location())
            .await
            .body
            .contains("Nothing to send again")
    );

    // A backwards range shows the page again with the reason and what was
    // typed; so does a missing start.
    let backwards = browser
        .submit(
            &page,
            &format!("/webhooks/{id}/redeliver"),
            &[
                ("failed_since", "2026-11-23T07:00"),
                ("failed_until", "2026-11-22T07:00"),
            ],
        )
        .await;
    assert_eq!(backwards.status, StatusCode::BAD_REQUEST);
    assert!(
        backwards
            .body
            .contains("`failed_until` must not be before `failed_since`."),
        "{}",
        backwards.body
    );
    assert!(backwards.body.contains("value=\"2026-11-22T07:00\""));
    let missing = browser
        .submit(
            &page,
            &format!("/webhooks/{id}/redeliver"),
            &[("failed_since", "")],
        )
        .await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert!(missing.body.contains("is required"), "{}", missing.body);

    // Another merchant's webhook, or a delivery it does not have: 404.
    let (stranger, _) = signed_in(app).await;
    let theirs = stranger
        .submit(
            "/webhooks",
            &format!("/webhooks/{id}/deliveries/{first}/redeliver"),
            &[],
        )
        .await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    let unknown = browser
        .submit(
            &page,
            &format!("/webhooks/{id}/deliveries/999999/redeliver"),
            &[],
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(
        unknown
            .body
            .contains("This webhook has no delivery with this id.")
    );
    let bad_id = browser
        .submit(
            &page,
            &format!("/webhooks/{id}/deliveries/abc/redeliver"),
            &[],
        )
        .await;
    assert_eq!(bad_id.status, StatusCode::BAD_REQUEST);
    // Signed out: to the sign-in page, as every page does.
    let anonymous = Browser::new(app)
        .post(
            &format!("/webhooks/{id}/redeliver"),
            &[("failed_since", "2000-01-01T00:00")],
        )
        .await;
    assert_eq!(anonymous.status, StatusCode::SEE_OTHER);
    assert!(
        anonymous.location().starts_with("/login"),
        "{}",
        anonymous.location()
    );
}

/// Without a dispatcher of its own and with a budget of 2 a minute: a
/// second click while a redelivery waits says so, on the page the button
/// was on; a click beyond the budget says when to try again; the form,
/// cut by the budget, says when to send it again for the rest, and with
/// nothing left shows the page again (429) with the reason and the range.
async fn what_was_not_queued_is_said_on_the_pages(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let created = browser
        .submit(
            "/webhooks",
            "/webhooks",
            &[("url", "https://127.0.0.1:9/down")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let id = app
        .store
        .webhooks(MerchantId::new(f.merchant_id))
        .await
        .unwrap()[0]
        .id;
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    app.create_default(&f).await;
    app.create_default(&f).await;
    drain(app).await;
    let mut failed: Vec<i64> = logged(app, id, 3).await.iter().map(|d| d.id).collect();
    failed.sort_unstable();
    let page = format!("/webhooks/{id}");
    let button = |delivery: i64| format!("/webhooks/{id}/deliveries/{delivery}/redeliver");

    let sent = browser.submit(&page, &button(failed[0]), &[]).await;
    assert_eq!(sent.location(), format!("{page}?redelivered={}", failed[0]));
    let again = browser.submit(&page, &button(failed[0]), &[]).await;
    assert_eq!(again.status, StatusCode::SEE_OTHER, "{}", again.body);
    assert_eq!(again.location(), format!("{page}?waiting={}", failed[0]));
    let shown = browser.get(again.location()).await;
    assert!(shown.body.contains("already waiting"), "{}", shown.body);
    let from_shipment = browser
        .submit(
            &format!("/shipments/{code}"),
            &button(failed[0]),
            &[("back", "shipment"), ("code", &code)],
        )
        .await;
    assert_eq!(
        from_shipment.location(),
        format!("/shipments/{code}?waiting={}", failed[0])
    );
    assert!(
        browser
            .get(from_shipment.location())
            .await
            .body
            .contains("already waiting")
    );
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 1);

    // The second of the minute is queued; the third is over the budget.
    let second = browser.submit(&page, &button(failed[1]), &[]).await;
    assert_eq!(
        second.location(),
        format!("{page}?redelivered={}", failed[1])
    );
    let third = browser.submit(&page, &button(failed[2]), &[]).await;
    let limited = third
        .location()
        .strip_prefix(&format!("{page}?limited="))
        .unwrap_or_else(|| panic!("{}", third.location()));
    let secs: u64 = limited.parse().unwrap();
    assert!((1..=60).contains(&secs), "{secs}");
    let shown = browser.get(third.location()).await;
    assert!(shown.body.contains("Nothing was queued"), "{}", shown.body);
    assert!(shown.body.contains(&format!("Try again in {secs} s")));

    // The form with no room left: the page again, 429, with the range.
    let bulk = browser
        .submit(
            &page,
            &format!("/webhooks/{id}/redeliver"),
            &[("failed_since", "2000-01-01T00:00"), ("failed_until", "")],
        )
        .await;
    assert_eq!(bulk.status, StatusCode::TOO_MANY_REQUESTS, "{}", bulk.body);
    assert!(
        bulk.body.contains("as many as a minute allows"),
        "{}",
        bulk.body
    );
    assert!(bulk.body.contains("value=\"2000-01-01T00:00\""));
    assert_eq!(app.store.outbox_backlog().await.unwrap().depth, 2);

    // Another merchant's form, cut by its own budget of 2.
    let (other, g) = signed_in(app).await;
    let created = other
        .submit(
            "/webhooks",
            "/webhooks",
            &[("url", "https://127.0.0.1:9/theirs")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let theirs = app
        .store
        .webhooks(MerchantId::new(g.merchant_id))
        .await
        .unwrap()[0]
        .id;
    for _ in 0..3 {
        app.create_default(&g).await;
    }
    drain(app).await;
    logged(app, theirs, 3).await;
    let cut = other
        .submit(
            &format!("/webhooks/{theirs}"),
            &format!("/webhooks/{theirs}/redeliver"),
            &[("failed_since", "2000-01-01T00:00"), ("failed_until", "")],
        )
        .await;
    let prefix = format!("/webhooks/{theirs}?queued=2&truncated&retry_after=");
    let secs: u64 = cut
        .location()
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{}", cut.location()))
        .parse()
        .unwrap();
    let shown = other.get(cut.location()).await;
    assert!(
        shown.body.contains("2 redeliveries queued"),
        "{}",
        shown.body
    );
    assert!(
        shown
            .body
            .contains(&format!("send the form again in {secs} s")),
        "{}",
        shown.body
    );
}
