//! The dashboard's webhook management (Bearer): register, list, enable or
//! disable, delete, the delivery log, and the shipment signing key.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use shipment_sdk::model::{
    Delivery, List, NewWebhook, Page, RegisterWebhook, SetWebhookActive, SigningKey, Webhook,
};

use super::ApiError;
use super::extract::ApiJson;
use super::openapi::{IdParam, PageParams, Problems};
use crate::app::auth::Session;
use crate::app::webhooks;
use crate::app::{AppState, numeric_id};
use crate::domain::list_query::parse_page;

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
    let data = webhooks::list_webhooks(&state, session.merchant_id).await?;
    Ok(Json(List::new(data)))
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
    let (webhook, signing_key) =
        webhooks::register_webhook(&state, session.merchant_id, &body.url).await?;
    Ok((
        StatusCode::CREATED,
        Json(NewWebhook::new(webhook, signing_key)),
    ))
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
    let webhook =
        webhooks::set_webhook_active(&state, session.merchant_id, id, body.active).await?;
    Ok(Json(webhook))
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
    webhooks::delete_webhook(&state, session.merchant_id, numeric_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
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
    let (_, log) = webhooks::delivery_log(&state, session.merchant_id, id, page, page_size)
        .await?
        .ok_or_else(webhooks::no_such_webhook)?;
    Ok(Json(log))
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
        Json(webhooks::rotate_signing_key(&state, session.merchant_id).await?),
    ))
}
