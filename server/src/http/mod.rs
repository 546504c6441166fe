//! The HTTP layer: one router per resource, shared state, and the
//! cross-cutting middleware (request ids, limits, problem-shaped fallbacks).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};

use crate::domain::keys::Environment;
use crate::domain::sealed::DataKey;
use crate::store::Store;

pub(crate) mod api_keys;
pub(crate) mod auth;
mod courier;
mod couriers;
pub mod error;
pub mod extract;
mod health;
pub mod openapi;
pub(crate) mod shipments;
pub(crate) mod webhooks;

pub use error::ApiError;

/// Largest request body accepted (1 MiB); larger is 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Header carrying the request id, echoed when the caller sends one.
pub const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");
/// Longest caller-supplied request id kept; longer ones are replaced.
const MAX_REQUEST_ID: usize = 128;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
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
}

impl AppState {
    /// The state of a server.
    pub fn new(
        store: Store,
        environment: Environment,
        request_timeout: Duration,
        data_key: DataKey,
        allow_private_webhook_targets: bool,
        outbox_signal: Arc<tokio::sync::Notify>,
    ) -> AppState {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        AppState {
            store,
            environment,
            request_timeout,
            data_key,
            allow_private_webhook_targets,
            password_checks: Arc::new(tokio::sync::Semaphore::new(cores)),
            outbox_signal,
            dashboard_secure_cookies: false,
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

/// The whole application: `/healthz`, `/readyz`, the API under `/api/v1`,
/// when `with_dashboard` the dashboard's pages at the root, and when
/// `with_metrics` `/metrics`.
pub fn router(state: AppState, with_metrics: bool, with_dashboard: bool) -> Router {
    // Every successful write to a shipment wrote an outbox row.
    let changes = Router::new()
        .merge(shipments::router())
        .merge(courier::router())
        .layer(middleware::from_fn_with_state(
            state.clone(),
            wake_dispatcher,
        ));
    let api = Router::new()
        .merge(changes)
        .merge(couriers::router())
        .merge(auth::router())
        .merge(api_keys::router())
        .merge(webhooks::router())
        .route("/openapi.json", axum::routing::get(openapi::serve));
    let mut app = Router::new().merge(health::router()).nest("/api/v1", api);
    if with_dashboard {
        app = app.merge(crate::dashboard::router());
    }
    if with_metrics {
        let store = state.store.clone();
        app = app.route(
            "/metrics",
            axum::routing::get(move || crate::metrics::render(axum::extract::State(store))),
        );
    }
    with_common_layers(app, state)
}

/// The dashboard alone, for a listener of its own (`--dashboard-addr`).
pub fn dashboard_router(state: AppState) -> Router {
    with_common_layers(crate::dashboard::router(), state)
}

/// What every listener's requests go through: request ids, the time
/// limit, the body limit, panics caught, one log line each, metrics, and
/// problem-shaped 404 and 405.
fn with_common_layers(app: Router<AppState>, state: AppState) -> Router {
    let timeout = state.request_timeout;
    app.route_layer(middleware::from_fn(crate::metrics::track_requests))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::internal(&"a handler panicked").into_response()
        }))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request| {
                    let id = req.headers().get(&REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
                    tracing::info_span!("request", method = %req.method(), uri = %req.uri().path(), request_id = %id)
                })
                // One line per request, in its span, so it carries the request id.
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
        )
        .layer(middleware::from_fn(move |req, next| request_scope(req, next, timeout)))
}

/// Gives every request an id (the caller's, if sane), makes it available to
/// error bodies, bounds the request's time, and echoes the id.
async fn request_scope(mut req: Request, next: Next, timeout: Duration) -> Response {
    let id = req
        .headers()
        .get(&REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty() && v.len() <= MAX_REQUEST_ID && v.bytes().all(|b| b.is_ascii_graphic())
        })
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    let value = HeaderValue::from_str(&id).expect("checked to be visible ASCII");
    req.headers_mut().insert(REQUEST_ID_HEADER, value.clone());
    let mut response = error::REQUEST_ID
        .scope(id, async move {
            match tokio::time::timeout(timeout, next.run(req)).await {
                Ok(response) => response,
                Err(_) => ApiError::unavailable(format!(
                    "the request took longer than {} s and was abandoned",
                    timeout.as_secs()
                ))
                .into_response(),
            }
        })
        .await;
    response.headers_mut().insert(REQUEST_ID_HEADER, value);
    response
}

/// After a successful change, tells the dispatcher there is work.
async fn wake_dispatcher(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    let writes = req.method() != axum::http::Method::GET;
    let response = next.run(req).await;
    if writes && response.status().is_success() {
        state.outbox_signal.notify_one();
    }
    response
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route; the API lives under /api/v1")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not support this HTTP method",
    )
}
