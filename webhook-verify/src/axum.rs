//! Extractors that verify a delivery before an axum handler runs (feature
//! `axum`).
//!
//! [`VerifiedBody`], [`VerifiedJson`] and [`VerifiedDelivery`] (the JSON
//! with the delivery's W3C `traceparent`) take the [`Verifier`] from the
//! router's state through [`FromRef`], so the state is either a `Verifier`
//! itself or a struct with one inside. They check the header first (a missing
//! or malformed one is refused before the body is read), then read the whole
//! body, which axum's `DefaultBodyLimit` caps (2 MB unless changed), and
//! verify it. A refusal answers `401` with a one-line plain-text reason, and
//! the handler never runs.
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
//! let state = AppState { verifier: Verifier::new("whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA") };
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
use crate::{SIGNATURE_HEADER, Verifier, VerifyError};

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
/// [`VerifiedJson`] does, with what its headers say beside the body: its
/// W3C [`traceparent`](Self::traceparent), to continue the trace of the
/// order that made the change.
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
/// The signature covers the body, not the headers: the `traceparent` says
/// which trace to join, nothing to trust.
#[derive(Debug, Clone)]
pub struct VerifiedDelivery<T> {
    /// The verified body, parsed.
    pub body: T,
    traceparent: Option<String>,
}

impl<T> VerifiedDelivery<T> {
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
    /// The signature is missing, malformed or does not match: `401`.
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

impl<S> FromRequest<S> for VerifiedBody
where
    Verifier: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = WebhookRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let expected = signature_in(req.headers())?;
        let body = Bytes::from_request(req, state).await?;
        Verifier::from_ref(state).verify_tag(&body, &expected)?;
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
        let VerifiedJson(body) = VerifiedJson::from_request(req, state).await?;
        Ok(Self { body, traceparent })
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
