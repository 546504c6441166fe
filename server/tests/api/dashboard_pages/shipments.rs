//! The shipment pages: the filtered, paged list and one shipment's
//! timeline.

use reqwest::StatusCode;
use serde_json::json;
use shipment_testkit::{TestApp, db_tests};

use super::browser::signed_in;

db_tests!(shipments_are_listed_filtered_and_shown_with_their_timeline);

async fn shipments_are_listed_filtered_and_shown_with_their_timeline(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let first = app.create_default(&f).await;
    let code = first["code"].as_str().unwrap().to_owned();
    app.courier_op(
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    app.courier_op(&f, &code, "pickup", None).await;
    app.courier_op(&f, &code, "deliver", None).await;
    let second = app.create_default(&f).await;
    let other_code = second["code"].as_str().unwrap().to_owned();

    let all = browser.get("/shipments").await;
    assert_eq!(all.status, StatusCode::OK);
    assert!(all.body.contains(&code) && all.body.contains(&other_code));
    let delivered = browser.get("/shipments?status=delivered").await;
    assert!(delivered.body.contains(&code) && !delivered.body.contains(&other_code));
    // The filter form's "all statuses" sends an empty value.
    let empty = browser.get("/shipments?status=&page=1").await;
    assert_eq!(empty.status, StatusCode::OK);
    let paged = browser.get("/shipments?page_size=1&page=2").await;
    assert!(paged.body.contains("Page 2 of 2"), "{}", paged.body);
    assert!(paged.body.contains(&code), "oldest on the last page");
    let bad = browser.get("/shipments?status=lost").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.body.contains("must be one of"));

    let shown = browser.get(&format!("/shipments/{code}")).await;
    assert_eq!(shown.status, StatusCode::OK);
    let timeline = &shown.body[shown.body.find("Timeline").expect("a timeline")..];
    let order = [
        "Created and handed to the courier company",
        "Driver assigned",
        "Picked up: in transit",
        "Delivered",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|label| {
            timeline
                .find(label)
                .unwrap_or_else(|| panic!("{label}: {timeline}"))
        })
        .collect();
    assert!(positions.is_sorted(), "timeline in order: {positions:?}");

    let stranger = app.fixture().await;
    let theirs = app.create_default(&stranger).await;
    let got = browser
        .get(&format!("/shipments/{}", theirs["code"].as_str().unwrap()))
        .await;
    assert_eq!(got.status, StatusCode::NOT_FOUND);
    assert_eq!(
        browser.get("/shipments/not-a-code").await.status,
        StatusCode::NOT_FOUND
    );
}
