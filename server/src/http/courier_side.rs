//! The courier side (reference server only): courier companies move their
//! shipments through the lifecycle with their own `ck_` keys, so every state
//! is reachable over HTTP.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use shipment_sdk::model::{DriverId, List, Page, Shipment, ShipmentCode};

use super::ApiError;
use super::extract::{ApiJson, CodePath, Courier, MaybeJson};
use super::params::{CodeParam, ListParams, Problems};
use crate::app::couriers::Driver;
use crate::app::{Actor, AppState};
use crate::app::{couriers, shipments};
use crate::cache::listed::ListedShipment;
use crate::domain::lifecycle::Operation;
use crate::domain::list_query::Listing;

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
) -> Result<Json<Page<ListedShipment>>, ApiError> {
    let query = Listing::parse(query.as_deref().unwrap_or(""))?;
    let page = shipments::list_shipments(&state, Actor::Courier(courier.id), &query).await?;
    Ok(Json(page))
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
    let data = couriers::list_drivers(&state, courier.id).await?;
    Ok(Json(List::new(data)))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CreateDriver {
    /// Display name, 1 to 500 characters (not only spaces), without control
    /// characters other than tab and newline.
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*[^\\x00-\\x20\\x7F-\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*$"
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
    let driver = couriers::create_driver(&state, courier.id, &body.name).await?;
    Ok((StatusCode::CREATED, Json(driver)))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct AssignDriver {
    /// One of the courier company's drivers.
    #[schema(value_type = i64, minimum = 1)]
    driver_id: DriverId,
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
    let shipment = shipments::assign_driver(&state, courier.id, &code, body.driver_id).await?;
    Ok(Json(shipment))
}

/// The operations that need nothing but the code.
async fn simple(
    state: &AppState,
    courier: Courier,
    code: &ShipmentCode,
    op: Operation,
) -> Result<Json<Shipment>, ApiError> {
    let shipment = shipments::courier_operation(state, courier.id, code, op).await?;
    Ok(Json(shipment))
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
    simple(&state, courier, &code, Operation::UnassignDriver).await
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
    simple(&state, courier, &code, Operation::Pickup).await
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
    simple(&state, courier, &code, Operation::Return).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct FailShipment {
    /// Why the attempt failed, 1 to 500 characters (not only spaces),
    /// without control characters other than tab and newline.
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*[^\\x00-\\x20\\x7F-\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*$"
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
    let shipment = shipments::fail_shipment(&state, courier.id, &code, &body.reason).await?;
    Ok(Json(shipment))
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
    let shipment =
        shipments::deliver_shipment(&state, courier.id, &code, provided.as_deref()).await?;
    Ok(Json(shipment))
}
