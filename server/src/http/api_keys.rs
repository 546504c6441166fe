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

async fn list_keys(
    State(state): State<AppState>,
    session: Session,
) -> Result<Json<List<ApiKey>>, ApiError> {
    let data = state.store.api_keys(session.merchant_id).await?;
    Ok(Json(List {
        data: data.into_iter().map(view).collect(),
    }))
}

async fn create_key(
    State(state): State<AppState>,
    session: Session,
    MaybeJson(body): MaybeJson<CreateApiKey>,
) -> Result<(StatusCode, Json<NewApiKey>), ApiError> {
    let name = body.unwrap_or_default().name.map(|n| n.trim().to_owned());
    let name = match name {
        Some(n) if n.chars().count() > MAX_KEY_NAME => {
            return Err(ApiError::invalid_field(
                "name",
                format!("`name` must be at most {MAX_KEY_NAME} characters"),
            ));
        }
        Some(n) if !n.is_empty() => n,
        _ => "API key".to_owned(),
    };
    let (info, key) = state
        .store
        .create_named_api_key(session.merchant_id, &name, state.environment)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(NewApiKey {
            api_key: view(info),
            key: Secret::new(key.expose()),
        }),
    ))
}

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
async fn verify_key(
    State(state): State<AppState>,
    session: Session,
    ApiJson(body): ApiJson<VerifyApiKey>,
) -> Result<Json<KeyVerdict>, ApiError> {
    let key = body.key.expose().trim();
    let well_formed = keys::shape(key)
        .is_some_and(|s| s.kind == KeyKind::Merchant && s.environment == state.environment);
    let found = if well_formed {
        state
            .store
            .api_key_by_digest(session.merchant_id, &keys::digest(key))
            .await?
    } else {
        None
    };
    Ok(Json(match found {
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
    }))
}

/// A positive integer id from a path segment.
pub(super) fn numeric_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| ApiError::invalid_identifier(format!("`{raw}` is not a valid id")))
}
