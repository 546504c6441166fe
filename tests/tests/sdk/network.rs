//! The SDK on a production network, against the real reference server on
//! SQLite and PostgreSQL: an HTTP proxy (given, or from the environment),
//! a private certificate authority, mutual TLS, and the request and
//! response hooks.
//!
//! The proxy and the TLS server are made here: [`RecordingProxy`], a
//! forward proxy that tunnels `CONNECT` and forwards absolute-form requests
//! and writes down every request head it reads; [`TlsFront`], a TLS
//! terminator (optionally asking for a client certificate) in front of the
//! real server's port. Both send every target to 127.0.0.1, so an address
//! such as `shipments.test`, which no resolver knows, is reachable through
//! the proxy alone: a call that succeeds there went through it.
//!
//! The proxy environment variables are process-wide and tests run in
//! parallel, so the environment cases run in a child process of this test
//! binary ([`proxy_environment_child`]), each with its own environment.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    SanType,
};
use reqwest::{Method, StatusCode};
use serde_json::json;
use shipment_sdk::hooks::{HeaderError, PROTECTED_HEADERS};
use shipment_sdk::model::CreateShipment;
use shipment_sdk::{Client, DashboardClient, Error};
use shipment_testkit::{TestApp, db_tests, send};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

db_tests!(
    an_explicit_proxy_carries_every_call,
    a_private_certificate_authority_is_trusted_once_added,
    mutual_tls_needs_the_client_certificate,
    the_proxy_environment_variables_are_honoured_unless_turned_off,
);

db_tests!(
    config = |c| c.test_controls = true;
    hooks_see_every_attempt_and_add_headers_but_not_protected_ones,
);

/// A name no resolver knows: only [`RecordingProxy`] reaches it.
const UNRESOLVABLE: &str = "shipments.test";

// ---------------------------------------------------------------------------
// Certificates.

/// A certificate authority made for one test.
struct Ca {
    pem: String,
    der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        Ca {
            pem: cert.pem(),
            der: cert.der().clone(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for localhost, 127.0.0.1 and
    /// [`UNRESOLVABLE`], and its key.
    fn server_leaf(&self) -> (CertificateDer<'static>, KeyPair) {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned(), UNRESOLVABLE.to_owned()]).unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.der().clone(), key)
    }

    /// A client certificate for mutual TLS: (certificate PEM, key PEM).
    fn client_leaf(&self, name: &str) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

// ---------------------------------------------------------------------------
// A TLS server in front of the real one.

/// TLS on 127.0.0.1 in front of the real server: each connection's
/// handshake, then its bytes both ways to the server's port.
struct TlsFront {
    addr: SocketAddr,
    /// Handshakes that failed (no client certificate, an unknown one...).
    refused: Arc<AtomicUsize>,
    /// Handshakes that succeeded.
    accepted: Arc<AtomicUsize>,
}

impl TlsFront {
    /// Serves a certificate `ca` signed; with `clients`, only to clients
    /// with a certificate that CA signed.
    async fn start(server: &TestApp, ca: &Ca, clients: Option<&Ca>) -> TlsFront {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = match clients {
            Some(clients) => {
                let mut roots = rustls::RootCertStore::empty();
                roots.add(clients.der.clone()).unwrap();
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .unwrap();
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let (cert, key) = ca.server_leaf();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let config = builder.with_single_cert(vec![cert], key).unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

        let upstream = server_addr(server);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (refused, accepted) = (Arc::<AtomicUsize>::default(), Arc::<AtomicUsize>::default());
        let counts = (Arc::clone(&refused), Arc::clone(&accepted));
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let (refused, accepted) = (Arc::clone(&counts.0), Arc::clone(&counts.1));
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        refused.fetch_add(1, Ordering::SeqCst);
                        return;
                    };
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let mut plain = TcpStream::connect(upstream).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        TlsFront {
            addr,
            refused,
            accepted,
        }
    }

    /// Waits until `n` handshakes have failed (the server side counts
    /// them on its own task, maybe after the client saw the failure), and
    /// checks that no more did.
    async fn wait_for_refused(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.refused.load(Ordering::SeqCst) < n && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(self.refused.load(Ordering::SeqCst), n);
    }

    /// The API's base URL through this front, under `host`.
    fn base(&self, host: &str) -> String {
        format!("https://{host}:{}/api/v1", self.addr.port())
    }
}

/// The real server's `127.0.0.1:<port>`.
fn server_addr(server: &TestApp) -> SocketAddr {
    server
        .root
        .trim_start_matches("http://")
        .parse()
        .expect("the server's root is http://127.0.0.1:<port>")
}

// ---------------------------------------------------------------------------
// A forward proxy.

/// A forward HTTP proxy on 127.0.0.1 that writes down the head of every
/// request it reads: `CONNECT host:port` tunnels, and absolute-form
/// requests (`GET http://host:port/path`) forwarded one by one. Every
/// target's host is replaced by 127.0.0.1.
struct RecordingProxy {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
}

impl RecordingProxy {
    async fn start() -> RecordingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::<Mutex<Vec<String>>>::default();
        let log = Arc::clone(&heads);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(proxy_connection(client, Arc::clone(&log)));
            }
        });
        RecordingProxy { addr, heads }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The request heads read so far, lower-cased (header names are
    /// case-insensitive).
    fn heads(&self) -> Vec<String> {
        self.heads
            .lock()
            .unwrap()
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect()
    }

    /// The first line of every head read so far.
    fn request_lines(&self) -> Vec<String> {
        self.heads
            .lock()
            .unwrap()
            .iter()
            .map(|h| h.lines().next().unwrap_or_default().to_owned())
            .collect()
    }
}

async fn proxy_connection(mut client: TcpStream, log: Arc<Mutex<Vec<String>>>) {
    let Some((head, rest)) = read_head(&mut client, Vec::new()).await else {
        return;
    };
    log.lock().unwrap().push(head.clone());
    let target = head.split(' ').nth(1).unwrap_or_default().to_owned();
    if head.starts_with("CONNECT ") {
        let port: u16 = target.rsplit_once(':').unwrap().1.parse().unwrap();
        let mut upstream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .unwrap();
        upstream.write_all(&rest).await.unwrap();
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        return;
    }
    // An absolute-form request: the server accepts that form too, so each
    // head goes on unchanged (and is written down), then its body.
    let port = url::Url::parse(&target)
        .unwrap()
        .port_or_known_default()
        .unwrap();
    let upstream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (mut from_server, mut to_server) = upstream.into_split();
    let (mut from_client, mut to_client) = client.into_split();
    tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
    });
    let (mut head, mut buffered) = (head, rest);
    loop {
        let length = content_length(&head);
        if to_server.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        while buffered.len() < length {
            let mut chunk = [0; 4096];
            match from_client.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffered.extend_from_slice(&chunk[..n]),
            }
        }
        let after = buffered.split_off(length);
        if to_server.write_all(&buffered).await.is_err() {
            return;
        }
        match read_head(&mut from_client, after).await {
            Some((next, rest)) => {
                log.lock().unwrap().push(next.clone());
                (head, buffered) = (next, rest);
            }
            None => return,
        }
    }
}

/// Reads up to the end of a request head (`\r\n\r\n`), starting with what
/// is already `buffered`: the head, and the bytes read after it. `None`
/// when the connection ends first.
async fn read_head(
    reader: &mut (impl AsyncReadExt + Unpin),
    mut buffered: Vec<u8>,
) -> Option<(String, Vec<u8>)> {
    loop {
        if let Some(end) = buffered.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buffered.split_off(end + 4);
            return Some((String::from_utf8(buffered).ok()?, rest));
        }
        let mut chunk = [0; 4096];
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffered.extend_from_slice(&chunk[..n]),
        }
    }
}

fn content_length(head: &str) -> usize {
    head.lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, value)| value.trim().parse().unwrap())
}

/// An SDK client builder with short back-offs, for `base`.
fn builder(base: &str, key: &str) -> shipment_sdk::ClientBuilder {
    Client::builder()
        .api_key(key)
        .base_url(base)
        .timeout(Duration::from_secs(30))
        .retry_backoff(Duration::from_millis(10), Duration::from_millis(100))
}

/// What listing the couriers fails with, in one attempt, through the
/// client `builder` makes.
async fn list_fails(builder: shipment_sdk::ClientBuilder) -> Error {
    builder
        .max_retries(0)
        .build()
        .unwrap()
        .couriers()
        .list()
        .await
        .unwrap_err()
}

/// `e` and its causes, for assertions on what a failure says.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(e), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

// ---------------------------------------------------------------------------
// The tests.

async fn an_explicit_proxy_carries_every_call(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let ca = Ca::new("private CA");
    let front = TlsFront::start(server, &ca, None).await;
    let proxy = RecordingProxy::start().await;

    // https:// through a CONNECT tunnel: the proxy sees the host and port,
    // never the key or the path.
    let client = builder(&front.base(UNRESOLVABLE), &f.key)
        .add_root_certificate_pem(&ca.pem)
        .proxy(proxy.url())
        .build()
        .unwrap();
    let couriers = client.couriers().list().await.unwrap();
    assert_eq!(couriers.len(), 1);
    let connect = format!("CONNECT {UNRESOLVABLE}:{} HTTP/1.1", front.addr.port());
    assert_eq!(proxy.request_lines(), std::slice::from_ref(&connect));
    assert!(proxy.heads().iter().all(|h| !h.contains(&f.key)));

    // The dashboard's builder is the same builder: sign-in and calls go
    // through the proxy too.
    let (email, password) = f.credentials();
    let dashboard = DashboardClient::builder()
        .base_url(front.base(UNRESOLVABLE))
        .add_root_certificate_pem(&ca.pem)
        .proxy(proxy.url())
        .login(&email, &password)
        .await
        .unwrap();
    assert_eq!(dashboard.api_keys().list().await.unwrap().len(), 1);
    assert!(proxy.request_lines().iter().skip(1).all(|l| *l == connect));
    assert!(proxy.request_lines().len() >= 2);

    // http:// in absolute form, with the proxy's own credentials from its
    // URL (Basic, `user:secret`); without the proxy the name resolves
    // nowhere.
    let plain = format!(
        "http://{UNRESOLVABLE}:{}/api/v1",
        server_addr(server).port()
    );
    let before = proxy.heads().len();
    let through = format!("http://user:secret@{}", proxy.addr);
    let client = builder(&plain, &f.key).proxy(&through).build().unwrap();
    assert_eq!(client.couriers().list().await.unwrap().len(), 1);
    let heads = proxy.heads();
    let head = &heads[before];
    assert!(
        head.starts_with(&format!("get {plain}/merchant-couriers http/1.1").to_ascii_lowercase()),
        "{head}"
    );
    assert!(
        head.contains("proxy-authorization: basic dxnlcjpzzwnyzxq="),
        "{head}"
    );
    assert!(!format!("{client:?}").contains("secret"));
    let direct = builder(&plain, &f.key).no_proxy().build().unwrap();
    let err = direct.couriers().list().await.unwrap_err();
    assert!(matches!(err, Error::Connect(_)), "{err:?}");

    // A proxy the SDK cannot use fails in build(), naming it, password
    // left out.
    for bad in ["socks5://user:secret@127.0.0.1:1080", "not a url"] {
        let err = builder(&plain, &f.key).proxy(bad).build().unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err:?}");
        assert!(!err.to_string().contains("secret"), "{err}");
    }
}

async fn a_private_certificate_authority_is_trusted_once_added(server: &TestApp) {
    let f = server.fixture().await;
    let ca = Ca::new("private CA");
    let front = TlsFront::start(server, &ca, None).await;
    let localhost = || builder(&front.base("localhost"), &f.key);

    // Not trusted by the platform: the handshake fails, nothing is sent.
    let err = list_fails(localhost()).await;
    assert!(matches!(err, Error::Connect(_)), "{err:?}");
    assert!(chain(&err).contains("certificate"), "{}", chain(&err));

    // Added: the same call succeeds, by name and by address; a bundle with
    // another CA first works as well.
    let other = Ca::new("another CA");
    let bundle = format!("{}{}", other.pem, ca.pem);
    for (host, pem) in [("localhost", &ca.pem), ("127.0.0.1", &bundle)] {
        let client = builder(&front.base(host), &f.key)
            .add_root_certificate_pem(pem)
            .build()
            .unwrap();
        assert_eq!(client.couriers().list().await.unwrap().len(), 1);
    }
    assert!(front.accepted.load(Ordering::SeqCst) >= 2);

    // Another CA alone is still refused.
    let err = list_fails(localhost().add_root_certificate_pem(&other.pem)).await;
    assert!(matches!(err, Error::Connect(_)), "{err:?}");

    // What is not a certificate fails in build(), typed.
    let err = localhost()
        .add_root_certificate_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidCertificate {
                what: "root certificate",
                ..
            }
        ),
        "{err:?}"
    );
}

async fn mutual_tls_needs_the_client_certificate(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let ca = Ca::new("service CA");
    let clients = Ca::new("merchant client CA");
    let front = TlsFront::start(server, &ca, Some(&clients)).await;
    let base = front.base("localhost");
    let call = |client: Client| async move { client.couriers().list().await };

    // Without a client certificate the server ends the handshake.
    let err = list_fails(builder(&base, &f.key).add_root_certificate_pem(&ca.pem)).await;
    assert!(
        matches!(err, Error::Connect(_) | Error::Transport(_)),
        "{err:?}"
    );
    assert!(err.status().is_none(), "no answer: {err:?}");
    front.wait_for_refused(1).await;
    assert_eq!(front.accepted.load(Ordering::SeqCst), 0);

    // One from a CA the server does not trust: refused as well.
    let strangers = Ca::new("someone else's CA");
    let (cert, key) = strangers.client_leaf("stranger");
    let stranger = builder(&base, &f.key)
        .add_root_certificate_pem(&ca.pem)
        .client_certificate_pem(&cert, &key);
    let err = list_fails(stranger).await;
    assert!(err.status().is_none(), "no answer: {err:?}");
    front.wait_for_refused(2).await;

    // With it, both clients get through.
    let (cert, key) = clients.client_leaf("test shop");
    let with = builder(&base, &f.key)
        .add_root_certificate_pem(&ca.pem)
        .client_certificate_pem(&cert, &key)
        .build()
        .unwrap();
    assert_eq!(call(with).await.unwrap().len(), 1);
    let (email, password) = f.credentials();
    let dashboard = DashboardClient::builder()
        .base_url(&base)
        .add_root_certificate_pem(&ca.pem)
        .client_certificate_pem(&cert, &key)
        .login(&email, &password)
        .await
        .unwrap();
    assert_eq!(dashboard.api_keys().list().await.unwrap().len(), 1);
    assert_eq!(front.refused.load(Ordering::SeqCst), 2);
    assert!(front.accepted.load(Ordering::SeqCst) >= 2);

    // A key that is not the certificate's, or the two swapped, fail in
    // build(), typed, without showing the key.
    let (_, other_key) = clients.client_leaf("another");
    for (cert, key) in [(&cert, &other_key), (&key, &cert)] {
        let err = builder(&base, &f.key)
            .client_certificate_pem(cert, key)
            .build()
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidCertificate {
                    what: "client certificate",
                    ..
                }
            ),
            "{err:?}"
        );
        let shown = format!("{err} {err:?}");
        let key_body = other_key.lines().nth(1).unwrap();
        assert!(!shown.contains(key_body), "{shown}");
    }
}

async fn hooks_see_every_attempt_and_add_headers_but_not_protected_ones(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let proxy = RecordingProxy::start().await;
    let plain = format!(
        "http://{UNRESOLVABLE}:{}/api/v1",
        server_addr(server).port()
    );

    // What the hooks saw: per attempt, the request's view, and the answer.
    type Seen = Arc<Mutex<Vec<String>>>;
    let (requests, responses): (Seen, Seen) = Default::default();
    let refusals = Arc::<Mutex<Vec<HeaderError>>>::default();
    let (seen, refused) = (Arc::clone(&requests), Arc::clone(&refusals));
    let answered = Arc::clone(&responses);
    let client = builder(&plain, &f.key)
        .proxy(proxy.url())
        .on_request(move |request| {
            request.set_header("x-egress-token", "route-42").unwrap();
            request
                .set_header("x-attempt", &request.attempt().to_string())
                .unwrap();
            for name in ["idempotency-key", "X-API-KEY", "authorization", "host"] {
                refused
                    .lock()
                    .unwrap()
                    .push(request.set_header(name, "hijacked").unwrap_err());
            }
            seen.lock().unwrap().push(format!(
                "{} {} attempt={} key={} idem={}",
                request.method(),
                request.url(),
                request.attempt(),
                request.header("x-api-key").unwrap_or("-"),
                request.header("idempotency-key").is_some(),
            ));
        })
        .on_request(|request| {
            // Hooks run in order: the first one's header is there.
            assert_eq!(request.header("x-egress-token"), Some("route-42"));
            request.append_header("via", "1.1 hook").unwrap();
        })
        .on_response(move |response| {
            answered.lock().unwrap().push(format!(
                "{} {} {} attempt={} request_id={}",
                response.method(),
                response.url(),
                response.status(),
                response.attempt(),
                response.header("x-request-id").is_some(),
            ));
        })
        .build()
        .unwrap();

    // The server answers the first attempt of a create with a 503: the
    // client retries, and the hooks run on both attempts, which carry the
    // same Idempotency-Key whatever the hook tried.
    let (status, body) = send(
        server
            .req(Method::POST, "/testing/faults", &f.key)
            .json(&json!({"method": "POST", "path": "/shipments", "status": 503})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let created = client
        .shipments()
        .create(&CreateShipment::new(f.courier_id.into()))
        .send()
        .await
        .unwrap();
    assert!(!created.replayed);
    assert_eq!(client.shipments().list().send().await.unwrap().total, 1);

    let url = format!("{plain}/shipments");
    assert_eq!(
        *requests.lock().unwrap(),
        [
            format!("POST {url} attempt=1 key=[redacted] idem=true"),
            format!("POST {url} attempt=2 key=[redacted] idem=true"),
            format!("GET {url} attempt=1 key=[redacted] idem=false"),
        ]
    );
    assert_eq!(
        *responses.lock().unwrap(),
        [
            format!("POST {url} 503 attempt=1 request_id=true"),
            format!("POST {url} 201 attempt=2 request_id=true"),
            format!("GET {url} 200 attempt=1 request_id=true"),
        ]
    );
    assert_eq!(refusals.lock().unwrap().len(), 12);
    for (refusal, name) in refusals.lock().unwrap().iter().zip(
        ["idempotency-key", "x-api-key", "authorization", "host"]
            .iter()
            .cycle(),
    ) {
        assert_eq!(*refusal, HeaderError::Protected((*name).to_owned()));
        assert!(PROTECTED_HEADERS.contains(name));
    }

    // On the wire: the hooks' headers on every attempt, the real key, one
    // Idempotency-Key for both attempts of the create, no "hijacked".
    let heads = proxy.heads();
    let posts: Vec<&String> = heads.iter().filter(|h| h.starts_with("post ")).collect();
    assert_eq!(posts.len(), 2, "{heads:#?}");
    let key_of = |head: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix("idempotency-key: "))
            .map(str::to_owned)
    };
    assert!(key_of(posts[0]).is_some());
    assert_eq!(key_of(posts[0]), key_of(posts[1]));
    for (head, attempt) in posts.iter().zip(["1", "2"]) {
        assert!(head.contains("x-egress-token: route-42"), "{head}");
        assert!(head.contains(&format!("x-attempt: {attempt}")), "{head}");
        assert!(head.contains("via: 1.1 hook"), "{head}");
        assert!(head.contains(&format!("x-api-key: {}", f.key.to_ascii_lowercase())));
    }
    assert!(heads.iter().all(|h| !h.contains("hijacked")));

    // Opening the event stream runs the hooks too, once (a stream is not
    // retried by the client; its reader reconnects).
    let stream = client.listener().connect(Some(7)).await.unwrap();
    let listen = format!("{plain}/webhooks/listen");
    assert_eq!(
        requests.lock().unwrap().last().unwrap(),
        &format!("GET {listen} attempt=1 key=[redacted] idem=false")
    );
    assert_eq!(
        responses.lock().unwrap().last().unwrap(),
        &format!("GET {listen} 200 attempt=1 request_id=true")
    );
    let head = proxy.heads().pop().unwrap();
    assert!(
        head.starts_with("get ") && head.contains("/webhooks/listen"),
        "{head}"
    );
    assert!(head.contains("x-egress-token: route-42"), "{head}");
    assert!(head.contains("last-event-id: 7"), "{head}");
    drop(stream);

    // The dashboard's builder takes hooks too; the session's Bearer token
    // reads [redacted] to them, and the sign-in is never retried.
    let auth = Arc::<Mutex<Vec<String>>>::default();
    let saw = Arc::clone(&auth);
    let (email, password) = f.credentials();
    let dashboard = DashboardClient::builder()
        .base_url(&plain)
        .proxy(proxy.url())
        .on_request(move |request| {
            saw.lock().unwrap().push(format!(
                "{} {}",
                request.url().trim_start_matches(&plain),
                request.header("authorization").unwrap_or("-")
            ));
            request.set_header("x-egress-token", "route-42").unwrap();
        })
        .login(&email, &password)
        .await
        .unwrap();
    dashboard.api_keys().list().await.unwrap();
    assert_eq!(
        *auth.lock().unwrap(),
        ["/auth/login -", "/api-keys [redacted]"]
    );
    let last = proxy.heads().pop().unwrap();
    assert!(last.contains("x-egress-token: route-42"), "{last}");
    assert!(last.contains("authorization: bearer "), "{last}");
}

// ---------------------------------------------------------------------------
// The environment, in child processes.

/// What [`proxy_environment_child`] reads: the base URL, the key, the
/// client setting (`environment`, `no_proxy` or `proxy=<url>`), and a CA
/// PEM to trust.
const CHILD_BASE: &str = "SDK_NETWORK_TEST_BASE";
const CHILD_KEY: &str = "SDK_NETWORK_TEST_KEY";
const CHILD_MODE: &str = "SDK_NETWORK_TEST_MODE";
const CHILD_CA: &str = "SDK_NETWORK_TEST_CA";

/// Every variable reqwest's proxy matcher reads, which a child starts
/// without.
const PROXY_VARIABLES: [&str; 9] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "REQUEST_METHOD",
];

/// Runs [`proxy_environment_child`] in a process of its own with `env`
/// (and no other proxy variable); panics with its output when its call
/// fails.
async fn run_child(base: &str, key: &str, mode: &str, ca: &str, env: &[(&str, String)]) {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "network::proxy_environment_child",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_BASE, base)
        .env(CHILD_KEY, key)
        .env(CHILD_MODE, mode)
        .env(CHILD_CA, ca)
        .kill_on_drop(true);
    for name in PROXY_VARIABLES {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().await.unwrap();
    assert!(
        output.status.success(),
        "the child ({mode}, {env:?}) failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Not a test of its own: one SDK call in a child process whose
/// environment [`run_child`] set (it does nothing when run otherwise).
#[tokio::test]
#[ignore = "run by the_proxy_environment_variables_are_honoured_unless_turned_off in a child process"]
async fn proxy_environment_child() {
    let (Ok(base), Ok(key), Ok(mode), Ok(ca)) = (
        std::env::var(CHILD_BASE),
        std::env::var(CHILD_KEY),
        std::env::var(CHILD_MODE),
        std::env::var(CHILD_CA),
    ) else {
        eprintln!("run by the_proxy_environment_variables_are_honoured_unless_turned_off");
        return;
    };
    let mut client = builder(&base, &key)
        .max_retries(0)
        .add_root_certificate_pem(ca);
    client = match mode.as_str() {
        "environment" => client,
        "no_proxy" => client.no_proxy(),
        explicit => client.proxy(explicit.strip_prefix("proxy=").unwrap()),
    };
    let couriers = client.build().unwrap().couriers().list().await.unwrap();
    assert_eq!(couriers.len(), 1);
}

async fn the_proxy_environment_variables_are_honoured_unless_turned_off(server: &TestApp) {
    let f = server.fixture().await;
    let ca = Ca::new("private CA");
    let front = TlsFront::start(server, &ca, None).await;
    let proxy = RecordingProxy::start().await;
    let port = server_addr(server).port();
    let unresolvable_http = format!("http://{UNRESOLVABLE}:{port}/api/v1");
    let unresolvable_https = front.base(UNRESOLVABLE);
    let run = |base: String, mode: &str, env: Vec<(&'static str, String)>| {
        let (key, ca, mode) = (f.key.clone(), ca.pem.clone(), mode.to_owned());
        async move { run_child(&base, &key, &mode, &ca, &env).await }
    };

    // By default, as curl: HTTPS_PROXY for https://, HTTP_PROXY (here in
    // lower case) for http://. The names resolve nowhere: the calls went
    // through the proxy.
    run(
        unresolvable_https.clone(),
        "environment",
        vec![("HTTPS_PROXY", proxy.url())],
    )
    .await;
    run(
        unresolvable_http.clone(),
        "environment",
        vec![("http_proxy", proxy.url())],
    )
    .await;
    let lines = proxy.request_lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with(&format!("CONNECT {UNRESOLVABLE}:")));
    assert!(lines[1].starts_with(&format!("GET {unresolvable_http}/merchant-couriers")));

    // NO_PROXY exempts a host: 127.0.0.1 is reached directly.
    run(
        server.base.clone(),
        "environment",
        vec![
            ("HTTP_PROXY", proxy.url()),
            ("NO_PROXY", "localhost,127.0.0.1".into()),
        ],
    )
    .await;
    // no_proxy() ignores the variables (ALL_PROXY here, pointing at a
    // port where nothing listens, so a proxied call would fail).
    run(
        server.base.clone(),
        "no_proxy",
        vec![
            ("ALL_PROXY", "http://127.0.0.1:9".into()),
            ("HTTP_PROXY", proxy.url()),
        ],
    )
    .await;
    assert_eq!(proxy.request_lines().len(), 2, "nothing more went through");

    // An explicit proxy replaces the variables, NO_PROXY included.
    run(
        unresolvable_http.clone(),
        &format!("proxy={}", proxy.url()),
        vec![
            ("HTTP_PROXY", "http://127.0.0.1:9".into()),
            ("NO_PROXY", UNRESOLVABLE.into()),
        ],
    )
    .await;
    assert_eq!(proxy.request_lines().len(), 3);
}
