//! The merchant's shipment endpoints (API key).

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use shipment_sdk::model::{
    ConfirmationCode, CreateShipment, IdempotencyKey, Page, RateShipment, Shipment,
};

use super::ApiError;
use super::extract::{ApiJson, CodePath, Merchant};
use super::params::{CodeParam, IdempotentReplayed, ListParams, Problems};
use crate::app::shipments::{self, CreateOutcome};
use crate::app::{Actor, AppState};
use crate::cache::listed::ListedShipment;
use crate::domain::list_query::Listing;

/// Header naming a create's idempotency key.
pub(crate) const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";
pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/shipments", post(create_shipment).get(list_shipments))
        .route("/shipments/{code}", get(get_shipment))
        .route("/shipments/{code}/cancel", post(cancel_shipment))
        .route(
            "/shipments/{code}/generate-confirmation-code",
            post(generate_confirmation_code),
        )
        .route("/shipments/{code}/rate", post(rate_shipment))
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<IdempotencyKey>, ApiError> {
    headers
        .get(IDEMPOTENCY_KEY_HEADER)
        .map(|value| shipments::idempotency_key(value.as_bytes()))
        .transpose()
        .map_err(ApiError::from)
}

#[utoipa::path(
    post,
    path = "/shipments",
    tag = "shipments",
    summary = "Create a shipment",
    security(("api_key" = [])),
    params(
        ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]{1,255}$", description = "1 to 255 visible ASCII characters; the same key and body within 24 h give the first shipment back")
    ),
    request_body = CreateShipment,
    responses(
        (
            status = 201,
            description = "Created; or, when the Idempotency-Key was sent before with the same body within 24 h, the shipment that request created (nothing new is created, and `Idempotent-Replayed: true` says so)",
            body = Shipment,
            headers(
                ("Idempotent-Replayed" = inline(IdempotentReplayed), description = "`true` when this answers an earlier request with the same Idempotency-Key and body; absent when the shipment was created now")
            )
        ),
        Problems
    )
)]
async fn create_shipment(
    State(state): State<AppState>,
    merchant: Merchant,
    headers: HeaderMap,
    ApiJson(request): ApiJson<CreateShipment>,
) -> Result<Response, ApiError> {
    let idempotency_key = idempotency_key(&headers)?;
    match shipments::create_shipment(&state, merchant.id, request, idempotency_key.as_ref()).await?
    {
        CreateOutcome::Created(shipment) => {
            Ok((StatusCode::CREATED, Json(*shipment)).into_response())
        }
        CreateOutcome::Replayed(body) => {
            let mut response = (StatusCode::CREATED, body).into_response();
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
            Ok(response)
        }
    }
}

#[utoipa::path(
    get,
    path = "/shipments",
    tag = "shipments",
    summary = "List shipments, newest first",
    security(("api_key" = [])),
    params(ListParams),
    responses(
        (status = 200, description = "One page", body = Page<Shipment>),
        Problems
    )
)]
async fn list_shipments(
    State(state): State<AppState>,
    merchant: Merchant,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<ListedShipment>>, ApiError> {
    let query = Listing::parse(query.as_deref().unwrap_or(""))?;
    let page = shipments::list_shipments(&state, Actor::Merchant(merchant.id), &query).await?;
    Ok(Json(page))
}

#[utoipa::path(
    get,
    path = "/shipments/{code}",
    tag = "shipments",
    summary = "Get a shipment",
    security(("api_key" = [])),
    params(CodeParam),
    responses(
        (status = 200, description = "The shipment", body = Shipment),
        Problems
    )
)]
async fn get_shipment(
    State(state): State<AppState>,
    merchant: Merchant,
    CodePath(code): CodePath,
) -> Result<Json<Shipment>, ApiError> {
    let shipment = shipments::get_shipment(&state, merchant.id, &code).await?;
    Ok(Json(shipment))
}

#[utoipa::path(
    post,
    path = "/shipments/{code}/cancel",
    tag = "shipments",
    summary = "Cancel a shipment before pickup",
    security(("api_key" = [])),
    params(CodeParam),
    responses(
        (status = 200, description = "Cancelled", body = Shipment),
        Problems
    )
)]
async fn cancel_shipment(
    State(state): State<AppState>,
    merchant: Merchant,
    CodePath(code): CodePath,
) -> Result<Json<Shipment>, ApiError> {
    let shipment = shipments::cancel_shipment(&state, merchant.id, &code).await?;
    Ok(Json(shipment))
}

#[utoipa::path(
    post,
    path = "/shipments/{code}/rate",
    tag = "shipments",
    summary = "Rate a delivered shipment, once",
    security(("api_key" = [])),
    params(CodeParam),
    request_body = RateShipment,
    responses(
        (status = 200, description = "Rated", body = Shipment),
        Problems
    )
)]
async fn rate_shipment(
    State(state): State<AppState>,
    merchant: Merchant,
    CodePath(code): CodePath,
    ApiJson(body): ApiJson<RateShipment>,
) -> Result<Json<Shipment>, ApiError> {
    let shipment = shipments::rate_shipment(&state, merchant.id, &code, body.rating).await?;
    Ok(Json(shipment))
}

#[utoipa::path(
    post,
    path = "/shipments/{code}/generate-confirmation-code",
    tag = "shipments",
    summary = "Generate the delivery confirmation code",
    security(("api_key" = [])),
    params(CodeParam),
    responses(
        (status = 201, description = "A new code; it replaces any earlier one and lasts 72 h", body = ConfirmationCode),
        Problems
    )
)]
async fn generate_confirmation_code(
    State(state): State<AppState>,
    merchant: Merchant,
    CodePath(code): CodePath,
) -> Result<(StatusCode, Json<ConfirmationCode>), ApiError> {
    let code = shipments::generate_confirmation_code(&state, merchant.id, &code).await?;
    Ok((StatusCode::CREATED, Json(code)))
}
