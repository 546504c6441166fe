//! Real HTTPS webhook receivers for the delivery tests: an axum receiver
//! behind rustls that records what it gets, with a certificate from the
//! test kit's local CA (which every test server trusts through
//! `--webhook-ca-file`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;

/// The CA the receivers' certificates come from.
pub use shipment_testkit::ca;

/// A delivery as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: Bytes,
    /// When it arrived (for the delivery benchmark).
    #[allow(dead_code)]
    pub at: std::time::Instant,
}

#[derive(Clone)]
struct Shared {
    got: Arc<Mutex<Vec<Received>>>,
    status: StatusCode,
    delay: Duration,
}

/// A running HTTPS receiver.
pub struct Receiver {
    /// `https://localhost:PORT/hook`
    pub url: String,
    got: Arc<Mutex<Vec<Received>>>,
    handle: axum_server::Handle<std::net::SocketAddr>,
}

impl Receiver {
    /// A receiver that answers `status` after `delay`.
    pub async fn start(status: StatusCode, delay: Duration) -> Receiver {
        let (cert, key) = ca().leaf();
        let tls = RustlsConfig::from_pem(cert.into_bytes(), key.into_bytes())
            .await
            .expect("a TLS config");
        let got = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            got: got.clone(),
            status,
            delay,
        };
        let app = Router::new()
            .route("/hook", post(record))
            .with_state(shared);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().unwrap().port();
        let handle = axum_server::Handle::new();
        let server = axum_server::from_tcp_rustls(listener, tls)
            .expect("a TLS server")
            .handle(handle.clone());
        tokio::spawn(async move {
            let _ = server.serve(app.into_make_service()).await;
        });
        Receiver {
            url: format!("https://localhost:{port}/hook"),
            got,
            handle,
        }
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Waits (up to 20 s) until `n` deliveries have arrived.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        for _ in 0..400 {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("expected {n} deliveries, got {}", self.received().len());
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

async fn record(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let at = std::time::Instant::now();
    tokio::time::sleep(shared.delay).await;
    shared
        .got
        .lock()
        .unwrap()
        .push(Received { headers, body, at });
    shared.status
}
