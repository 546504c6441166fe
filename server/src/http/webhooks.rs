//! The dashboard's webhook management (Bearer): register, list, enable or
//! disable, delete, the delivery log, and the shipment signing key.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use shipment_sdk::model::{
    Delivery, List, NewWebhook, Page, RegisterWebhook, Secret, SetWebhookActive, SigningKey,
    Webhook,
};

use super::api_keys::numeric_id;
use super::auth::Session;
use super::extract::ApiJson;
use super::{ApiError, AppState};
use crate::domain::keys;
use crate::domain::list_query::parse_page;
use crate::domain::validation::https_url;
use crate::store::StoreError;
use crate::store::dashboard::{DeliveryRecord, WebhookInfo};
use crate::webhooks::guard;

/// Prefix of signing keys.
pub const SIGNING_KEY_PREFIX: &str = "whsec_";

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/webhooks", get(list_webhooks).post(register_webhook))
        .route(
            "/webhooks/shipment-signing-key",
            post(rotate_shipment_signing_key),
        )
        .route("/webhooks/{id}", patch(set_active).delete(delete_webhook))
        .route("/webhooks/{id}/deliveries", get(deliveries))
}

fn view(w: WebhookInfo) -> Webhook {
    Webhook {
        webhook_id: w.id,
        url: w.url,
        active: w.active,
        created_at: w.created_at,
    }
}

fn delivery(d: DeliveryRecord) -> Delivery {
    Delivery {
        id: d.id,
        success: d.error.is_none(),
        shipment_code: d.shipment_code,
        version: d.version,
        url: d.url,
        status_code: d.status_code,
        error: d.error,
        duration_ms: d.duration_ms,
        delivered_at: d.delivered_at,
    }
}

async fn list_webhooks(
    State(state): State<AppState>,
    session: Session,
) -> Result<Json<List<Webhook>>, ApiError> {
    let data = state.store.webhooks(session.merchant_id).await?;
    Ok(Json(List {
        data: data.into_iter().map(view).collect(),
    }))
}

/// Checks a webhook target: HTTPS, no credentials, and (unless private
/// targets are allowed) a host that resolves only to public addresses.
pub(super) async fn check_webhook_url(
    state: &AppState,
    field: &str,
    raw: &str,
) -> Result<String, ApiError> {
    let url = https_url(field, raw.trim())?;
    let parsed =
        url::Url::parse(&url).map_err(|e| ApiError::invalid_field(field, e.to_string()))?;
    guard::check_target(&parsed, state.allow_private_webhook_targets)
        .await
        .map_err(|why| {
            ApiError::invalid_field(field, format!("`{field}` cannot be used: {why}"))
        })?;
    Ok(url)
}

async fn register_webhook(
    State(state): State<AppState>,
    session: Session,
    ApiJson(body): ApiJson<RegisterWebhook>,
) -> Result<(StatusCode, Json<NewWebhook>), ApiError> {
    let url = check_webhook_url(&state, "url", &body.url).await?;
    let signing_key = keys::random_token(SIGNING_KEY_PREFIX);
    let sealed = state.data_key.seal(signing_key.expose());
    let webhook = match state
        .store
        .create_webhook(session.merchant_id, &url, &sealed)
        .await
    {
        Ok(w) => w,
        Err(StoreError::Conflict(_)) => {
            return Err(ApiError::conflict(
                "webhook_url_taken",
                "you have already registered this URL",
            )
            .with_field("url"));
        }
        Err(e) => return Err(e.into()),
    };
    Ok((
        StatusCode::CREATED,
        Json(NewWebhook {
            webhook: view(webhook),
            signing_key: Secret::new(signing_key.expose()),
        }),
    ))
}

async fn set_active(
    State(state): State<AppState>,
    session: Session,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SetWebhookActive>,
) -> Result<Json<Webhook>, ApiError> {
    let id = numeric_id(&id)?;
    state
        .store
        .set_webhook_active(session.merchant_id, id, body.active)
        .await?
        .map(|w| Json(view(w)))
        .ok_or_else(|| ApiError::not_found("you have no webhook with this id"))
}

async fn delete_webhook(
    State(state): State<AppState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = numeric_id(&id)?;
    if state.store.delete_webhook(session.merchant_id, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("you have no webhook with this id"))
    }
}

async fn deliveries(
    State(state): State<AppState>,
    session: Session,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<Delivery>>, ApiError> {
    let id = numeric_id(&id)?;
    let (page, page_size) = parse_page(query.as_deref().unwrap_or(""))?;
    if state
        .store
        .webhook(session.merchant_id, id)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found("you have no webhook with this id"));
    }
    let offset = u64::from(page - 1) * u64::from(page_size);
    let (rows, total) = state
        .store
        .webhook_deliveries(id, page_size, offset)
        .await?;
    Ok(Json(Page {
        data: rows.into_iter().map(delivery).collect(),
        page,
        page_size,
        total,
        total_pages: total.div_ceil(u64::from(page_size)),
    }))
}

async fn rotate_shipment_signing_key(
    State(state): State<AppState>,
    session: Session,
) -> Result<(StatusCode, Json<SigningKey>), ApiError> {
    let signing_key = keys::random_token(SIGNING_KEY_PREFIX);
    let sealed = state.data_key.seal(signing_key.expose());
    let created_at = state
        .store
        .set_shipment_signing_key(session.merchant_id, &sealed)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(SigningKey {
            signing_key: Secret::new(signing_key.expose()),
            created_at,
        }),
    ))
}
