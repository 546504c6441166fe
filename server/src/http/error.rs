//! [`ApiError`]: the one error type of the HTTP layer, answered as an
//! RFC 9457 problem (`application/problem+json`) with a stable `code`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use shipment_sdk::model::{Problem, ProblemCode};

use crate::app;
use crate::domain::{FieldError, FieldErrorKind, Refusal};

tokio::task_local! {
    /// The id of the request being served, so an error body can carry it.
    pub static REQUEST_ID: String;
}

/// An error answered to the client: the HTTP form of a failure (a status,
/// a stable problem code, the field at fault, `Retry-After`), made from an
/// `app::Error`, or by the extractors before any use-case runs (a missing
/// key, a body that is not JSON). 5xx details are logged, never sent.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: ProblemCode,
    detail: String,
    field: Option<String>,
    retry_after: Option<u64>,
    required_permission: Option<String>,
}

impl ApiError {
    /// Any status and code.
    pub fn new(status: StatusCode, code: ProblemCode, detail: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            detail: detail.into(),
            field: None,
            retry_after: None,
            required_permission: None,
        }
    }

    /// Names the one request field at fault.
    pub fn with_field(mut self, field: impl Into<String>) -> ApiError {
        self.field = Some(field.into());
        self
    }

    /// Sends `Retry-After: secs` with it.
    pub fn with_retry_after(mut self, secs: u64) -> ApiError {
        self.retry_after = Some(secs);
        self
    }

    /// 400 `invalid_json`.
    pub fn invalid_json(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, ProblemCode::InvalidJson, detail)
    }

    /// 400 `invalid_field` for `field`.
    pub fn invalid_field(field: &str, detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, ProblemCode::InvalidField, detail).with_field(field)
    }

    /// 400 `invalid_identifier`.
    pub fn invalid_identifier(detail: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            ProblemCode::InvalidIdentifier,
            detail,
        )
    }

    /// 401 `unauthenticated`.
    pub fn unauthenticated(detail: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            ProblemCode::Unauthenticated,
            detail,
        )
    }

    /// 401 `api_key_expired`: the key is known, but expired at `at`.
    pub fn api_key_expired(at: &str) -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            ProblemCode::ApiKeyExpired,
            format!("this API key expired at {at}"),
        )
    }

    /// 403 `insufficient_permission`: a restricted key that has `has` where
    /// the operation needs `needs` (both `resource: level`), which the
    /// problem's `required_permission` repeats for programs.
    pub fn insufficient_permission(has: &str, needs: &str) -> ApiError {
        let mut e = ApiError::new(
            StatusCode::FORBIDDEN,
            ProblemCode::InsufficientPermission,
            format!("this API key has {has}; this operation needs {needs}"),
        );
        e.required_permission = Some(needs.to_owned());
        e
    }

    /// 403 `forbidden`.
    pub fn forbidden(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, ProblemCode::Forbidden, detail)
    }

    /// 404 `not_found`.
    pub fn not_found(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, ProblemCode::NotFound, detail)
    }

    /// 409 with a conflict code.
    pub fn conflict(code: ProblemCode, detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, code, detail)
    }

    /// 413 `payload_too_large`.
    pub fn payload_too_large() -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ProblemCode::PayloadTooLarge,
            format!(
                "request bodies are limited to {} bytes",
                super::MAX_BODY_BYTES
            ),
        )
    }

    /// 429 `rate_limited`, retry after `secs` seconds.
    pub fn rate_limited(detail: impl Into<String>, secs: u64) -> ApiError {
        ApiError {
            retry_after: Some(secs.max(1)),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ProblemCode::RateLimited,
                detail,
            )
        }
    }

    /// 503 `unavailable`, with a `Retry-After` hint.
    pub fn unavailable(detail: impl Into<String>) -> ApiError {
        ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ProblemCode::Unavailable,
                detail,
            )
        }
    }

    /// 500 `internal`; the cause is logged here and not sent.
    pub fn internal(cause: &dyn std::fmt::Display) -> ApiError {
        tracing::error!(%cause, "internal error");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ProblemCode::Internal,
            "the server failed to handle this request; it has been logged",
        )
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The problem `code`.
    pub fn code(&self) -> &ProblemCode {
        &self.code
    }

    /// The human-readable explanation (for a 5xx, the generic one).
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// Seconds the client should wait before retrying, if the error says.
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// The field at fault, if one is.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> ApiError {
        let code = match e.kind {
            FieldErrorKind::Missing => ProblemCode::MissingField,
            FieldErrorKind::Invalid => ProblemCode::InvalidField,
            FieldErrorKind::Unknown => ProblemCode::UnknownField,
        };
        ApiError::new(StatusCode::BAD_REQUEST, code, e.detail).with_field(e.field)
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> ApiError {
        match r {
            Refusal::Forbidden => ApiError::forbidden("this shipment belongs to another account"),
            Refusal::InvalidState(e) => {
                ApiError::conflict(ProblemCode::InvalidState, e.to_string())
            }
            Refusal::AlreadyRated => ApiError::conflict(
                ProblemCode::AlreadyRated,
                "this shipment has already been rated",
            ),
            Refusal::Field(e) => e.into(),
            Refusal::ConfirmationCode(detail) => ApiError::new(
                StatusCode::BAD_REQUEST,
                ProblemCode::InvalidConfirmationCode,
                detail,
            )
            .with_field("confirmation_code"),
        }
    }
}

impl From<app::Error> for ApiError {
    fn from(e: app::Error) -> ApiError {
        match e {
            app::Error::Field(e) => e.into(),
            app::Error::InvalidIdentifier(detail) => ApiError::invalid_identifier(detail),
            app::Error::NotFound(detail) => ApiError::not_found(detail),
            app::Error::Refused(r) => r.into(),
            e @ app::Error::IdempotencyKeyReused => {
                ApiError::conflict(ProblemCode::IdempotencyConflict, e.to_string())
                    .with_field("Idempotency-Key")
            }
            e @ app::Error::WebhookUrlTaken => {
                ApiError::conflict(ProblemCode::WebhookUrlTaken, e.to_string()).with_field("url")
            }
            e @ app::Error::WrongCredentials => ApiError::unauthenticated(e.to_string()),
            e @ app::Error::Throttled { retry_after_secs } => {
                ApiError::rate_limited(e.to_string(), retry_after_secs)
            }
            e @ app::Error::TooManyListeners(_) => ApiError::rate_limited(e.to_string(), 5),
            app::Error::RedeliveryWaiting(detail) => {
                ApiError::conflict(ProblemCode::InvalidState, detail)
            }
            e @ app::Error::RedeliveryBudget {
                retry_after_secs, ..
            } => ApiError::rate_limited(e.to_string(), retry_after_secs),
            // Wherever it happened (acquiring, mid-statement, at commit),
            // so clients retry.
            app::Error::Unavailable(cause) => {
                tracing::warn!(error = %cause, "database unavailable");
                ApiError::unavailable("the database is busy or unreachable; retry shortly")
            }
            app::Error::Contended(cause) => {
                tracing::warn!(error = %cause, "write kept conflicting");
                ApiError::unavailable("the resource is changing too fast; retry shortly")
            }
            app::Error::Internal(cause) => ApiError::internal(&cause),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut problem = Problem::new(
            self.status.as_u16(),
            self.status.canonical_reason().unwrap_or("Error"),
            self.code,
            self.detail,
        );
        problem.field = self.field;
        problem.required_permission = self.required_permission;
        problem.request_id = REQUEST_ID.try_with(Clone::clone).ok();
        let body = serde_json::to_vec(&problem).expect("problems serialize");
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::ApiError;
    use crate::app;

    /// The API's status and `Retry-After` for `e` (`app::Error` is not
    /// `Clone`).
    fn answered(make: fn() -> app::Error) -> (StatusCode, Option<u64>) {
        let api = ApiError::from(make());
        (api.status(), api.retry_after())
    }

    /// Which store errors are passing is `app`'s to say (its tests); the
    /// pages answer alike (the crate's tests).
    #[test]
    fn passing_server_faults_are_503_with_retry_after() {
        let passing: [fn() -> app::Error; 2] = [
            || app::Error::Unavailable("database error: pool timed out".into()),
            || app::Error::Contended("create: too many concurrent writes; try again".into()),
        ];
        for make in passing {
            let shown = format!("{:?}", make());
            assert_eq!(
                answered(make),
                (StatusCode::SERVICE_UNAVAILABLE, Some(1)),
                "{shown}"
            );
        }
        assert_eq!(
            ApiError::from(app::Error::Contended("x".into())).detail(),
            "the resource is changing too fast; retry shortly"
        );
        assert_eq!(
            ApiError::from(app::Error::Unavailable("x".into())).detail(),
            "the database is busy or unreachable; retry shortly"
        );
    }

    #[test]
    fn other_server_faults_stay_500() {
        assert_eq!(
            answered(|| app::Error::Internal("database error: no rows".into())),
            (StatusCode::INTERNAL_SERVER_ERROR, None)
        );
    }
}
