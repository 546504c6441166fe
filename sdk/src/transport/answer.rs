//! Reading what the service answered: a success's body and headers, or
//! the [`Error`] an answer or a failed attempt amounts to.
//!
//! How a failure is sorted decides whether it is retried (a lost
//! connection is, a refusal is not) and what the merchant can match on,
//! so every answer and every reqwest failure goes through the same few
//! functions here, whichever call or stream it came from.

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{self, HeaderName};

use crate::error::{ApiError, Error, TransportError};
use crate::model::Problem;
use crate::retry::parse_retry_after;

const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// A success answer, body unread.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) request_id: Option<String>,
    pub(super) headers: header::HeaderMap,
    pub(super) body: Vec<u8>,
}

/// A decoded success answer with the response headers, for the calls whose
/// headers say more than the body (`Idempotent-Replayed`).
pub(crate) struct Reply<T> {
    pub value: T,
    pub(super) headers: header::HeaderMap,
}

impl<T> Reply<T> {
    /// A response header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `Retry-After` of a success answer (a bulk redelivery the
    /// budget cut), if any and readable.
    pub fn retry_after(&self) -> Option<Duration> {
        retry_after_of(&self.headers)
    }
}

pub(super) fn request_id_of(headers: &header::HeaderMap) -> Option<String> {
    headers
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn retry_after_of(headers: &header::HeaderMap) -> Option<Duration> {
    headers
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, chrono::Utc::now()))
}

/// The error of an answer to a request to `url` that is not 2xx: a
/// redirect for a 3xx (followed by nobody), else an API error. A proxy's
/// HTML error page is still an error of its status; only the problem
/// fields are missing.
pub(super) fn error_answer(
    status: u16,
    url: &Url,
    headers: &header::HeaderMap,
    body: &[u8],
) -> Error {
    let request_id = request_id_of(headers);
    if (300..400).contains(&status) {
        // The address it names in full, a relative reference resolved as a
        // browser would, so the merchant sees which base URL to set.
        let location = headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(|raw| url.join(raw).map_or_else(|_| raw.to_owned(), String::from));
        return Error::Redirect {
            status,
            location,
            request_id,
        };
    }
    let problem = serde_json::from_slice::<Problem>(body).ok();
    let error = Box::new(ApiError::new(
        status,
        problem,
        request_id,
        retry_after_of(headers),
    ));
    match (status, error.code.as_ref().map(|c| c.as_str())) {
        (403, Some(INSUFFICIENT_PERMISSION)) => match required_permission_of(body) {
            Some(required) => Error::InsufficientPermission { required, error },
            None => Error::Api(error),
        },
        (401, Some(API_KEY_EXPIRED)) => Error::ApiKeyExpired {
            expired_at: headers
                .get(KEY_EXPIRES_AT_HEADER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| chrono::DateTime::parse_from_rfc3339(v).ok())
                .map(|t| t.with_timezone(&chrono::Utc)),
            error,
        },
        _ => Error::Api(error),
    }
}

/// The problem codes that get a variant of their own. Compared as text, so
/// that they are recognised whether or not the model names them.
const INSUFFICIENT_PERMISSION: &str = "insufficient_permission";
const API_KEY_EXPIRED: &str = "api_key_expired";

/// When the key expires, on every answer to a key that has an expiry.
const KEY_EXPIRES_AT_HEADER: HeaderName = HeaderName::from_static("x-key-expires-at");

/// The longest `required_permission` taken from an answer: the longest the
/// service names is `shipments: write`; more is not a permission.
const MAX_REQUIRED_PERMISSION: usize = 64;

/// The problem's `required_permission` extension member: a short,
/// printable, non-empty string, or nothing (absent, another JSON type, or
/// text no permission looks like), so that what a program matches on and
/// a terminal prints is always a plain name.
fn required_permission_of(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Extension {
        required_permission: Option<serde_json::Value>,
    }
    let value = serde_json::from_slice::<Extension>(body)
        .ok()?
        .required_permission?;
    let required = value.as_str()?.trim();
    let plain = !required.is_empty()
        && required.len() <= MAX_REQUIRED_PERMISSION
        && required.chars().all(|c| c.is_ascii_graphic() || c == ' ');
    plain.then(|| required.to_owned())
}

/// Sorts reqwest's failures into the SDK's kinds.
pub(crate) fn classify(e: reqwest::Error) -> Error {
    let (timeout, connect) = (e.is_timeout(), e.is_connect());
    let e = TransportError::new(e);
    if timeout {
        Error::Timeout(e)
    } else if connect {
        Error::Connect(e)
    } else {
        Error::Transport(e)
    }
}

/// Sorts the failures of sending a request, before any answer arrived:
/// as [`classify`], and a connection that ended without an answer (closed,
/// reset, an incomplete message) is marked [`retryable`](Error::is_retryable),
/// like a 503.
pub(crate) fn classify_unanswered(e: reqwest::Error) -> Error {
    if e.is_timeout() || e.is_connect() || !connection_lost(&e) {
        return classify(e);
    }
    Error::Transport(TransportError::unanswered(e))
}

/// Whether a cause of `e` is a connection that ended under the request:
/// the peer closed it before the whole answer (hyper's incomplete message),
/// hyper gave up on it (closed, canceled), or the network reset it.
fn connection_lost(e: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind;
    std::iter::successors(Some(e), |e| e.source()).any(|cause| {
        if let Some(e) = cause.downcast_ref::<hyper::Error>() {
            return e.is_incomplete_message() || e.is_closed() || e.is_canceled();
        }
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| {
            matches!(
                e.kind(),
                ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
            )
        })
    })
}
