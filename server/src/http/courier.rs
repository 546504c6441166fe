//! The courier side (reference server only): courier companies move their
//! shipments through the lifecycle with their own `ck_` keys, so every state
//! is reachable over HTTP.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use shipment_sdk::model::{List, Page, Shipment};

use super::extract::{ApiJson, CodePath, Courier, MaybeJson};
use super::openapi::{CodeParam, ListParams, Problems};
use super::shipments::{changed, list_page};
use super::{ApiError, AppState};
use crate::domain::lifecycle::Operation;
use crate::domain::list_query::ListQuery;
use crate::domain::{FieldError, Refusal};
use crate::store::accounts::Driver;
use crate::store::shipments::Actor;

/// Longest driver name and failure reason, in characters.
const MAX_TEXT: usize = 500;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/courier/shipments", get(list_courier_shipments))
        .route("/courier/drivers", get(list_drivers).post(create_driver))
        .route(
            "/courier/shipments/{code}/assign-driver",
            post(assign_driver),
        )
        .route(
            "/courier/shipments/{code}/unassign-driver",
            post(unassign_driver),
        )
        .route("/courier/shipments/{code}/pickup", post(pickup_shipment))
        .route("/courier/shipments/{code}/deliver", post(deliver_shipment))
        .route("/courier/shipments/{code}/fail", post(fail_shipment))
        .route("/courier/shipments/{code}/return", post(return_shipment))
}

fn text(field: &str, value: &str) -> Result<String, ApiError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > MAX_TEXT {
        return Err(ApiError::invalid_field(
            field,
            format!("`{field}` must be 1 to {MAX_TEXT} characters"),
        ));
    }
    // PostgreSQL text cannot hold NUL.
    if value.contains('\0') {
        return Err(ApiError::invalid_field(
            field,
            format!("`{field}` must not contain NUL characters"),
        ));
    }
    Ok(value.to_owned())
}

#[utoipa::path(
    get,
    path = "/courier/shipments",
    tag = "courier",
    summary = "List the courier company's shipments",
    security(("api_key" = [])),
    params(ListParams),
    responses(
        (status = 200, description = "One page", body = Page<Shipment>),
        Problems
    )
)]
async fn list_courier_shipments(
    State(state): State<AppState>,
    courier: Courier,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<Shipment>>, ApiError> {
    let query = ListQuery::parse(query.as_deref().unwrap_or(""))?;
    list_page(&state, Actor::Courier(courier.id), &query)
        .await
        .map(Json)
}

#[utoipa::path(
    get,
    path = "/courier/drivers",
    tag = "courier",
    summary = "List drivers",
    security(("api_key" = [])),
    responses(
        (status = 200, description = "Drivers", body = List<Driver>),
        Problems
    )
)]
async fn list_drivers(
    State(state): State<AppState>,
    courier: Courier,
) -> Result<Json<List<Driver>>, ApiError> {
    Ok(Json(List {
        data: state.store.drivers(courier.id).await?,
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CreateDriver {
    /// Display name, 1 to 500 characters (not only spaces).
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\x00]*[^\\x00\\t\\n\\x0B\\f\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00]*$"
    )]
    name: String,
}

#[utoipa::path(
    post,
    path = "/courier/drivers",
    tag = "courier",
    summary = "Add a driver",
    security(("api_key" = [])),
    request_body = CreateDriver,
    responses(
        (status = 201, description = "Added", body = Driver),
        Problems
    )
)]
async fn create_driver(
    State(state): State<AppState>,
    courier: Courier,
    ApiJson(body): ApiJson<CreateDriver>,
) -> Result<(StatusCode, Json<Driver>), ApiError> {
    let name = text("name", &body.name)?;
    let driver = state.store.create_driver(courier.id, &name).await?;
    Ok((StatusCode::CREATED, Json(driver)))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct AssignDriver {
    /// One of the courier company's drivers.
    #[schema(minimum = 1)]
    driver_id: i64,
}

#[utoipa::path(
    post,
    path = "/courier/shipments/{code}/assign-driver",
    tag = "courier",
    summary = "Assign (or reassign) a driver",
    security(("api_key" = [])),
    params(CodeParam),
    request_body = AssignDriver,
    responses(
        (status = 200, description = "Assigned", body = Shipment),
        Problems
    )
)]
async fn assign_driver(
    State(state): State<AppState>,
    courier: Courier,
    CodePath(code): CodePath,
    ApiJson(body): ApiJson<AssignDriver>,
) -> Result<Json<Shipment>, ApiError> {
    let driver = state.store.driver(body.driver_id).await?;
    if driver.is_none_or(|d| d.courier_company_id != courier.id) {
        return Err(ApiError::invalid_field(
            "driver_id",
            format!("driver {} is not one of your drivers", body.driver_id),
        ));
    }
    let change = state
        .store
        .change_shipment(code.as_str(), Actor::Courier(courier.id), |r, at| {
            // Assigning the driver who already has it changes nothing.
            if r.assigned_driver_id == Some(body.driver_id) {
                return Ok(false);
            }
            r.apply(Operation::AssignDriver, at)?;
            r.assigned_driver_id = Some(body.driver_id);
            Ok(true)
        })
        .await?;
    changed(code.as_str(), change)
}

/// The operations that need nothing but the code.
async fn simple(
    state: &AppState,
    courier: Courier,
    code: &str,
    op: Operation,
) -> Result<Json<Shipment>, ApiError> {
    let change = state
        .store
        .change_shipment(code, Actor::Courier(courier.id), |r, at| r.apply(op, at))
        .await?;
    changed(code, change)
}

#[utoipa::path(
    post,
    path = "/courier/shipments/{code}/unassign-driver",
    tag = "courier",
    summary = "Take the driver off",
    security(("api_key" = [])),
    params(CodeParam),
    responses(
        (status = 200, description = "Unassigned", body = Shipment),
        Problems
    )
)]
async fn unassign_driver(
    State(state): State<AppState>,
    courier: Courier,
    CodePath(code): CodePath,
) -> Result<Json<Shipment>, ApiError> {
    simple(&state, courier, code.as_str(), Operation::UnassignDriver).await
}

#[utoipa::path(
    post,
    path = "/courier/shipments/{code}/pickup",
    tag = "courier",
    summary = "Pick up: in transit",
    security(("api_key" = [])),
    params(CodeParam),
    responses(
        (status = 200, description = "In transit", body = Shipment),
        Problems
    )
)]
async fn pickup_shipment(
    State(state): State<AppState>,
    courier: Courier,
    CodePath(code): CodePath,
) -> Result<Json<Shipment>, ApiError> {
    simple(&state, courier, code.as_str(), Operation::Pickup).await
}

#[utoipa::path(
    post,
    path = "/courier/shipments/{code}/return",
    tag = "courier",
    summary = "Return to the merchant",
    security(("api_key" = [])),
    params(CodeParam),
    responses(
        (status = 200, description = "Returned", body = Shipment),
        Problems
    )
)]
async fn return_shipment(
    State(state): State<AppState>,
    courier: Courier,
    CodePath(code): CodePath,
) -> Result<Json<Shipment>, ApiError> {
    simple(&state, courier, code.as_str(), Operation::Return).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct FailShipment {
    /// Why the attempt failed, 1 to 500 characters (not only spaces).
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\x00]*[^\\x00\\t\\n\\x0B\\f\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00]*$"
    )]
    reason: String,
}

#[utoipa::path(
    post,
    path = "/courier/shipments/{code}/fail",
    tag = "courier",
    summary = "Record a failed delivery attempt",
    security(("api_key" = [])),
    params(CodeParam),
    request_body = FailShipment,
    responses(
        (status = 200, description = "Failed", body = Shipment),
        Problems
    )
)]
async fn fail_shipment(
    State(state): State<AppState>,
    courier: Courier,
    CodePath(code): CodePath,
    ApiJson(body): ApiJson<FailShipment>,
) -> Result<Json<Shipment>, ApiError> {
    let reason = text("reason", &body.reason)?;
    let change = state
        .store
        .change_shipment(code.as_str(), Actor::Courier(courier.id), |r, at| {
            r.apply(Operation::Fail, at)?;
            r.failure_reason = Some(reason.clone());
            Ok(true)
        })
        .await?;
    changed(code.as_str(), change)
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct DeliverShipment {
    /// The six digits of the confirmation code, when one was generated.
    #[schema(pattern = "^[0-9]{6}$")]
    confirmation_code: Option<String>,
}

#[utoipa::path(
    post,
    path = "/courier/shipments/{code}/deliver",
    tag = "courier",
    summary = "Deliver (with the confirmation code if one was generated)",
    security(("api_key" = [])),
    params(CodeParam),
    request_body(
        content = Option<DeliverShipment>,
        description = "Optional: needed only to send the confirmation code, when the merchant generated one"
    ),
    responses(
        (status = 200, description = "Delivered", body = Shipment),
        Problems
    )
)]
async fn deliver_shipment(
    State(state): State<AppState>,
    courier: Courier,
    CodePath(code): CodePath,
    MaybeJson(body): MaybeJson<DeliverShipment>,
) -> Result<Json<Shipment>, ApiError> {
    let provided = body.and_then(|b| b.confirmation_code);
    if let Some(c) = &provided
        && (c.len() != 6 || !c.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(Refusal::Field(FieldError::invalid(
            "confirmation_code",
            "`confirmation_code` is six digits",
        ))
        .into());
    }
    let change = state
        .store
        .deliver_shipment(code.as_str(), courier.id, provided.as_deref(), |r, at| {
            r.apply(Operation::Deliver, at)
        })
        .await?;
    changed(code.as_str(), change)
}
