//! The dashboard's API key management (Bearer): list, create, delete, and
//! verify a pasted key.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use shipment_sdk::model::{ApiKey, CreateApiKey, KeyVerdict, List, NewApiKey, VerifyApiKey};

use super::ApiError;
use super::extract::{ApiJson, MaybeJson};
use super::params::{IdParam, Problems};
use crate::app::api_keys::{create_api_key, delete_api_key, find_own_key, list_api_keys};
use crate::app::auth::Session;
use crate::app::{AppState, numeric_id};

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api-keys", get(list_keys).post(create_key))
        .route("/api-keys/verify", post(verify_key))
        .route("/api-keys/{id}", delete(delete_key))
}

#[utoipa::path(
    get,
    path = "/api-keys",
    tag = "dashboard",
    summary = "List API keys (no secrets)",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Keys", body = List<ApiKey>),
        Problems
    )
)]
async fn list_keys(
    State(state): State<AppState>,
    session: Session,
) -> Result<Json<List<ApiKey>>, ApiError> {
    let data = list_api_keys(&state, session.merchant_id).await?;
    Ok(Json(List::new(data)))
}

#[utoipa::path(
    post,
    path = "/api-keys",
    tag = "dashboard",
    summary = "Create an API key (the only time it is shown)",
    security(("bearer" = [])),
    request_body(
        content = Option<CreateApiKey>,
        description = "Optional: without it (or without `name`) the server names the key"
    ),
    responses(
        (status = 201, description = "Created", body = NewApiKey),
        Problems
    )
)]
async fn create_key(
    State(state): State<AppState>,
    session: Session,
    MaybeJson(body): MaybeJson<CreateApiKey>,
) -> Result<(StatusCode, Json<NewApiKey>), ApiError> {
    let (api_key, key) = create_api_key(
        &state,
        session.merchant_id,
        body.unwrap_or_default().name.as_deref(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(NewApiKey::new(api_key, key))))
}

#[utoipa::path(
    delete,
    path = "/api-keys/{id}",
    tag = "dashboard",
    summary = "Delete an API key: it fails with 401 at once",
    description = "The server that deletes the key refuses it from the next request on, and so \
                   do other server processes sharing a PostgreSQL database (the deletion is \
                   announced to them as it commits); another process on the same SQLite file \
                   (which remembers a verified key for 0.5 s) refuses it within half a second.",
    security(("bearer" = [])),
    params(IdParam),
    responses(
        (status = 204, description = "Deleted"),
        Problems
    )
)]
async fn delete_key(
    State(state): State<AppState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    delete_api_key(&state, session.merchant_id, numeric_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Whether a pasted string is one of this merchant's working keys. Any
/// string is a fair question, so a malformed one is `valid: false`, not 400.
#[utoipa::path(
    post,
    path = "/api-keys/verify",
    tag = "dashboard",
    summary = "Check whether a key string is a live key of this merchant",
    security(("bearer" = [])),
    request_body = VerifyApiKey,
    responses(
        (status = 200, description = "The verdict", body = KeyVerdict),
        Problems
    )
)]
async fn verify_key(
    State(state): State<AppState>,
    session: Session,
    ApiJson(body): ApiJson<VerifyApiKey>,
) -> Result<Json<KeyVerdict>, ApiError> {
    Ok(Json(
        match find_own_key(&state, session.merchant_id, body.key.expose()).await? {
            Some(k) => KeyVerdict::valid(k.id, k.name),
            None => KeyVerdict::invalid(),
        },
    ))
}
