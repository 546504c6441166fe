//! [`WebhookReceiver`]: a real HTTPS webhook receiver in the test process,
//! an axum app behind rustls with a certificate from the local
//! [`ca`](crate::ca), which every test server trusts. It records what it
//! gets, byte for byte, and answers with the status it was given.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;
use tokio::sync::Notify;

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

#[derive(Clone)]
struct Shared {
    got: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
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
        let shared = Shared {
            got: got.clone(),
            arrived: arrived.clone(),
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
            handle,
        }
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

async fn record(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let at = Instant::now();
    tokio::time::sleep(shared.delay).await;
    shared
        .got
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Received { headers, body, at });
    shared.arrived.notify_waiters();
    shared.status
}
