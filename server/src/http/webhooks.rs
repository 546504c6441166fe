//! The dashboard's webhook management (Bearer): register, list, enable or
//! disable, delete, the delivery log, redelivery, a shipment's delivery
//! history, and the shipment signing key.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use shipment_sdk::model::{
    Delivery, DeliveryId, List, NewWebhook, Page, Problem, RedeliverFailures, RedeliveryQueued,
    RegisterWebhook, SetWebhookActive, ShipmentCode, SigningKey, Webhook, WebhookId,
};

use super::ApiError;
use super::extract::ApiJson;
use super::params::{IdParam, PageParams, Problems};
use crate::app::auth::Session;
use crate::app::webhooks;
use crate::app::{self, AppState, numeric_id};
use crate::domain::list_query::parse_page;
use crate::domain::{FieldError, FieldErrorKind};

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/webhooks", get(list_webhooks).post(register_webhook))
        .route(
            "/webhooks/shipment-signing-key",
            post(rotate_shipment_signing_key),
        )
        // A static segment: matched before `/webhooks/{id}`, whose other
        // methods it answers with 405.
        .route("/webhooks/deliveries", get(shipment_deliveries))
        .route("/webhooks/{id}", patch(set_active).delete(delete_webhook))
        .route("/webhooks/{id}/deliveries", get(deliveries))
        .route(
            "/webhooks/{id}/deliveries/{delivery_id}/redeliver",
            post(redeliver_delivery),
        )
        .route("/webhooks/{id}/redeliver", post(redeliver_failures))
}

/// The path of one delivery of a webhook.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(dead_code, reason = "described in the document, never built")]
struct DeliveryParams {
    /// The webhook's id
    #[param(value_type = i64, minimum = 1)]
    id: WebhookId,
    /// The delivery's id (`id` in the delivery log)
    #[param(value_type = i64, minimum = 1)]
    delivery_id: DeliveryId,
}

/// The shipment of a delivery history.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[expect(dead_code, reason = "described in the document, never built")]
struct ShipmentCodeParam {
    /// The shipment's code: `SHP-` and two groups of four of 0-9 and A-Z without I, L, O, U
    #[param(
        pattern = "^SHP-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$",
        example = "SHP-7K3M-Q9ZX"
    )]
    shipment_code: String,
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
    description = "Every change of your shipments is then POSTed to `url` with the full \
                   shipment as the body, `Content-Type: application/json`, \
                   `X-Service-Signature`, `X-Service-Delivery-Id`, and the Standard Webhooks \
                   headers `webhook-id`, `webhook-timestamp` and `webhook-signature`, all \
                   signed with `signing_key` (the document's description says how). Verify \
                   `webhook-signature` with an official Standard Webhooks library and the key \
                   as shown, and a delivery replayed more than 5 minutes later is refused.",
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

/// Sends one delivery again. The change's snapshot (the same body bytes
/// and `version`) goes through the outbox to the webhook's URL, signed with
/// its current key, even if the webhook is disabled now; the new attempt
/// appears in the delivery log with `redelivery_of` set to this delivery,
/// under a new `X-Service-Delivery-Id`. A successful delivery may be sent
/// again too. 404 when the webhook is not yours or the delivery is not one
/// of its own. Failed deliveries are never retried without being asked.
///
/// Bounded: while a redelivery of the same change to this webhook waits
/// (queued or being sent), asking again is 409 `invalid_state`, whose
/// `detail` names the waiting one (its delivery id, the delivery it
/// repeats, when it was queued); once it has been attempted it may be
/// asked for again. Beyond your budget of redelivered changes per minute,
/// across your webhooks (`--redeliveries-per-minute`, 1,000 by default),
/// it is 429 `rate_limited` with `Retry-After`.
///
/// The redelivery carries a new `X-Service-Delivery-Id` and
/// `webhook-timestamp`, and the change's `webhook-id`, as every attempt of
/// one change to one webhook does: a receiver that drops repeats by it
/// drops this one if it had the change.
#[utoipa::path(
    post,
    path = "/webhooks/{id}/deliveries/{delivery_id}/redeliver",
    tag = "dashboard",
    summary = "Send one delivery again",
    security(("bearer" = [])),
    params(DeliveryParams),
    responses(
        (status = 202, description = "Queued: `{\"queued\": 1, \"truncated\": false}`", body = RedeliveryQueued),
        Problems,
        (status = 409, description = "`invalid_state`: a redelivery of this change to this webhook is waiting already; `detail` names it", body = Problem, content_type = "application/problem+json"),
        (
            status = 429,
            description = "`rate_limited`: your budget of redelivered changes per minute is used",
            body = Problem,
            content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds until the budget has room again"))
        )
    )
)]
async fn redeliver_delivery(
    State(state): State<AppState>,
    session: Session,
    Path((id, delivery_id)): Path<(String, String)>,
) -> Result<(StatusCode, Json<RedeliveryQueued>), ApiError> {
    let (id, delivery_id) = (numeric_id(&id)?, numeric_id(&delivery_id)?);
    let queued = webhooks::redeliver(&state, session.merchant_id, id, delivery_id).await?;
    Ok((StatusCode::ACCEPTED, Json(queued)))
}

/// Sends again every change whose delivery to the webhook failed between
/// `failed_since` and `failed_until` (default: now), both included, and
/// has not been delivered to it successfully since: once per change
/// however many of its attempts failed (the redelivery names the latest
/// failed one in `redelivery_of`), oldest first, through the outbox.
/// Changes whose redelivery is still waiting are skipped, so calling again
/// never queues one twice.
///
/// At most 10,000 per call, and at most what your budget of redelivered
/// changes per minute, across your webhooks, has left
/// (`--redeliveries-per-minute`, 1,000 by default). When more matched,
/// `truncated` is true: cut by the budget, the answer has `Retry-After`
/// (call again after it for the rest); cut by the limit of one call only,
/// it has none (call again at once). When changes match and the budget has
/// no room left at all: 429 `rate_limited` with `Retry-After`.
#[utoipa::path(
    post,
    path = "/webhooks/{id}/redeliver",
    tag = "dashboard",
    summary = "Send every failure since a time again",
    security(("bearer" = [])),
    params(IdParam),
    request_body = RedeliverFailures,
    responses(
        (
            status = 202,
            description = "Queued, one per change",
            body = RedeliveryQueued,
            headers(("Retry-After" = u64, description = "Only when the budget per minute cut the call (`truncated`): seconds until it has room again"))
        ),
        Problems,
        (
            status = 429,
            description = "`rate_limited`: changes matched, but your budget of redelivered changes per minute has no room left",
            body = Problem,
            content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds until the budget has room again"))
        )
    )
)]
async fn redeliver_failures(
    State(state): State<AppState>,
    session: Session,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<RedeliverFailures>,
) -> Result<Response, ApiError> {
    let id = numeric_id(&id)?;
    let outcome = webhooks::redeliver_failures(
        &state,
        session.merchant_id,
        id,
        body.failed_since,
        body.failed_until,
    )
    .await?;
    let mut response = (StatusCode::ACCEPTED, Json(outcome.queued)).into_response();
    if let Some(secs) = outcome.retry_after_secs {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    Ok(response)
}

/// The delivery history of one of your shipments: every attempt to each of
/// your webhooks (`webhook_id`) and to the shipment's own `webhook_url`
/// (`webhook_id` null), redeliveries included, newest first. 404 when the
/// code is not one of your shipments.
#[utoipa::path(
    get,
    path = "/webhooks/deliveries",
    tag = "dashboard",
    summary = "A shipment's delivery history, newest first",
    security(("bearer" = [])),
    params(ShipmentCodeParam, PageParams),
    responses(
        (status = 200, description = "One page", body = Page<Delivery>),
        Problems
    )
)]
async fn shipment_deliveries(
    State(state): State<AppState>,
    session: Session,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<Delivery>>, ApiError> {
    let (code, page, page_size) = history_query(query.as_deref().unwrap_or(""))?;
    let history =
        webhooks::shipment_deliveries(&state, session.merchant_id, &code, page, page_size).await?;
    Ok(Json(history))
}

/// `shipment_code` (required, once), `page` and `page_size`, strictly.
fn history_query(raw: &str) -> Result<(ShipmentCode, u32, u32), app::Error> {
    const FIELD: &str = "shipment_code";
    let mut code = None;
    let mut paging = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in url::form_urlencoded::parse(raw.as_bytes()) {
        if name != FIELD {
            paging.append_pair(&name, &value);
            continue;
        }
        if code.is_some() {
            return Err(
                FieldError::invalid(FIELD, "`shipment_code` is given more than once").into(),
            );
        }
        let parsed = ShipmentCode::parse(&value).map_err(|_| {
            FieldError::invalid(
                FIELD,
                "`shipment_code` must be a shipment code such as SHP-7K3M-Q9ZX",
            )
        })?;
        code = Some(parsed);
    }
    let (page, page_size) = parse_page(&paging.finish())?;
    let code = code.ok_or_else(|| FieldError {
        kind: FieldErrorKind::Missing,
        field: FIELD.to_owned(),
        detail: "`shipment_code` is required".to_owned(),
    })?;
    Ok((code, page, page_size))
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
