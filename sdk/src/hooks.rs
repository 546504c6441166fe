//! Request and response hooks ([`Builder::on_request`](crate::Builder::on_request),
//! [`Builder::on_response`](crate::Builder::on_response)): the merchant's
//! own code, run on every attempt the client sends, for an egress gateway's
//! header or a metric.
//!
//! A hook sees the method, the URL and the headers of an attempt (and the
//! status of its answer), and a request hook may add headers. It cannot
//! change what the SDK's retry and idempotency rules rest on: the method,
//! the URL, the body, the credential and the `Idempotency-Key` are not
//! its to change ([`PROTECTED_HEADERS`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};

/// Headers a request hook may not set, replace or remove, and why:
///
/// - `x-api-key`, `authorization`: the client's credential. A hook
///   cannot swap it (or send a second one); a hook sees it as
///   `[redacted]`, so one that logs headers never logs a key.
/// - `idempotency-key`: the key a create carries is the same on every
///   retry of the call, which is what keeps a retry from making a second
///   shipment.
/// - `accept`, `last-event-id`: what the SDK reads the answer as (JSON,
///   or an event stream) and where an event stream resumes, so that a
///   reconnected listener misses no change.
/// - `content-type`, `content-length`, `transfer-encoding`, `host`,
///   `connection`, `te`, `upgrade`, `proxy-authorization`: how the body and
///   the connection are framed, and the proxy's credential (from
///   [`proxy`](crate::Builder::proxy)'s URL), which the HTTP stack sets.
pub const PROTECTED_HEADERS: &[&str] = &[
    "x-api-key",
    "authorization",
    "idempotency-key",
    "accept",
    "last-event-id",
    "content-type",
    "content-length",
    "transfer-encoding",
    "host",
    "connection",
    "te",
    "upgrade",
    "proxy-authorization",
];

/// What a hook sees in place of a credential's value.
const REDACTED: &str = "[redacted]";

/// A request hook, as [`Builder::on_request`](crate::Builder::on_request)
/// keeps it.
pub(crate) type RequestHook = Arc<dyn Fn(&mut OutgoingRequest<'_>) + Send + Sync>;

/// A response hook, as [`Builder::on_response`](crate::Builder::on_response)
/// keeps it.
pub(crate) type ResponseHook = Arc<dyn Fn(&IncomingResponse<'_>) + Send + Sync>;

/// A key-expiry hook, as
/// [`Builder::on_key_expiry_warning`](crate::Builder::on_key_expiry_warning)
/// keeps it.
pub(crate) type KeyExpiryHook = Arc<dyn Fn(&str) + Send + Sync>;

/// The hooks of a client, in the order they were added.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pub request: Vec<RequestHook>,
    pub response: Vec<ResponseHook>,
    pub key_expiry: Vec<KeyExpiryHook>,
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("on_request", &self.request.len())
            .field("on_response", &self.response.len())
            .field("on_key_expiry_warning", &self.key_expiry.len())
            .finish()
    }
}

impl Hooks {
    /// Runs the request hooks on an attempt about to be sent.
    pub fn before(&self, method: &Method, url: &Url, headers: &mut HeaderMap, attempt: u32) {
        if self.request.is_empty() {
            return;
        }
        let mut request = OutgoingRequest {
            method,
            url,
            headers,
            attempt,
        };
        for hook in &self.request {
            hook(&mut request);
        }
    }

    /// Runs the response hooks on the answer to an attempt (its headers
    /// are in; the body is not read yet).
    pub fn after(&self, response: &IncomingResponse<'_>) {
        for hook in &self.response {
            hook(response);
        }
    }

    /// Whether there is any hook to run.
    pub fn any(&self) -> bool {
        !self.request.is_empty() || !self.response.is_empty()
    }
}

/// One attempt of a call, about to be sent: what an
/// [`on_request`](crate::Builder::on_request) hook sees and may add
/// headers to.
///
/// ```
/// # fn hook(request: &mut shipment_sdk::hooks::OutgoingRequest<'_>) {
/// if request.url().starts_with("https://shipments.example.com/") {
///     request.set_header("x-egress-route", "shipments").unwrap();
/// }
/// # }
/// ```
pub struct OutgoingRequest<'a> {
    method: &'a Method,
    url: &'a Url,
    headers: &'a mut HeaderMap,
    attempt: u32,
}

impl fmt::Debug for OutgoingRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutgoingRequest")
            .field("method", &self.method())
            .field("url", &self.url())
            .field("attempt", &self.attempt)
            .field("headers", &DebugHeaders(self.headers))
            .finish()
    }
}

impl OutgoingRequest<'_> {
    /// `GET`, `POST`, ...
    pub fn method(&self) -> &str {
        self.method.as_str()
    }

    /// The full URL, query included.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// Which attempt of the call this is: 1, then 2 for the first retry,
    /// and so on. Hooks run again on every attempt.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// A header's value (the first one, if several), or `None` when absent
    /// or not text. The credential headers read `[redacted]`. `name` is
    /// case-insensitive.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_of(self.headers, name)
    }

    /// Every header the SDK and earlier hooks set on this attempt, as
    /// (lower-case name, value), the credential's value as `[redacted]`;
    /// values that are not text are left out. The HTTP stack adds a few
    /// more when sending (`host`, `content-length`, `accept-encoding`).
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        headers_of(self.headers)
    }

    /// Sets a header, replacing any value it had (an earlier hook's, or
    /// the SDK's `User-Agent`).
    ///
    /// # Errors
    ///
    /// [`HeaderError::Protected`] for one of [`PROTECTED_HEADERS`];
    /// [`HeaderError::InvalidName`] or [`HeaderError::InvalidValue`] for
    /// what a header cannot carry (a value with a newline, say). The
    /// attempt is sent either way, without the refused header.
    pub fn set_header(&mut self, name: &str, value: &str) -> Result<(), HeaderError> {
        let (name, value) = checked(name, value)?;
        self.headers.insert(name, value);
        Ok(())
    }

    /// Adds a value to a header, keeping those it had (a header that may
    /// appear several times, such as `Via`).
    ///
    /// # Errors
    ///
    /// As [`set_header`](Self::set_header).
    pub fn append_header(&mut self, name: &str, value: &str) -> Result<(), HeaderError> {
        let (name, value) = checked(name, value)?;
        self.headers.append(name, value);
        Ok(())
    }
}

/// The answer to one attempt, its headers in and its body not yet read:
/// what an [`on_response`](crate::Builder::on_response) hook sees. Every
/// answer counts, a 429 or 503 the client retries and a 3xx included; an
/// attempt that got no answer (a connection refused or reset, a time-out)
/// has none.
///
/// ```
/// # fn hook(response: &shipment_sdk::hooks::IncomingResponse<'_>) {
/// println!(
///     "{} {} -> {} in {:?} (attempt {})",
///     response.method(),
///     response.url(),
///     response.status(),
///     response.elapsed(),
///     response.attempt(),
/// );
/// # }
/// ```
pub struct IncomingResponse<'a> {
    pub(crate) method: &'a Method,
    pub(crate) url: &'a Url,
    pub(crate) status: u16,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) attempt: u32,
    pub(crate) elapsed: Duration,
}

impl fmt::Debug for IncomingResponse<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IncomingResponse")
            .field("method", &self.method())
            .field("url", &self.url())
            .field("status", &self.status)
            .field("attempt", &self.attempt)
            .field("elapsed", &self.elapsed)
            .field("headers", &DebugHeaders(self.headers))
            .finish()
    }
}

impl IncomingResponse<'_> {
    /// The method of the request it answers.
    pub fn method(&self) -> &str {
        self.method.as_str()
    }

    /// The URL of the request it answers.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Which attempt of the call it answers (from 1).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// From sending the attempt to its answer's headers.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// A response header's value (the first one), or `None` when absent or
    /// not text. `name` is case-insensitive.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_of(self.headers, name)
    }

    /// Every response header as (lower-case name, value); values that are
    /// not text are left out.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        headers_of(self.headers)
    }
}

/// Why a hook's header was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// One of [`PROTECTED_HEADERS`].
    #[error("the `{0}` header is the SDK's: a hook cannot set it")]
    Protected(String),
    /// Not a header name (empty, or with a space or a colon...).
    #[error("`{0}` is not a header name")]
    InvalidName(String),
    /// A value a header cannot carry (a newline or another control
    /// character).
    #[error("the value of `{0}` is not one a header can carry")]
    InvalidValue(String),
}

fn checked(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), HeaderError> {
    let parsed = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| HeaderError::InvalidName(name.to_owned()))?;
    if PROTECTED_HEADERS.contains(&parsed.as_str()) {
        return Err(HeaderError::Protected(parsed.as_str().to_owned()));
    }
    let value =
        HeaderValue::from_str(value).map_err(|_| HeaderError::InvalidValue(name.to_owned()))?;
    Ok((parsed, value))
}

fn shown(value: &HeaderValue) -> Option<&str> {
    if value.is_sensitive() {
        Some(REDACTED)
    } else {
        value.to_str().ok()
    }
}

fn header_of<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(shown)
}

fn headers_of(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), shown(value)?)))
}

/// Headers for `Debug`, credentials redacted.
struct DebugHeaders<'a>(&'a HeaderMap);

impl fmt::Debug for DebugHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(headers_of(self.0)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Method, Url, HeaderMap) {
        let mut headers = HeaderMap::new();
        let mut key = HeaderValue::from_static("sk_test_secret");
        key.set_sensitive(true);
        headers.insert("x-api-key", key);
        headers.insert("idempotency-key", HeaderValue::from_static("k-1"));
        headers.insert("user-agent", HeaderValue::from_static("shipment-sdk-rust"));
        (
            Method::POST,
            Url::parse("http://127.0.0.1:8080/api/v1/shipments").unwrap(),
            headers,
        )
    }

    #[test]
    fn a_hook_adds_and_replaces_headers_but_not_protected_ones() {
        let (method, url, mut headers) = sample();
        let mut request = OutgoingRequest {
            method: &method,
            url: &url,
            headers: &mut headers,
            attempt: 2,
        };
        request.set_header("X-Gateway", "route-a").unwrap();
        request.append_header("via", "1.1 a").unwrap();
        request.append_header("via", "1.1 b").unwrap();
        request.set_header("user-agent", "shop/1").unwrap();
        for name in PROTECTED_HEADERS {
            assert_eq!(
                request.set_header(name, "x"),
                Err(HeaderError::Protected((*name).to_owned()))
            );
            let upper = name.to_ascii_uppercase();
            assert_eq!(
                request.append_header(&upper, "x"),
                Err(HeaderError::Protected((*name).to_owned()))
            );
        }
        assert_eq!(
            request.set_header("bad name", "x"),
            Err(HeaderError::InvalidName("bad name".into()))
        );
        assert_eq!(
            request.set_header("x-ok", "a\nb"),
            Err(HeaderError::InvalidValue("x-ok".into()))
        );
        assert_eq!(request.attempt(), 2);
        assert_eq!(request.method(), "POST");
        assert_eq!(request.url(), "http://127.0.0.1:8080/api/v1/shipments");
        assert_eq!(request.header("X-API-KEY"), Some("[redacted]"));
        assert!(!format!("{request:?}").contains("secret"));
        assert_eq!(headers["idempotency-key"], "k-1");
        assert_eq!(headers["x-gateway"], "route-a");
        assert_eq!(headers["user-agent"], "shop/1");
        assert_eq!(headers.get_all("via").iter().count(), 2);
        assert!(headers["x-api-key"].is_sensitive());
        assert_eq!(headers["x-api-key"], "sk_test_secret");
    }

    #[test]
    fn hooks_run_in_the_order_added() {
        let (method, url, mut headers) = sample();
        let hooks = Hooks {
            request: vec![
                Arc::new(|r: &mut OutgoingRequest<'_>| r.set_header("x-order", "first").unwrap()),
                Arc::new(|r: &mut OutgoingRequest<'_>| {
                    let before = r.header("x-order").unwrap().to_owned();
                    r.set_header("x-order", &format!("{before},second"))
                        .unwrap();
                }),
            ],
            response: Vec::new(),
            key_expiry: Vec::new(),
        };
        hooks.before(&method, &url, &mut headers, 1);
        assert_eq!(headers["x-order"], "first,second");
    }
}
