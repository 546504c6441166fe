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
//!
//! Both ways the header is read by one strict parser (`caller_span`), and
//! any URL a log line or span shows goes through [`redact_url`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{SpanContext, TraceContextExt as _, TraceState, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanExporter};
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

/// What stands for a redacted part of a URL in logs and spans.
pub const REDACTED: &str = "REDACTED";

/// `url` as logs and span attributes may show it: without its user info,
/// and with the value of each query parameter (and the fragment) replaced
/// by [`REDACTED`], since merchants put tokens there
/// (`https://hooks.example/in?token=REDACTED`); a parameter without a
/// value is replaced whole. Text that is not a URL is not shown at all.
/// Every URL a log line or span names goes through here.
pub fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return format!("[not a URL, {REDACTED}]");
    };
    // Only URLs with a host have user info; the others refuse these, and
    // have none to remove.
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    if let Some(query) = parsed.query() {
        let redacted: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) => format!("{name}={REDACTED}"),
                None if pair.is_empty() => String::new(),
                None => REDACTED.to_owned(),
            })
            .collect();
        parsed.set_query(Some(&redacted.join("&")));
    }
    if parsed.fragment().is_some() {
        parsed.set_fragment(Some(REDACTED));
    }
    parsed.to_string()
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

/// The caller's span, read strictly on both paths (with and without an
/// exporter): exactly one `traceparent` header, valid by [`parse`]. A
/// request with several has none, as the W3C format asks: which of them
/// would be the caller's is not known. With it, the `tracestate` headers
/// (joined, as the format allows them to be split), when they are valid.
fn caller_span(headers: &axum::http::HeaderMap) -> Option<SpanContext> {
    let mut values = headers.get_all(TRACEPARENT).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let sc = parse(value.to_str().ok()?)?;
    let states: Option<Vec<&str>> = headers
        .get_all(TRACESTATE)
        .iter()
        .map(|v| v.to_str().ok())
        .collect();
    let state = states
        .filter(|s| !s.is_empty())
        .and_then(|s| s.join(",").parse::<TraceState>().ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags(),
        true,
        state,
    ))
}

/// The caller's `traceparent`, normalised, to pass on ([`with_caller`]):
/// when the header is there and valid ([`caller_span`]), and the server
/// exports no spans of its own (with an exporter, the request span
/// continues the caller's trace instead: [`adopt_caller`]).
pub(crate) fn caller(headers: &axum::http::HeaderMap) -> Option<String> {
    if enabled() {
        return None;
    }
    caller_span(headers).map(|sc| traceparent(&sc))
}

/// Runs `request` (a request's handling) with the [`caller`]'s
/// `traceparent` at hand for [`current_traceparent`].
pub(crate) async fn with_caller<F: Future>(caller: Option<String>, request: F) -> F::Output {
    CALLER.scope(caller, request).await
}

/// Makes the caller's span (its `traceparent`, if valid by the same
/// [`caller_span`] as without an exporter) the parent of `span`. Does
/// nothing unless spans are exported, or without the header.
pub(crate) fn adopt_caller(span: &tracing::Span, headers: &axum::http::HeaderMap) {
    if !enabled() {
        return;
    }
    if let Some(sc) = caller_span(headers) {
        // An error means the span is disabled: nothing to parent.
        let _ = span.set_parent(Context::new().with_remote_span_context(sc));
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

    #[test]
    fn one_strict_parser_reads_the_callers_header_and_several_are_none() {
        let headers = |values: &[&str]| {
            let mut map = axum::http::HeaderMap::new();
            for v in values {
                map.append(TRACEPARENT, v.parse().unwrap());
            }
            map
        };
        let sc = caller_span(&headers(&[VALID])).expect("valid");
        assert!(sc.is_remote());
        assert_eq!(traceparent(&sc), VALID);
        // What the propagator alone adopted: ids shorter than the format's.
        assert!(caller_span(&headers(&["00-1-2-01"])).is_none());
        let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        assert!(caller_span(&headers(&[VALID, other])).is_none());
        assert!(caller_span(&headers(&[VALID, VALID])).is_none());
        assert!(caller_span(&headers(&[])).is_none());

        let mut with_state = headers(&[VALID]);
        with_state.append(TRACESTATE, "congo=t61rcWkgMzE".parse().unwrap());
        with_state.append(TRACESTATE, "rojo=00f067aa0ba902b7".parse().unwrap());
        let sc = caller_span(&with_state).unwrap();
        assert_eq!(sc.trace_state().get("rojo"), Some("00f067aa0ba902b7"));
        assert_eq!(sc.trace_state().get("congo"), Some("t61rcWkgMzE"));
    }

    #[test]
    fn urls_lose_their_user_info_and_query_values_in_logs_and_spans() {
        for (url, shown) in [
            (
                "https://hooks.example/in?token=s3cret&v=2",
                "https://hooks.example/in?token=REDACTED&v=REDACTED",
            ),
            (
                "https://user:s3cret@hooks.example:8443/a/b?s3cret#s3cret",
                "https://hooks.example:8443/a/b?REDACTED#REDACTED",
            ),
            ("https://hooks.example/in", "https://hooks.example/in"),
            ("https://hooks.example/in?", "https://hooks.example/in?"),
            ("http://s3cret@127.0.0.1:4318", "http://127.0.0.1:4318/"),
            (
                "https://h.example/?a=1&&b",
                "https://h.example/?a=REDACTED&&REDACTED",
            ),
            ("not a url s3cret", "[not a URL, REDACTED]"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
            assert!(!redact_url(url).contains("s3cret"));
        }
    }

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
