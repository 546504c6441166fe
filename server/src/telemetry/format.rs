//! How the server writes what telemetry shows or sends: the W3C
//! `traceparent` text, URLs as logs and spans may show them, and the OTLP
//! encodings' names. A leaf, so both the trace context (`mod.rs`) and the
//! exporter (`export.rs`) use it without depending on each other.

use opentelemetry::trace::SpanContext;

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

/// `00-{trace id}-{span id}-{flags}`.
pub(crate) fn traceparent(sc: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
