//! Redelivery from the pages, over plain HTTP: the Redeliver button of a
//! failed delivery (on the webhook's log and on the shipment's page),
//! "Redeliver failures since…", what each queues and where it goes back
//! to, and the refusals (no CSRF token, a bad range, not yours).

use std::time::Duration;

use reqwest::StatusCode;
use shipment_testkit::{TestApp, WAIT, db_tests};

use super::browser::{Browser, signed_in};

db_tests!(failed_deliveries_are_sent_again_from_the_pages);

/// How many attempts webhook `id` has logged, once it has `n`.
async fn logged(
    app: &TestApp,
    id: i64,
    n: u64,
) -> Vec<shipment_server::store::webhooks::DeliveryRecord> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (rows, total) = app.store.webhook_deliveries(id, 100, 0).await.unwrap();
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

/// Waits until nothing is left in the outbox (a redelivery still waiting
/// is not queued again by "Redeliver failures since…").
async fn drained(app: &TestApp) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while app.store.outbox_backlog().await.unwrap().depth > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the outbox never drained"
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
    let id = app.store.webhooks(f.merchant_id).await.unwrap()[0].id;
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
    drained(app).await;
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
