//! One trace from the merchant's service to the webhook that comes back
//! (issue 31): a create made through the SDK inside the merchant's span,
//! the server's request span, and the webhook delivery's span share one
//! trace id with the expected parents, the delivery carries a
//! `traceparent` naming its span, and the change's listener event names
//! the span the delivery continues.
//!
//! Every span goes through the server's own OTLP exporter
//! (`shipment_server::telemetry::otlp_layer`, what `--otlp-endpoint`
//! builds), encoded as JSON, to a real OTLP/HTTP receiver made in this
//! test, which decodes what arrives; the test reads the spans back from
//! there. The SDK and the server run in this process, under one global
//! subscriber.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;
use shipment_sdk::model::CreateShipment;
use shipment_server::telemetry::{Otlp, OtlpProtocol, otlp_layer};
use shipment_testkit::{Db, TestServer, db_tests};
use tracing::Instrument as _;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// One span as the receiver decoded it.
#[derive(Debug, Clone)]
struct Exported {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    attributes: HashMap<String, Value>,
    /// Start and end, in nanoseconds since the Unix epoch.
    start: u64,
    end: u64,
}

/// The spans received so far, from every request the exporter made.
type Spans = Arc<Mutex<Vec<Exported>>>;

struct Collector {
    spans: Spans,
    otlp: Otlp,
}

/// The OTLP receiver and the global subscriber, made once for the binary:
/// the receiver on a runtime of its own (each test has its own runtime,
/// the exporter outlives them), the exporter outside any runtime (its
/// blocking client runs one of its own).
fn collector() -> &'static Collector {
    static COLLECTOR: OnceLock<Collector> = OnceLock::new();
    COLLECTOR.get_or_init(|| {
        std::thread::spawn(|| {
            let spans = Spans::default();
            let endpoint = start_receiver(spans.clone());
            let otlp = otlp_layer(&endpoint, OtlpProtocol::HttpJson).expect("the exporter");
            tracing_subscriber::registry()
                .with(
                    otlp.layer()
                        .with_filter(tracing_subscriber::filter::LevelFilter::INFO),
                )
                .init();
            Collector { spans, otlp }
        })
        .join()
        .expect("the collector starts")
    })
}

/// An OTLP/HTTP receiver at `http://127.0.0.1:PORT` (the exporter posts
/// to `/v1/traces`), decoding each request's JSON body into `spans`, and
/// refusing anything it cannot read (so a wrong encoding fails the test
/// rather than going unnoticed).
fn start_receiver(spans: Spans) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("non-blocking");
    let addr = listener.local_addr().expect("an address");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let app = Router::new()
                .route("/v1/traces", post(receive))
                .with_state(spans);
            let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
            axum::serve(listener, app).await.expect("the receiver runs");
        });
    });
    format!("http://{addr}")
}

async fn receive(State(spans): State<Spans>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let json = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE;
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST;
    };
    let Some(decoded) = decode(&request) else {
        return StatusCode::BAD_REQUEST;
    };
    spans
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(decoded);
    StatusCode::OK
}

/// The spans of an `ExportTraceServiceRequest` in OTLP's JSON mapping:
/// `resourceSpans[].scopeSpans[].spans[]`, ids in hex.
fn decode(request: &Value) -> Option<Vec<Exported>> {
    let mut out = Vec::new();
    for resource in request.get("resourceSpans")?.as_array()? {
        for scope in resource.get("scopeSpans")?.as_array()? {
            for span in scope.get("spans")?.as_array()? {
                let text = |key: &str| {
                    span.get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let attributes = span
                    .get("attributes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|a| {
                        let key = a.get("key")?.as_str()?.to_owned();
                        let value = a.get("value")?.as_object()?.values().next()?.clone();
                        Some((key, value))
                    })
                    .collect();
                // OTLP's JSON mapping writes 64-bit integers as strings.
                let nanos = |key: &str| text(key).parse().unwrap_or_default();
                out.push(Exported {
                    start: nanos("startTimeUnixNano"),
                    end: nanos("endTimeUnixNano"),
                    trace_id: text("traceId"),
                    span_id: text("spanId"),
                    parent_span_id: text("parentSpanId"),
                    name: text("name"),
                    attributes,
                });
            }
        }
    }
    Some(out)
}

/// Flushes the exporter and returns the spans of `trace_id` received,
/// waiting (up to 20 s) until `expected` of them are in.
async fn spans_of(trace_id: &str, expected: usize) -> Vec<Exported> {
    let collector = collector();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let provider = collector.otlp.provider.clone();
        tokio::task::spawn_blocking(move || provider.force_flush())
            .await
            .expect("the flush ran")
            .expect("the exporter flushes");
        let got: Vec<Exported> = collector
            .spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|s| s.trace_id == trace_id)
            .cloned()
            .collect();
        if got.len() >= expected || tokio::time::Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `00-{trace}-{span}-{flags}` split.
fn parse_traceparent(value: &str) -> (String, String, String) {
    let parts: Vec<&str> = value.split('-').collect();
    assert_eq!(parts.len(), 4, "traceparent {value}");
    assert_eq!(parts[0], "00", "traceparent {value}");
    (parts[1].into(), parts[2].into(), parts[3].into())
}

fn one<'a>(spans: &'a [Exported], what: &str, pick: impl Fn(&Exported) -> bool) -> &'a Exported {
    let found: Vec<&Exported> = spans.iter().filter(|s| pick(s)).collect();
    assert_eq!(found.len(), 1, "one {what} span expected in {spans:#?}");
    found[0]
}

async fn a_create_and_its_delivery_share_one_trace(db: Db) {
    collector();
    let server = TestServer::builder().database(db).start().await;
    let mut inbox = server.webhook_inbox().await;
    let sdk = server.sdk();
    let courier = sdk.couriers().list().await.expect("couriers")[0].id;
    let mut listener = sdk.listener().connect(None).await.expect("a listener");
    // The merchant's own span, as its checkout would have.
    let checkout = tracing::info_span!("checkout");
    let created = sdk
        .shipments()
        .create(&CreateShipment::new(courier).description("traced"))
        .send()
        .instrument(checkout.clone())
        .await
        .expect("a shipment")
        .into_inner();
    drop(checkout);
    let delivery = inbox.next().await;
    assert_eq!(delivery.shipment.code, created.code);
    let header = delivery
        .received
        .headers
        .get("traceparent")
        .expect("the delivery carries a traceparent")
        .to_str()
        .unwrap()
        .to_owned();
    let (trace_id, delivery_span_id, flags) = parse_traceparent(&header);
    assert_eq!(flags, "01", "sampled");

    // checkout, the SDK's request, the server's request, and the delivery
    // at least (the server's request has spans of its own in between).
    let spans = spans_of(&trace_id, 4).await;
    let checkout = one(&spans, "checkout", |s| s.name == "checkout");
    assert_eq!(
        checkout.parent_span_id, "",
        "the merchant's span is the root"
    );
    let sdk_span = one(&spans, "SDK request", |s| {
        s.attributes.get("http.route") == Some(&Value::from("/shipments"))
    });
    assert_eq!(sdk_span.parent_span_id, checkout.span_id);
    assert_eq!(sdk_span.name, "POST /shipments");
    assert_eq!(sdk_span.attributes["http.request.method"], "POST");
    assert_eq!(
        sdk_span.attributes["http.response.status_code"]
            .to_string()
            .trim_matches('"'),
        "201"
    );
    assert_eq!(sdk_span.attributes["server.address"], "127.0.0.1");
    let url = sdk_span.attributes["url.full"].as_str().unwrap();
    assert!(
        url.starts_with(server.base_url()) && url.ends_with("/shipments"),
        "{url}"
    );

    let request = one(&spans, "server request", |s| s.name == "request");
    assert_eq!(
        request.parent_span_id, sdk_span.span_id,
        "the server's request span continues the SDK's"
    );
    let delivery_span = one(&spans, "delivery", |s| s.name == "webhook.delivery");
    assert_eq!(
        delivery_span.span_id, delivery_span_id,
        "the delivery's traceparent names the delivery's span"
    );
    // The delivery's parent is the span current where the change was
    // written: the server's request span, or one inside it.
    let by_id: HashMap<&str, &Exported> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let mut parent = delivery_span.parent_span_id.as_str();
    let mut chain = Vec::new();
    while parent != request.span_id {
        let span = by_id.get(parent).unwrap_or_else(|| {
            panic!("parent {parent} of the delivery's chain {chain:?} not exported")
        });
        chain.push(span.name.clone());
        parent = span.parent_span_id.as_str();
    }

    // The change's listener event (what `shipctl listen` forwards) names
    // the same span the delivery continues: the one that wrote the change.
    let event = tokio::time::timeout(Duration::from_secs(10), listener.next())
        .await
        .expect("a listener event within 10 s")
        .expect("the stream stays open")
        .expect("a well-formed event");
    assert_eq!(event.delivery.shipment_code, created.code.as_str());
    let listened = event
        .delivery
        .traceparent
        .as_deref()
        .expect("the listener event carries a traceparent");
    let (listened_trace, listened_span, _) = parse_traceparent(listened);
    assert_eq!(listened_trace, trace_id);
    assert_eq!(listened_span, delivery_span.parent_span_id);

    // The picture of the trace in the book (docs/src/sdk.md) is this one,
    // drawn from what the receiver decoded:
    // `SHIPMENT_TRACE_SVG=$PWD/docs/src/trace.svg cargo test -p e2e --test trace`.
    if let Ok(path) = std::env::var("SHIPMENT_TRACE_SVG")
        && db == Db::Sqlite
    {
        std::fs::write(path, waterfall(&spans)).expect("the picture is written");
    }
    server.stop().await;
}

/// A waterfall of `spans` as SVG: one row per span, under its parent,
/// a bar from its start to its end on one time scale.
fn waterfall(spans: &[Exported]) -> String {
    // Depth-first from the root, children in the order they started.
    fn walk<'a>(
        spans: &'a [Exported],
        parent: &str,
        depth: usize,
        out: &mut Vec<(usize, &'a Exported)>,
    ) {
        let mut children: Vec<&Exported> = spans
            .iter()
            .filter(|s| s.parent_span_id == parent)
            .collect();
        children.sort_by_key(|s| s.start);
        for child in children {
            out.push((depth, child));
            walk(spans, &child.span_id, depth + 1, out);
        }
    }
    let mut rows = Vec::new();
    walk(spans, "", 0, &mut rows);
    let first = spans.iter().map(|s| s.start).min().unwrap_or_default();
    let last = spans.iter().map(|s| s.end).max().unwrap_or_default();
    let total = last.saturating_sub(first).max(1) as f64;
    let (label_width, bar_width, row_height) = (330.0, 520.0, 24.0);
    let height = row_height * (rows.len() as f64 + 2.0);
    let x = |t: u64| label_width + bar_width * (t.saturating_sub(first) as f64 / total);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"8\" y=\"16\" font-weight=\"bold\">trace {trace}… ({ms:.1} ms)</text>\n",
        w = label_width + bar_width + 70.0,
        trace = spans
            .first()
            .map_or("", |s| s.trace_id.get(..8).unwrap_or_default()),
        ms = total / 1e6,
    );
    for (i, (depth, span)) in rows.iter().enumerate() {
        let y = row_height * (i as f64 + 1.0) + 6.0;
        let who = match span.name.as_str() {
            "checkout" => ("the merchant's service", "#7b61ff"),
            n if n.starts_with("POST ") => ("shipment-sdk", "#2f80ed"),
            "webhook.delivery" => ("shipment-server, dispatcher", "#eb5757"),
            _ => ("shipment-server", "#27ae60"),
        };
        let (start, end) = (x(span.start), x(span.end).max(x(span.start) + 2.0));
        let name = span.name.replace('&', "&amp;").replace('<', "&lt;");
        svg.push_str(&format!(
            "<text x=\"{lx}\" y=\"{ty}\">{name} <tspan fill=\"#777\">({who})</tspan></text>\n\
             <rect x=\"{start:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"14\" fill=\"{color}\"/>\n\
             <text x=\"{after:.1}\" y=\"{ty}\" fill=\"#555\">{ms:.2} ms</text>\n",
            lx = 8.0 + 14.0 * *depth as f64,
            ty = y + 11.0,
            who = who.0,
            color = who.1,
            w = end - start,
            after = end + 4.0,
            ms = span.end.saturating_sub(span.start) as f64 / 1e6,
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

db_tests!(db; a_create_and_its_delivery_share_one_trace);
