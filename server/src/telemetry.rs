//! W3C Trace Context (`traceparent`, `tracestate`) and OTLP export of the
//! server's spans (issue 31).
//!
//! Export is off unless `--otlp-endpoint` (or `OTEL_EXPORTER_OTLP_ENDPOINT`)
//! is set: then [`otlp_layer`] builds the exporter and a
//! `tracing-opentelemetry` layer, and flips `enabled`. The server's request
//! span then continues an incoming `traceparent`, and each change's outbox
//! row keeps the `traceparent` of the span that wrote it, which its webhook
//! deliveries (each a span of its own) and its listener events continue.
//!
//! Without an exporter the server has no OpenTelemetry spans of its own,
//! but it still passes the caller's trace on, as the W3C recommendation
//! asks of a hop that does not trace: a valid incoming `traceparent` is
//! kept for the request (`with_caller`), stored with the outbox rows the
//! request writes, and sent unchanged with their deliveries and listener
//! events, so the merchant's own trace still reaches its webhook receiver.
//! A request without the header costs one header lookup.

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{SpanContext, TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Which spans (and events inside them) `serve --otlp-endpoint` exports,
/// as an `EnvFilter` directive: the request span, each webhook delivery's
/// span, and the request's own log lines as their events; not the store's
/// debug spans (a group commit, a batched read), which belong to many
/// requests at once. Apart from the log filter (`RUST_LOG`, `-v`), so
/// quieter logs do not stop the export, nor do debug logs widen it.
pub const TRACE_FILTER: &str = "shipment_server=info,tower_http=info";

/// The W3C Trace Context header naming the caller's span.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C Trace Context header with vendors' extra state.
pub const TRACESTATE: &str = "tracestate";

/// Set once an OTLP layer is built; read on every request.
static ENABLED: AtomicBool = AtomicBool::new(false);

tokio::task_local! {
    /// The caller's valid `traceparent`, normalised, for the request being
    /// served ([`with_caller`]); what [`current_traceparent`] gives when no
    /// span of the server's own is exported.
    static CALLER: Option<String>;
}

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

/// The span context a `traceparent` value names, if it is valid (fields
/// at full width in lower-case hex, version `00` or a later one read as
/// `00`, non-zero ids); `tracestate` is not read.
fn parse(value: &str) -> Option<SpanContext> {
    // The propagator takes ids shorter than the format's: the W3C format
    // wants each field at its full width, in lower-case hex.
    let mut fields = value.split('-');
    let widths_right = [2, 32, 16, 2].iter().all(|&width| {
        fields.next().is_some_and(|f| {
            f.len() == width && f.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
    });
    if !widths_right {
        return None;
    }
    let cx = TraceContextPropagator::new().extract(&Traceparent(value));
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some(sc)
}

/// One `traceparent` value as the propagator reads headers, so a value
/// already in hand needs no header map of its own.
struct Traceparent<'a>(&'a str);

impl Extractor for Traceparent<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        (key == TRACEPARENT).then_some(self.0)
    }

    fn keys(&self) -> Vec<&str> {
        vec![TRACEPARENT]
    }
}

/// The caller's `traceparent`, normalised, to pass on ([`with_caller`]):
/// when the header is there and valid, and the server exports no spans of
/// its own (with an exporter, the request span continues the caller's
/// trace instead: [`adopt_caller`]).
pub(crate) fn caller(headers: &axum::http::HeaderMap) -> Option<String> {
    if enabled() {
        return None;
    }
    let value = headers.get(TRACEPARENT)?.to_str().ok()?;
    parse(value).map(|sc| traceparent(&sc))
}

/// Runs `request` (a request's handling) with the [`caller`]'s
/// `traceparent` at hand for [`current_traceparent`].
pub(crate) async fn with_caller<F: Future>(caller: Option<String>, request: F) -> F::Output {
    CALLER.scope(caller, request).await
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

/// The trace a change written now belongs to, as a `traceparent` to keep
/// with its outbox row: when spans are exported, the current span's (the
/// request's, or one inside it); otherwise the caller's, passed on
/// unchanged ([`with_caller`]). Call it in the request's task, not on the
/// group commit's: a group's rows come from several requests.
pub(crate) fn current_traceparent() -> Option<String> {
    if !enabled() {
        return CALLER.try_with(Clone::clone).ok().flatten();
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

/// Continues the trace named by a stored `traceparent` in `span` (a
/// delivery's) and returns the `traceparent` to send with the delivery:
/// the one naming `span` when spans are exported (`span` then has the
/// stored one as its parent); the stored one, unchanged, when they are
/// not; `None` without a stored value, or when it does not parse.
pub(crate) fn continue_trace(span: &tracing::Span, stored: Option<&str>) -> Option<String> {
    let parent = parse(stored?)?;
    if !enabled() {
        return Some(traceparent(&parent));
    }
    span.set_parent(Context::new().with_remote_span_context(parent))
        .ok()?;
    let own = span.context();
    let own = own.span();
    let sc = own.span_context();
    sc.is_valid().then(|| traceparent(sc))
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_is_read_and_written_back_the_same() {
        let sc = parse(VALID).expect("valid");
        assert_eq!(traceparent(&sc), VALID);
    }

    #[test]
    fn invalid_traceparents_are_refused() {
        for value in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nx: y",
        ] {
            assert!(parse(value).is_none(), "{value:?}");
        }
    }

    #[tokio::test]
    async fn without_an_exporter_the_callers_trace_is_passed_on_unchanged() {
        assert!(!enabled(), "no test of this binary builds an exporter");
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(TRACEPARENT, VALID.parse().unwrap());
        let kept = with_caller(caller(&headers), async { current_traceparent() }).await;
        assert_eq!(kept.as_deref(), Some(VALID));
        let sent = continue_trace(&tracing::Span::none(), kept.as_deref());
        assert_eq!(sent.as_deref(), Some(VALID));

        headers.insert(TRACEPARENT, "00-bad".parse().unwrap());
        let kept = with_caller(caller(&headers), async { current_traceparent() }).await;
        assert_eq!(kept, None, "an invalid header is not kept");
        assert_eq!(current_traceparent(), None, "outside a request");
        assert_eq!(continue_trace(&tracing::Span::none(), Some("junk")), None);
    }
}
