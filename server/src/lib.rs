//! The reference server of the merchant shipment service.
//!
//! [`Application::build`] turns a [`Config`] into a bound, migrated, ready
//! server; `main.rs` only parses arguments and calls it, so tests start the
//! very same thing on port 0.
//!
//! The modules below, bottom first, each naming only those under it
//! (`tests/api/layers.rs` holds the order): `domain` (the rules, no I/O) and
//! `telemetry`; `store` (the database); `serve` and `metrics`; `webhooks`
//! (delivery); `cache` (what the state remembers between requests) and
//! `test_controls` (what the test controls armed); `app` (the use-cases and
//! the state they run with); `testing` (the test surface: test controls, a
//! merchant per test, fixtures); `start_error`, `config` and `admin`; the
//! front ends `http` and `dashboard`, and `simulate`.
#![warn(missing_docs)]
// Inside the private modules an item is `pub(crate)` unless the crate's
// public surface (the modules above that are `pub`, the `harness` facade,
// the re-exports below) reaches it: what the test kit, the binary, the
// fuzz targets and the benches may use is then what `pub` says, and a
// reader of a private module sees at a glance that nothing outside uses
// an item.
#![warn(unreachable_pub)]

/// The README's Rust example, compiled (not run) with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

use std::future::Future;
use std::net::SocketAddr;

use tokio::net::TcpListener;

pub mod admin;
mod app;
mod cache;
pub mod config;
mod dashboard;
mod domain;
pub mod harness;
mod http;
mod metrics;
mod serve;
pub mod simulate;
mod start_error;
mod store;
pub mod telemetry;
mod test_controls;
mod testing;
mod webhooks;

pub use cache::keys::KEY_CACHE_TTL;
pub use cache::pricing::PRICING_MEMORY_TTL;
pub use config::Config;
pub use domain::keys::Environment;
pub use http::openapi::document_json as openapi_json;
pub use start_error::StartError;
pub use store::Store;
pub use testing::fixtures::{FixtureError, FixtureReport, read_fixtures_file};

/// A server bound to its address, with its database migrated and its
/// webhook dispatcher ready.
pub struct Application {
    listener: TcpListener,
    router: axum::Router,
    store: Store,
    dispatcher: webhooks::Dispatcher,
    listeners: webhooks::listeners::Listeners,
    /// What the listener relay makes forget revoked keys.
    key_cache: std::sync::Arc<cache::keys::KeyCache>,
    deliver_webhooks: bool,
    metrics_listener: Option<TcpListener>,
    dashboard: Option<(TcpListener, axum::Router)>,
    limits: serve::ConnectionLimits,
}

impl Application {
    /// Connects to the database, applies migrations and binds the address.
    pub async fn build(config: &Config) -> Result<Application, StartError> {
        if config.test_controls
            && config.environment.environment == domain::keys::Environment::Production
        {
            return Err(StartError::TestControlsInProduction);
        }
        // Before the database: a refused combination of flags costs nothing.
        let dispatch_settings = config.dispatch_settings()?;
        let test_controls = config.test_controls.then(|| {
            std::sync::Arc::new(test_controls::TestControls::new(
                store::merchants::TestMerchantLimits {
                    per_caller: config.max_test_merchants_per_caller,
                    total: config.max_test_merchants,
                },
            ))
        });
        let store = Store::connect(&config.database.database_url, config.database.pool()).await?;
        store.migrate().await?;
        let data_key = config.data_key.load()?;
        let outbox_signal = std::sync::Arc::new(tokio::sync::Notify::new());
        let listeners = webhooks::listeners::Listeners::new();
        let dispatcher =
            webhooks::Dispatcher::new(store.clone(), data_key.clone(), dispatch_settings)?
                .woken_by(outbox_signal.clone())
                .feeding(listeners.clone())
                .with_test_controls(
                    test_controls
                        .clone()
                        .map(|c| c as std::sync::Arc<dyn webhooks::Duplicates>),
                );
        let listener = bind(config.addr).await?;
        let metrics_listener = match config.metrics_addr {
            Some(addr) => Some(bind(addr).await?),
            None => None,
        };
        let dashboard_listener = match config.dashboard_addr {
            Some(addr) => Some(bind(addr).await?),
            None => None,
        };
        metrics::handle();
        let mut shared = app::Shared::new(
            store.clone(),
            config.environment.environment,
            config.request_timeout(),
            data_key,
            config.webhooks.allow_private_webhook_targets,
            outbox_signal,
        );
        shared.dashboard_secure_cookies = config.dashboard_secure_cookies;
        shared.redelivery_budget =
            store::outbox::RedeliveryBudget::per_minute(config.webhooks.redeliveries_per_minute);
        shared.test_controls = test_controls;
        shared.listeners = listeners.clone();
        let key_cache = shared.key_cache.clone();
        let state = app::AppState::new(shared);
        if let Some(path) = &config.fixtures {
            testing::fixtures::apply_file(&state, path).await?;
        }
        let dashboard = dashboard_listener.map(|l| {
            (
                l,
                http::with_common_layers(dashboard::router(), state.clone()),
            )
        });
        let mut pages = if dashboard.is_none() {
            dashboard::router()
        } else {
            http::problem_fallback()
        };
        if metrics_listener.is_none() {
            let store = store.clone();
            pages = pages.route(
                "/metrics",
                axum::routing::get(move || metrics::render(axum::extract::State(store))),
            );
        }
        Ok(Application {
            listener,
            router: http::router(state, pages),
            store,
            dispatcher,
            listeners,
            key_cache,
            deliver_webhooks: !config.webhooks.no_webhook_delivery,
            metrics_listener,
            dashboard,
            limits: config.connections.limits(),
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The store the server uses (for fixtures in tests and the demo).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The address of the separate metrics listener, if `--metrics-addr`
    /// asked for one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// The address of the dashboard's own listener, if `--dashboard-addr`
    /// asked for one (otherwise the dashboard is at [`Self::local_addr`]).
    pub fn dashboard_addr(&self) -> Option<SocketAddr> {
        self.dashboard
            .as_ref()
            .and_then(|(l, _)| l.local_addr().ok())
    }

    /// The webhook dispatcher (tests drive it by hand with `run_once`).
    pub fn dispatcher(&self) -> &webhooks::Dispatcher {
        &self.dispatcher
    }

    /// Serves and delivers webhooks until `shutdown` completes, then
    /// finishes in-flight requests and the deliveries in hand, and closes
    /// the database.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        if let Some(listener) = self.metrics_listener {
            let app = axum::Router::new()
                .route("/metrics", axum::routing::get(metrics::render))
                .with_state(self.store.clone());
            serve_until_stopped(listener, app, self.limits, stopped.clone(), "metrics");
        }
        let dashboard = self.dashboard.map(|(listener, app)| {
            serve_until_stopped(listener, app, self.limits, stopped.clone(), "dashboard")
        });
        let relaying = tokio::spawn(webhooks::listeners::relay(
            self.store.clone(),
            self.listeners.clone(),
            self.key_cache.clone(),
            stopped.clone(),
        ));
        let dispatching = self
            .deliver_webhooks
            .then(|| tokio::spawn(self.dispatcher.run(stopped)));
        // Listener streams never end by themselves: they end when shutdown
        // begins, so the graceful shutdown does not wait for them.
        let listeners = self.listeners.clone();
        let shutdown = async move {
            shutdown.await;
            listeners.close();
        };
        let served = serve::serve(self.listener, self.router, self.limits, shutdown).await;
        let _ = stop.send(true);
        // The dashboard finishes its in-flight requests before the
        // database closes.
        if let Some(dashboard) = dashboard {
            let _ = dashboard.await;
        }
        if let Some(dispatching) = dispatching
            && let Err(e) = dispatching.await
        {
            tracing::error!(error = %e, "the webhook dispatcher failed");
        }
        let _ = relaying.await;
        self.store.close().await;
        served
    }
}

async fn bind(addr: SocketAddr) -> Result<TcpListener, StartError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Bind { addr, source })
}

/// Serves `app` on a secondary listener until `stopped` turns true, then
/// finishes its in-flight requests.
fn serve_until_stopped(
    listener: TcpListener,
    app: axum::Router,
    limits: serve::ConnectionLimits,
    mut stopped: tokio::sync::watch::Receiver<bool>,
    what: &'static str,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let until = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        };
        if let Err(e) = serve::serve(listener, app, limits, until).await {
            tracing::error!(error = %e, listener = what, "a listener failed");
        }
    })
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
///
/// The signal handlers are installed when this is called, not when the
/// future is first polled: a signal that arrives after the call (say, right
/// after the server logs that it serves, before it polls this future) ends
/// the server gracefully instead of killing it. Call it inside the tokio
/// runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        [SignalKind::interrupt(), SignalKind::terminate()].map(|kind| {
            signal(kind)
                .inspect_err(|e| tracing::error!(error = %e, "cannot listen for {kind:?}"))
                .ok()
        })
    };
    async move {
        #[cfg(unix)]
        {
            let [interrupt, terminate] = signals;
            let received = |stream: Option<tokio::signal::unix::Signal>| async move {
                match stream {
                    Some(mut stream) => {
                        stream.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = received(interrupt) => {},
                () = received(terminate) => {},
            }
        }
        #[cfg(not(unix))]
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
        tracing::info!("shutting down: finishing in-flight requests");
    }
}

#[cfg(test)]
mod tests {
    use crate::{app, dashboard, http};

    /// The JSON API and the pages answer a use-case's server faults with
    /// the same status (here, above both, since neither imports the other).
    #[test]
    fn both_front_ends_answer_server_faults_alike() {
        let faults: [fn() -> app::Error; 3] = [
            || app::Error::Unavailable("database error: pool timed out".into()),
            || app::Error::Contended("create: too many concurrent writes; try again".into()),
            || app::Error::Internal("database error: no rows".into()),
        ];
        for make in faults {
            let page = dashboard::status_of(&make());
            let api = http::ApiError::from(make());
            assert_eq!(api.status(), page, "{:?}", make());
        }
    }
}
