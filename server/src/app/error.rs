//! What a use-case answers when it does not do what was asked: an
//! [`Error`] that names what went wrong, not an HTTP status.

use crate::domain::{FieldError, Refusal};
use crate::store::StoreError;

/// Why a use-case did not do what was asked. One type for every use-case
/// and both front ends: it names what went wrong, not how to show it, so
/// the API (`http::ApiError`, a problem) and the dashboard (a page) each
/// map it in one place, and no front end needs to know the store's errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request field is missing, wrong or unknown.
    #[error(transparent)]
    Field(#[from] FieldError),
    /// A path identifier is malformed.
    #[error("{0}")]
    InvalidIdentifier(String),
    /// No such thing, or not this account's (said the same way).
    #[error("{0}")]
    NotFound(String),
    /// The domain refused the operation on an existing shipment.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The idempotency key was used before with another request body.
    #[error("this Idempotency-Key was already used with a different request body")]
    IdempotencyKeyReused,
    /// The merchant registered this webhook URL before.
    #[error("you have already registered this URL")]
    WebhookUrlTaken,
    /// Sign-in with an unknown e-mail or a wrong password.
    #[error("wrong e-mail or password")]
    WrongCredentials,
    /// Too many sign-in attempts for this e-mail; try after the window.
    #[error("too many failed sign-ins for this e-mail; try again in {} minutes", .retry_after_secs.div_ceil(60))]
    Throttled {
        /// Seconds until the window ends.
        retry_after_secs: u64,
    },
    /// The merchant has as many listeners connected as it may.
    #[error(transparent)]
    TooManyListeners(#[from] crate::webhooks::listeners::TooManyListeners),
    /// A redelivery of this change to this webhook is waiting already (the
    /// message names it); another is not queued until it has been sent.
    #[error("{0}")]
    RedeliveryWaiting(String),
    /// The merchant has had as many changes redelivered in the last minute
    /// as its budget allows.
    #[error(
        "you have had {per_minute} changes redelivered in the last minute, as many as a minute \
         allows; try again in {retry_after_secs} s"
    )]
    RedeliveryBudget {
        /// The budget (`--redeliveries-per-minute`).
        per_minute: u32,
        /// Seconds until it has room for one more.
        retry_after_secs: u64,
    },
    /// The database is busy or unreachable, or its connection was lost or
    /// refused: a passing server fault, worth retrying shortly. Holds the
    /// cause, for the log only.
    #[error("{0}")]
    Unavailable(String),
    /// A write kept losing races with concurrent writers and gave up: a
    /// passing server fault, worth retrying shortly. Holds the cause, for
    /// the log only.
    #[error("{0}")]
    Contended(String),
    /// Any other server fault, a database error included. Holds the cause,
    /// for the log only.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// Whether the caller can fix it (as opposed to a server fault).
    pub fn is_callers(&self) -> bool {
        !matches!(
            self,
            Error::Unavailable(_) | Error::Contended(_) | Error::Internal(_)
        )
    }

    /// Whether it is a passing server fault worth retrying shortly
    /// ([`Error::Unavailable`] or [`Error::Contended`]).
    pub fn is_temporary(&self) -> bool {
        matches!(self, Error::Unavailable(_) | Error::Contended(_))
    }
}

impl From<StoreError> for Error {
    /// What a store error means to a caller, decided here so the front ends
    /// need not know the store: a lost, refused or unobtainable connection
    /// ([`StoreError::is_unavailable`]: wherever it happened, acquiring,
    /// mid-statement, at commit) and a write that kept conflicting are
    /// passing; anything else is a fault. The store's own message is kept,
    /// for the log.
    fn from(e: StoreError) -> Error {
        if e.is_unavailable() {
            Error::Unavailable(e.to_string())
        } else if matches!(e, StoreError::Contended(_)) {
            Error::Contended(e.to_string())
        } else {
            Error::Internal(e.to_string())
        }
    }
}

/// The outcome of a use-case.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// A positive integer id from a path segment.
pub(crate) fn numeric_id<Id: From<i64>>(raw: &str) -> Result<Id> {
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .map(Id::from)
        .ok_or_else(|| Error::InvalidIdentifier(format!("`{raw}` is not a valid id")))
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::io;

    use sqlx::error::{DatabaseError, ErrorKind};

    use super::Error;
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

    /// What a use-case answers for the database error `e`.
    fn answered(e: sqlx::Error) -> Error {
        StoreError::from(e).into()
    }

    #[test]
    fn a_lost_or_refused_database_connection_is_unavailable() {
        let lost = [
            io(
                io::ErrorKind::ConnectionReset,
                "Connection reset by peer (os error 104)",
            ),
            io(
                io::ErrorKind::UnexpectedEof,
                "expected to read 5 bytes, got 0 bytes at EOF",
            ),
            io(
                io::ErrorKind::ConnectionRefused,
                "Connection refused (os error 111)",
            ),
            io(io::ErrorKind::BrokenPipe, "Broken pipe (os error 32)"),
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            // PostgreSQL: connection failure, admin and crash shutdown,
            // starting up, too many connections.
            coded("08006"),
            coded("08001"),
            coded("57P01"),
            coded("57P02"),
            coded("57P03"),
            coded("53300"),
        ];
        for e in lost {
            let shown = format!("{e:?}");
            let e = answered(e);
            assert!(matches!(e, Error::Unavailable(_)), "{shown}: {e:?}");
            assert!(e.is_temporary() && !e.is_callers(), "{shown}");
        }
    }

    #[test]
    fn other_database_errors_are_faults() {
        let bugs = [
            sqlx::Error::RowNotFound,
            sqlx::Error::ColumnNotFound("nope".into()),
            sqlx::Error::Protocol("unexpected message".into()),
            // PostgreSQL: not-null and syntax; SQLite: constraint, locked.
            coded("23502"),
            coded("42601"),
            coded("1299"),
            coded("5"),
        ];
        for e in bugs {
            let shown = format!("{e:?}");
            let e = answered(e);
            assert!(matches!(e, Error::Internal(_)), "{shown}: {e:?}");
            assert!(!e.is_temporary() && !e.is_callers(), "{shown}");
        }
    }

    #[test]
    fn a_write_that_kept_conflicting_is_contended_and_keeps_its_message() {
        let e: Error = StoreError::Contended("create".into()).into();
        assert!(matches!(e, Error::Contended(_)), "{e:?}");
        assert!(e.is_temporary() && !e.is_callers());
        assert_eq!(
            e.to_string(),
            "create: too many concurrent writes; try again"
        );
    }

    #[tokio::test]
    async fn a_closed_sqlite_store_is_unavailable() {
        let store = Store::connect("sqlite::memory:", PoolSettings::default())
            .await
            .unwrap();
        store.close().await;
        let e = store.ping().await.unwrap_err();
        assert!(e.is_unavailable(), "{e}");
        assert!(matches!(Error::from(e), Error::Unavailable(_)));
    }
}
