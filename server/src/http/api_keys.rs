//! The dashboard's API key management (Bearer): list, create, delete, and
//! verify a pasted key.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use shipment_sdk::model::List;

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

/// An API key as listed (never the secret).
#[derive(Debug, Serialize)]
pub struct ApiKeyView {
    id: i64,
    name: String,
    prefix: String,
    last4: String,
    #[serde(with = "shipment_sdk::model::timestamp")]
    created_at: DateTime<Utc>,
    #[serde(serialize_with = "shipment_sdk::model::timestamp::serialize_option")]
    last_used_at: Option<DateTime<Utc>>,
}

impl From<ApiKeyInfo> for ApiKeyView {
    fn from(k: ApiKeyInfo) -> Self {
        ApiKeyView {
            id: k.id,
            name: k.name,
            prefix: k.prefix,
            last4: k.last4,
            created_at: k.created_at,
            last_used_at: k.last_used_at,
        }
    }
}

/// A new key: the listed fields and, this once, the key itself.
#[derive(Debug, Serialize)]
pub struct NewApiKeyView {
    #[serde(flatten)]
    info: ApiKeyView,
    key: String,
}

/// `POST /api-keys` body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateKey {
    #[serde(default)]
    name: Option<String>,
}

/// `POST /api-keys/verify` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyKey {
    key: String,
}

/// The answer of a verification.
#[derive(Debug, Serialize)]
pub struct KeyVerdict {
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

async fn list_keys(
    State(state): State<AppState>,
    session: Session,
) -> Result<Json<List<ApiKeyView>>, ApiError> {
    let data = state.store.api_keys(session.merchant_id).await?;
    Ok(Json(List {
        data: data.into_iter().map(ApiKeyView::from).collect(),
    }))
}

async fn create_key(
    State(state): State<AppState>,
    session: Session,
    MaybeJson(body): MaybeJson<CreateKey>,
) -> Result<(StatusCode, Json<NewApiKeyView>), ApiError> {
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
        Json(NewApiKeyView {
            info: info.into(),
            key: key.expose().to_owned(),
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
    ApiJson(body): ApiJson<VerifyKey>,
) -> Result<Json<KeyVerdict>, ApiError> {
    let key = body.key.trim();
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
