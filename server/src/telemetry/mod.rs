//! W3C Trace Context (`traceparent`, `tracestate`) and OTLP export of the
//! server's spans (issue 31).
//!
//! Export needs the crate's `otlp` feature (`export.rs`) and is off unless
//! `--otlp-endpoint` (or `OTEL_EXPORTER_OTLP_ENDPOINT`) is set: then
//! `otlp_layer` builds the exporter and a
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

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{SpanContext, TraceContextExt as _, TraceState};
use opentelemetry_sdk::propagation::TraceContextPropagator;

#[cfg(feature = "otlp")]
mod export;
mod format;

#[cfg(feature = "otlp")]
pub use export::{EXPORT_WARNING_INTERVAL, Otlp, otlp_layer};
pub(crate) use format::traceparent;
pub use format::{OtlpProtocol, REDACTED, redact_url};

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

tokio::task_local! {
    /// The caller's valid `traceparent`, normalised, for the request being
    /// served ([`with_caller`]); what [`current_traceparent`] gives when no
    /// span of the server's own is exported.
    static CALLER: Option<String>;
}

/// Whether spans are OpenTelemetry spans in this process (an OTLP layer
/// was built), so trace context is worth reading and keeping.
#[cfg(feature = "otlp")]
pub(crate) fn enabled() -> bool {
    export::enabled()
}

/// Never: this build has no exporter (the `otlp` feature is off).
#[cfg(not(feature = "otlp"))]
pub(crate) const fn enabled() -> bool {
    false
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
#[cfg_attr(not(feature = "otlp"), allow(unused_variables))]
pub(crate) fn adopt_caller(span: &tracing::Span, headers: &axum::http::HeaderMap) {
    #[cfg(feature = "otlp")]
    if enabled()
        && let Some(sc) = caller_span(headers)
    {
        export::set_parent(span, sc);
    }
}

/// The trace a change written now belongs to, as a `traceparent` to keep
/// with its outbox row: when spans are exported, the current span's (the
/// request's, or one inside it); otherwise the caller's, passed on
/// unchanged ([`with_caller`]). Call it in the request's task, not on the
/// group commit's: a group's rows come from several requests.
pub(crate) fn current_traceparent() -> Option<String> {
    #[cfg(feature = "otlp")]
    if enabled() {
        return export::current_span_traceparent();
    }
    CALLER.try_with(Clone::clone).ok().flatten()
}

/// Continues the trace named by a stored `traceparent` in `span` (a
/// delivery's) and returns the `traceparent` to send with the delivery:
/// the one naming `span` when spans are exported (`span` then has the
/// stored one as its parent); the stored one, unchanged, when they are
/// not; `None` without a stored value, or when it does not parse.
#[cfg_attr(not(feature = "otlp"), allow(unused_variables))]
pub(crate) fn continue_trace(span: &tracing::Span, stored: Option<&str>) -> Option<String> {
    let parent = parse(stored?)?;
    #[cfg(feature = "otlp")]
    if enabled() {
        return export::continue_in(span, parent);
    }
    Some(traceparent(&parent))
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
}
