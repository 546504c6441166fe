//! Courier companies: the ones linked to a merchant, and a company's
//! drivers.

use std::time::Duration;

use shipment_sdk::model::CourierCompany;

use super::memo::Memo;
use super::{AppState, Result};
use crate::domain::fee::Pricing;
use crate::domain::validation::courier_text;
pub use crate::store::couriers::Driver;

/// How long a create takes a courier company's link and prices from memory
/// before reading them again.
///
/// Why it may: the server never changes a link or a price once made (there
/// is no unlink, no repricing, no deactivation), so what is remembered can
/// only go stale by a hand edit of the database, which then reaches every
/// process within this time. Only links found are remembered, so a new link
/// works at once everywhere. Why: every create read them, a hand-off to
/// SQLite's worker thread or a PostgreSQL round trip of its own
/// (BENCHMARKS.md, "Reads by code in batches, prices from memory, SQLite
/// without memory statistics"). A change of links or
/// prices added to the server must forget them here as it commits.
pub const PRICING_MEMORY_TTL: Duration = Duration::from_secs(1);

/// Linked pairs remembered at most.
const PRICING_MEMORY_ENTRIES: usize = 10_000;

/// The prices of linked courier companies, by merchant and company.
pub type PricingMemo = Memo<(i64, i64), Pricing>;

/// An empty [`PricingMemo`].
pub fn pricing_memo() -> PricingMemo {
    Memo::new(PRICING_MEMORY_TTL, PRICING_MEMORY_ENTRIES)
}

/// The prices of courier company `courier_id` if it is linked to the
/// merchant and active; from memory for [`PRICING_MEMORY_TTL`] after a read.
pub async fn linked_pricing(
    state: &AppState,
    merchant_id: i64,
    courier_id: i64,
) -> Result<Option<Pricing>> {
    let key = (merchant_id, courier_id);
    if let Some(pricing) = state.pricing.get(&key) {
        return Ok(Some(pricing));
    }
    let found = state
        .store
        .linked_courier_pricing(merchant_id, courier_id)
        .await?;
    if let Some(pricing) = found {
        state.pricing.remember(key, pricing);
    }
    Ok(found)
}

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
