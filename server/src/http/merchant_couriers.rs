//! `GET /merchant-couriers`: the courier companies linked to the merchant.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use shipment_sdk::model::{CourierCompany, List};

use super::ApiError;
use super::extract::Merchant;
use super::params::Problems;
use crate::app::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/merchant-couriers", get(list_couriers))
}

#[utoipa::path(
    get,
    path = "/merchant-couriers",
    tag = "couriers",
    summary = "The courier companies linked to the merchant",
    security(("api_key" = [])),
    responses(
        (status = 200, description = "Linked courier companies", body = List<CourierCompany>),
        Problems
    )
)]
async fn list_couriers(
    State(state): State<AppState>,
    merchant: Merchant,
) -> Result<Json<List<CourierCompany>>, ApiError> {
    let data = crate::app::couriers::list_merchant_couriers(&state, merchant.id).await?;
    Ok(Json(List::new(data)))
}
