//! Extractors that verify a delivery before an axum handler runs (feature
//! `axum`).
//!
//! [`VerifiedBody`], [`VerifiedJson`] and [`VerifiedDelivery`] (the JSON
//! with the delivery's `webhook-id` and W3C `traceparent`) take the
//! [`Verifier`] from the router's state through [`FromRef`], so the state is
//! either a `Verifier` itself or a struct with one inside.
//!
//! They pick the stronger scheme the delivery carries, as
//! [`Verifier::verify_strongest`] does: Standard Webhooks when any of
//! `webhook-id`, `webhook-timestamp` and `webhook-signature` is present
//! (a timestamp outside the verifier's tolerance is refused, so a captured
//! delivery cannot be replayed later), `X-Service-Signature` otherwise,
//! unless the verifier [requires](Verifier::require_standard) Standard
//! Webhooks, which a receiver should once its sender always sends them: then
//! a replay with the three headers stripped is refused too.
//!
//! They check the headers first (a missing, malformed or expired one is
//! refused before the body is read), then read the whole body, which axum's
//! `DefaultBodyLimit` caps (2 MB unless changed), and verify it. A refusal
//! answers `401` with a one-line plain-text reason, and the handler never
//! runs.
//!
//! ```
//! use axum::{Router, extract::FromRef, routing::post};
//! use webhook_verify::{Verifier, axum::VerifiedJson};
//!
//! #[derive(Clone)]
//! struct AppState {
//!     verifier: Verifier,
//! }
//!
//! impl FromRef<AppState> for Verifier {
//!     fn from_ref(state: &AppState) -> Self {
//!         state.verifier.clone()
//!     }
//! }
//!
//! async fn shipment_changed(VerifiedJson(shipment): VerifiedJson<serde_json::Value>) {
//!     println!("{} is now {}", shipment["code"], shipment["status"]);
//! }
//!
//! let verifier = Verifier::new("whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA").require_standard();
//! let state = AppState { verifier };
//! let app: Router = Router::new()
//!     .route("/webhooks/shipments", post(shipment_changed))
//!     .with_state(state);
//! ```

use ::axum::body::Bytes;
use ::axum::extract::rejection::BytesRejection;
use ::axum::extract::{FromRef, FromRequest, Request};
use ::axum::http::{HeaderMap, StatusCode};
use ::axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::signature::{Tag, parse_header};
use crate::standard::{self, Headers, ID_HEADER, TIMESTAMP_HEADER};
use crate::{SIGNATURE_HEADER, Scheme, Verifier, VerifyError};

/// The three Standard Webhooks header names, in the order they are checked.
const STANDARD_HEADERS: [&str; 3] = [ID_HEADER, TIMESTAMP_HEADER, standard::SIGNATURE_HEADER];

impl<'a> Headers<'a> {
    /// The Standard Webhooks values of a header map (feature `axum`), each
    /// empty when absent. A header sent twice, or whose value is not
    /// visible ASCII, is [`VerifyError::MalformedStandardHeader`] naming it.
    ///
    /// ```
    /// use axum::http::HeaderMap;
    /// use webhook_verify::{VerifyError, standard::Headers};
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert("webhook-id", "msg_41_w7".parse().unwrap());
    /// let found = Headers::from_header_map(&headers)?;
    /// assert_eq!((found.id, found.timestamp), ("msg_41_w7", ""));
    ///
    /// headers.append("webhook-id", "msg_41_w8".parse().unwrap());
    /// assert_eq!(
    ///     Headers::from_header_map(&headers),
    ///     Err(VerifyError::MalformedStandardHeader { name: "webhook-id" })
    /// );
    /// # Ok::<(), VerifyError>(())
    /// ```
    pub fn from_header_map(headers: &'a HeaderMap) -> Result<Self, VerifyError> {
        let [id, timestamp, signature] = STANDARD_HEADERS.map(|name| one_value(headers, name));
        Ok(Self {
            id: id?,
            timestamp: timestamp?,
            signature: signature?,
        })
    }
}

/// The one value of the header `name`, or `""` when absent.
fn one_value<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<&'a str, VerifyError> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok("");
    };
    let malformed = VerifyError::MalformedStandardHeader { name };
    if values.next().is_some() {
        return Err(malformed);
    }
    value.to_str().map_err(|_| malformed)
}

/// Whether any Standard Webhooks header is in `headers`, even empty or
/// malformed: the delivery claims that scheme, and is held to it.
fn claims_standard(headers: &HeaderMap) -> bool {
    STANDARD_HEADERS
        .iter()
        .any(|name| headers.contains_key(*name))
}

impl Verifier {
    /// [`verify_strongest`](Self::verify_strongest) on a request's header
    /// map (feature `axum`): Standard Webhooks when any of its headers is
    /// present (or the verifier requires them), `X-Service-Signature`
    /// otherwise; a header sent twice is malformed.
    ///
    /// ```
    /// use axum::http::HeaderMap;
    /// use webhook_verify::{Scheme, Verifier, sign, standard};
    ///
    /// let key = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
    /// let body = br#"{"code":"SHP-7K3M-Q9ZX","version":3}"#;
    /// let mut headers = HeaderMap::new();
    /// headers.insert("x-service-signature", sign(key, body).parse().unwrap());
    /// assert_eq!(Verifier::new(key).verify_header_map(&headers, body), Ok(Scheme::Service));
    /// ```
    pub fn verify_header_map(
        &self,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Scheme, VerifyError> {
        self.verify_header_map_at(headers, body, standard::unix_now())
    }

    /// [`verify_header_map`](Self::verify_header_map) as if the clock read
    /// `now` (Unix seconds).
    pub fn verify_header_map_at(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<Scheme, VerifyError> {
        match self.expect(headers, now)? {
            Expected::Standard => {
                let standard = Headers::from_header_map(headers)?;
                self.verify_standard_at(standard, body, now)?;
                Ok(Scheme::Standard)
            }
            Expected::Service(tag) => {
                self.verify_tag(body, &tag)?;
                Ok(Scheme::Service)
            }
        }
    }

    /// Everything that can be checked before the body is read, and what is
    /// left to check after.
    fn expect(&self, headers: &HeaderMap, now: i64) -> Result<Expected, VerifyError> {
        // A delivery that claims Standard Webhooks is held to it, even when
        // a header is missing or malformed.
        match self.scheme_for(claims_standard(headers)) {
            Scheme::Standard => {
                self.check_standard_headers(Headers::from_header_map(headers)?, now)?;
                Ok(Expected::Standard)
            }
            Scheme::Service => Ok(Expected::Service(signature_in(headers)?)),
        }
    }
}

/// What is left to check once the body is read.
enum Expected {
    /// The Standard Webhooks headers passed every check but the MAC.
    Standard,
    /// The `X-Service-Signature` tag the body must produce.
    Service(Tag),
}

/// The raw body of a delivery whose signature checked out.
///
/// Use it when you parse the body yourself, or store it as received.
#[derive(Debug, Clone)]
pub struct VerifiedBody(pub Bytes);

/// The body of a delivery whose signature checked out, parsed as JSON into
/// `T`.
///
/// The bytes are parsed after they are verified, never re-serialized. A body
/// that is signed correctly but is not the JSON `T` expects answers `400`.
/// The `Content-Type` is not checked: the signature already vouches for the
/// sender.
#[derive(Debug, Clone)]
pub struct VerifiedJson<T>(pub T);

/// The W3C Trace Context header of a delivery: the shipment service's span
/// of the delivery, in the trace of the request that made the change.
pub const TRACEPARENT_HEADER: &str = "traceparent";

/// A delivery whose signature checked out, parsed as JSON into `T` as
/// [`VerifiedJson`] does, with what its headers say beside the body: the
/// [`scheme`](Self::scheme) it was verified with, its
/// [`webhook_id`](Self::webhook_id) (to drop repeats by), and its W3C
/// [`traceparent`](Self::traceparent), to continue the trace of the order
/// that made the change.
///
/// ```
/// use webhook_verify::axum::VerifiedDelivery;
///
/// async fn shipment_changed(delivery: VerifiedDelivery<serde_json::Value>) {
///     if let Some(parent) = delivery.traceparent() {
///         // e.g. with tracing-opentelemetry: extract it with the W3C
///         // propagator and `span.set_parent(cx)`.
///         println!("continues trace {parent}");
///     }
///     println!("{} is now {}", delivery.body["code"], delivery.body["status"]);
/// }
/// ```
///
/// No signature covers the `traceparent`: it says which trace to join,
/// nothing to trust.
#[derive(Debug, Clone)]
pub struct VerifiedDelivery<T> {
    /// The verified body, parsed.
    pub body: T,
    traceparent: Option<String>,
    scheme: Scheme,
    webhook_id: Option<String>,
}

impl<T> VerifiedDelivery<T> {
    /// The scheme the delivery was verified with.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The delivery's `webhook-id` when it was verified with Standard
    /// Webhooks (whose signature covers it): the same for every attempt of
    /// one change to one receiver, so a receiver can drop repeats by it.
    /// `None` for a delivery verified by `X-Service-Signature` alone.
    pub fn webhook_id(&self) -> Option<&str> {
        self.webhook_id.as_deref()
    }

    /// The delivery's W3C `traceparent` (`00-<trace id>-<span id>-<flags>`,
    /// lower-case hex), when it came with a well-formed one: the shipment
    /// service sends it when it exports its spans (`--otlp-endpoint`) and
    /// the request that made the change carried one. Anything else (absent,
    /// sent twice, malformed) is `None`.
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    /// The body, dropping the headers.
    pub fn into_body(self) -> T {
        self.body
    }
}

/// `value` if it is one well-formed `traceparent` of version `00`: four
/// dash-separated lower-case hex fields of 2, 32, 16 and 2 digits, with
/// neither id all zeros (the W3C Trace Context rules).
fn well_formed_traceparent(headers: &HeaderMap) -> Option<String> {
    let mut values = headers.get_all(TRACEPARENT_HEADER).iter();
    let value = values.next()?.to_str().ok()?;
    if values.next().is_some() {
        return None;
    }
    let parts: Vec<&str> = value.split('-').collect();
    let [version, trace, span, flags] = parts.as_slice() else {
        return None;
    };
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
    (*version == "00"
        && hex(trace, 32)
        && hex(span, 16)
        && hex(flags, 2)
        && nonzero(trace)
        && nonzero(span))
    .then(|| value.to_owned())
}

/// Why an extractor refused a delivery; its response is what the sender
/// sees.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookRejection {
    /// The signature is missing, malformed or does not match, or (Standard
    /// Webhooks) its timestamp is outside the tolerance: `401`.
    #[error(transparent)]
    Signature(#[from] VerifyError),
    /// The body could not be read (too large, or the connection failed):
    /// axum's own answer, such as `413`.
    #[error("could not read the request body: {0}")]
    Body(#[from] BytesRejection),
    /// The signature matched but the body is not the expected JSON: `400`.
    #[error("the body is not the JSON this endpoint expects: {0}")]
    Json(#[from] serde_json::Error),
}

impl IntoResponse for WebhookRejection {
    fn into_response(self) -> Response {
        match self {
            Self::Signature(err) => (StatusCode::UNAUTHORIZED, err.to_string()).into_response(),
            Self::Body(rejection) => rejection.into_response(),
            Self::Json(_) => (StatusCode::BAD_REQUEST, self.to_string()).into_response(),
        }
    }
}

/// The one `X-Service-Signature` header, decoded. Sent twice counts as
/// malformed: which of the two would be meant is anyone's guess.
fn signature_in(headers: &HeaderMap) -> Result<Tag, VerifyError> {
    let mut values = headers.get_all(SIGNATURE_HEADER).iter();
    let value = values.next().ok_or(VerifyError::MissingHeader)?;
    if values.next().is_some() {
        return Err(VerifyError::MalformedHeader);
    }
    parse_header(value.as_bytes())
}

/// Verifies `req` with the state's verifier and reads its body: what every
/// extractor here does first. Returns the body and the verified
/// `webhook-id` (Standard Webhooks only).
async fn verified<S>(
    req: Request,
    state: &S,
) -> Result<(Bytes, Scheme, Option<String>), WebhookRejection>
where
    Verifier: FromRef<S>,
    S: Send + Sync,
{
    let verifier = Verifier::from_ref(state);
    // One clock reading for both halves, so a delivery that passes the
    // tolerance before its body is read is judged by the same time after.
    let now = standard::unix_now();
    let expected = verifier.expect(req.headers(), now)?;
    match expected {
        Expected::Service(tag) => {
            let body = Bytes::from_request(req, state).await?;
            verifier.verify_tag(&body, &tag)?;
            Ok((body, Scheme::Service, None))
        }
        Expected::Standard => {
            // The request (and its headers) goes to the body extractor; the
            // three values are cheap to keep (`HeaderValue` shares its bytes).
            let mut kept = HeaderMap::new();
            for name in STANDARD_HEADERS {
                for value in req.headers().get_all(name) {
                    kept.append(name, value.clone());
                }
            }
            let body = Bytes::from_request(req, state).await?;
            let headers = Headers::from_header_map(&kept)?;
            verifier.verify_standard_at(headers, &body, now)?;
            Ok((body, Scheme::Standard, Some(headers.id.to_owned())))
        }
    }
}

impl<S> FromRequest<S> for VerifiedBody
where
    Verifier: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = WebhookRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (body, _, _) = verified(req, state).await?;
        Ok(Self(body))
    }
}

impl<S, T> FromRequest<S> for VerifiedDelivery<T>
where
    T: DeserializeOwned,
    Verifier: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = WebhookRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let traceparent = well_formed_traceparent(req.headers());
        let (body, scheme, webhook_id) = verified(req, state).await?;
        Ok(Self {
            body: serde_json::from_slice(&body)?,
            traceparent,
            scheme,
            webhook_id,
        })
    }
}

impl<S, T> FromRequest<S> for VerifiedJson<T>
where
    T: DeserializeOwned,
    Verifier: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = WebhookRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let VerifiedBody(body) = VerifiedBody::from_request(req, state).await?;
        Ok(Self(serde_json::from_slice(&body)?))
    }
}
