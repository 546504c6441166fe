//! What the `listen` tests share: a local app that records what it is
//! forwarded, `shipctl listen` running with its output read line by line,
//! a stand-in for the listener stream, a `shipctl` for a merchant of the
//! real server, and the waits around them.

use std::io::{BufRead as _, BufReader, Read, Write as _};
use std::net::TcpStream;
use std::process::Child;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use shipment_testkit::{Fixture, TestApp};

use crate::helpers::Shipctl;

/// What the local app received.
#[derive(Clone, Debug)]
pub(crate) struct Got {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

/// A plain-HTTP local app on a free port that answers `status`; returns its
/// URL and what it receives.
pub(crate) async fn local_app(status: StatusCode) -> (String, mpsc::Receiver<Got>) {
    local_app_with(status, &[]).await
}

/// [`local_app`], answering with `headers` too.
pub(crate) async fn local_app_with(
    status: StatusCode,
    headers: &[(&'static str, String)],
) -> (String, mpsc::Receiver<Got>) {
    let (tx, rx) = mpsc::channel();
    let tx = Arc::new(Mutex::new(tx));
    let answer: Vec<(&'static str, String)> = headers.to_vec();
    let app = Router::new()
        .route(
            "/webhooks",
            post(
                move |State(tx): State<Arc<Mutex<mpsc::Sender<Got>>>>,
                      headers: HeaderMap,
                      body: axum::body::Bytes| async move {
                    let _ = tx.lock().unwrap().send(Got {
                        headers,
                        body: body.to_vec(),
                    });
                    let mut response = axum::response::Response::new(axum::body::Body::empty());
                    *response.status_mut() = status;
                    for (name, value) in answer {
                        response.headers_mut().insert(name, value.parse().unwrap());
                    }
                    response
                },
            ),
        )
        .with_state(tx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://127.0.0.1:{port}/webhooks"), rx)
}

/// `shipctl listen` with its stdout and stderr read line by line.
pub(crate) struct Listening {
    pub(crate) child: Child,
    pub(crate) stdout: mpsc::Receiver<String>,
    pub(crate) stderr: mpsc::Receiver<String>,
}

/// A test that fails does not leave `listen` running.
impl Drop for Listening {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn lines(from: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Listening {
    /// Starts `shipctl ARGS...` (a `listen`), its output read line by line.
    pub(crate) fn start(shipctl: &Shipctl, args: &[&str]) -> Listening {
        let mut child = shipctl.spawn(args);
        let stdout = lines(child.stdout.take().unwrap());
        let stderr = lines(child.stderr.take().unwrap());
        Listening {
            child,
            stdout,
            stderr,
        }
    }

    /// [`Listening::start`], then waits for `Ready! …` (on a blocking
    /// thread): the running `listen`, and the signing key it shows.
    pub(crate) fn start_ready(shipctl: &Shipctl, args: &[&str]) -> (Listening, String) {
        tokio::task::block_in_place(|| {
            let l = Listening::start(shipctl, args);
            let key = l.ready();
            (l, key)
        })
    }

    /// Waits for `Ready! …` and returns the signing key it shows; the other
    /// lines on the way (reconnection notes) are returned too.
    pub(crate) fn ready_after(&self) -> (String, Vec<String>) {
        let mut before = Vec::new();
        let line = loop {
            let line = self
                .stderr
                .recv_timeout(Duration::from_secs(20))
                .expect("listen says it is ready");
            if line.starts_with("Ready!") {
                break line;
            }
            before.push(line);
        };
        let key = line
            .split("Signing key: ")
            .nth(1)
            .unwrap_or_else(|| panic!("not the ready line: {line}"));
        assert!(line.starts_with("Ready! Forwarding to "), "{line}");
        (key.trim().to_owned(), before)
    }

    /// Waits for `Ready! …` and returns the signing key it shows.
    fn ready(&self) -> String {
        let (key, before) = self.ready_after();
        assert!(before.is_empty(), "{before:?}");
        key
    }

    /// The next line on stdout, which must come within 20 s.
    pub(crate) fn line(&self) -> String {
        self.stdout
            .recv_timeout(Duration::from_secs(20))
            .expect("a line per delivery")
    }

    /// The next line on stderr (a note), which must come within 20 s; else
    /// a panic that says what was `expected`.
    pub(crate) fn note(&self, expected: &str) -> String {
        self.stderr
            .recv_timeout(Duration::from_secs(20))
            .expect(expected)
    }

    /// Waits (at most 20 s) for `listen` to end by itself; the exit code
    /// and every line on stderr after the ready line.
    pub(crate) fn wait_for_exit(mut self) -> (Option<i32>, Vec<String>) {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = self.child.kill();
                panic!(
                    "listen did not end: {:?}",
                    self.stderr.try_iter().collect::<Vec<_>>()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        (status.code(), self.stderr.iter().collect())
    }

    /// Ctrl-C, and the exit code and what was left on stderr; it waits on a
    /// blocking thread (`block_in_place`).
    pub(crate) fn interrupt(self) -> (Option<i32>, Vec<String>) {
        tokio::task::block_in_place(|| self.interrupt_now())
    }

    fn interrupt_now(mut self) -> (Option<i32>, Vec<String>) {
        let pid = self.child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = self.child.wait().unwrap();
        // Every line up to the end of the pipe: the reader thread may not
        // have passed on the last lines yet when the exit is seen, and it
        // ends (closing the channel) at the end of the pipe, which the
        // exit brings.
        let rest: Vec<String> = self.stderr.iter().collect();
        (status.code(), rest)
    }
}

/// A `shipctl` for the real `server`, with `key`.
pub(crate) fn shipctl_for(server: &TestApp, key: &str) -> Shipctl {
    Shipctl::new()
        .env("SHIPCTL_BASE_URL", &server.base)
        .env("SHIPCTL_API_KEY", key)
}

/// Durations vary from run to run.
pub(crate) fn ms_redacted(text: &str) -> String {
    text.lines()
        .map(|line| match line.rsplit_once("  ") {
            Some((rest, ms)) if ms.ends_with(" ms") => format!("{rest}  [MS] ms"),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// A stand-in for the listener stream on a free port: the `n`-th
/// connection (from 0) is answered by `serve(n, connection)` (usually
/// with [`event_stream`]) once its request is read; it closes when `serve`
/// returns. Returns the base URL and the number of connections so far.
pub(crate) fn stand_in(
    serve: impl Fn(usize, &mut TcpStream) + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let serve = Arc::new(serve);
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let n = counted.fetch_add(1, Ordering::SeqCst);
            let serve = serve.clone();
            std::thread::spawn(move || {
                let mut request = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while request.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                serve(n, &mut stream);
            });
        }
    });
    (format!("http://{addr}/api/v1"), count)
}

/// Answers with an event stream that starts with `text`.
pub(crate) fn event_stream(stream: &mut TcpStream, text: &str) -> std::io::Result<()> {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                connection: close\r\n\r\n";
    stream.write_all(head.as_bytes())?;
    stream.write_all(text.as_bytes())
}

/// The `ready` event, with `key` as the signing key.
pub(crate) fn ready_event(key: &str) -> String {
    format!(
        "event: ready\ndata: {{\"signing_key\":{},\"created_at\":\"2026-11-24T09:00:00Z\"}}\n\n",
        serde_json::to_string(key).unwrap()
    )
}

/// The signing key a stand-in stream shows: of the shape the service
/// makes (`whsec_` and 32 base62), base64 as Standard Webhooks needs.
pub(crate) const STAND_IN_KEY: &str = "whsec_0123456789abcdefghijABCDEFGHIJKL";

/// A `shipctl` at `base` (a stand-in, or nothing), with a key that looks
/// right.
pub(crate) fn shipctl_at(base: &str) -> Shipctl {
    Shipctl::new()
        .env("SHIPCTL_BASE_URL", base)
        .env("SHIPCTL_API_KEY", "sk_test_0123456789abcdefghijABCDEFGHIJ")
}

/// An address where nothing listens (a port just freed), with `path`.
pub(crate) fn closed_url(path: &str) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}{path}", l.local_addr().unwrap())
}

/// An API root where nothing listens.
pub(crate) fn closed_base() -> String {
    closed_url("/api/v1")
}

/// A merchant of `server`, and a `shipctl` with its key.
pub(crate) async fn merchant(server: &TestApp) -> (Fixture, Shipctl) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f.key);
    (f, shipctl)
}

/// A new shipment's code.
pub(crate) async fn create(server: &TestApp, f: &Fixture) -> String {
    server.create_default(f).await["code"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The next request the local app got, which must come within 20 s. It
/// blocks: call it in `block_in_place`.
pub(crate) fn next_got(received: &mpsc::Receiver<Got>) -> Got {
    received.recv_timeout(Duration::from_secs(20)).unwrap()
}

/// Everything a receiver got within 300 ms after the first `n` (which must
/// come within 20 s each).
pub(crate) fn receive(received: &mpsc::Receiver<Got>, n: usize) -> Vec<Got> {
    tokio::task::block_in_place(|| {
        let mut got: Vec<Got> = (0..n).map(|_| next_got(received)).collect();
        while let Ok(more) = received.recv_timeout(Duration::from_millis(300)) {
            got.push(more);
        }
        got
    })
}

pub(crate) fn header<'a>(got: &'a Got, name: &str) -> &'a str {
    got.headers[name].to_str().unwrap()
}

/// Asserts that `got` carries the Standard Webhooks headers as `shipctl`
/// signs them with `key` when it POSTs: `webhook-id` `msg_<change>_l` for
/// the delivery id `dlv_<change>_l`, a `webhook-timestamp` of the last
/// minute, and the signature the key makes over them and the body.
pub(crate) fn assert_standard(got: &Got, key: &str) {
    use webhook_verify::standard::{ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign};
    let delivery_id = header(got, "x-service-delivery-id");
    let id = header(got, ID_HEADER);
    assert_eq!(
        Some(id),
        delivery_id
            .strip_prefix("dlv_")
            .map(|c| format!("msg_{c}"))
            .as_deref()
    );
    let timestamp: i64 = header(got, TIMESTAMP_HEADER).parse().unwrap();
    let age = chrono::Utc::now().timestamp() - timestamp;
    assert!((0..60).contains(&age), "signed {age} s ago");
    let expected = sign(key, id, timestamp, &got.body).unwrap();
    assert_eq!(header(got, SIGNATURE_HEADER), expected);
}
