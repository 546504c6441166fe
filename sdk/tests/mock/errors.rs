//! Errors: problem bodies, typed codes and helpers, unreadable answers, and
//! arguments refused before sending.

use shipment_sdk::Error;
use shipment_sdk::model::{CourierId, CreateShipment, ListShipments, ProblemCode};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{CODE, catch_all, client, problem, requests};

#[tokio::test]
async fn a_malformed_success_body_is_a_decode_error() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-request-id", "req-42")
                .set_body_raw("{\"id\": 42, \"code\": ", "application/json"),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/merchant-couriers"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("<html>hello</html>", "text/html"))
        .expect(1)
        .mount(&server)
        .await;
    let client = client(&server);

    let err = client.shipments().get(CODE).await.unwrap_err();
    assert!(matches!(err, Error::Decode { status: 200, .. }), "{err:?}");
    assert_eq!(err.request_id(), Some("req-42"));
    assert!(!err.is_retryable());

    let err = client.couriers().list().await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
}

#[tokio::test]
async fn a_client_error_is_not_retried_and_carries_the_problem() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/shipments"))
        .respond_with(problem(400, "invalid_field"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(problem(404, "not_found"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/merchant-couriers"))
        .respond_with(problem(500, "internal"))
        .expect(1)
        .mount(&server)
        .await;
    let client = client(&server);

    let err = client
        .shipments()
        .create(&CreateShipment::new(CourierId::new(99)))
        .send()
        .await
        .unwrap_err();
    let api = err.api().expect("an API error");
    assert_eq!(api.status, 400);
    assert_eq!(api.code, Some(ProblemCode::InvalidField));
    assert_eq!(api.field.as_deref(), Some("courier_company_id"));
    assert_eq!(err.field(), Some("courier_company_id"));
    assert_eq!(api.detail.as_deref(), Some("it went wrong: invalid_field"));
    assert_eq!(err.request_id(), Some("req-problem"));
    assert!(!err.is_retryable());

    let err = client.shipments().get(CODE).await.unwrap_err();
    assert_eq!(
        (err.status(), err.code()),
        (Some(404), Some(&ProblemCode::NotFound))
    );
    assert!(err.is_not_found() && !err.is_conflict());

    // 500 is a bug on the server, not a blip: not retried either.
    let err = client.couriers().list().await.unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn refusals_answer_the_typed_helpers() {
    let server = MockServer::start().await;
    let refusals = [
        (
            "POST",
            format!("/api/v1/shipments/{CODE}/cancel"),
            409,
            "invalid_state",
        ),
        (
            "POST",
            format!("/api/v1/shipments/{CODE}/rate"),
            409,
            "already_rated",
        ),
        (
            "GET",
            format!("/api/v1/shipments/{CODE}"),
            401,
            "unauthenticated",
        ),
        (
            "GET",
            "/api/v1/merchant-couriers".to_owned(),
            403,
            "forbidden",
        ),
        (
            "POST",
            format!("/api/v1/shipments/{CODE}/generate-confirmation-code"),
            418,
            "teapot_mode",
        ),
    ];
    for (verb, route, status, code) in refusals {
        Mock::given(method(verb))
            .and(path(route))
            .respond_with(problem(status, code))
            .expect(1)
            .mount(&server)
            .await;
    }
    catch_all(&server).await;
    let shipments = client(&server);
    let shipments = shipments.shipments();

    let err = shipments.cancel(CODE).await.unwrap_err();
    assert_eq!(err.code(), Some(&ProblemCode::InvalidState));
    assert!(err.is_conflict() && !err.is_not_found() && !err.is_retryable());

    let err = shipments.rate(CODE, 9).await.unwrap_err();
    assert!(matches!(err.code(), Some(ProblemCode::AlreadyRated)));
    assert!(err.is_conflict());

    let err = shipments.get(CODE).await.unwrap_err();
    assert_eq!(err.code(), Some(&ProblemCode::Unauthenticated));
    assert!(err.is_unauthenticated() && !err.is_forbidden());

    let err = client(&server).couriers().list().await.unwrap_err();
    assert_eq!(err.code(), Some(&ProblemCode::Forbidden));
    assert!(err.is_forbidden() && !err.is_unauthenticated());

    // A code this SDK does not know yet is kept, not an error of its own.
    let err = shipments
        .generate_confirmation_code(CODE)
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        Some(&ProblemCode::Other("teapot_mode".to_owned()))
    );
    assert_eq!(err.status(), Some(418));
    assert!(
        err.to_string().starts_with("HTTP 418 teapot_mode: "),
        "{err}"
    );
}

#[tokio::test]
async fn invalid_input_sends_no_request() {
    let server = MockServer::start().await;
    catch_all(&server).await;
    let client = client(&server);
    let shipments = client.shipments();

    for rating in [0, 11, 255] {
        let err = shipments.rate(CODE, rating).await.unwrap_err();
        assert!(
            matches!(err, Error::InvalidRating(r) if r == rating),
            "{err:?}"
        );
    }
    for size in [0, 101, 500] {
        let err = shipments.list().page_size(size).send().await.unwrap_err();
        assert!(
            matches!(err, Error::InvalidPageSize(s) if s == size),
            "{err:?}"
        );
    }
    let err = shipments.list().page(0).send().await.unwrap_err();
    assert!(matches!(err, Error::InvalidPage), "{err:?}");
    let err = shipments
        .list()
        .query(ListShipments::default().page_size(0))
        .send()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidPageSize(0)), "{err:?}");

    for code in [
        "SHP-7K3M-Q9Z",
        "shp-7k3m-q9zx",
        "SHP-IIII-LLLL",
        "../api-keys",
    ] {
        for err in [
            shipments.get(code).await.unwrap_err(),
            shipments.cancel(code).await.unwrap_err(),
            shipments.rate(code, 5).await.unwrap_err(),
            shipments
                .generate_confirmation_code(code)
                .await
                .unwrap_err(),
        ] {
            assert!(
                matches!(&err, Error::InvalidShipmentCode(c) if c == code),
                "{err:?}"
            );
            assert_eq!(err.status(), None);
        }
    }
    assert!(requests(&server).await.is_empty());
}
