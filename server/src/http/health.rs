//! `GET /healthz` (the process is up) and `GET /readyz` (and can reach its
//! database), outside `/api/v1` so load balancers need no key.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::ApiError;
use crate::app::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    crate::app::ping_database(&state).await.map_err(|e| {
        tracing::warn!(error = %e, "readiness check failed");
        ApiError::unavailable("the database is unreachable")
    })?;
    Ok(Json(json!({"status": "ready"})))
}
