//! Courier companies: the ones linked to a merchant, and a company's
//! drivers.

use std::time::Duration;

use chrono::{DateTime, Utc};
use shipment_sdk::model::{CourierCompany, CourierId, DriverId, MerchantId};

use super::memo::Memo;
use super::{AppState, Result};
use crate::domain::fee::Pricing;
use crate::domain::validation::courier_text;
use crate::store::couriers::DriverRow;

/// A driver of a courier company.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Driver {
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

/// How long a create takes a courier company's link and prices from memory
/// before reading them again: the longest a hand edit of the database (or
/// `admin` in another process) takes to reach creates here.
///
/// Why: every create read them, a hand-off to SQLite's worker thread or a
/// PostgreSQL round trip of its own (docs/src/appendix/benchmarks-history.md,
/// "Reads by code in batches, prices from memory, SQLite without memory
/// statistics").
pub const PRICING_MEMORY_TTL: Duration = Duration::from_secs(1);

/// Linked pairs remembered at most.
const PRICING_MEMORY_ENTRIES: usize = 10_000;

/// The prices of linked courier companies, by merchant and company, as
/// creates found them ([`linked_pricing`] is the one way in).
///
/// Why it cannot go stale through the server: only links found are
/// remembered, and the server writes links and prices with `INSERT`s that
/// leave existing rows alone (no unlink, no repricing, no deactivation), so
/// a new link works at once and nothing remembered is ever changed. The
/// test `no_write_changes_a_link_or_a_price` fails on any statement that
/// would change or remove one (or a merchant); such a write must forget
/// here, through a method of this type, as it commits.
#[derive(Debug)]
pub struct PricingMemo(Memo<(MerchantId, CourierId), Pricing>);

/// An empty [`PricingMemo`].
pub fn pricing_memo() -> PricingMemo {
    PricingMemo(Memo::new(PRICING_MEMORY_TTL, PRICING_MEMORY_ENTRIES))
}

/// The prices of courier company `courier_id` if it is linked to the
/// merchant and active; from memory for [`PRICING_MEMORY_TTL`] after a read.
pub async fn linked_pricing(
    state: &AppState,
    merchant_id: MerchantId,
    courier_id: CourierId,
) -> Result<Option<Pricing>> {
    let memo = &state.pricing.0;
    let key = (merchant_id, courier_id);
    if let Some(pricing) = memo.get(&key) {
        return Ok(Some(pricing));
    }
    let found = state
        .store
        .linked_courier_pricing(merchant_id, courier_id)
        .await?;
    if let Some(pricing) = found {
        memo.remember(key, pricing);
    }
    Ok(found)
}

/// The courier companies linked to the merchant.
pub async fn list_merchant_couriers(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<Vec<CourierCompany>> {
    Ok(state.store.merchant_couriers(merchant_id).await?)
}

/// The courier company's drivers.
pub async fn list_drivers(state: &AppState, courier_id: CourierId) -> Result<Vec<Driver>> {
    let rows = state.store.drivers(courier_id).await?;
    Ok(rows.into_iter().map(Driver::from).collect())
}

/// Adds a driver to the courier company (the name trimmed, 1 to 500
/// characters).
pub async fn create_driver(state: &AppState, courier_id: CourierId, name: &str) -> Result<Driver> {
    let name = courier_text("name", name)?;
    Ok(state.store.create_driver(courier_id, &name).await?.into())
}

#[cfg(test)]
mod tests {
    use crate::app::memo::statements::{Verb, writing};

    /// The rule of [`super::PricingMemo`].
    #[test]
    fn no_write_changes_a_link_or_a_price() {
        let mut inserts = 0;
        for table in ["courier_companies", "merchant_couriers", "merchants"] {
            for write in writing(table) {
                assert_eq!(
                    write.verb,
                    Verb::Insert,
                    "`{}` in {} may change or remove a courier company's link or prices, which \
                     creates remember (`PricingMemo`): make it forget them there as it commits, \
                     then allow it here",
                    write.sql,
                    write.file
                );
                inserts += 1;
            }
        }
        assert!(inserts >= 3, "the store's inserts are found");
    }
}
