//! The state every use-case runs with: one [`AppState`] handle per server,
//! cloned into every request.

use std::sync::Arc;
use std::time::Duration;

use crate::cache::keys::KeyCache;
use crate::cache::listed::{ListedMemo, listed_memo};
use crate::cache::pricing::{PricingMemo, pricing_memo};
use crate::domain::keys::Environment;
use crate::domain::sealed::DataKey;
use crate::store::Store;
use crate::test_controls::TestControls;

/// What every handler can reach: a handle to the [`Shared`] state.
///
/// Why a handle: axum clones the state for every request, once for the
/// handler and once more for each extractor and middleware that takes it.
/// A clone of the fields themselves counted a dozen `Arc`s up and down per
/// clone, on cache lines every core shares, a share of the server's CPU
/// under reads by code that a profile showed (BENCHMARKS.md has today's
/// figures; docs/src/appendix/benchmarks-history.md, "One `Arc` per
/// request, mimalloc, anonymous parameters", the measurement). A clone of
/// this is one count.
#[derive(Clone)]
pub(crate) struct AppState(Arc<Shared>);

impl AppState {
    /// The handle to `shared`.
    pub(crate) fn new(shared: Shared) -> AppState {
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
pub(crate) struct Shared {
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
    pub test_controls: Option<Arc<TestControls>>,
    /// The listeners (`GET /webhooks/listen`) connected to this process,
    /// fed by its dispatcher.
    pub listeners: crate::webhooks::listeners::Listeners,
    /// API keys verified in the last moment ([`crate::cache::keys`]): an
    /// authenticated request is then one database round trip.
    pub key_cache: Arc<KeyCache>,
    /// The prices of a merchant's linked courier companies, as creates
    /// found them ([`couriers::linked_pricing`]).
    pub pricing: Arc<PricingMemo>,
    /// Shipments as lists showed them, by id and version
    /// ([`ListedMemo::page`]).
    pub listed: Arc<ListedMemo>,
}

impl Shared {
    /// The state of a server.
    pub(crate) fn new(
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
            pricing: Arc::new(pricing_memo()),
            listed: Arc::new(listed_memo()),
        }
    }

    /// `staging` or `production`.
    pub(crate) fn environment_name(&self) -> &'static str {
        match self.environment {
            Environment::Staging => "staging",
            Environment::Production => "production",
        }
    }
}
