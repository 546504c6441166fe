//! The shipment pages: the filtered, paged list and one shipment's
//! timeline.

use reqwest::{Method, StatusCode};
use serde_json::json;
use shipment_testkit::{TestApp, db_tests, send};

use super::browser::signed_in;

db_tests!(
    shipments_are_listed_filtered_and_shown_with_their_timeline,
    the_timeline_shows_every_change_in_order,
    a_shipment_shows_its_dimensions_and_each_item_apart,
);

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

/// The labels of the timeline's steps, in the order the page shows them.
fn timeline_labels(body: &str) -> Vec<String> {
    let start = body.find("<ol class=\"timeline\">").expect("a timeline");
    let list = &body[start..start + body[start..].find("</ol>").unwrap()];
    list.split("<span class=\"timeline-label\">")
        .skip(1)
        .map(|step| step[..step.find("</span>").unwrap()].to_owned())
        .collect()
}

async fn the_timeline_shows_every_change_in_order(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let driver = Some(json!({"driver_id": f.driver_id}));
    app.courier_step(&f, &code, "assign-driver", driver.clone())
        .await;
    app.courier_step(&f, &code, "unassign-driver", None).await;
    app.courier_step(&f, &code, "assign-driver", driver).await;
    app.courier_step(&f, &code, "pickup", None).await;
    app.courier_step(&f, &code, "fail", Some(json!({"reason": "nobody home"})))
        .await;
    app.courier_step(&f, &code, "pickup", None).await;
    app.courier_step(&f, &code, "deliver", None).await;
    let (status, rated) = send(
        app.req(Method::POST, &format!("/shipments/{code}/rate"), &f.key)
            .json(&json!({"rating": 8})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rated}");

    let shown = browser.get(&format!("/shipments/{code}")).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert_eq!(
        timeline_labels(&shown.body),
        [
            "Created and handed to the courier company",
            "Driver assigned",
            "Back with the courier company (driver unassigned)",
            "Driver assigned",
            "Picked up: in transit",
            "Delivery attempt failed",
            "Picked up: in transit",
            "Delivered",
            "Rated",
        ],
        "{}",
        shown.body
    );
    // The failure says why, and the rating how many points.
    for detail in ["nobody home", "8 / 10"] {
        assert!(
            shown
                .body
                .contains(&format!("<span class=\"timeline-detail\">{detail}</span>")),
            "{detail}: {}",
            shown.body
        );
    }
    // Each step says when, in order.
    let timeline = &shown.body[shown.body.find("<ol class=\"timeline\">").unwrap()..];
    let times: Vec<&str> = timeline
        .split("<time datetime=\"")
        .skip(1)
        .take(9)
        .map(|t| &t[..t.find('"').unwrap()])
        .collect();
    assert_eq!(times.len(), 9);
    assert!(times.is_sorted(), "{times:?}");
}

async fn a_shipment_shows_its_dimensions_and_each_item_apart(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let created = app
        .create(
            &f,
            json!({
                "courier_company_id": f.courier_id,
                "dimensions": "30x20x10 cm",
                "items": ["Mug, blue", "Book"],
            }),
        )
        .await;
    let code = created["code"].as_str().unwrap();
    let shown = browser.get(&format!("/shipments/{code}")).await;
    assert_eq!(shown.status, StatusCode::OK);
    let body = &shown.body;
    assert!(
        body.contains("<dt>Dimensions</dt><dd class=\"multiline\">30x20x10 cm</dd>"),
        "{body}"
    );
    assert!(
        body.contains("<ul class=\"items\"><li>Mug, blue</li><li>Book</li></ul>"),
        "{body}"
    );
    assert!(!body.contains("Mug, blue, Book"), "{body}");
    // Without them, a dash.
    let bare = app.create_default(&f).await;
    let shown = browser
        .get(&format!("/shipments/{}", bare["code"].as_str().unwrap()))
        .await;
    assert!(
        shown.body.contains(
            "<dt>Dimensions</dt><dd class=\"multiline\"><span class=\"muted\">—</span></dd>"
        ),
        "{}",
        shown.body
    );
}
