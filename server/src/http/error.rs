//! [`ApiError`]: the one error type of the HTTP layer, answered as an
//! RFC 9457 problem (`application/problem+json`) with a stable `code`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use shipment_sdk::model::{Problem, ProblemCode};

use crate::app;
use crate::domain::{FieldError, FieldErrorKind, Refusal};
use crate::store::StoreError;

tokio::task_local! {
    /// The id of the request being served, so an error body can carry it.
    pub static REQUEST_ID: String;
}

/// An error answered to the client. 5xx details are logged, never sent.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: ProblemCode,
    detail: String,
    field: Option<String>,
    retry_after: Option<u64>,
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
            app::Error::Store(e) => e.into(),
            app::Error::Internal(cause) => ApiError::internal(&cause),
        }
    }
}

impl From<StoreError> for ApiError {
    /// A lost, refused or unobtainable database connection is 503 with
    /// `Retry-After`, wherever it happened (acquiring, mid-statement, at
    /// commit), so clients retry; other database errors are bugs, 500.
    fn from(e: StoreError) -> ApiError {
        match &e {
            e if e.is_unavailable() => {
                tracing::warn!(error = %e, "database unavailable");
                ApiError::unavailable("the database is busy or unreachable; retry shortly")
            }
            StoreError::Contended(_) => {
                tracing::warn!(error = %e, "write kept conflicting");
                ApiError::unavailable("the resource is changing too fast; retry shortly")
            }
            _ => ApiError::internal(&e),
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
    use std::borrow::Cow;
    use std::io;

    use axum::http::StatusCode;
    use sqlx::error::{DatabaseError, ErrorKind};

    use super::ApiError;
    use crate::app;
    use crate::store::{PoolSettings, Store, StoreError};

    /// A database error with only a code (SQLSTATE for PostgreSQL, a
    /// number for SQLite), as a driver would report it.
    #[derive(Debug)]
    struct Coded(&'static str);

    impl std::fmt::Display for Coded {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "error {}", self.0)
        }
    }

    impl std::error::Error for Coded {}

    impl DatabaseError for Coded {
        fn message(&self) -> &str {
            "a database error"
        }
        fn code(&self) -> Option<Cow<'_, str>> {
            Some(Cow::Borrowed(self.0))
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> ErrorKind {
            ErrorKind::Other
        }
    }

    fn coded(code: &'static str) -> sqlx::Error {
        sqlx::Error::Database(Box::new(Coded(code)))
    }

    fn io(kind: io::ErrorKind, message: &str) -> sqlx::Error {
        sqlx::Error::Io(io::Error::new(kind, message.to_owned()))
    }

    /// The API's status and `Retry-After`, and a dashboard page's status,
    /// for the store error `make` makes (sqlx errors are not `Clone`).
    fn answered(make: fn() -> sqlx::Error) -> (StatusCode, Option<u64>, StatusCode) {
        let page = crate::dashboard::status_of(&app::Error::Store(make().into()));
        let api = ApiError::from(StoreError::from(make()));
        (api.status(), api.retry_after(), page)
    }

    #[test]
    fn a_lost_or_refused_database_connection_is_503_with_retry_after() {
        let lost: [fn() -> sqlx::Error; 12] = [
            || {
                io(
                    io::ErrorKind::ConnectionReset,
                    "Connection reset by peer (os error 104)",
                )
            },
            || {
                io(
                    io::ErrorKind::UnexpectedEof,
                    "expected to read 5 bytes, got 0 bytes at EOF",
                )
            },
            || {
                io(
                    io::ErrorKind::ConnectionRefused,
                    "Connection refused (os error 111)",
                )
            },
            || io(io::ErrorKind::BrokenPipe, "Broken pipe (os error 32)"),
            || sqlx::Error::PoolTimedOut,
            || sqlx::Error::PoolClosed,
            // PostgreSQL: connection failure, admin and crash shutdown,
            // starting up, too many connections.
            || coded("08006"),
            || coded("08001"),
            || coded("57P01"),
            || coded("57P02"),
            || coded("57P03"),
            || coded("53300"),
        ];
        for make in lost {
            let shown = format!("{:?}", make());
            assert_eq!(
                answered(make),
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Some(1),
                    StatusCode::SERVICE_UNAVAILABLE
                ),
                "{shown}"
            );
        }
    }

    #[test]
    fn other_database_errors_stay_500() {
        let bugs: [fn() -> sqlx::Error; 7] = [
            || sqlx::Error::RowNotFound,
            || sqlx::Error::ColumnNotFound("nope".into()),
            || sqlx::Error::Protocol("unexpected message".into()),
            // PostgreSQL: not-null and syntax; SQLite: constraint, locked.
            || coded("23502"),
            || coded("42601"),
            || coded("1299"),
            || coded("5"),
        ];
        for make in bugs {
            let shown = format!("{:?}", make());
            assert_eq!(
                answered(make),
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    None,
                    StatusCode::INTERNAL_SERVER_ERROR
                ),
                "{shown}"
            );
        }
    }

    #[tokio::test]
    async fn a_closed_sqlite_store_answers_503() {
        let store = Store::connect("sqlite::memory:", PoolSettings::default())
            .await
            .unwrap();
        store.close().await;
        let e = store.ping().await.unwrap_err();
        assert!(e.is_unavailable(), "{e}");
        let api = ApiError::from(e);
        assert_eq!(api.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(api.retry_after(), Some(1));
    }
}
