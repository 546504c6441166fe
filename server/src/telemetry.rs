//! W3C Trace Context (`traceparent`, `tracestate`) and OTLP export of the
//! server's spans (issue 31).
//!
//! Export is off unless `--otlp-endpoint` (or `OTEL_EXPORTER_OTLP_ENDPOINT`)
//! is set: then [`otlp_layer`] builds the exporter and a
//! `tracing-opentelemetry` layer, and flips `enabled`. Only then does the
//! request path look at an incoming `traceparent`, and the outbox keep one
//! per change: without an exporter no OpenTelemetry span exists, and the
//! request path stays what it was (no extra allocation, no extra work).

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{SpanContext, TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The W3C Trace Context header naming the caller's span.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C Trace Context header with vendors' extra state.
pub const TRACESTATE: &str = "tracestate";

/// Set once an OTLP layer is built; read on every request.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether spans are OpenTelemetry spans in this process (an OTLP layer
/// was built), so trace context is worth reading and keeping.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The OTLP encodings over HTTP (`OTEL_EXPORTER_OTLP_PROTOCOL`'s names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OtlpProtocol {
    /// `http/protobuf`: binary protobuf, the OTLP default.
    #[default]
    #[value(name = "http/protobuf")]
    HttpProtobuf,
    /// `http/json`: protobuf's JSON mapping.
    #[value(name = "http/json")]
    HttpJson,
}

/// What [`otlp_layer`] makes: the tracer for the layer added to the
/// subscriber ([`Otlp::layer`]), and the provider, to
/// [`shutdown`](SdkTracerProvider::shutdown) before the process exits (it
/// flushes the spans not yet sent).
pub struct Otlp {
    tracer: opentelemetry_sdk::trace::SdkTracer,
    /// The provider exporting the spans in batches.
    pub provider: SdkTracerProvider,
}

impl Otlp {
    /// The `tracing` layer turning spans into OpenTelemetry spans for
    /// this exporter.
    pub fn layer<S>(
        &self,
    ) -> tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::SdkTracer>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        tracing_opentelemetry::layer().with_tracer(self.tracer.clone())
    }
}

/// An exporter sending spans to `endpoint` (a base URL, as
/// `OTEL_EXPORTER_OTLP_ENDPOINT`: `/v1/traces` is appended) in batches from
/// a thread of its own, and the layer feeding it, under the service name
/// `shipment-server`.
///
/// Build it outside a tokio runtime (`main` does, before starting one): the
/// exporter's HTTP client is the blocking one, which runs its own.
pub fn otlp_layer(endpoint: &str, protocol: OtlpProtocol) -> anyhow::Result<Otlp> {
    use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
    let url = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let parsed = url::Url::parse(&url)
        .map_err(|e| anyhow::anyhow!("--otlp-endpoint `{endpoint}` is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        anyhow::bail!("--otlp-endpoint `{endpoint}` must be an http:// or https:// URL");
    }
    let protocol = match protocol {
        OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
        OtlpProtocol::HttpJson => Protocol::HttpJson,
    };
    let client = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(protocol)
        .with_endpoint(url)
        .build()?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("shipment-server")
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("shipment-server");
    ENABLED.store(true, Ordering::Relaxed);
    Ok(Otlp { tracer, provider })
}

/// Reads W3C Trace Context from axum's headers.
struct Headers<'a>(&'a axum::http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(axum::http::HeaderName::as_str).collect()
    }
}

/// Makes the caller's span (its `traceparent`, if valid) the parent of
/// `span`. Does nothing unless spans are exported, or without the header.
pub(crate) fn adopt_caller(span: &tracing::Span, headers: &axum::http::HeaderMap) {
    if !enabled() || !headers.contains_key(TRACEPARENT) {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&Headers(headers));
    if cx.span().span_context().is_remote() {
        // An error means the span is disabled: nothing to parent.
        let _ = span.set_parent(cx);
    }
}

/// The `traceparent` naming the current span, when spans are exported and
/// the current one is an OpenTelemetry span; kept with an outbox row so the
/// delivery continues the trace of the request that made the change.
pub(crate) fn current_traceparent() -> Option<String> {
    if !enabled() {
        return None;
    }
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| traceparent(sc))
}

/// `00-{trace id}-{span id}-{flags}`.
pub(crate) fn traceparent(sc: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    )
}

/// Makes the span named by a stored `traceparent` the parent of `span`
/// (a delivery's), and returns the `traceparent` naming `span` itself, for
/// the delivery's request; `None` (and `span` left alone) when spans are
/// not exported or the stored value does not parse.
pub(crate) fn continue_trace(span: &tracing::Span, stored: Option<&str>) -> Option<String> {
    let stored = stored.filter(|_| enabled())?;
    let mut headers = axum::http::HeaderMap::new();
    headers.insert(TRACEPARENT, stored.parse().ok()?);
    let cx: Context = TraceContextPropagator::new().extract(&Headers(&headers));
    if !cx.span().span_context().is_valid() {
        return None;
    }
    span.set_parent(cx).ok()?;
    let own = span.context();
    let own = own.span();
    let sc = own.span_context();
    sc.is_valid().then(|| traceparent(sc))
}
