//! Courier companies: the ones linked to a merchant, and a company's
//! drivers.

use chrono::{DateTime, Utc};
use shipment_sdk::model::{CourierCompany, CourierId, DriverId, MerchantId};

use super::{AppState, Result};
use crate::domain::fee::Pricing;
use crate::domain::validation::courier_text;
use crate::store::couriers::DriverRow;

/// A driver of a courier company.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub(crate) struct Driver {
    /// Identifier used as `driver_id`.
    #[schema(value_type = i64)]
    pub id: DriverId,
    /// The company employing the driver.
    #[schema(value_type = i64)]
    pub courier_company_id: CourierId,
    /// Display name.
    pub name: String,
    /// When the driver was added.
    #[serde(serialize_with = "shipment_sdk::model::timestamp::serialize")]
    pub created_at: DateTime<Utc>,
}

impl From<DriverRow> for Driver {
    fn from(row: DriverRow) -> Self {
        Driver {
            id: DriverId::new(row.id),
            courier_company_id: CourierId::new(row.courier_company_id),
            name: row.name,
            created_at: row.created_at,
        }
    }
}

/// The prices of courier company `courier_id`, if it is linked to the
/// merchant and active, as a create needs them: remembered for
/// `PRICING_MEMORY_TTL` after a read, so creates do not each pay a statement
/// for them (the pricing memo, `state.pricing`, says why they cannot go
/// stale).
pub(crate) async fn linked_pricing(
    state: &AppState,
    merchant_id: MerchantId,
    courier_id: CourierId,
) -> Result<Option<Pricing>> {
    Ok(state
        .pricing
        .linked(&state.store, merchant_id, courier_id)
        .await?)
}

/// The courier companies linked to the merchant.
pub(crate) async fn list_merchant_couriers(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<Vec<CourierCompany>> {
    Ok(state.store.merchant_couriers(merchant_id).await?)
}

/// The courier company's drivers.
pub(crate) async fn list_drivers(state: &AppState, courier_id: CourierId) -> Result<Vec<Driver>> {
    let rows = state.store.drivers(courier_id).await?;
    Ok(rows.into_iter().map(Driver::from).collect())
}

/// Adds a driver to the courier company (the name trimmed, 1 to 500
/// characters).
pub(crate) async fn create_driver(
    state: &AppState,
    courier_id: CourierId,
    name: &str,
) -> Result<Driver> {
    let name = courier_text("name", name)?;
    Ok(state.store.create_driver(courier_id, &name).await?.into())
}
