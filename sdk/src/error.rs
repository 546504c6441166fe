//! The one error type of the client, and what it tells a caller.

use std::fmt;
use std::time::Duration;

use crate::model::Problem;

/// What can go wrong calling the service.
///
/// Match on the variant to tell the service's refusals ([`Error::Api`]) from
/// the network ([`Error::Connect`], [`Error::Timeout`], [`Error::Transport`]),
/// a body the SDK could not read ([`Error::Decode`]), and checks made before
/// anything was sent. New variants may be added, so keep a `_` arm.
///
/// No variant ever holds an API key, a session token or a password: their
/// `Debug` and `Display` stay safe to log.
///
/// ```no_run
/// # async fn run(client: shipment_sdk::Client) {
/// match client.shipments().get("SHP-7K3M-Q9ZX").await {
///     Ok(shipment) => println!("{}", shipment.status),
///     Err(e) if e.status() == Some(404) => println!("no such shipment"),
///     Err(e) => eprintln!("failed: {e} (request id {:?})", e.request_id()),
/// }
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The service answered with an error status (after any retries).
    #[error("{0}")]
    Api(Box<ApiError>),
    /// No connection could be made (refused, DNS, TLS, connect time-out).
    #[error("cannot connect to the shipment service: {0}")]
    Connect(#[source] reqwest::Error),
    /// The request took longer than the configured time-out.
    #[error("the shipment service did not answer in time")]
    Timeout(#[source] reqwest::Error),
    /// Another network failure while sending or reading (connection reset,
    /// truncated body).
    #[error("network error talking to the shipment service: {0}")]
    Transport(#[source] reqwest::Error),
    /// A success answer whose body is not what the SDK expects.
    #[error("cannot read the service's answer (HTTP {status}, request id {}): {source}", .request_id.as_deref().unwrap_or("none"))]
    Decode {
        /// The HTTP status of the answer.
        status: u16,
        /// The request id from `X-Request-Id`, if the answer had one.
        request_id: Option<String>,
        /// What did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// A rating outside 1 to 10; nothing was sent.
    #[error("a rating is an integer from 1 to 10, not {0}")]
    InvalidRating(u8),
    /// A page size outside 1 to 100; nothing was sent.
    #[error("page_size must be from 1 to 100, not {0}")]
    InvalidPageSize(u32),
    /// Page 0 (pages count from 1); nothing was sent.
    #[error("pages count from 1, so page 0 does not exist")]
    InvalidPage,
    /// A string that is not shaped like a shipment code
    /// (`SHP-XXXX-XXXX`, Crockford base32 capitals); nothing was sent.
    #[error("`{0}` is not a shipment code (SHP-XXXX-XXXX, digits and capitals without I, L, O, U)")]
    InvalidShipmentCode(String),
    /// An `Idempotency-Key` that is empty, longer than 255 characters, or
    /// not visible ASCII; nothing was sent.
    #[error("an idempotency key is 1 to 255 visible ASCII characters")]
    InvalidIdempotencyKey,
    /// The client was configured wrongly: a missing or malformed key, a
    /// bad base URL, an unusable option.
    #[error("invalid client configuration: {0}")]
    Config(String),
    /// The API key belongs to the other environment (an `sk_live_` key with
    /// staging, or an `sk_test_` key with production); nothing was sent.
    #[error(
        "this is {key_kind} key, but the client is set up for {environment}; use Environment::{expected}"
    )]
    WrongEnvironment {
        /// `"a test (sk_test_)"` or `"a live (sk_live_)"`.
        key_kind: &'static str,
        /// `"staging"` or `"production"`.
        environment: &'static str,
        /// The environment the key belongs to: `"Staging"` or
        /// `"Production(url)"`.
        expected: &'static str,
    },
}

/// Result with the SDK's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The HTTP status, for an error answer or an unreadable success answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api(e) => Some(e.status),
            Error::Decode { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The problem `code` (`not_found`, `invalid_state`, ...), when the
    /// service sent a problem body.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Api(e) => e.code.as_deref(),
            _ => None,
        }
    }

    /// The request id the service gave this request, for support tickets
    /// and log searches.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Error::Api(e) => e.request_id.as_deref(),
            Error::Decode { request_id, .. } => request_id.as_deref(),
            _ => None,
        }
    }

    /// Whether sending the same request again later may succeed: connection
    /// failures, time-outs, and the statuses 429, 502, 503 and 504. The
    /// client already retried these as far as its settings allow.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Connect(_) | Error::Timeout(_) => true,
            Error::Api(e) => is_retryable_status(e.status),
            _ => false,
        }
    }

    /// The error body, for an error answer.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(e) => Some(e),
            _ => None,
        }
    }
}

/// The statuses worth another try.
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
}

/// An error answer of the service: the HTTP status and, when the body was a
/// problem document (RFC 9457), its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    /// Stable machine-readable code (`missing_field`, `invalid_state`, ...);
    /// `None` when the body was not a problem document (a proxy's HTML page).
    pub code: Option<String>,
    /// What went wrong, for a person.
    pub detail: Option<String>,
    /// The one request field at fault, where there is one.
    pub field: Option<String>,
    /// The request id (`X-Request-Id`, or the body's `request_id`).
    pub request_id: Option<String>,
    /// How long the service asked the caller to wait (`Retry-After`).
    pub retry_after: Option<Duration>,
}

impl ApiError {
    pub(crate) fn new(
        status: u16,
        problem: Option<Problem>,
        request_id: Option<String>,
        retry_after: Option<Duration>,
    ) -> ApiError {
        match problem {
            Some(p) => ApiError {
                status,
                code: Some(p.code),
                detail: Some(p.detail),
                field: p.field,
                request_id: request_id.or(p.request_id),
                retry_after,
            },
            None => ApiError {
                status,
                code: None,
                detail: None,
                field: None,
                request_id,
                retry_after,
            },
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}", self.status)?;
        if let Some(code) = &self.code {
            write!(f, " {code}")?;
        }
        match &self.detail {
            Some(detail) => write!(f, ": {detail}")?,
            None => f.write_str(": the service answered without a problem body")?,
        }
        if let Some(id) = &self.request_id {
            write!(f, " (request id {id})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_error_reads_like_a_sentence() {
        let e = Error::Api(Box::new(ApiError {
            status: 409,
            code: Some("invalid_state".into()),
            detail: Some("the shipment is delivered".into()),
            field: None,
            request_id: Some("r-1".into()),
            retry_after: None,
        }));
        assert_eq!(
            e.to_string(),
            "HTTP 409 invalid_state: the shipment is delivered (request id r-1)"
        );
        assert_eq!(e.status(), Some(409));
        assert_eq!(e.code(), Some("invalid_state"));
        assert_eq!(e.request_id(), Some("r-1"));
        assert!(!e.is_retryable());
    }

    #[test]
    fn only_throttling_and_gateway_statuses_are_retryable() {
        for status in [400, 401, 403, 404, 409, 413, 500, 501] {
            assert!(!is_retryable_status(status), "{status}");
        }
        for status in [429, 502, 503, 504] {
            assert!(is_retryable_status(status), "{status}");
        }
    }
}
