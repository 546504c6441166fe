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
pub struct PricingMemo(Memo<(i64, i64), Pricing>);

/// An empty [`PricingMemo`].
pub fn pricing_memo() -> PricingMemo {
    PricingMemo(Memo::new(PRICING_MEMORY_TTL, PRICING_MEMORY_ENTRIES))
}

/// The prices of courier company `courier_id` if it is linked to the
/// merchant and active; from memory for [`PRICING_MEMORY_TTL`] after a read.
pub async fn linked_pricing(
    state: &AppState,
    merchant_id: i64,
    courier_id: i64,
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
