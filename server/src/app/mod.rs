//! The application layer: every use-case of the service, one file per
//! resource, called by both front ends (the JSON API in [`crate::http`] and
//! the pages in [`crate::dashboard`]), which never import each other.
//!
//! A use-case takes the [`AppState`] and plain values, asks `domain` to
//! decide and `store` to read and write, and answers with its result or an
//! [`Error`] that names what went wrong, not an HTTP status: each front end
//! decides how to show it (a problem body, a page).

use std::sync::Arc;
use std::time::Duration;

use crate::domain::keys::Environment;
use crate::domain::sealed::DataKey;
use crate::domain::{FieldError, Refusal};
use crate::store::{Store, StoreError};

pub mod api_keys;
pub mod auth;
pub mod couriers;
pub mod fixtures;
pub mod key_cache;
pub mod listed;
pub mod listen;
pub mod memo;
pub mod shipments;
pub mod testing;
pub mod webhooks;

/// What every handler can reach: a handle to the [`Shared`] state.
///
/// Why a handle: axum clones the state for every request, once for the
/// handler and once more for each extractor and middleware that takes it.
/// A clone of the fields themselves counted a dozen `Arc`s up and down per
/// clone, on cache lines every core shares: 3.2% of the server's CPU under
/// reads by code (docs/src/appendix/benchmarks-history.md,
/// "One `Arc` per request, mimalloc, anonymous parameters"). A clone of this is one count.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    /// The handle to `shared`.
    pub fn new(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The state every handler shares, set once when the server starts.
pub struct Shared {
    /// The database.
    pub store: Store,
    /// Which keys this server takes.
    pub environment: Environment,
    /// Longest a request may take before it is answered 503.
    pub request_timeout: Duration,
    /// Seals signing keys before they are stored.
    pub data_key: DataKey,
    /// Whether webhooks may point at private addresses.
    pub allow_private_webhook_targets: bool,
    /// Password checks running at once: argon2 is deliberately slow, so a
    /// flood of sign-ins queues here instead of starving the API.
    pub password_checks: Arc<tokio::sync::Semaphore>,
    /// Wakes this process's webhook dispatcher after a shipment changed, so
    /// a delivery does not wait for the next poll.
    pub outbox_signal: Arc<tokio::sync::Notify>,
    /// Mark the dashboard's cookies `Secure` even when no proxy says the
    /// browser came over HTTPS.
    pub dashboard_secure_cookies: bool,
    /// How many changes a merchant may have redelivered per minute
    /// (`--redeliveries-per-minute`).
    pub redelivery_budget: crate::store::outbox::RedeliveryBudget,
    /// Faults and duplicate deliveries armed by merchants, when the server
    /// runs with `--test-controls`; `None` otherwise.
    pub test_controls: Option<Arc<testing::TestControls>>,
    /// The listeners (`GET /webhooks/listen`) connected to this process,
    /// fed by its dispatcher.
    pub listeners: crate::webhooks::listeners::Listeners,
    /// API keys verified in the last moment (`key_cache`): an
    /// authenticated request is then one database round trip.
    pub key_cache: Arc<key_cache::KeyCache>,
    /// The prices of a merchant's linked courier companies, as creates
    /// found them ([`couriers::linked_pricing`]).
    pub pricing: Arc<couriers::PricingMemo>,
    /// Shipments as lists showed them, by id and version
    /// ([`listed::page`]).
    pub listed: Arc<listed::ListedMemo>,
}

impl Shared {
    /// The state of a server.
    pub fn new(
        store: Store,
        environment: Environment,
        request_timeout: Duration,
        data_key: DataKey,
        allow_private_webhook_targets: bool,
        outbox_signal: Arc<tokio::sync::Notify>,
    ) -> Shared {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Shared {
            store,
            environment,
            request_timeout,
            data_key,
            allow_private_webhook_targets,
            password_checks: Arc::new(tokio::sync::Semaphore::new(cores)),
            outbox_signal,
            dashboard_secure_cookies: false,
            redelivery_budget: crate::store::outbox::RedeliveryBudget::default(),
            test_controls: None,
            listeners: crate::webhooks::listeners::Listeners::new(),
            key_cache: Arc::default(),
            pricing: Arc::new(couriers::pricing_memo()),
            listed: Arc::new(listed::listed_memo()),
        }
    }

    /// `staging` or `production`.
    pub fn environment_name(&self) -> &'static str {
        match self.environment {
            Environment::Staging => "staging",
            Environment::Production => "production",
        }
    }
}

/// Why a use-case did not do what was asked.
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
    /// The database failed (a server fault; details are logged, not shown).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Any other server fault.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// Whether the caller can fix it (as opposed to a server fault).
    pub fn is_callers(&self) -> bool {
        !matches!(self, Error::Store(_) | Error::Internal(_))
    }

    /// Whether it is a passing server fault worth retrying shortly: the
    /// database busy or unreachable, its connection lost or refused
    /// ([`StoreError::is_unavailable`]), or a write that kept conflicting.
    pub fn is_temporary(&self) -> bool {
        match self {
            Error::Store(e) => e.is_unavailable() || matches!(e, StoreError::Contended(_)),
            _ => false,
        }
    }
}

/// The outcome of a use-case.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A positive integer id from a path segment.
pub fn numeric_id<Id: From<i64>>(raw: &str) -> Result<Id> {
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .map(Id::from)
        .ok_or_else(|| Error::InvalidIdentifier(format!("`{raw}` is not a valid id")))
}
