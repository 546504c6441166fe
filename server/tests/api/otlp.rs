//! `serve --otlp-endpoint`: the binary exports its spans with OTLP over
//! HTTP in binary protobuf (the default encoding) to a receiver made here,
//! which decodes them with `opentelemetry-proto`; its request span
//! continues an incoming W3C `traceparent`. (The whole trace, SDK to
//! webhook, is `tests/tests/trace.rs`.)

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_shipment-server");

type Requests = Arc<Mutex<Vec<ExportTraceServiceRequest>>>;

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
