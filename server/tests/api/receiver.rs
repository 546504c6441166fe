//! Real HTTPS webhook receivers for the delivery tests: a local CA made at
//! test time (trusted by the server through `--webhook-ca-file`), and an
//! axum receiver behind rustls that records what it gets.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};

/// The test CA: its PEM file (for the server) and what signs leaf
/// certificates.
pub struct LocalCa {
    pub pem_file: PathBuf,
    issuer: Issuer<'static, KeyPair>,
    _dir: tempfile::TempDir,
}

/// One CA per test process; every test server trusts it.
pub fn ca() -> &'static LocalCa {
    static CA: OnceLock<LocalCa> = OnceLock::new();
    CA.get_or_init(|| {
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "shipment tests local CA");
        let cert = params.self_signed(&key).expect("a self-signed CA");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let pem_file = dir.path().join("ca.pem");
        std::fs::write(&pem_file, cert.pem()).expect("write the CA file");
        LocalCa {
            pem_file,
            issuer: Issuer::new(params, key),
            _dir: dir,
        }
    })
}

impl LocalCa {
    /// A certificate and key (PEM) for `localhost` and 127.0.0.1.
    fn leaf(&self) -> (String, String) {
        let key = KeyPair::generate().expect("a leaf key");
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("leaf params");
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("a leaf certificate");
        (cert.pem(), key.serialize_pem())
    }
}

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
