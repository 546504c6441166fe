//! Shipments: unknown statuses, the create builder and its replay flag,
//! and `Page::into_stream` walking the pages.

use futures_util::TryStreamExt as _;
use serde_json::json;
use shipment_sdk::Error;
use shipment_sdk::model::{CourierId, CreateShipment, ListShipments, Page, Shipment, Status};
use wiremock::matchers::{header, method, path, query_param, query_param_is_missing};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{CODE, catch_all, client, problem, requests, shipment};

#[tokio::test]
async fn an_unknown_status_round_trips() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(shipment(CODE, "held_at_customs")))
        .mount(&server)
        .await;
    let got = client(&server).shipments().get(CODE).await.unwrap();
    assert_eq!(got.status, Status::Unknown("held_at_customs".into()));
    assert_eq!(
        serde_json::to_value(&got).unwrap(),
        shipment(CODE, "held_at_customs")
    );
}

/// Page `page` of `total` shipments, `page_size` a page, with these codes.
fn page_body(codes: &[&str], page: u32, page_size: u32, total: u64) -> serde_json::Value {
    json!({
        "data": codes.iter().map(|c| shipment(c, "delivered")).collect::<Vec<_>>(),
        "page": page, "page_size": page_size, "total": total,
        "total_pages": total.div_ceil(u64::from(page_size))
    })
}

fn codes_of(shipments: &[Shipment]) -> Vec<&str> {
    shipments.iter().map(|s| s.code.as_str()).collect()
}

#[tokio::test]
async fn create_says_whether_the_service_replayed_an_earlier_create() {
    let server = MockServer::start().await;
    let request = CreateShipment::new(CourierId::new(7));
    Mock::given(method("POST"))
        .and(path("/api/v1/shipments"))
        .and(header("idempotency-key", "order-10293"))
        .respond_with(
            ResponseTemplate::new(201)
                .insert_header("idempotent-replayed", "true")
                .set_body_json(shipment(CODE, "in_transit")),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v1/shipments"))
        .and(header("idempotency-key", "order-10294"))
        .respond_with(
            ResponseTemplate::new(201).set_body_json(shipment(CODE, "assigned_to_courier")),
        )
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let client = client(&server);

    let replayed = client
        .shipments()
        .create(&request)
        .idempotency_key("order-10293")
        .send()
        .await
        .unwrap();
    assert!(replayed.replayed);
    // The answer reads as the shipment itself.
    assert_eq!(replayed.code, CODE);
    assert_eq!(replayed.status, Status::InTransit);

    let created = client
        .shipments()
        .create(&request)
        .idempotency_key(String::from("order-10294"))
        .send()
        .await
        .unwrap();
    assert!(!created.replayed);
    let shipment: Shipment = created.into_inner();
    assert_eq!(shipment.status, Status::AssignedToCourier);
}

#[tokio::test]
async fn a_malformed_idempotency_key_fails_before_sending() {
    let server = MockServer::start().await;
    catch_all(&server).await;
    let client = client(&server);
    let request = CreateShipment::new(CourierId::new(7));
    for key in ["", "has space", "ünï", &"k".repeat(256)] {
        let err = client
            .shipments()
            .create(&request)
            .idempotency_key(key)
            .send()
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidIdempotencyKey),
            "{key}: {err:?}"
        );
    }
    assert!(requests(&server).await.is_empty());
}

#[tokio::test]
async fn the_list_builder_sends_every_filter() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("status", "in_transit"))
        .and(query_param("courier_company_id", "7"))
        .and(query_param("created_after", "2026-11-01T00:00:00.000000Z"))
        .and(query_param("created_before", "2026-11-21T00:00:00.000000Z"))
        .and(query_param("updated_after", "2026-11-10T00:00:00.000000Z"))
        .and(query_param("page", "2"))
        .and(query_param("page_size", "5"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page_body(&[CODE], 2, 5, 6)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("status", "failed"))
        .and(query_param("page_size", "10"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page_body(&[], 1, 10, 0)))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let client = client(&server);
    let at = |t: &str| t.parse().unwrap();

    let page = client
        .shipments()
        .list()
        .status(Status::InTransit)
        .courier_company_id(CourierId::new(7))
        .created_after(at("2026-11-01T00:00:00Z"))
        .created_before(at("2026-11-21T00:00:00Z"))
        .updated_after(at("2026-11-10T00:00:00Z"))
        .page(2)
        .page_size(5)
        .send()
        .await
        .unwrap();
    assert_eq!((page.page, page.total, page.total_pages), (2, 6, 2));
    assert_eq!(codes_of(&page.data), [CODE]);
    assert!(page.is_last());

    // A whole query at once replaces what was set before.
    let page = client
        .shipments()
        .list()
        .page(3)
        .query(
            ListShipments::default()
                .status(Status::Failed)
                .page_size(10),
        )
        .send()
        .await
        .unwrap();
    assert!(page.data.is_empty());
    let sent = requests(&server).await;
    assert!(
        !sent[1].url.query().unwrap().contains("page="),
        "{}",
        sent[1].url
    );
}

#[tokio::test]
async fn into_stream_walks_every_page_and_stops_at_the_last() {
    let server = MockServer::start().await;
    let codes = [
        "SHP-AAAA-0001",
        "SHP-AAAA-0002",
        "SHP-AAAA-0003",
        "SHP-AAAA-0004",
        "SHP-AAAA-0005",
    ];
    for (page, chunk) in (1..).zip(codes.chunks(2)) {
        // The first page is the service's default; the next ones are asked
        // for by number.
        let which = if page == 1 {
            Mock::given(query_param_is_missing("page"))
        } else {
            Mock::given(query_param("page", page.to_string()))
        };
        which
            .and(method("GET"))
            .and(path("/api/v1/shipments"))
            .and(query_param("page_size", "2"))
            .and(query_param("status", "delivered"))
            .respond_with(ResponseTemplate::new(200).set_body_json(page_body(chunk, page, 2, 5)))
            .expect(1)
            .mount(&server)
            .await;
    }
    catch_all(&server).await;

    let first = client(&server)
        .shipments()
        .list()
        .status(Status::Delivered)
        .page_size(2)
        .send()
        .await
        .unwrap();
    assert_eq!(codes_of(&first.data), codes[..2]);
    assert_eq!(requests(&server).await.len(), 1);
    let all: Vec<_> = first.into_stream().try_collect().await.unwrap();
    assert_eq!(codes_of(&all), codes);
    // Page 3 of 3 was the last: nothing asked for a fourth.
    assert_eq!(requests(&server).await.len(), 3);
}

/// A server with cursors: each page after the first is asked for by the
/// cursor the page before gave, with the same filters and no page number,
/// and the walk ends on a page without one, whatever `total_pages` says
/// (shipments created during the walk raise it).
#[tokio::test]
async fn into_stream_follows_next_cursor_and_stops_without_one() {
    let server = MockServer::start().await;
    let mut first = page_body(&["SHP-AAAA-0001", "SHP-AAAA-0002"], 1, 2, 4);
    first["next_cursor"] = json!("c1.first");
    let mut second = page_body(&["SHP-AAAA-0003", "SHP-AAAA-0004"], 2, 2, 6);
    second["next_cursor"] = serde_json::Value::Null;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param_is_missing("cursor"))
        .and(query_param("page", "1"))
        .and(query_param("status", "delivered"))
        .respond_with(ResponseTemplate::new(200).set_body_json(first))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("cursor", "c1.first"))
        .and(query_param_is_missing("page"))
        .and(query_param("page_size", "2"))
        .and(query_param("status", "delivered"))
        .respond_with(ResponseTemplate::new(200).set_body_json(second))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let first = client(&server)
        .shipments()
        .list()
        .status(Status::Delivered)
        .page(1)
        .page_size(2)
        .send()
        .await
        .unwrap();
    assert_eq!(first.next_cursor.as_deref(), Some("c1.first"));
    let all: Vec<_> = first.into_stream().try_collect().await.unwrap();
    assert_eq!(
        codes_of(&all),
        [
            "SHP-AAAA-0001",
            "SHP-AAAA-0002",
            "SHP-AAAA-0003",
            "SHP-AAAA-0004"
        ]
    );
    assert_eq!(requests(&server).await.len(), 2, "no third page asked for");
}

#[tokio::test]
async fn into_stream_fetches_a_page_only_when_the_last_one_is_used_up() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "2"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page_body(
            &["SHP-AAAA-0003"],
            2,
            2,
            3,
        )))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page_body(
            &["SHP-AAAA-0001", "SHP-AAAA-0002"],
            1,
            2,
            3,
        )))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let first = client(&server)
        .shipments()
        .list()
        .page_size(2)
        .send()
        .await
        .unwrap();
    let mut walk = std::pin::pin!(first.into_stream());
    assert_eq!(
        walk.try_next().await.unwrap().unwrap().code,
        "SHP-AAAA-0001"
    );
    assert_eq!(
        walk.try_next().await.unwrap().unwrap().code,
        "SHP-AAAA-0002"
    );
    assert_eq!(
        requests(&server).await.len(),
        1,
        "page 2 is not fetched yet"
    );
    assert_eq!(
        walk.try_next().await.unwrap().unwrap().code,
        "SHP-AAAA-0003"
    );
    assert_eq!(requests(&server).await.len(), 2);
    assert!(walk.try_next().await.unwrap().is_none());
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn into_stream_stops_at_an_empty_page() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "3"))
        // The total says more, but a page without items ends the walk
        // (items deleted meanwhile, a service that miscounts).
        .respond_with(ResponseTemplate::new(200).set_body_json(page_body(&[], 3, 1, 9)))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let all: Vec<_> = client(&server)
        .shipments()
        .list()
        .page(3)
        .page_size(1)
        .send()
        .await
        .unwrap()
        .into_stream()
        .try_collect()
        .await
        .unwrap();
    assert!(all.is_empty());
    assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn into_stream_yields_a_failing_page_as_its_last_item() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page_body(
            &["SHP-AAAA-0001"],
            1,
            1,
            3,
        )))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "2"))
        .and(query_param("page_size", "1"))
        .respond_with(problem(403, "forbidden"))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let first = client(&server)
        .shipments()
        .list()
        .page(1)
        .page_size(1)
        .send()
        .await
        .unwrap();
    let mut walk = std::pin::pin!(first.into_stream());
    assert_eq!(
        walk.try_next().await.unwrap().unwrap().code,
        "SHP-AAAA-0001"
    );
    assert_eq!(walk.try_next().await.unwrap_err().status(), Some(403));
    // The stream ends after the error: page 3 is never asked for.
    assert!(walk.try_next().await.unwrap().is_none());
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn next_page_fetches_the_following_page_with_the_same_query() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "1"))
        .and(query_param("status", "delivered"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page_body(
            &["SHP-AAAA-0001"],
            1,
            1,
            2,
        )))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "2"))
        .and(query_param("status", "delivered"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page_body(
            &["SHP-AAAA-0002"],
            2,
            1,
            2,
        )))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let first = client(&server)
        .shipments()
        .list()
        .status(Status::Delivered)
        .page(1)
        .page_size(1)
        .send()
        .await
        .unwrap();
    let second = first.next_page().await.unwrap().expect("a second page");
    assert_eq!(codes_of(&second.data), ["SHP-AAAA-0002"]);
    assert!(second.next_page().await.unwrap().is_none());
    assert_eq!(requests(&server).await.len(), 2);

    // Fetched pages show where the next comes from, and compare by their
    // fields alone.
    let shown = format!("{first:?}");
    assert!(
        shown.contains("next: GET /shipments?page_size=1&status=delivered"),
        "{shown}"
    );
    let by_hand = Page::new(first.data.clone(), 1, 1, 2);
    assert_eq!(by_hand, first);
    assert!(!format!("{by_hand:?}").contains("next"));
}

#[tokio::test]
async fn a_page_not_fetched_by_the_client_streams_only_its_own_items() {
    let by_hand: Page<i32> = Page::new(vec![1, 2], 1, 2, 10);
    assert!(!by_hand.is_last());
    assert!(by_hand.next_page().await.unwrap().is_none());
    let items: Vec<i32> = by_hand.into_stream().try_collect().await.unwrap();
    assert_eq!(items, [1, 2]);

    let read: Page<Shipment> =
        serde_json::from_value(page_body(&["SHP-AAAA-0001"], 1, 1, 4)).unwrap();
    let items: Vec<_> = read.into_stream().try_collect().await.unwrap();
    assert_eq!(codes_of(&items), ["SHP-AAAA-0001"]);
}
