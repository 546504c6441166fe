//! `GET /metrics` in the Prometheus text format: requests by route and
//! status, webhook deliveries by outcome, the outbox backlog and the
//! database pool.
//!
//! Counters and histograms are recorded where things happen (the HTTP
//! middleware here, the dispatcher); gauges that describe the database are
//! read when the endpoint is scraped, so they are never stale.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::store::Store;

/// Buckets of the latency histograms, in seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The process-wide recorder (a process has one global recorder, and tests
/// start many servers in one process).
pub(crate) fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
            .expect("the bucket list is not empty")
            .build_recorder();
        let handle = recorder.handle();
        // Fails only if another recorder was installed first, in which case
        // this one simply sees nothing.
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed");
        }
        handle
    })
}

/// Counts and times every request by method, route template and status.
pub(crate) async fn track_requests(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().to_string();
    // The template (`/api/v1/shipments/{code}`), never the raw path, so the
    // number of series stays bounded.
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(req).await;
    let labels = [
        ("method", method),
        ("route", route),
        ("status", response.status().as_u16().to_string()),
    ];
    metrics::counter!("http_requests_total", &labels).increment(1);
    metrics::histogram!("http_request_duration_seconds", &labels)
        .record(started.elapsed().as_secs_f64());
    response
}

/// Records one webhook delivery attempt.
pub(crate) fn delivery(success: bool, seconds: f64) {
    let outcome = if success { "success" } else { "failure" };
    metrics::counter!("webhook_deliveries_total", "outcome" => outcome).increment(1);
    metrics::histogram!("webhook_delivery_duration_seconds", "outcome" => outcome).record(seconds);
}

/// `GET /metrics`.
pub(crate) async fn render(State(store): State<Store>) -> Response {
    match store.outbox_backlog().await {
        Ok(backlog) => {
            metrics::gauge!("outbox_depth").set(backlog.depth as f64);
            let age = backlog.oldest.map_or(0.0, |t| {
                (crate::store::now() - t).num_milliseconds().max(0) as f64 / 1000.0
            });
            metrics::gauge!("outbox_oldest_age_seconds").set(age);
        }
        Err(e) => tracing::warn!(error = %e, "metrics: cannot read the outbox backlog"),
    }
    let pool = store.pool_usage();
    metrics::gauge!("db_pool_connections", "state" => "in_use").set(f64::from(pool.in_use));
    metrics::gauge!("db_pool_connections", "state" => "idle").set(f64::from(pool.idle));
    metrics::gauge!("db_pool_max_connections").set(f64::from(pool.max));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        handle().render(),
    )
        .into_response()
}
