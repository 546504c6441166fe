//! Courier companies: the ones linked to a merchant, and a company's
//! drivers.

use shipment_sdk::model::CourierCompany;

use super::shipments::courier_text;
use super::{AppState, Result};
use crate::store::couriers::Driver;

/// The courier companies linked to the merchant.
pub async fn list_merchant_couriers(
    state: &AppState,
    merchant_id: i64,
) -> Result<Vec<CourierCompany>> {
    Ok(state.store.merchant_couriers(merchant_id).await?)
}

/// The courier company's drivers.
pub async fn list_drivers(state: &AppState, courier_id: i64) -> Result<Vec<Driver>> {
    Ok(state.store.drivers(courier_id).await?)
}

/// Adds a driver to the courier company (the name trimmed, 1 to 500
/// characters).
pub async fn create_driver(state: &AppState, courier_id: i64, name: &str) -> Result<Driver> {
    let name = courier_text("name", name)?;
    Ok(state.store.create_driver(courier_id, &name).await?)
}
