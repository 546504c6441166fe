//! [`WebhookReceiver`]: a real HTTPS webhook receiver in the test process,
//! an axum app behind rustls with a certificate from the local
//! [`ca`](crate::ca), which every test server trusts. It records what it
//! gets, byte for byte, and answers with the status it was given; once
//! given a [`Verifier`] ([`WebhookReceiver::verify_with`]), it answers `401`
//! to a delivery that fails either signature scheme, as a real receiver
//! would (and still records it, so a test can see why).

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;
use tokio::sync::Notify;
use webhook_verify::standard::ID_HEADER;
use webhook_verify::{SIGNATURE_HEADER, Scheme, Verifier, VerifyError};

use crate::ca;

/// How long the `wait_for…` helpers wait before they fail the test.
pub const WAIT: Duration = Duration::from_secs(20);

/// A delivery as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request's headers (`X-Service-Signature`,
    /// `X-Service-Delivery-Id`, ...).
    pub headers: HeaderMap,
    /// The body, byte for byte as signed.
    pub body: Bytes,
    /// When it arrived.
    pub at: Instant,
}

impl Received {
    /// Its `webhook-id` (Standard Webhooks): the same for every attempt of
    /// one change to this receiver, so repeats can be dropped by it. `None`
    /// when absent, sent twice or not text.
    pub fn webhook_id(&self) -> Option<&str> {
        let mut values = self.headers.get_all(ID_HEADER).iter();
        let value = values.next()?;
        if values.next().is_some() {
            return None;
        }
        value.to_str().ok()
    }

    /// Verifies both schemes a delivery of the service carries, as of the
    /// moment it arrived: `X-Service-Signature` always (every delivery has
    /// it), and the Standard Webhooks headers whenever any is present (or
    /// `verifier` [requires](Verifier::require_standard) them), with the
    /// verifier's tolerance. Says which scheme was the strongest that
    /// passed.
    ///
    /// ```
    /// # fn check(got: shipment_testkit::Received) {
    /// use shipment_testkit::webhook_verify::{Scheme, Verifier};
    ///
    /// let verifier = Verifier::new("whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA");
    /// assert_eq!(got.verify(&verifier), Ok(Scheme::Standard));
    /// # }
    /// ```
    pub fn verify(&self, verifier: &Verifier) -> Result<Scheme, VerifyError> {
        let service = self
            .headers
            .get(SIGNATURE_HEADER)
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        verifier.verify(&self.body, service)?;
        verifier.verify_header_map_at(&self.headers, &self.body, unix_time(self.at))
    }
}

/// `at` in Unix seconds: the clock now, less the time since. Instants have
/// no epoch; the difference is far below the tolerance's second.
fn unix_time(at: Instant) -> i64 {
    let then = SystemTime::now()
        .checked_sub(at.elapsed())
        .unwrap_or(UNIX_EPOCH);
    then.duration_since(UNIX_EPOCH).map_or(0, |since| {
        i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
    })
}

#[derive(Clone)]
struct Shared {
    got: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
    verifier: Arc<RwLock<Option<Verifier>>>,
    status: StatusCode,
    delay: Duration,
}

/// A running HTTPS receiver at `https://localhost:<port>/hook`; it stops
/// when dropped.
///
/// ```no_run
/// # async fn run() {
/// use std::time::Duration;
/// use shipment_testkit::WebhookReceiver;
/// use reqwest::StatusCode;
///
/// let receiver = WebhookReceiver::start(StatusCode::OK, Duration::ZERO).await;
/// // register receiver.url as a webhook, change a shipment, then:
/// let got = receiver.wait_for(1).await;
/// assert!(got[0].headers.contains_key("x-service-signature"));
/// # }
/// ```
pub struct WebhookReceiver {
    /// `https://localhost:PORT/hook`
    pub url: String,
    got: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
    verifier: Arc<RwLock<Option<Verifier>>>,
    handle: axum_server::Handle<std::net::SocketAddr>,
}

impl WebhookReceiver {
    /// A receiver that answers every delivery with `status` after `delay`.
    pub async fn start(status: StatusCode, delay: Duration) -> WebhookReceiver {
        let (cert, key) = ca().leaf();
        let tls = RustlsConfig::from_pem(cert.into_bytes(), key.into_bytes())
            .await
            .expect("a TLS config");
        let got = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let verifier = Arc::new(RwLock::new(None));
        let shared = Shared {
            got: got.clone(),
            arrived: arrived.clone(),
            verifier: verifier.clone(),
            status,
            delay,
        };
        let app = Router::new()
            .route("/hook", post(record))
            .with_state(shared);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("a local address").port();
        let handle = axum_server::Handle::new();
        let server = axum_server::from_tcp_rustls(listener, tls)
            .expect("a TLS server")
            .handle(handle.clone());
        tokio::spawn(async move {
            let _ = server.serve(app.into_make_service()).await;
        });
        WebhookReceiver {
            url: format!("https://localhost:{port}/hook"),
            got,
            arrived,
            verifier,
            handle,
        }
    }

    /// From now on, verify every delivery as [`Received::verify`] does
    /// (both schemes, the Standard Webhooks timestamp within `verifier`'s
    /// tolerance), and answer one that fails with `401` and the reason
    /// instead of the receiver's status. It is recorded all the same, so a
    /// test can see what was refused and why.
    ///
    /// Set it once the webhook is registered and its signing key known
    /// ([`WebhookInbox`](crate::WebhookInbox) does).
    pub fn verify_with(&self, verifier: Verifier) {
        *self
            .verifier
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(verifier);
    }

    /// Everything received so far, oldest first.
    pub fn received(&self) -> Vec<Received> {
        self.got
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The `n`-th delivery (from 0), waiting up to [`WAIT`] for it to arrive.
    ///
    /// # Panics
    ///
    /// When it has not arrived in time.
    pub async fn nth(&self, n: usize) -> Received {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            // Registered before looking, so an arrival between the look
            // and the wait is not missed.
            let arrived = self.arrived.notified();
            if let Some(got) = self.received().get(n) {
                return got.clone();
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!(
                    "expected delivery #{} within {WAIT:?}, got {}",
                    n + 1,
                    self.received().len()
                );
            }
        }
    }

    /// Waits (up to [`WAIT`]) until `n` deliveries have arrived, and returns
    /// everything received by then.
    ///
    /// # Panics
    ///
    /// When fewer than `n` arrive in time.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        if n > 0 {
            self.nth(n - 1).await;
        }
        self.received()
    }
}

impl Drop for WebhookReceiver {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

async fn record(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let received = Received {
        headers,
        body,
        at: Instant::now(),
    };
    // Judged on arrival, before the delay: a slow receiver still sees the
    // timestamp the sender just wrote.
    let verdict = shared
        .verifier
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .map(|verifier| received.verify(verifier));
    tokio::time::sleep(shared.delay).await;
    shared
        .got
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(received);
    shared.arrived.notify_waiters();
    match verdict {
        Some(Err(refused)) => (StatusCode::UNAUTHORIZED, refused.to_string()),
        _ => (shared.status, String::new()),
    }
}
