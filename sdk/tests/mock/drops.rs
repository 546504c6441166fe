//! Connections that end before any answer arrives (closed or reset after
//! the request was read): idempotent calls are retried like a 503, others
//! are not, and a create's replay of its own earlier attempt reads as
//! created. wiremock always answers, so these run against a small HTTP/1.1
//! server of their own that fails the first requests on purpose.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use shipment_sdk::model::{CourierId, CreateShipment, Status};
use shipment_sdk::{Client, Error};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::helpers::{CODE, KEY, error_chain, shipment};

/// What the server does to a request it fails.
#[derive(Debug, Clone, Copy)]
enum Cut {
    /// Closes the connection without a byte of an answer (the client sees
    /// an incomplete message).
    Close,
    /// Resets the connection (RST), as a crashed proxy does.
    Reset,
}

/// One request as the server read it.
#[derive(Debug, Clone)]
struct Seen {
    /// The request line and headers, lower-cased.
    head: String,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            (n.trim() == name).then(|| v.trim())
        })
    }
}

/// An HTTP/1.1 server that fails its first `failures` requests with
/// `cut`, then answers every request with `answer` (a whole response,
/// `connection: close`), one request per connection, so the client never
/// reuses a connection the server is closing.
struct Flaky {
    base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Flaky {
    async fn start(failures: usize, cut: Cut, answer: String) -> Flaky {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/api/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let log = Arc::clone(&log);
                let answer = answer.clone();
                tokio::spawn(async move { serve(stream, &log, failures, cut, &answer).await });
            }
        });
        Flaky { base_url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// A client of this server that retries quickly.
    fn client(&self) -> Client {
        Client::builder()
            .api_key(KEY)
            .base_url(&self.base_url)
            .retry_backoff(Duration::from_millis(1), Duration::from_millis(5))
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap()
    }
}

/// Reads the one request of a connection, then fails or answers it.
async fn serve(
    mut stream: TcpStream,
    log: &Mutex<Vec<Seen>>,
    failures: usize,
    cut: Cut,
    answer: &str,
) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let number = {
        let mut log = log.lock().unwrap();
        log.push(request);
        log.len()
    };
    if number <= failures {
        if let Cut::Reset = cut {
            stream.set_zero_linger().unwrap();
        }
        return;
    }
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The request (head and `Content-Length` body), or `None` when the
/// connection ends first.
async fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    while buffer.len() < end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = buffer[end..end + length].to_vec();
    Some(Seen { head, body })
}

/// A whole HTTP/1.1 response with a JSON body.
fn answer(status: &str, headers: &[(&str, &str)], body: &serde_json::Value) -> String {
    let body = body.to_string();
    let mut text = format!(
        "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(&body);
    text
}

fn ok_shipment() -> String {
    answer("200 OK", &[], &shipment(CODE, "in_transit"))
}

/// A create's answer from the service's idempotency record.
fn replayed_create() -> String {
    answer(
        "201 Created",
        &[("idempotent-replayed", "true")],
        &shipment(CODE, "assigned_to_courier"),
    )
}

#[tokio::test]
async fn a_read_whose_connection_closes_unanswered_is_retried() {
    let server = Flaky::start(2, Cut::Close, ok_shipment()).await;
    let got = server.client().shipments().get(CODE).await.unwrap();
    assert_eq!(got.status, Status::InTransit);
    assert_eq!(server.seen().len(), 3);
}

#[tokio::test]
async fn a_read_whose_connection_is_reset_is_retried() {
    let server = Flaky::start(1, Cut::Reset, ok_shipment()).await;
    let got = server.client().shipments().get(CODE).await.unwrap();
    assert_eq!(got.code, CODE);
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn a_create_retried_after_a_drop_keeps_its_key_and_its_replay_reads_as_created() {
    // The first attempt reached the service, which made the shipment, but
    // its answer was lost with the connection; the retry is answered from
    // the idempotency record. With a key the SDK made for this call, that
    // can only be this call's own shipment: created, not "created before".
    let server = Flaky::start(1, Cut::Close, replayed_create()).await;
    let request = CreateShipment::new(CourierId::new(7)).description("books");
    let created = server
        .client()
        .shipments()
        .create(&request)
        .send()
        .await
        .unwrap();
    assert!(
        !created.replayed,
        "a fresh order must not read as created before"
    );
    assert_eq!(created.status, Status::AssignedToCourier);

    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let keys: Vec<_> = seen.iter().map(|s| s.header("idempotency-key")).collect();
    assert!(keys[0].is_some(), "{:?}", seen[0].head);
    assert_eq!(keys[0], keys[1], "the retry reuses the key");
    assert_eq!(seen[0].body, seen[1].body);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&seen[1].body).unwrap(),
        serde_json::json!({"courier_company_id": 7, "description": "books"})
    );
}

#[tokio::test]
async fn a_create_with_the_callers_key_that_replays_is_still_a_replay() {
    // The caller's key (an order number) may have been used by an earlier
    // call, even an earlier run of the program: a replay then means the
    // shipment was made before, and the caller must hear it.
    let server = Flaky::start(1, Cut::Reset, replayed_create()).await;
    let created = server
        .client()
        .shipments()
        .create(&CreateShipment::new(CourierId::new(7)))
        .idempotency_key("order-10293")
        .send()
        .await
        .unwrap();
    assert!(created.replayed);
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|s| s.header("idempotency-key") == Some("order-10293")),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_change_without_an_idempotency_key_is_not_retried_after_a_drop() {
    let server = Flaky::start(1, Cut::Close, ok_shipment()).await;
    let err = server.client().shipments().rate(CODE, 7).await.unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
    // Sending it again may work, but only the caller knows whether it is
    // safe: the service may have rated it before the connection ended.
    assert!(err.is_retryable());
    assert_eq!(err.status(), None);
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn retries_after_drops_stop_at_max_retries() {
    let server = Flaky::start(usize::MAX, Cut::Close, ok_shipment()).await;
    let client = Client::builder()
        .api_key(KEY)
        .base_url(&server.base_url)
        .retry_backoff(Duration::from_millis(1), Duration::from_millis(2))
        .max_retries(2)
        .build()
        .unwrap();
    let err = client.couriers().list().await.unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
    assert!(err.is_retryable());
    assert_eq!(server.seen().len(), 3);
    let chain = error_chain(&err);
    assert!(chain[0].starts_with("network error"), "{chain:?}");
}

#[tokio::test]
async fn a_body_cut_off_after_the_answer_began_is_not_retried() {
    // The answer arrived (status and headers): the request was handled, so
    // this is not a connection that failed before any response.
    let body = shipment(CODE, "in_transit").to_string();
    let cut = format!(
        "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{}",
        body.len(),
        &body[..10]
    );
    let server = Flaky::start(0, Cut::Close, cut).await;
    let err = tokio::time::timeout(
        Duration::from_secs(20),
        server.client().shipments().get(CODE),
    )
    .await
    .expect("the SDK gives up on a cut-off answer")
    .unwrap_err();
    assert!(!err.is_retryable(), "{err:?}");
    assert_eq!(server.seen().len(), 1);
}
