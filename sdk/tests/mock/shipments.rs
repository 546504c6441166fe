//! Shipments: unknown statuses, and `list_all` walking the pages.

use futures_util::TryStreamExt as _;
use serde_json::json;
use shipment_sdk::model::{ListShipments, Status};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{CODE, catch_all, client, problem, shipment};

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

#[tokio::test]
async fn list_all_walks_every_page_and_stops_at_the_last() {
    let server = MockServer::start().await;
    let codes = [
        "SHP-AAAA-0001",
        "SHP-AAAA-0002",
        "SHP-AAAA-0003",
        "SHP-AAAA-0004",
        "SHP-AAAA-0005",
    ];
    for (page, chunk) in codes.chunks(2).enumerate() {
        let page = page + 1;
        Mock::given(method("GET"))
            .and(path("/api/v1/shipments"))
            .and(query_param("page", page.to_string()))
            .and(query_param("page_size", "2"))
            .and(query_param("status", "delivered"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "data": chunk.iter().map(|c| shipment(c, "delivered")).collect::<Vec<_>>(),
                "page": page, "page_size": 2, "total": 5, "total_pages": 3
            })))
            .expect(1)
            .mount(&server)
            .await;
    }
    catch_all(&server).await;

    let all: Vec<_> = client(&server)
        .shipments()
        .list_all(
            ListShipments::default()
                .status(Status::Delivered)
                .page_size(2),
        )
        .try_collect()
        .await
        .unwrap();
    let got: Vec<&str> = all.iter().map(|s| s.code.as_str()).collect();
    assert_eq!(got, codes);
}

#[tokio::test]
async fn list_all_over_nothing_is_one_request_and_an_empty_stream() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "1"))
        .and(query_param("page_size", "100"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [], "page": 1, "page_size": 100, "total": 0, "total_pages": 0
        })))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let all: Vec<_> = client(&server)
        .shipments()
        .list_all(ListShipments::default())
        .try_collect()
        .await
        .unwrap();
    assert!(all.is_empty());
}

#[tokio::test]
async fn list_all_yields_a_failing_page_as_its_last_item() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [shipment("SHP-AAAA-0001", "delivered")],
            "page": 1, "page_size": 1, "total": 2, "total_pages": 2
        })))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .and(query_param("page", "2"))
        .respond_with(problem(403, "forbidden"))
        .expect(1)
        .mount(&server)
        .await;
    let mut walk = std::pin::pin!(
        client(&server)
            .shipments()
            .list_all(ListShipments::default().page_size(1))
    );
    assert_eq!(
        walk.try_next().await.unwrap().unwrap().code,
        "SHP-AAAA-0001"
    );
    assert_eq!(walk.try_next().await.unwrap_err().status(), Some(403));
    assert!(walk.try_next().await.unwrap().is_none());
}
