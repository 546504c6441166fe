//! Redirects are never followed: a 3xx is an error naming its status and
//! `Location`, and nothing (no key, no password, no body) reaches the host
//! it points to.

use shipment_sdk::model::{CourierId, CreateShipment};
use shipment_sdk::{DashboardClient, Error};
use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{CODE, KEY, catch_all, client, requests, shipment};

/// Another origin that would answer anything with success: if the SDK
/// followed a redirect there, the call would succeed and the test would
/// see what it sent.
async fn other_host() -> MockServer {
    let other = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(shipment(CODE, "in_transit")))
        .mount(&other)
        .await;
    other
}

/// The redirect an error reports: its status and `Location`.
fn redirect_of(err: &Error) -> (u16, Option<&str>) {
    match err {
        Error::Redirect {
            status, location, ..
        } => (*status, location.as_deref()),
        other => panic!("not a redirect error: {other:?}"),
    }
}

#[tokio::test]
async fn a_redirect_of_a_read_is_an_error_and_the_key_stays_home() {
    let server = MockServer::start().await;
    let other = other_host().await;
    let target = format!("{}/api/v1/shipments/{CODE}", other.uri());
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/shipments/{CODE}")))
        .respond_with(
            ResponseTemplate::new(302)
                .insert_header("location", target.as_str())
                .insert_header("x-request-id", "req-302"),
        )
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let err = client(&server).shipments().get(CODE).await.unwrap_err();
    assert_eq!(redirect_of(&err), (302, Some(target.as_str())));
    assert_eq!(err.status(), Some(302));
    assert_eq!(err.request_id(), Some("req-302"));
    // A redirect is a wrong address, not a passing failure: not retried.
    assert!(!err.is_retryable());
    let message = err.to_string();
    assert!(message.contains("302"), "{message}");
    assert!(message.contains(&target), "{message}");
    assert!(message.contains("base URL"), "{message}");
    assert!(!message.contains(KEY), "{message}");
    assert!(
        requests(&other).await.is_empty(),
        "the other host was sent a request"
    );
}

#[tokio::test]
async fn a_relative_location_is_shown_as_the_address_it_names() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/merchant-couriers"))
        .respond_with(
            ResponseTemplate::new(301).insert_header("location", "/api/v2/merchant-couriers"),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/shipments"))
        .respond_with(ResponseTemplate::new(308))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let client = client(&server);

    let err = client.couriers().list().await.unwrap_err();
    let expected = format!("{}/api/v2/merchant-couriers", server.uri());
    assert_eq!(redirect_of(&err), (301, Some(expected.as_str())));

    // Without a Location the error still names the status.
    let err = client.shipments().list().send().await.unwrap_err();
    assert_eq!(redirect_of(&err), (308, None));
    assert!(err.to_string().contains("308"), "{err}");
}

#[tokio::test]
async fn a_307_on_sign_in_does_not_send_the_password_elsewhere() {
    let server = MockServer::start().await;
    let other = other_host().await;
    let target = format!("{}/api/v1/auth/login", other.uri());
    Mock::given(method("POST"))
        .and(path("/api/v1/auth/login"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", target.as_str()))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let err = DashboardClient::builder()
        .base_url(format!("{}/api/v1", server.uri()))
        .login("me@example.com", "correct horse battery")
        .await
        .unwrap_err();
    assert_eq!(redirect_of(&err), (307, Some(target.as_str())));
    assert!(
        !format!("{err} {err:?}").contains("correct horse"),
        "{err:?}"
    );
    assert!(
        requests(&other).await.is_empty(),
        "the password went to the other host"
    );
}

#[tokio::test]
async fn a_307_on_create_does_not_repost_the_body_or_the_key() {
    let server = MockServer::start().await;
    let other = other_host().await;
    let target = format!("{}/api/v1/shipments", other.uri());
    Mock::given(method("POST"))
        .and(path("/api/v1/shipments"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", target.as_str()))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;

    let err = client(&server)
        .shipments()
        .create(&CreateShipment::new(CourierId::new(7)).description("books"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(redirect_of(&err), (307, Some(target.as_str())));
    assert!(
        requests(&other).await.is_empty(),
        "the create went to the other host"
    );
    // Sent once: a create that is redirected is not retried either.
    assert_eq!(requests(&server).await.len(), 1);
}
