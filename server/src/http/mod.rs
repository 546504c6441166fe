//! The HTTP layer: one router per resource, shared state, and the
//! cross-cutting middleware (request ids, limits, problem-shaped fallbacks).

use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use shipment_sdk::model::ProblemCode;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};

use crate::app::AppState;

pub(crate) mod api_keys;
pub(crate) mod auth;
mod courier_side;
mod drain;
pub(crate) mod error;
pub(crate) mod extract;
mod health;
mod listen;
mod merchant_couriers;
pub(crate) mod openapi;
mod params;
pub(crate) mod permissions;
pub(crate) mod shipments;
mod testing;
pub(crate) mod webhooks;

pub(crate) use error::ApiError;

pub(crate) use crate::config::MAX_BODY_BYTES;
/// Header carrying the request id, echoed when the caller sends one.
pub(crate) const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");
/// Longest caller-supplied request id kept; longer ones are replaced.
const MAX_REQUEST_ID: usize = 128;

/// The whole application: `/healthz`, `/readyz`, the API under `/api/v1`,
/// and `pages` at the root (the dashboard's and `/metrics`, or some or
/// none of them). The pages come in as a router, so this layer does not
/// depend on the dashboard's nor on what the metrics read.
///
/// What no route takes under `/api/v1` is always the API's problem. At
/// the root it is `pages`' fallback: the dashboard's own page where the
/// dashboard is served, else [`problem_fallback`]'s.
pub(crate) fn router(state: AppState, pages: Router<AppState>) -> Router {
    let api = Router::new()
        .merge(shipments::router())
        .merge(courier_side::router())
        .merge(merchant_couriers::router())
        .merge(auth::router())
        .merge(api_keys::router())
        .merge(webhooks::router())
        .merge(listen::router())
        .route("/openapi.json", axum::routing::get(openapi::serve));
    let api = testing::mount(api, &state)
        .fallback(not_found)
        .layer(middleware::from_fn(permissions::key_headers));
    let app = Router::new()
        .merge(health::router())
        .nest("/api/v1", api)
        .merge(pages);
    with_common_layers(app, state)
}

/// Pages for a listener without the dashboard: a root whose fallback is
/// the API's problem-shaped 404, as an unknown route's answer should be.
pub(crate) fn problem_fallback() -> Router<AppState> {
    Router::new().fallback(not_found)
}

/// What every listener's requests go through: request ids, the time
/// limit, the body limit (with what a handler left of a body read before
/// answering: `drain.rs`), panics caught, one log line each, metrics, and
/// a problem-shaped 405 on every route without a 405 of its own. The 404
/// of a path no route takes is `app`'s fallback (see [`router`]). The
/// dashboard's own listener (`--dashboard-addr`) serves its pages through
/// these too.
pub(crate) fn with_common_layers(app: Router<AppState>, state: AppState) -> Router {
    let timeout = state.request_timeout;
    app.route_layer(middleware::from_fn(crate::metrics::track_requests))
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
                    let span = tracing::info_span!("request", method = %req.method(), uri = %req.uri().path(), request_id = %id, otel.kind = "server");
                    // The caller's span (W3C `traceparent`) as its parent,
                    // when spans are exported (`--otlp-endpoint`).
                    crate::telemetry::adopt_caller(&span, req.headers());
                    span
                })
                // One line per request, in its span, so it carries the request id.
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
        )
        .layer(middleware::from_fn(move |req, next| request_scope(req, next, timeout)))
        // Outermost, so its reading is not counted in the request's time.
        .layer(middleware::from_fn(move |req, next| drain::drain_unread(req, next, timeout)))
}

/// Gives every request an id (the caller's, if sane), makes it available to
/// error bodies, refuses an API body declared longer than the limit, keeps the caller's trace context for the changes it
/// writes (`telemetry::with_caller`), bounds the request's time, and
/// echoes the id.
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
    let caller = crate::telemetry::caller(req.headers());
    let mut response = error::REQUEST_ID
        .scope(id, async move {
            // Refused before any of it is read (`drain.rs` then reads it
            // all, up to its bound, before the answer goes out); the
            // dashboard's pages answer an oversize form with a page.
            if req.uri().path().starts_with("/api/") && drain::declares_oversize(req.headers()) {
                return ApiError::payload_too_large().into_response();
            }
            let request = crate::telemetry::with_caller(caller, next.run(req));
            match tokio::time::timeout(timeout, request).await {
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

async fn not_found() -> ApiError {
    ApiError::not_found("no such route; the API lives under /api/v1")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ProblemCode::MethodNotAllowed,
        "this route does not support this HTTP method",
    )
}
