//! OTLP export of the server's spans (`serve --otlp-endpoint`), built only
//! with the crate's `otlp` feature: the exporter, its HTTP client and the
//! protobuf messages are what only operators who collect traces need, and
//! they were about a twentieth of a cold build (BENCHMARKS.md, "Cold
//! build"). The container image and CI build with it; the W3C trace
//! context passed through without an exporter ([`super`]) needs none of it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanExporter};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::format::{OtlpProtocol, REDACTED, redact_url, traceparent};

/// Set once an OTLP layer is built; read on every request.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether an OTLP layer was built in this process.
pub(super) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Makes `parent` (a caller's span) the parent of `span`.
pub(super) fn set_parent(span: &tracing::Span, parent: SpanContext) {
    // An error means the span is disabled: nothing to parent.
    let _ = span.set_parent(Context::new().with_remote_span_context(parent));
}

/// The `traceparent` naming the current span, when it is a valid
/// OpenTelemetry span.
pub(super) fn current_span_traceparent() -> Option<String> {
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| traceparent(sc))
}

/// Makes `parent` the parent of `span` and returns the `traceparent`
/// naming `span`.
pub(super) fn continue_in(span: &tracing::Span, parent: SpanContext) -> Option<String> {
    span.set_parent(Context::new().with_remote_span_context(parent))
        .ok()?;
    let own = span.context();
    let own = own.span();
    let sc = own.span_context();
    sc.is_valid().then(|| traceparent(sc))
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
/// `shipment-server`. A batch that cannot be exported is logged as a
/// warning, at most once a minute.
///
/// Every span the server starts is sampled, whatever a caller's
/// `traceparent` says of its own: a caller's `sampled=0` does not switch
/// off the operator's traces (an outside caller could otherwise hide its
/// requests from them). An operator who wants the caller's decision sets
/// the standard `OTEL_TRACES_SAMPLER` (such as `parentbased_always_on`),
/// which is then used instead.
///
/// Build it outside a tokio runtime (`main` does, before starting one): the
/// exporter's HTTP client is the blocking one, which runs its own. An
/// error never shows the endpoint's user info or query.
pub fn otlp_layer(endpoint: &str, protocol: OtlpProtocol) -> anyhow::Result<Otlp> {
    use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
    let (url, shown, scrub) = traces_url(endpoint)?;
    let protocol = match protocol {
        OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
        OtlpProtocol::HttpJson => Protocol::HttpJson,
    };
    let client = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| {
            anyhow::anyhow!("--otlp-endpoint `{shown}`: {}", scrub.text(&e.to_string()))
        })?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(protocol)
        .with_endpoint(url)
        .build()
        .map_err(|e| {
            anyhow::anyhow!("--otlp-endpoint `{shown}`: {}", scrub.text(&e.to_string()))
        })?;
    let exporter = Reporting {
        inner: exporter,
        losses: Arc::new(ExportLosses::new(shown, scrub)),
    };
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("shipment-server")
        .build();
    let mut provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource);
    if std::env::var_os("OTEL_TRACES_SAMPLER").is_none() {
        provider = provider.with_sampler(Sampler::AlwaysOn);
    }
    let provider = provider.build();
    let tracer = provider.tracer("shipment-server");
    ENABLED.store(true, Ordering::Relaxed);
    Ok(Otlp { tracer, provider })
}

/// The URL spans are sent to (`<endpoint>/v1/traces`), the endpoint as
/// logs may show it ([`redact_url`]), and what to scrub from errors. The
/// endpoint may carry a password: errors show it redacted, or not at all
/// when it does not parse (a parse error names no part of it).
fn traces_url(endpoint: &str) -> anyhow::Result<(String, String, Scrub)> {
    let url = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let parsed =
        url::Url::parse(&url).map_err(|e| anyhow::anyhow!("--otlp-endpoint is not a URL: {e}"))?;
    let shown = redact_url(endpoint);
    if !matches!(parsed.scheme(), "http" | "https") {
        anyhow::bail!("--otlp-endpoint `{shown}` must be an http:// or https:// URL");
    }
    Ok((url, shown, Scrub::of(&parsed)))
}

/// Takes the endpoint's secrets (its user name and password, as written
/// and decoded) out of a text, such as an error that quotes the URL.
#[derive(Debug, Default)]
struct Scrub(Vec<String>);

impl Scrub {
    fn of(url: &url::Url) -> Scrub {
        let mut secrets = Vec::new();
        for part in [url.username(), url.password().unwrap_or("")] {
            if part.is_empty() {
                continue;
            }
            secrets.push(part.to_owned());
            if let Ok(decoded) = percent_decode(part) {
                secrets.push(decoded);
            }
        }
        Scrub(secrets)
    }

    fn text(&self, text: &str) -> String {
        self.0.iter().fold(text.to_owned(), |text, secret| {
            text.replace(secret.as_str(), REDACTED)
        })
    }
}

/// `%XX` escapes decoded, when they make UTF-8.
fn percent_decode(text: &str) -> Result<String, ()> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).map_err(|_| ())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| ())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ())
}

/// The exporter, counting what it fails to send so an operator learns
/// that traces are being lost: the SDK itself logs nothing of it.
#[derive(Debug)]
struct Reporting<E> {
    inner: E,
    losses: Arc<ExportLosses>,
}

impl<E: SpanExporter> SpanExporter for Reporting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        if let Err(e) = &result
            && let Some(warning) = self.losses.failed(spans, &e.to_string(), Instant::now())
        {
            tracing::warn!("{warning}");
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let result = self.inner.shutdown_with_timeout(timeout);
        if let Some(warning) = self.losses.unreported() {
            tracing::warn!("{warning}");
        }
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

/// How often a failed export may be logged: the first failure at once,
/// then at most one line a minute with what was lost meanwhile.
pub const EXPORT_WARNING_INTERVAL: Duration = Duration::from_secs(60);

/// Failed exports counted since the last warning, and when that was.
#[derive(Debug)]
struct ExportLosses {
    endpoint: String,
    scrub: Scrub,
    state: Mutex<Lost>,
}

#[derive(Debug, Default)]
struct Lost {
    warned_at: Option<Instant>,
    batches: u64,
    spans: u64,
    last_error: String,
}

impl ExportLosses {
    fn new(endpoint: String, scrub: Scrub) -> ExportLosses {
        ExportLosses {
            endpoint,
            scrub,
            state: Mutex::new(Lost::default()),
        }
    }

    /// Counts a batch of `spans` that could not be exported; the warning
    /// to log now, if one is due.
    fn failed(&self, spans: usize, error: &str, now: Instant) -> Option<String> {
        let mut lost = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        lost.batches += 1;
        lost.spans += spans as u64;
        lost.last_error = self.scrub.text(error);
        let due = lost
            .warned_at
            .is_none_or(|at| now.duration_since(at) >= EXPORT_WARNING_INTERVAL);
        if !due {
            return None;
        }
        lost.warned_at = Some(now);
        Some(self.warning(&mut lost))
    }

    /// The warning for what was lost since the last one, if anything was
    /// (at shutdown, so nothing counted goes unsaid).
    fn unreported(&self) -> Option<String> {
        let mut lost = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (lost.batches > 0).then(|| self.warning(&mut lost))
    }

    fn warning(&self, lost: &mut Lost) -> String {
        let text = format!(
            "traces are being lost: {} span(s) in {} batch(es) could not be exported to {} \
             (the last error: {}); further failures are logged at most once a minute",
            lost.spans, lost.batches, self.endpoint, lost.last_error
        );
        lost.batches = 0;
        lost.spans = 0;
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoints_password_never_shows_in_a_start_up_error() {
        for endpoint in [
            "http://user:s3cret@[::1",
            "ftp://user:s3cret@127.0.0.1:4318",
            "ftp://s3cret@127.0.0.1:4318",
            "http://user:s3cret@127.0.0.1:99999",
        ] {
            if let Err(e) = traces_url(endpoint) {
                let text = format!("{e:#}");
                assert!(!text.contains("s3cret"), "{text}");
                assert!(!text.contains("s3cr%65t"), "{text}");
                assert!(text.contains("--otlp-endpoint"), "{text}");
            } else {
                panic!("{endpoint} was taken");
            }
        }
        let (url, shown, _) = traces_url("http://user:s3cret@127.0.0.1:4318/?k=s3cret").unwrap();
        assert!(url.ends_with("/v1/traces"), "{url}");
        assert_eq!(shown, "http://127.0.0.1:4318/?k=REDACTED");
        let scrub = Scrub::of(&url::Url::parse("http://us%65r:s3cr%65t@h.example/").unwrap());
        assert_eq!(
            scrub.text("no route to http://us%65r:s3cr%65t@h.example/ (as s3cret)"),
            "no route to http://REDACTED:REDACTED@h.example/ (as REDACTED)"
        );
    }

    #[test]
    fn failed_exports_warn_at_once_then_at_most_once_a_minute() {
        let losses = ExportLosses::new(
            "http://127.0.0.1:4318/".into(),
            Scrub(vec!["s3cret".into()]),
        );
        let start = Instant::now();
        let first = losses
            .failed(3, "refused by s3cret", start)
            .expect("the first warns");
        assert!(first.contains("3 span(s) in 1 batch(es)"), "{first}");
        assert!(first.contains("http://127.0.0.1:4318/"), "{first}");
        assert!(!first.contains("s3cret"), "{first}");
        assert_eq!(losses.failed(5, "e", start + Duration::from_secs(1)), None);
        let just_before = start + EXPORT_WARNING_INTERVAL - Duration::from_millis(1);
        assert_eq!(losses.failed(7, "e", just_before), None);
        let next = losses
            .failed(1, "e", start + EXPORT_WARNING_INTERVAL)
            .expect("a minute later");
        assert!(next.contains("13 span(s) in 3 batch(es)"), "{next}");
        assert_eq!(losses.unreported(), None, "all said");
        assert_eq!(losses.failed(2, "e", start + EXPORT_WARNING_INTERVAL), None);
        let last = losses.unreported().expect("said at shutdown");
        assert!(last.contains("2 span(s) in 1 batch(es)"), "{last}");
    }
}
