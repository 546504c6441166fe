//! A request body the server does not read (over the 1 MiB limit, or
//! sent with a refused key), from a client that writes the whole body
//! before it reads, as simple clients and many proxies do: the client gets
//! the answer, never a reset connection, alone and twenty at once. A body
//! declared up to 16 MiB is read and thrown away first, a longer one is
//! answered at once with `Connection: close`.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::future::join_all;
use serde_json::Value;
use shipment_server::config::{MAX_BODY_BYTES, MAX_DRAINED_BYTES};
use shipment_testkit::{TestApp, db_tests};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

db_tests!(
    an_oversize_create_written_whole_before_reading_gets_its_413,
    twenty_oversize_creates_at_once_each_get_their_413,
    a_body_sent_with_a_refused_key_does_not_lose_the_401,
);

/// What came back: the status, the headers (lower-case names), the body.
struct Answer {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Answer {
    fn problem(&self) -> Value {
        assert_eq!(
            self.headers.get("content-type").map(String::as_str),
            Some("application/problem+json")
        );
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// The head of a `POST /api/v1/shipments` with `key`, declaring `length`
/// bytes of body.
fn create_head(key: &str, length: u64) -> String {
    format!(
        "POST /api/v1/shipments HTTP/1.1\r\nHost: test\r\nX-API-KEY: {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
}

/// A JSON body of exactly `length` bytes (a long description).
fn body_of(length: u64) -> Vec<u8> {
    let length = usize::try_from(length).unwrap();
    let mut body = b"{\"courier_company_id\": 1, \"description\": \"".to_vec();
    body.resize(length - 2, b'x');
    body.extend_from_slice(b"\"}");
    body
}

/// Reads one answer (its body by `Content-Length`) from `stream`, within
/// 60 s: far beyond what a 413 takes, so only a lost answer runs out.
async fn read_answer(stream: &mut TcpStream) -> std::io::Result<Answer> {
    let read = async {
        let mut seen = Vec::new();
        let mut buf = vec![0_u8; 64 * 1024];
        let head_end = loop {
            if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            seen.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8(seen[..head_end].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: HashMap<String, String> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let length: usize = headers["content-length"].parse().unwrap();
        let mut body = seen[head_end..].to_vec();
        while body.len() < length {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            body.extend_from_slice(&buf[..n]);
        }
        body.truncate(length);
        Ok(Answer {
            status,
            headers,
            body,
        })
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("an answer within 60 s")
}

/// Connects to `app`, writes a create with `key` and `length` bytes of
/// body, the whole of it, and only then reads the answer.
async fn create_written_whole(app: &TestApp, key: &str, length: u64) -> (TcpStream, Answer) {
    let mut stream = TcpStream::connect(app.root.trim_start_matches("http://"))
        .await
        .unwrap();
    let mut request = create_head(key, length).into_bytes();
    request.extend_from_slice(&body_of(length));
    stream
        .write_all(&request)
        .await
        .expect("the whole request is written");
    let answer = read_answer(&mut stream)
        .await
        .expect("the answer is read, not a reset");
    (stream, answer)
}

/// The connection still serves a request after the answer: the body was
/// read to its end.
async fn still_serves(stream: &mut TcpStream) {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let answer = read_answer(stream).await.unwrap();
    assert_eq!(answer.status, 200);
}

async fn an_oversize_create_written_whole_before_reading_gets_its_413(app: &TestApp) {
    let f = app.fixture().await;
    // One byte over the limit, 3 MiB, and the most of a body read to give
    // the answer.
    let limit = u64::try_from(MAX_BODY_BYTES).unwrap();
    for length in [limit + 1, 3 << 20, MAX_DRAINED_BYTES] {
        let (mut stream, answer) = create_written_whole(app, &f.key, length).await;
        assert_eq!(answer.status, 413, "{length}");
        let problem = answer.problem();
        assert_eq!(problem["code"], "payload_too_large", "{problem}");
        assert_eq!(problem["status"], 413);
        assert!(!answer.headers.contains_key("connection"), "kept alive");
        still_serves(&mut stream).await;
    }

    // One byte more than that is answered at once, without reading, and
    // the connection closed: here the client sends nothing of the body.
    let mut stream = TcpStream::connect(app.root.trim_start_matches("http://"))
        .await
        .unwrap();
    let head = create_head(&f.key, MAX_DRAINED_BYTES + 1);
    stream.write_all(head.as_bytes()).await.unwrap();
    let answer = read_answer(&mut stream).await.unwrap();
    assert_eq!(answer.status, 413);
    assert_eq!(answer.problem()["code"], "payload_too_large");
    assert_eq!(
        answer.headers.get("connection").map(String::as_str),
        Some("close")
    );
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the server closed the connection");
}

/// Twenty at once, of 3 MiB and of 12 MiB: bodies longer than the
/// sockets' buffers take, so each client is still writing when its answer
/// is ready.
async fn twenty_oversize_creates_at_once_each_get_their_413(app: &TestApp) {
    let f = app.fixture().await;
    for length in [3 << 20, 12 << 20] {
        let answers = join_all((0..20).map(|_| create_written_whole(app, &f.key, length))).await;
        for (_, answer) in answers {
            assert_eq!(answer.status, 413, "{length}");
            assert_eq!(answer.problem()["code"], "payload_too_large");
        }
    }
}

/// A body within the limit that the handler does not read, the key being
/// refused first.
async fn a_body_sent_with_a_refused_key_does_not_lose_the_401(app: &TestApp) {
    let wrong = format!("sk_test_{}", "A".repeat(32));
    let length = u64::try_from(MAX_BODY_BYTES).unwrap();
    let answers = join_all((0..10).map(|_| create_written_whole(app, &wrong, length))).await;
    for (mut stream, answer) in answers {
        assert_eq!(answer.status, 401);
        assert_eq!(answer.problem()["code"], "unauthenticated");
        still_serves(&mut stream).await;
    }
}
