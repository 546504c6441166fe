//! The dashboard's webhook management (Bearer): register, list, enable or
//! disable, delete, the delivery log, and the shipment signing key.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use shipment_sdk::model::{
    Delivery, List, NewWebhook, Page, RegisterWebhook, Secret, SetWebhookActive, SigningKey,
    Webhook, WebhookUrl,
};

use super::api_keys::numeric_id;
use super::auth::Session;
use super::extract::ApiJson;
use super::openapi::{IdParam, PageParams, Problems};
use super::{ApiError, AppState};
use crate::domain::keys;
use crate::domain::list_query::parse_page;
use crate::domain::validation::webhook_url;
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

pub(crate) fn view(w: WebhookInfo) -> Webhook {
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

#[utoipa::path(
    get,
    path = "/webhooks",
    tag = "dashboard",
    summary = "List webhooks",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Webhooks", body = List<Webhook>),
        Problems
    )
)]
async fn list_webhooks(
    State(state): State<AppState>,
    session: Session,
) -> Result<Json<List<Webhook>>, ApiError> {
    let data = state.store.webhooks(session.merchant_id).await?;
    Ok(Json(List {
        data: data.into_iter().map(view).collect(),
    }))
}

/// Checks a webhook target: a [`WebhookUrl`] (HTTPS, no credentials),
/// and (unless private targets are allowed) a host that resolves to a
/// public address.
pub(super) async fn check_webhook_url(
    state: &AppState,
    field: &str,
    raw: &str,
) -> Result<WebhookUrl, ApiError> {
    let url = webhook_url(field, raw)?;
    check_target(state, field, &url).await?;
    Ok(url)
}

/// Refuses a target the server may not deliver to, with one message
/// whatever the reason (the guard logs it): telling "does not resolve"
/// from "private" would let a merchant probe internal names.
pub(super) async fn check_target(
    state: &AppState,
    field: &str,
    url: &WebhookUrl,
) -> Result<(), ApiError> {
    guard::check_target(url.as_url(), state.allow_private_webhook_targets)
        .await
        .map_err(|why| ApiError::invalid_field(field, format!("`{field}` cannot be used: {why}")))
}

#[utoipa::path(
    post,
    path = "/webhooks",
    tag = "dashboard",
    summary = "Register an HTTPS webhook (its signing key is shown once)",
    security(("bearer" = [])),
    request_body = RegisterWebhook,
    responses(
        (status = 201, description = "Registered", body = NewWebhook),
        Problems
    )
)]
async fn register_webhook(
    State(state): State<AppState>,
    session: Session,
    ApiJson(body): ApiJson<RegisterWebhook>,
) -> Result<(StatusCode, Json<NewWebhook>), ApiError> {
    let (webhook, signing_key) = register(&state, session.merchant_id, &body.url).await?;
    Ok((
        StatusCode::CREATED,
        Json(NewWebhook {
            webhook: view(webhook),
            signing_key: Secret::new(signing_key.expose()),
        }),
    ))
}

/// Registers a webhook for the merchant after checking its URL; returns it
/// with its signing key (shown once; stored sealed). A URL the merchant
/// has already registered is 409 `webhook_url_taken`.
pub(crate) async fn register(
    state: &AppState,
    merchant_id: i64,
    url: &str,
) -> Result<(WebhookInfo, keys::Secret), ApiError> {
    let url = check_webhook_url(state, "url", url).await?;
    let signing_key = keys::random_token(SIGNING_KEY_PREFIX);
    let sealed = state.data_key.seal(signing_key.expose());
    match state
        .store
        .create_webhook(merchant_id, url.as_str(), &sealed)
        .await
    {
        Ok(w) => Ok((w, signing_key)),
        Err(StoreError::Conflict(_)) => Err(ApiError::conflict(
            "webhook_url_taken",
            "you have already registered this URL",
        )
        .with_field("url")),
        Err(e) => Err(e.into()),
    }
}

#[utoipa::path(
    patch,
    path = "/webhooks/{id}",
    tag = "dashboard",
    summary = "Enable or disable a webhook",
    security(("bearer" = [])),
    params(IdParam),
    request_body = SetWebhookActive,
    responses(
        (status = 200, description = "Updated", body = Webhook),
        Problems
    )
)]
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

#[utoipa::path(
    delete,
    path = "/webhooks/{id}",
    tag = "dashboard",
    summary = "Delete a webhook",
    security(("bearer" = [])),
    params(IdParam),
    responses(
        (status = 204, description = "Deleted"),
        Problems
    )
)]
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

#[utoipa::path(
    get,
    path = "/webhooks/{id}/deliveries",
    tag = "dashboard",
    summary = "A webhook's delivery log, newest first",
    security(("bearer" = [])),
    params(IdParam, PageParams),
    responses(
        (status = 200, description = "One page", body = Page<Delivery>),
        Problems
    )
)]
async fn deliveries(
    State(state): State<AppState>,
    session: Session,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<Delivery>>, ApiError> {
    let id = numeric_id(&id)?;
    let (page, page_size) = parse_page(query.as_deref().unwrap_or(""))?;
    let (_, log) = delivery_log(&state, session.merchant_id, id, page, page_size)
        .await?
        .ok_or_else(|| ApiError::not_found("you have no webhook with this id"))?;
    Ok(Json(log))
}

/// One of the merchant's webhooks and a page of its delivery log, newest
/// first; `None` when the merchant has no such webhook.
pub(crate) async fn delivery_log(
    state: &AppState,
    merchant_id: i64,
    id: i64,
    page: u32,
    page_size: u32,
) -> Result<Option<(Webhook, Page<Delivery>)>, ApiError> {
    let Some(webhook) = state.store.webhook(merchant_id, id).await? else {
        return Ok(None);
    };
    let offset = u64::from(page - 1) * u64::from(page_size);
    let (rows, total) = state
        .store
        .webhook_deliveries(id, page_size, offset)
        .await?;
    Ok(Some((
        view(webhook),
        Page {
            data: rows.into_iter().map(delivery).collect(),
            page,
            page_size,
            total,
            total_pages: total.div_ceil(u64::from(page_size)),
        },
    )))
}

#[utoipa::path(
    post,
    path = "/webhooks/shipment-signing-key",
    tag = "dashboard",
    summary = "Create or rotate the key that signs deliveries to shipments' own webhook_url (shown once)",
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The new key", body = SigningKey),
        Problems
    )
)]
async fn rotate_shipment_signing_key(
    State(state): State<AppState>,
    session: Session,
) -> Result<(StatusCode, Json<SigningKey>), ApiError> {
    Ok((
        StatusCode::CREATED,
        Json(rotate_signing_key(&state, session.merchant_id).await?),
    ))
}

/// Creates or replaces the merchant's shipment signing key; the new key
/// is returned once (stored sealed) and the old one stops working.
pub(crate) async fn rotate_signing_key(
    state: &AppState,
    merchant_id: i64,
) -> Result<SigningKey, ApiError> {
    let signing_key = keys::random_token(SIGNING_KEY_PREFIX);
    let sealed = state.data_key.seal(signing_key.expose());
    let created_at = state
        .store
        .set_shipment_signing_key(merchant_id, &sealed)
        .await?;
    Ok(SigningKey {
        signing_key: Secret::new(signing_key.expose()),
        created_at,
    })
}
