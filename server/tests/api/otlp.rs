//! `serve --otlp-endpoint`: the binary exports its spans with OTLP over
//! HTTP in binary protobuf (the default encoding) to a receiver made here,
//! which decodes them with `opentelemetry-proto`; its request span
//! continues an incoming W3C `traceparent`, read by the same strict parser
//! as without an exporter (several headers are none), whatever its
//! `sampled` flag says; a failed export is a warning; a start-up error
//! never shows the endpoint's password. (The whole trace, SDK to webhook,
//! is `tests/tests/trace.rs`.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_shipment-server");

type Requests = Arc<Mutex<Vec<ExportTraceServiceRequest>>>;

/// A collector answering every export with `status`: its base URL and
/// what it received (decoded, when it answers 200).
async fn collector(status: StatusCode) -> (String, Requests, Arc<AtomicUsize>) {
    let got = Requests::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let counted = calls.clone();
    let app = Router::new()
        .route(
            "/v1/traces",
            post(move |state, headers, body| {
                counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    match status {
                        StatusCode::OK => receive(state, headers, body).await,
                        other => other,
                    }
                }
            }),
        )
        .with_state(got.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got, calls)
}

/// `serve --otlp-endpoint <collector>` on a new SQLite file in `dir`, with
/// `envs`, stderr piped: the process and its address, once it answers
/// `/healthz`.
async fn traced_server(
    dir: &std::path::Path,
    collector: &str,
    envs: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    let db = format!("sqlite://{}", dir.join("a.db").display());
    let addr = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", &addr, "--database-url", &db])
        .args(["--otlp-endpoint", collector])
        .env_remove("DATABASE_URL")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
        .env_remove("OTEL_TRACES_SAMPLER")
        .env("NO_COLOR", "1")
        .envs(envs.iter().copied())
        .current_dir(dir)
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    for _ in 0..200 {
        let sent = client.get(format!("http://{addr}/healthz")).send().await;
        if sent.is_ok_and(|r| r.status().is_success()) {
            return (child, addr);
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut text = String::new();
            let mut stderr = child.stderr.take().unwrap();
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut text).await;
            panic!("the server ended ({status}): {text}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the server does not answer /healthz");
}

/// Every span the collector received.
fn spans(got: &Requests) -> Vec<Span> {
    got.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .cloned()
        .collect()
}

/// The request spans of the request with id `request_id`.
fn request_spans<'a>(spans: &'a [Span], request_id: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| {
            s.name == "request"
                && s.attributes.iter().any(|a| {
                    a.key == "request_id"
                        && a.value
                            .as_ref()
                            .is_some_and(|v| format!("{v:?}").contains(request_id))
                })
        })
        .collect()
}

async fn receive(State(got): State<Requests>, headers: HeaderMap, body: Bytes) -> StatusCode {
    if headers.get("content-type").and_then(|v| v.to_str().ok()) != Some("application/x-protobuf") {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE;
    }
    match ExportTraceServiceRequest::decode(body) {
        Ok(request) => {
            got.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(request);
            StatusCode::OK
        }
        Err(_) => StatusCode::BAD_REQUEST,
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn serve_exports_its_spans_as_otlp_protobuf_continuing_the_callers_trace() {
    let got = Requests::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let collector = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/v1/traces", post(receive))
        .with_state(got.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("a.db").display());
    let addr = format!("127.0.0.1:{}", free_port());
    let child = Command::new(BIN)
        .args(["serve", "--addr", &addr, "--database-url", &db])
        .args(["--otlp-endpoint", &collector])
        .env_remove("DATABASE_URL")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
        // Logs quieted as an operator might: the spans are filtered apart
        // (telemetry::TRACE_FILTER), so the export goes on.
        .env("RUST_LOG", "warn")
        .current_dir(dir.path())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let mut up = false;
    for _ in 0..200 {
        let sent = client
            .get(format!("http://{addr}/healthz"))
            .header("traceparent", format!("00-{trace_id}-{parent}-01"))
            .send()
            .await;
        if sent.is_ok_and(|r| r.status().is_success()) {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "the server answers /healthz");
    // SIGTERM: the server stops and flushes the spans still in the batch.
    crate::binary::terminate(child).await;

    let requests = got.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert!(!requests.is_empty(), "the exporter sent nothing");
    let service = requests[0].resource_spans[0]
        .resource
        .as_ref()
        .unwrap()
        .attributes
        .iter()
        .find(|a| a.key == "service.name")
        .and_then(|a| a.value.clone())
        .map(|v| format!("{v:?}"));
    assert!(
        service
            .as_deref()
            .is_some_and(|v| v.contains("shipment-server")),
        "{service:?}"
    );
    let spans: Vec<_> = requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .filter(|s| s.name == "request" && hex(&s.trace_id) == trace_id)
        .collect();
    assert!(!spans.is_empty(), "no request span of our trace");
    for span in spans {
        assert_eq!(
            hex(&span.parent_span_id),
            parent,
            "the caller's span is the parent"
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// With an exporter, the caller's `traceparent` is read as strictly as
/// without one: an id shorter than the format's, or two headers, give the
/// request a trace of its own; and a caller's `sampled=0` does not switch
/// off the server's trace, which still continues the caller's.
#[tokio::test]
async fn the_exporting_path_reads_traceparent_strictly_and_keeps_its_own_sampling() {
    let (url, got, _) = collector(StatusCode::OK).await;
    let dir = tempfile::tempdir().unwrap();
    let (child, addr) = traced_server(dir.path(), &url, &[("RUST_LOG", "warn")]).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let healthz = |id: &str| {
        client
            .get(format!("http://{addr}/healthz"))
            .header("x-request-id", id)
    };
    let unsampled = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    let other = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    for request in [
        healthz("short-ids").header("traceparent", "00-1-2-01"),
        healthz("two-headers")
            .header("traceparent", other)
            .header("traceparent", unsampled),
        healthz("unsampled").header("traceparent", unsampled),
    ] {
        assert!(request.send().await.unwrap().status().is_success());
    }
    crate::binary::terminate(child).await;

    let spans = spans(&got);
    for id in ["short-ids", "two-headers"] {
        let own = request_spans(&spans, id);
        assert_eq!(own.len(), 1, "{id}: one request span");
        assert!(own[0].parent_span_id.is_empty(), "{id}: no parent");
        let trace = hex(&own[0].trace_id);
        assert!(
            !trace.ends_with("0001")
                && trace != "0af7651916cd43dd8448eb211c80319c"
                && trace != "4bf92f3577b34da6a3ce929d0e0e4736",
            "{id}: a trace of its own, not {trace}"
        );
    }
    let unsampled_spans = request_spans(&spans, "unsampled");
    assert_eq!(unsampled_spans.len(), 1, "exported despite sampled=0");
    assert_eq!(
        hex(&unsampled_spans[0].trace_id),
        "0af7651916cd43dd8448eb211c80319c"
    );
    assert_eq!(hex(&unsampled_spans[0].parent_span_id), "b7ad6b7169203331");
}

/// A collector that refuses every export: the server says so on stderr
/// (the SDK itself logs nothing), once at the first failure and once more
/// at shutdown for those since, never more often than once a minute.
#[tokio::test]
async fn failed_exports_are_warned_of_without_flooding_the_log() {
    let (url, _, calls) = collector(StatusCode::INTERNAL_SERVER_ERROR).await;
    let dir = tempfile::tempdir().unwrap();
    // Batches every 50 ms, so several fail while the test runs.
    let (mut child, addr) = traced_server(
        dir.path(),
        &url,
        &[("RUST_LOG", "warn"), ("OTEL_BSP_SCHEDULE_DELAY", "50")],
    )
    .await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while calls.load(Ordering::SeqCst) < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the exporter never tried"
        );
        client
            .get(format!("http://{addr}/healthz"))
            .send()
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stderr = child.stderr.take().unwrap();
    crate::binary::terminate(child).await;
    let mut text = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut { stderr }, &mut text)
        .await
        .unwrap();
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("traces are being lost"))
        .collect();
    assert_eq!(warnings.len(), 2, "{text}");
    assert!(warnings[0].contains("WARN"), "{text}");
    assert!(warnings[0].contains("in 1 batch(es)"), "{text}");
    assert!(warnings[0].contains(&format!("{url}/")), "{text}");
    assert!(warnings[0].contains("500"), "{text}");
}

/// A start-up error about the endpoint names the flag and what is wrong,
/// never the password in it.
#[tokio::test]
async fn a_bad_endpoint_is_refused_without_showing_its_password() {
    for endpoint in [
        "http://otel:s3cret@[::1",
        "ftp://otel:s3cret@127.0.0.1:4318",
        "http://otel:s3cret@127.0.0.1:99999",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("sqlite://{}", dir.path().join("a.db").display());
        let out = Command::new(BIN)
            .args(["serve", "--addr", "127.0.0.1:0", "--database-url", &db])
            .args(["--otlp-endpoint", endpoint])
            .env_remove("DATABASE_URL")
            .current_dir(dir.path())
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{endpoint}: {stderr}");
        assert!(stderr.contains("--otlp-endpoint"), "{stderr}");
        assert!(!stderr.contains("s3cret"), "{stderr}");
    }
}

/// Merchants put tokens in their webhook URLs' queries: the delivery's
/// span (`url.full`) and its log line show the URL with the values
/// redacted.
#[tokio::test]
async fn a_webhook_urls_query_values_are_redacted_in_spans_and_logs() {
    let (url, got, _) = collector(StatusCode::OK).await;
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens there: the delivery fails, and is logged all the same.
    let hook = format!("https://127.0.0.1:{}/hooks?token=s3cret&v=1", free_port());
    let fixtures = dir.path().join("fixtures.toml");
    std::fs::write(
        &fixtures,
        format!(
            r#"
[[couriers]]
name = "Swift Couriers"
base_fee = 5.0
per_kg = 1.5
per_km = 0.1

[[merchants]]
name = "Acme"
email = "dev@acme.test"
password = "correct horse battery staple"
api_keys = ["sk_test_llQ4cEamIu7sKZT1jElDpUseMjgse0wW"]
couriers = ["Swift Couriers"]

[[merchants.webhooks]]
url = "{hook}"
signing_key = "whsec_bzyJmFcNxwFUC1I2JE6TzkHxqXDdub0B"
"#
        ),
    )
    .unwrap();
    let fixtures = fixtures.to_str().unwrap();
    let (mut child, addr) = traced_server(
        dir.path(),
        &url,
        &[
            ("RUST_LOG", "shipment_server=info"),
            ("SHIPMENT_FIXTURES", fixtures),
            ("SHIPMENT_ALLOW_PRIVATE_WEBHOOK_TARGETS", "true"),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    )
    .await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let key = "sk_test_llQ4cEamIu7sKZT1jElDpUseMjgse0wW";
    let couriers: serde_json::Value = client
        .get(format!("http://{addr}/api/v1/merchant-couriers"))
        .header("x-api-key", key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let created = client
        .post(format!("http://{addr}/api/v1/shipments"))
        .header("x-api-key", key)
        .json(&serde_json::json!({"courier_company_id": couriers["data"][0]["id"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let redacted = hook.replace("token=s3cret&v=1", "token=REDACTED&v=REDACTED");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let delivery = loop {
        let found = spans(&got)
            .into_iter()
            .find(|s| s.name == "webhook.delivery");
        if let Some(span) = found {
            break span;
        }
        assert!(tokio::time::Instant::now() < deadline, "no delivery span");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let shown: Vec<String> = delivery
        .attributes
        .iter()
        .filter(|a| a.key == "url.full")
        .map(|a| format!("{:?}", a.value))
        .collect();
    assert_eq!(shown.len(), 1, "{delivery:?}");
    assert!(shown[0].contains(&redacted), "{shown:?}");
    assert!(!format!("{delivery:?}").contains("s3cret"));

    let stderr = child.stderr.take().unwrap();
    crate::binary::terminate(child).await;
    let mut text = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut { stderr }, &mut text)
        .await
        .unwrap();
    let logged: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("webhook delivery"))
        .collect();
    assert!(!logged.is_empty(), "{text}");
    assert!(logged.iter().all(|l| l.contains(&redacted)), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
}
