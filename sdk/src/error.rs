//! The one error type of the client, and what it tells a caller.

use std::fmt;
use std::time::Duration;

use crate::model::{InvalidIdempotencyKey, InvalidShipmentCode, Problem, ProblemCode};

/// What can go wrong calling the service.
///
/// Match on the variant to tell the service's refusals ([`Error::Api`]) from
/// the network ([`Error::Connect`], [`Error::Timeout`], [`Error::Transport`]),
/// a body the SDK could not read ([`Error::Decode`]), and checks made before
/// anything was sent. New variants may be added, so keep a `_` arm. Or ask
/// the helpers: [`code`](Error::code), [`is_not_found`](Error::is_not_found),
/// [`is_unauthenticated`](Error::is_unauthenticated),
/// [`is_forbidden`](Error::is_forbidden), [`is_conflict`](Error::is_conflict),
/// [`is_rate_limited`](Error::is_rate_limited),
/// [`is_timeout`](Error::is_timeout), [`retry_after`](Error::retry_after),
/// [`is_retryable`](Error::is_retryable), and for a key that may not do
/// something or has expired, [`required_permission`](Error::required_permission)
/// and [`is_key_expired`](Error::is_key_expired).
///
/// No variant ever holds an API key, a session token or a password: their
/// `Debug` and `Display` stay safe to log.
///
/// ```no_run
/// use shipment_sdk::model::ProblemCode;
/// # async fn run(client: shipment_sdk::Client) {
/// match client.shipments().rate("SHP-7K3M-Q9ZX", 9).await {
///     Ok(shipment) => println!("rated {}", shipment.code),
///     Err(e) if e.is_not_found() => println!("no such shipment"),
///     Err(e) if e.code() == Some(&ProblemCode::AlreadyRated) => println!("rated before"),
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
    Connect(#[source] TransportError),
    /// The request took longer than the configured time-out.
    #[error("the shipment service did not answer in time")]
    Timeout(#[source] TransportError),
    /// Another network failure while sending or reading (connection reset,
    /// truncated body). One that ended the connection before any answer
    /// arrived is [retryable](Error::is_retryable).
    #[error("network error talking to the shipment service: {0}")]
    Transport(#[source] TransportError),
    /// The service answered with a redirect (a 3xx status). The SDK follows
    /// no redirect, so the API key, a password or a request body never
    /// travels to another address: the base URL is wrong, and `location`
    /// says where the service points instead.
    #[error(
        "the shipment service answered HTTP {status}, a redirect to {}; the SDK does not follow \
         redirects: check the base URL",
        .location.as_deref().unwrap_or("no address (the answer has no Location)")
    )]
    Redirect {
        /// The HTTP status (301, 302, 303, 307, 308...).
        status: u16,
        /// The `Location` it names, as an absolute address when it is a
        /// valid reference; `None` when the answer has none.
        location: Option<String>,
        /// The request id from `X-Request-Id`, if the answer had one.
        request_id: Option<String>,
    },
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
    /// The API key may not do this (403 `insufficient_permission`): a
    /// restricted key (`rk_`) without the permission the operation needs.
    /// `required` names it as the service does, `shipments: write`; the
    /// key's own permissions are in the detail, and
    /// [`current_key`](crate::Client::current_key) lists them all.
    /// [`status`](Error::status), [`code`](Error::code),
    /// [`is_forbidden`](Error::is_forbidden) and [`api`](Error::api) read it
    /// as any other refusal.
    ///
    /// An answer with that code that does not name the permission (a
    /// missing or malformed `required_permission`) stays [`Error::Api`].
    #[error("{error}")]
    InsufficientPermission {
        /// The permission the operation needs, `shipments: write`.
        required: String,
        /// The refusal as the service sent it.
        error: Box<ApiError>,
    },
    /// The API key has expired (401 `api_key_expired`): it will never work
    /// again, so make a new one. Distinct from an unknown or deleted key
    /// (401 `unauthenticated`, an [`Error::Api`]).
    /// [`status`](Error::status), [`code`](Error::code),
    /// [`is_unauthenticated`](Error::is_unauthenticated) and
    /// [`api`](Error::api) read it as any other refusal.
    #[error("{error}")]
    ApiKeyExpired {
        /// When the key expired (the answer's `X-Key-Expires-At`), if the
        /// answer said so in a form the SDK reads.
        expired_at: Option<chrono::DateTime<chrono::Utc>>,
        /// The refusal as the service sent it.
        error: Box<ApiError>,
    },
    /// An event stream (the listener's) that is not Server-Sent Events as
    /// the service sends them.
    #[error("the service's event stream is malformed: {0}")]
    Stream(String),
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
    /// A certificate given to the builder cannot be used: a root
    /// certificate ([`add_root_certificate_pem`](crate::Builder::add_root_certificate_pem))
    /// or the client certificate and key
    /// ([`client_certificate_pem`](crate::Builder::client_certificate_pem))
    /// that is not PEM, holds no certificate or key, or (found when the
    /// client is built) that TLS refuses, such as a key that does not
    /// belong to its certificate. Nothing was sent. The message never
    /// contains the key.
    #[error("invalid {what}: {reason}")]
    InvalidCertificate {
        /// `"root certificate"` or `"client certificate"`.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
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

impl From<InvalidShipmentCode> for Error {
    fn from(e: InvalidShipmentCode) -> Self {
        Error::InvalidShipmentCode(e.0)
    }
}

impl From<InvalidIdempotencyKey> for Error {
    fn from(_: InvalidIdempotencyKey) -> Self {
        Error::InvalidIdempotencyKey
    }
}

/// Result with the SDK's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The HTTP status, for an error answer, a redirect or an unreadable
    /// success answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api(_) | Error::InsufficientPermission { .. } | Error::ApiKeyExpired { .. } => {
                self.api().map(|e| e.status)
            }
            Error::Redirect { status, .. } | Error::Decode { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The problem `code`, when the service sent a problem body.
    ///
    /// ```no_run
    /// use shipment_sdk::model::ProblemCode;
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// match client.shipments().cancel("SHP-7K3M-Q9ZX").await {
    ///     Ok(_) => println!("cancelled"),
    ///     Err(e) if e.code() == Some(&ProblemCode::InvalidState) => println!("too late"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn code(&self) -> Option<&ProblemCode> {
        self.api().and_then(|e| e.code.as_ref())
    }

    /// Whether the service answered 404: no such shipment, API key, webhook
    /// or route.
    pub fn is_not_found(&self) -> bool {
        self.api_status() == Some(404)
    }

    /// Whether the service answered 401: no credential, or one it refused
    /// (a revoked key, an ended dashboard session, a wrong password).
    pub fn is_unauthenticated(&self) -> bool {
        self.api_status() == Some(401)
    }

    /// Whether the service answered 403: the credential is valid but may not
    /// do this (a merchant key on a courier route, say).
    pub fn is_forbidden(&self) -> bool {
        self.api_status() == Some(403)
    }

    /// Whether the service answered 409: the state does not allow it
    /// ([`ProblemCode::InvalidState`], [`ProblemCode::AlreadyRated`]), or it
    /// clashes with what exists ([`ProblemCode::WebhookUrlTaken`],
    /// [`ProblemCode::IdempotencyConflict`]). [`code`](Error::code) tells
    /// which.
    pub fn is_conflict(&self) -> bool {
        self.api_status() == Some(409)
    }

    /// Whether the service answered 429: too many requests, after the
    /// client's own retries. [`retry_after`](Error::retry_after) says how
    /// long the service asked to wait.
    pub fn is_rate_limited(&self) -> bool {
        self.api_status() == Some(429)
    }

    /// Whether an attempt took longer than the configured time-out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout(_))
    }

    /// How long the service asked the caller to wait (`Retry-After`, on 429
    /// and 503 answers) before sending the request again.
    pub fn retry_after(&self) -> Option<Duration> {
        self.api().and_then(|e| e.retry_after)
    }

    /// The one request field at fault, for a refusal that names one
    /// (`missing_field`, `invalid_field`, `unknown_field`).
    pub fn field(&self) -> Option<&str> {
        self.api().and_then(|e| e.field.as_deref())
    }

    /// The status of an error answer; not of an unreadable success answer.
    fn api_status(&self) -> Option<u16> {
        self.api().map(|e| e.status)
    }

    /// The request id the service gave this request, for support tickets
    /// and log searches.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Error::Api(_) | Error::InsufficientPermission { .. } | Error::ApiKeyExpired { .. } => {
                self.api().and_then(|e| e.request_id.as_deref())
            }
            Error::Redirect { request_id, .. } | Error::Decode { request_id, .. } => {
                request_id.as_deref()
            }
            _ => None,
        }
    }

    /// Whether sending the same request again later may succeed: connection
    /// failures, time-outs, a connection that ended before any answer
    /// arrived (closed, reset), and the statuses 429, 502, 503 and 504.
    ///
    /// The client already retried these as far as its settings allow for
    /// the calls that are safe to repeat: reads, and creates (they carry an
    /// `Idempotency-Key`). Other changes (cancel, rate, sign-in...) are
    /// never retried, since the service may have acted on the attempt
    /// whose answer was lost: whether to send one again is the caller's
    /// call.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Connect(_) | Error::Timeout(_) => true,
            Error::Transport(e) => e.unanswered,
            Error::Api(e) => is_retryable_status(e.status),
            // A permission or an expiry does not come back on its own.
            _ => false,
        }
    }

    /// The error body, for an error answer (a refused permission and an
    /// expired key included).
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(e)
            | Error::InsufficientPermission { error: e, .. }
            | Error::ApiKeyExpired { error: e, .. } => Some(e),
            _ => None,
        }
    }

    /// The permission the operation needed, `shipments: write`, when the
    /// API key was refused for the lack of it
    /// ([`Error::InsufficientPermission`]).
    ///
    /// ```no_run
    /// # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
    /// match client.shipments().cancel("SHP-7K3M-Q9ZX").await {
    ///     Ok(_) => println!("cancelled"),
    ///     Err(e) if e.required_permission().is_some() => {
    ///         eprintln!("this key cannot cancel: it needs {}", e.required_permission().unwrap());
    ///     }
    ///     Err(e) if e.is_key_expired() => eprintln!("the key has expired: make a new one"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn required_permission(&self) -> Option<&str> {
        match self {
            Error::InsufficientPermission { required, .. } => Some(required),
            _ => None,
        }
    }

    /// Whether the API key was refused because it has expired
    /// ([`Error::ApiKeyExpired`]).
    pub fn is_key_expired(&self) -> bool {
        matches!(self, Error::ApiKeyExpired { .. })
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
    /// Stable machine-readable code ([`ProblemCode::MissingField`],
    /// [`ProblemCode::InvalidState`], ...); `None` when the body was not a
    /// problem document (a proxy's HTML page).
    pub code: Option<ProblemCode>,
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

/// A failure of the network or the HTTP stack under the client: the cause of
/// [`Error::Connect`], [`Error::Timeout`] and [`Error::Transport`].
///
/// It prints the HTTP stack's message and leads, through
/// [`source`](std::error::Error::source), to the causes underneath (an I/O
/// error, a TLS failure). The HTTP library itself stays out of the SDK's
/// API, so it can be upgraded without breaking callers.
pub struct TransportError {
    inner: reqwest::Error,
    /// The connection ended before any answer arrived, so an idempotent
    /// request may be sent again.
    unanswered: bool,
}

impl TransportError {
    /// Wraps a failure of the HTTP stack. Addresses are dropped from its
    /// message: they carry no secret, but a query string might one day.
    pub(crate) fn new(e: reqwest::Error) -> TransportError {
        TransportError {
            inner: e.without_url(),
            unanswered: false,
        }
    }

    /// Wraps a connection that ended before any answer arrived.
    pub(crate) fn unanswered(e: reqwest::Error) -> TransportError {
        TransportError {
            unanswered: true,
            ..TransportError::new(e)
        }
    }
}

impl fmt::Debug for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl std::error::Error for TransportError {
    // Transparent: this error prints the HTTP stack's message, so its source
    // is that error's cause, and a chain printer shows each message once.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error answer with a problem body of `code`, as the transport
    /// builds it.
    fn answer(status: u16, code: &str, retry_after: Option<Duration>) -> Error {
        let mut problem = Problem::new(
            status,
            "Error",
            code.parse().unwrap(),
            format!("it went wrong: {code}"),
        );
        problem.field = Some("url".into());
        problem.request_id = Some("r-body".into());
        Error::Api(Box::new(ApiError::new(
            status,
            Some(problem),
            Some("r-header".into()),
            retry_after,
        )))
    }

    #[test]
    fn an_api_error_reads_like_a_sentence() {
        let e = Error::Api(Box::new(ApiError {
            status: 409,
            code: Some(ProblemCode::InvalidState),
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
        assert_eq!(e.code(), Some(&ProblemCode::InvalidState));
        assert_eq!(e.request_id(), Some("r-1"));
        assert!(!e.is_retryable());
    }

    #[test]
    fn the_problem_code_is_typed_and_an_unknown_one_is_kept() {
        let e = answer(409, "webhook_url_taken", None);
        assert_eq!(e.code(), Some(&ProblemCode::WebhookUrlTaken));
        assert!(matches!(e.code(), Some(ProblemCode::WebhookUrlTaken)));
        assert!(e.code().is_some_and(|c| c == "webhook_url_taken"));

        let e = answer(422, "quota_exceeded", None);
        assert_eq!(e.code(), Some(&ProblemCode::Other("quota_exceeded".into())));
        assert_eq!(
            e.to_string(),
            "HTTP 422 quota_exceeded: it went wrong: quota_exceeded (request id r-header)"
        );
    }

    #[test]
    fn an_answer_without_a_problem_body_has_a_status_but_no_code() {
        let e = Error::Api(Box::new(ApiError::new(404, None, None, None)));
        assert_eq!((e.status(), e.code()), (Some(404), None));
        assert!(e.is_not_found());
        assert_eq!(e.field(), None);
    }

    #[test]
    fn each_status_helper_answers_for_its_status_only() {
        type Helper = fn(&Error) -> bool;
        let helpers: [(&str, Helper, u16); 5] = [
            ("is_unauthenticated", Error::is_unauthenticated, 401),
            ("is_forbidden", Error::is_forbidden, 403),
            ("is_not_found", Error::is_not_found, 404),
            ("is_conflict", Error::is_conflict, 409),
            ("is_rate_limited", Error::is_rate_limited, 429),
        ];
        let answers = [
            (400, "invalid_field"),
            (401, "unauthenticated"),
            (403, "forbidden"),
            (404, "not_found"),
            (405, "method_not_allowed"),
            (409, "invalid_state"),
            (413, "payload_too_large"),
            (429, "rate_limited"),
            (500, "internal"),
            (503, "unavailable"),
        ];
        for (status, code) in answers {
            let e = answer(status, code, None);
            for (name, helper, its_status) in helpers {
                assert_eq!(helper(&e), status == its_status, "{name} on {status}");
            }
            assert!(!e.is_timeout(), "{status}");
        }
    }

    #[test]
    fn errors_that_are_not_answers_are_none_of_those() {
        let decode = Error::Decode {
            status: 200,
            request_id: None,
            source: serde_json::from_str::<u8>("x").unwrap_err(),
        };
        for e in [
            Error::InvalidRating(11),
            Error::InvalidPage,
            Error::Config("no key".into()),
            decode,
        ] {
            assert!(
                !(e.is_not_found()
                    || e.is_unauthenticated()
                    || e.is_forbidden()
                    || e.is_conflict()
                    || e.is_rate_limited()
                    || e.is_timeout()),
                "{e}"
            );
            assert_eq!((e.code(), e.retry_after(), e.field()), (None, None, None));
        }
    }

    #[test]
    fn retry_after_and_field_come_from_the_answer() {
        let e = answer(429, "rate_limited", Some(Duration::from_secs(7)));
        assert!(e.is_rate_limited());
        assert_eq!(e.code(), Some(&ProblemCode::RateLimited));
        assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
        assert_eq!(e.field(), Some("url"));
        // The header's request id wins over the body's.
        assert_eq!(e.request_id(), Some("r-header"));
        assert_eq!(answer(409, "invalid_state", None).retry_after(), None);
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
