//! Lists through the SDK against the real reference server, on SQLite and
//! PostgreSQL: every filter, paging, and a page's stream over the rest.

use std::collections::HashSet;

use chrono::{Duration, Utc};
use futures_util::TryStreamExt as _;
use shipment_sdk::model::{CreateShipment, Status};
use shipment_testkit::{TestApp, db_tests};

db_tests!(
    list_filters_and_pages,
    a_page_streams_every_page_newest_first
);

async fn list_filters_and_pages(server: &TestApp) {
    let f = server.fixture().await;
    let client = server.sdk(&f.key);
    let before = Utc::now() - Duration::seconds(1);
    let mut codes = Vec::new();
    for i in 0..7 {
        let s = client
            .shipments()
            .create(&CreateShipment::new(f.courier_id.into()).description(format!("parcel {i}")))
            .send()
            .await
            .unwrap()
            .into_inner();
        codes.push(s.code);
    }
    server.advance(&f, codes[0].as_str(), "cancelled").await;
    server.advance(&f, codes[1].as_str(), "cancelled").await;
    server.advance(&f, codes[2].as_str(), "delivered").await;
    // Another merchant's shipments never show up.
    let other = server.fixture().await;
    server
        .sdk(&other.key)
        .shipments()
        .create(&CreateShipment::new(other.courier_id.into()))
        .send()
        .await
        .unwrap()
        .into_inner();

    let page = client.shipments().list().page_size(3).send().await.unwrap();
    assert_eq!(
        (page.page, page.page_size, page.total, page.total_pages),
        (1, 3, 7, 3)
    );
    assert_eq!(page.data.len(), 3);
    let last = client
        .shipments()
        .list()
        .page_size(3)
        .page(3)
        .send()
        .await
        .unwrap();
    assert_eq!(last.data.len(), 1);
    // Newest first: the first shipment created is the very last item.
    assert_eq!(last.data[0].code, codes[0]);

    let cancelled = client
        .shipments()
        .list()
        .status(Status::Cancelled)
        .send()
        .await
        .unwrap();
    let got: HashSet<_> = cancelled.data.iter().map(|s| s.code.clone()).collect();
    assert_eq!(got, HashSet::from([codes[0].clone(), codes[1].clone()]));
    assert!(cancelled.data.iter().all(|s| s.status == Status::Cancelled));

    let delivered = client
        .shipments()
        .list()
        .status(Status::Delivered)
        .send()
        .await
        .unwrap();
    assert_eq!(delivered.total, 1);
    assert_eq!(delivered.data[0].code, codes[2]);

    let by_courier = client
        .shipments()
        .list()
        .courier_company_id(f.courier_id.into())
        .send()
        .await
        .unwrap();
    assert_eq!(by_courier.total, 7);
    let by_other_courier = client
        .shipments()
        .list()
        .courier_company_id(other.courier_id.into())
        .send()
        .await
        .unwrap();
    assert_eq!(by_other_courier.total, 0);
    assert_eq!(by_other_courier.total_pages, 0);

    let created_window = client
        .shipments()
        .list()
        .created_after(before)
        .created_before(Utc::now() + Duration::seconds(5))
        .send()
        .await
        .unwrap();
    assert_eq!(created_window.total, 7);
    let future = client
        .shipments()
        .list()
        .created_after(Utc::now() + Duration::hours(1))
        .send()
        .await
        .unwrap();
    assert_eq!(future.total, 0);

    // `updated_after` is how a receiver catches up: only what changed since.
    let mark = client.shipments().get(&codes[2]).await.unwrap().updated_at;
    let changed = client
        .shipments()
        .list()
        .updated_after(mark)
        .send()
        .await
        .unwrap();
    assert!(
        changed.data.iter().any(|s| s.code == codes[2]),
        "{changed:?}"
    );
    assert!(changed.data.iter().all(|s| s.updated_at >= mark));
    assert!(changed.total < 7, "{}", changed.total);
}

async fn a_page_streams_every_page_newest_first(server: &TestApp) {
    let f = server.fixture().await;
    let client = server.sdk(&f.key);
    let mut created = Vec::new();
    for _ in 0..5 {
        let s = client
            .shipments()
            .create(&CreateShipment::new(f.courier_id.into()))
            .send()
            .await
            .unwrap()
            .into_inner();
        created.push(s.code);
    }

    let first = client.shipments().list().page_size(2).send().await.unwrap();
    assert_eq!((first.data.len(), first.total_pages), (2, 3));
    let walked: Vec<_> = first
        .into_stream()
        .map_ok(|s| s.code)
        .try_collect()
        .await
        .unwrap();
    created.reverse();
    assert_eq!(walked, created);

    // From a later page on, only what follows it.
    let from_page_2: Vec<_> = client
        .shipments()
        .list()
        .page_size(2)
        .page(2)
        .send()
        .await
        .unwrap()
        .into_stream()
        .map_ok(|s| s.code)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(from_page_2, created[2..]);

    // One page by hand, as a program that shows a page at a time would.
    let second = client
        .shipments()
        .list()
        .page_size(2)
        .send()
        .await
        .unwrap()
        .next_page()
        .await
        .unwrap()
        .expect("a second page");
    assert_eq!(second.page, 2);
    assert_eq!(second.data[0].code, created[2]);

    // With one big page, one page; with a filter matching nothing, none.
    let everything: Vec<_> = client
        .shipments()
        .list()
        .page_size(100)
        .send()
        .await
        .unwrap()
        .into_stream()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(everything.len(), 5);
    let nothing: Vec<_> = client
        .shipments()
        .list()
        .status(Status::Returned)
        .send()
        .await
        .unwrap()
        .into_stream()
        .try_collect()
        .await
        .unwrap();
    assert!(nothing.is_empty());
}
