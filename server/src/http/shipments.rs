//! The merchant's shipment endpoints (API key).

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::Duration;
use rand::Rng;
use sha2::{Digest, Sha256};
use shipment_sdk::model::{ConfirmationCode, CreateShipment, Page, RateShipment, Shipment};

use super::extract::{ApiJson, CodePath, Merchant};
use super::openapi::{CodeParam, IdempotentReplayed, ListParams, Problems};
use super::{ApiError, AppState};
use crate::domain::Refusal;
use crate::domain::fee::{self, total_fee};
use crate::domain::keys;
use crate::domain::lifecycle::Operation;
use crate::domain::list_query::ListQuery;
use crate::domain::validation::{NewShipment, webhook_url};
use crate::store::now;
use crate::store::shipments::{Actor, Change, Created};

/// Header naming a create's idempotency key.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";
/// Longest idempotency key accepted.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;
/// How long a confirmation code works.
pub const CONFIRMATION_CODE_TTL: Duration = Duration::hours(72);

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

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY_HEADER) else {
        return Ok(None);
    };
    let key = value.to_str().unwrap_or("");
    let ok = !key.is_empty()
        && key.len() <= MAX_IDEMPOTENCY_KEY
        && key.bytes().all(|b| b.is_ascii_graphic());
    if !ok {
        return Err(ApiError::invalid_field(
            "Idempotency-Key",
            format!(
                "the Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY} visible ASCII characters"
            ),
        ));
    }
    Ok(Some(key.to_owned()))
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
    // The digest of the parsed request, so formatting and key order do not
    // make "the same body" look different.
    let request_digest = hex::encode(Sha256::digest(
        serde_json::to_vec(&request).expect("requests serialize"),
    ));
    let new = NewShipment::parse(request)?;
    if let Some(url) = &new.webhook_url {
        // Normalised by `NewShipment::parse`, so this parses to itself.
        let url = webhook_url("webhook_url", url)?;
        super::webhooks::check_target(&state, "webhook_url", &url).await?;
        if state
            .store
            .shipment_signing_key(merchant.id)
            .await?
            .is_none()
        {
            return Err(ApiError::invalid_field(
                "webhook_url",
                "a shipment with its own webhook_url needs your shipment signing key first: \
                 create it in the dashboard or with POST /webhooks/shipment-signing-key, then retry",
            ));
        }
    }
    let pricing = state
        .store
        .linked_courier_pricing(merchant.id, new.courier_company_id)
        .await?
        .ok_or_else(|| {
            ApiError::invalid_field(
                "courier_company_id",
                format!(
                    "courier company {} is not linked to your account; GET /merchant-couriers lists those that are",
                    new.courier_company_id
                ),
            )
        })?;
    let fee = total_fee(
        pricing,
        new.weight_kg,
        new.start_address.as_deref(),
        new.end_address.as_deref(),
    );
    let fee_minor = fee::to_minor_units(fee).ok_or_else(|| {
        ApiError::invalid_field("weight_kg", "the fee for this shipment is too large")
    })?;
    let idempotency = idempotency_key
        .as_deref()
        .map(|k| (k, request_digest.as_str()));
    match state
        .store
        .create_shipment(merchant.id, &new, fee_minor, idempotency)
        .await?
    {
        Created::New(shipment) => Ok((StatusCode::CREATED, Json(*shipment)).into_response()),
        Created::Replayed(body) => {
            let mut response = (StatusCode::CREATED, body).into_response();
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
            Ok(response)
        }
        Created::KeyReused => Err(ApiError::conflict(
            "idempotency_conflict",
            "this Idempotency-Key was already used with a different request body",
        )
        .with_field("Idempotency-Key")),
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
) -> Result<Json<Page<Shipment>>, ApiError> {
    let query = ListQuery::parse(query.as_deref().unwrap_or(""))?;
    list_page(&state, Actor::Merchant(merchant.id), &query)
        .await
        .map(Json)
}

/// One page of `actor`'s shipments in the list envelope.
pub(crate) async fn list_page(
    state: &AppState,
    actor: Actor,
    query: &ListQuery,
) -> Result<Page<Shipment>, ApiError> {
    let (data, total) = state.store.list_shipments(actor, query).await?;
    Ok(Page {
        data,
        page: query.page,
        page_size: query.page_size,
        total,
        total_pages: total.div_ceil(u64::from(query.page_size)),
    })
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
    own_shipment(&state, merchant.id, code.as_str())
        .await
        .map(Json)
}

/// The merchant's shipment with this code: 404 when no shipment has it,
/// 403 when another merchant's does.
pub(crate) async fn own_shipment(
    state: &AppState,
    merchant_id: i64,
    code: &str,
) -> Result<Shipment, ApiError> {
    let record = state
        .store
        .shipment(code)
        .await?
        .ok_or_else(|| not_found(code))?;
    if record.merchant_id != merchant_id {
        return Err(Refusal::Forbidden.into());
    }
    Ok(record.to_model()?)
}

pub(super) fn not_found(code: &str) -> ApiError {
    ApiError::not_found(format!("no shipment has the code {code}"))
}

/// Answers a change: the shipment, or why not.
pub(super) fn changed(code: &str, change: Change) -> Result<Json<Shipment>, ApiError> {
    match change {
        Change::Done(shipment) => Ok(Json(shipment)),
        Change::NotFound => Err(not_found(code)),
        Change::Refused(refusal) => Err(refusal.into()),
    }
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
    let change = state
        .store
        .change_shipment(code.as_str(), Actor::Merchant(merchant.id), |r, at| {
            r.apply(Operation::Cancel, at)
        })
        .await?;
    changed(code.as_str(), change)
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
    if !(1..=10).contains(&body.rating) {
        return Err(ApiError::invalid_field(
            "rating",
            "`rating` must be an integer from 1 to 10",
        ));
    }
    let change = state
        .store
        .change_shipment(code.as_str(), Actor::Merchant(merchant.id), |r, at| {
            r.apply(Operation::Rate, at)?;
            if r.rating.is_some() {
                return Err(Refusal::AlreadyRated);
            }
            r.rating = Some(i64::from(body.rating));
            r.rated_at = Some(at);
            Ok(true)
        })
        .await?;
    changed(code.as_str(), change)
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
    let confirmation_code = format!("{:06}", rand::rng().random_range(0..1_000_000));
    let expires_at = now() + CONFIRMATION_CODE_TTL;
    let change = state
        .store
        .set_confirmation_code(
            code.as_str(),
            merchant.id,
            &keys::digest(&confirmation_code),
            expires_at,
            |r| {
                crate::domain::lifecycle::apply(&r.status(), Operation::GenerateConfirmationCode)?;
                Ok(())
            },
        )
        .await?;
    match change {
        Change::Done(()) => Ok((
            StatusCode::CREATED,
            Json(ConfirmationCode {
                code: code.as_str().to_owned(),
                confirmation_code,
                expires_at,
            }),
        )),
        Change::NotFound => Err(not_found(code.as_str())),
        Change::Refused(refusal) => Err(refusal.into()),
    }
}
