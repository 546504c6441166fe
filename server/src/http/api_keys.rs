//! The dashboard's API key management (Bearer): list, create, delete, and
//! verify a pasted key.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use shipment_sdk::model::{
    ApiKey, CreateApiKey, KeyVerdict, List, NewApiKey, Secret, VerifyApiKey,
};

use super::auth::Session;
use super::extract::{ApiJson, MaybeJson};
use super::openapi::{IdParam, Problems};
use super::{ApiError, AppState};
use crate::domain::keys::{self, KeyKind};
use crate::store::dashboard::ApiKeyInfo;

/// Longest key name accepted.
pub const MAX_KEY_NAME: usize = 100;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api-keys", get(list_keys).post(create_key))
        .route("/api-keys/verify", post(verify_key))
        .route("/api-keys/{id}", delete(delete_key))
}

fn view(k: ApiKeyInfo) -> ApiKey {
    ApiKey {
        id: k.id,
        name: k.name,
        prefix: k.prefix,
        last4: k.last4,
        created_at: k.created_at,
        last_used_at: k.last_used_at,
    }
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
    let data = state.store.api_keys(session.merchant_id).await?;
    Ok(Json(List {
        data: data.into_iter().map(view).collect(),
    }))
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
    let (info, key) = create_named_key(
        &state,
        session.merchant_id,
        body.unwrap_or_default().name.as_deref(),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(NewApiKey {
            api_key: view(info),
            key: Secret::new(key.expose()),
        }),
    ))
}

/// Creates an API key for the merchant, named `name` (trimmed; a default
/// when empty; at most [`MAX_KEY_NAME`] characters). The secret is returned
/// once and only its digest is stored.
pub(crate) async fn create_named_key(
    state: &AppState,
    merchant_id: i64,
    name: Option<&str>,
) -> Result<(ApiKeyInfo, keys::Secret), ApiError> {
    let name = match name.map(str::trim) {
        Some(n) if n.chars().count() > MAX_KEY_NAME => {
            return Err(ApiError::invalid_field(
                "name",
                format!("`name` must be at most {MAX_KEY_NAME} characters"),
            ));
        }
        // PostgreSQL text cannot hold NUL.
        Some(n) if n.contains('\0') => {
            return Err(ApiError::invalid_field(
                "name",
                "`name` must not contain NUL characters",
            ));
        }
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => "API key".to_owned(),
    };
    Ok(state
        .store
        .create_named_api_key(merchant_id, &name, state.environment)
        .await?)
}

#[utoipa::path(
    delete,
    path = "/api-keys/{id}",
    tag = "dashboard",
    summary = "Delete an API key: it fails with 401 at once",
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
    let id = numeric_id(&id)?;
    if state.store.delete_api_key(session.merchant_id, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("you have no API key with this id"))
    }
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
            Some(k) => KeyVerdict {
                valid: true,
                id: Some(k.id),
                name: Some(k.name),
            },
            None => KeyVerdict {
                valid: false,
                id: None,
                name: None,
            },
        },
    ))
}

/// The merchant's working key that `pasted` is, if it is one: well formed,
/// of this server's environment, and not deleted.
pub(crate) async fn find_own_key(
    state: &AppState,
    merchant_id: i64,
    pasted: &str,
) -> Result<Option<ApiKeyInfo>, ApiError> {
    let key = pasted.trim();
    let well_formed = keys::shape(key)
        .is_some_and(|s| s.kind == KeyKind::Merchant && s.environment == state.environment);
    if !well_formed {
        return Ok(None);
    }
    Ok(state
        .store
        .api_key_by_digest(merchant_id, &keys::digest(key))
        .await?)
}

/// A positive integer id from a path segment.
pub(crate) fn numeric_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| ApiError::invalid_identifier(format!("`{raw}` is not a valid id")))
}
