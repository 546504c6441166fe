//! Extractors that verify a delivery before an axum handler runs (feature
//! `axum`).
//!
//! [`VerifiedBody`] and [`VerifiedJson`] take the [`Verifier`] from the
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
