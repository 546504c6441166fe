//! The listener stream (`GET /webhooks/listen`) against canned event
//! streams: what the real server never sends on demand (a stream cut
//! before `ready`, malformed events, unknown event kinds, refusals).

use shipment_sdk::Error;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{catch_all, client, problem};

const KEY: &str = "whsec_0123456789abcdefghijABCDEFGHIJ";

fn ready() -> String {
    format!(
        "event: ready\ndata: {{\"signing_key\":\"{KEY}\",\"created_at\":\"2026-11-24T09:00:00Z\"}}\n\n"
    )
}

fn delivery(id: i64, version: i64) -> String {
    let body = format!("{{\\\"code\\\":\\\"SHP-7K3M-Q9ZX\\\",\\\"version\\\":{version}}}");
    format!(
        "id: {id}\nevent: delivery\ndata: {{\"delivery_id\":\"dlv_{id}_l\",\"shipment_code\":\"SHP-7K3M-Q9ZX\",\"version\":{version},\"signature\":\"sha256=00\",\"body\":\"{body}\"}}\n\n"
    )
}

async fn serving(stream: String) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/webhooks/listen"))
        .and(header("accept", "text/event-stream"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(stream, "text/event-stream"))
        .mount(&server)
        .await;
    catch_all(&server).await;
    server
}

#[tokio::test]
async fn deliveries_come_in_order_and_other_events_and_comments_are_skipped() {
    let stream = format!(
        ": keep-alive\n\n{}{}event: future-kind\ndata: {{}}\n\n: keep-alive\n\n{}",
        ready(),
        delivery(7, 1),
        delivery(9, 2)
    );
    let server = serving(stream).await;
    let client = client(&server);
    let mut stream = client.listener().connect(None).await.unwrap();
    assert_eq!(stream.signing_key().signing_key.expose(), KEY);
    assert_eq!(stream.last_event_id(), None);
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!((first.id, first.delivery.version), (7, 1));
    assert_eq!(
        first.delivery.body,
        r#"{"code":"SHP-7K3M-Q9ZX","version":1}"#
    );
    let second = stream.next().await.unwrap().unwrap();
    assert_eq!(
        (second.id, second.delivery.delivery_id.as_str()),
        (9, "dlv_9_l")
    );
    assert_eq!(stream.last_event_id(), Some(9));
    assert!(stream.next().await.is_none(), "the stream ended");
}

#[tokio::test]
async fn resuming_sends_last_event_id() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/webhooks/listen"))
        .and(header("last-event-id", "41"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            format!("{}{}", ready(), delivery(42, 3)),
            "text/event-stream",
        ))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let client = client(&server);
    let mut stream = client.listener().connect(Some(41)).await.unwrap();
    assert_eq!(stream.last_event_id(), Some(41));
    assert_eq!(stream.next().await.unwrap().unwrap().id, 42);
}

/// The `ready` event's id is where the stream starts: a stream that ends
/// before its first delivery resumes from there, not from nothing.
#[tokio::test]
async fn a_stream_starts_where_its_ready_event_says() {
    let stream = format!("id: 500\n{}", ready());
    let server = serving(stream).await;
    let client = client(&server);
    let mut stream = client.listener().connect(None).await.unwrap();
    assert_eq!(stream.last_event_id(), Some(500));
    assert!(stream.next().await.is_none(), "the stream ended");
    assert_eq!(stream.last_event_id(), Some(500));
}

#[tokio::test]
async fn a_stream_without_ready_or_with_broken_events_is_an_error() {
    let client_of = |server: &MockServer| client(server);

    let server = serving(String::new()).await;
    let err = client_of(&server)
        .listener()
        .connect(None)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Stream(_)), "{err:?}");
    assert!(err.to_string().contains("`ready`"), "{err}");

    let server = serving(format!("{}id: x\nevent: delivery\ndata: {{}}\n\n", ready())).await;
    let mut stream = client_of(&server).listener().connect(None).await.unwrap();
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Stream(_)), "{err:?}");

    let server = serving(format!(
        "{}id: 3\nevent: delivery\ndata: {{\"version\":\n\n",
        ready()
    ))
    .await;
    let mut stream = client_of(&server).listener().connect(None).await.unwrap();
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Decode { status: 200, .. }), "{err:?}");

    let server = serving("event: ready\ndata: not json\n\n".into()).await;
    let err = client_of(&server)
        .listener()
        .connect(None)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
}

#[tokio::test]
async fn refusals_are_the_usual_errors_and_are_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/webhooks/listen"))
        .respond_with(problem(429, "rate_limited").insert_header("retry-after", "5"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/webhooks/listener-signing-key"))
        .respond_with(problem(404, "not_found"))
        .expect(1)
        .mount(&server)
        .await;
    catch_all(&server).await;
    let client = client(&server);
    let err = client.listener().connect(None).await.unwrap_err();
    assert!(err.is_rate_limited(), "{err:?}");
    assert_eq!(err.retry_after(), Some(std::time::Duration::from_secs(5)));
    assert_eq!(err.request_id(), Some("req-problem"));
    // No key yet is not an error.
    assert_eq!(client.listener().signing_key().await.unwrap(), None);
}

/// An event is at most 1 MiB: a line that never ends is an error (and the
/// end of the stream, whose connection is dropped), not memory without
/// bound. The limit is per event: a long stream of small events, and an
/// event just under it, with either kind of line ending, pass.
#[tokio::test]
async fn an_event_longer_than_one_mib_ends_the_stream_with_an_error() {
    const MIB: usize = 1 << 20;
    let endless = format!("{}data: {}", ready(), "x".repeat(2 * MIB));
    let server = serving(endless).await;
    let mut stream = client(&server).listener().connect(None).await.unwrap();
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Stream(_)), "{err:?}");
    assert!(err.to_string().contains("1 MiB"), "{err}");
    assert!(stream.next().await.is_none(), "the stream ended");

    // Before `ready`, too.
    let server = serving(format!(": {}", "y".repeat(2 * MIB))).await;
    let err = client(&server).listener().connect(None).await.unwrap_err();
    assert!(err.to_string().contains("1 MiB"), "{err}");

    // Many events, 3 MiB in all; one just under the limit, split over
    // `data` lines (CRLF) and with comments.
    let mut many = ready();
    for i in 0..3 * 1024 {
        many.push_str(
            &delivery(i + 1, 1).replace("\"body\":\"", &format!("\"body\":\"{}", " ".repeat(900))),
        );
    }
    let big_body = "z".repeat(MIB - 400);
    many.push_str(&format!(
        ": note\r\nid: 99999\r\nevent: delivery\r\ndata: {{\"delivery_id\":\"dlv_99999_l\",\"shipment_code\":\"SHP-7K3M-Q9ZX\",\r\ndata: \"version\":2,\"signature\":\"sha256=00\",\"body\":\"{big_body}\"}}\r\n\r\n"
    ));
    let server = serving(many).await;
    let mut stream = client(&server).listener().connect(None).await.unwrap();
    let mut count = 0;
    let mut last = None;
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        count += 1;
        last = Some(event);
    }
    assert_eq!(count, 3 * 1024 + 1);
    let last = last.unwrap();
    assert_eq!((last.id, last.delivery.body.len()), (99999, MIB - 400));
}
