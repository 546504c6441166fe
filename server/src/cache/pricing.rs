//! The prices of a merchant's linked courier companies, as creates found
//! them: every create needs them, and the server never changes a link or a
//! price once written. Why it cannot go stale is on [`PricingMemo`]; the
//! test at the end of this file holds the rule.

use std::time::Duration;

use shipment_sdk::model::{CourierId, MerchantId};

use super::memo::Memo;
use crate::domain::fee::Pricing;
use crate::store::{Store, StoreError};

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
/// creates found them ([`PricingMemo::linked`] is the one way in).
///
/// Why it cannot go stale through the server: only links found are
/// remembered, and the server writes links and prices with `INSERT`s that
/// leave existing rows alone (no unlink, no repricing, no deactivation), so
/// a new link works at once and nothing remembered is ever changed. The
/// test `no_write_changes_a_link_or_a_price` fails on any statement that
/// would change or remove one (or a merchant); such a write must forget
/// here, through a method of this type, as it commits.
#[derive(Debug)]
pub(crate) struct PricingMemo(Memo<(MerchantId, CourierId), Pricing>);

/// An empty [`PricingMemo`].
pub(crate) fn pricing_memo() -> PricingMemo {
    PricingMemo(Memo::new(PRICING_MEMORY_TTL, PRICING_MEMORY_ENTRIES))
}

impl PricingMemo {
    /// The prices of courier company `courier_id` if it is linked to
    /// merchant `merchant_id` and active; from memory for
    /// [`PRICING_MEMORY_TTL`] after a read of `store`.
    pub(crate) async fn linked(
        &self,
        store: &Store,
        merchant_id: MerchantId,
        courier_id: CourierId,
    ) -> Result<Option<Pricing>, StoreError> {
        let key = (merchant_id, courier_id);
        if let Some(pricing) = self.0.get(&key) {
            return Ok(Some(pricing));
        }
        let found = store
            .linked_courier_pricing(merchant_id, courier_id)
            .await?;
        if let Some(pricing) = found {
            self.0.remember(key, pricing);
        }
        Ok(found)
    }

    /// Forgets every price remembered for `merchant_id`: its links and its
    /// own companies are gone (the test controls' merchant deletion), so
    /// nothing of it is worth the memory.
    pub(crate) fn forget_merchant(&self, merchant_id: MerchantId) {
        self.0.forget_where(|| {}, |(m, _), _| *m == merchant_id);
    }
}

#[cfg(test)]
mod tests {
    use crate::cache::memo::statements::{Verb, writing};

    /// The rule of [`super::PricingMemo`].
    #[test]
    fn no_write_changes_a_link_or_a_price() {
        let mut inserts = 0;
        for table in ["courier_companies", "merchant_couriers", "merchants"] {
            for write in writing(table) {
                // The test controls' merchant deletion, whose use-case
                // forgets the merchant's prices (`PricingMemo::forget_merchant`),
                // with its links and the companies made for it (no other
                // merchant is linked to those, and no id is given again).
                if write.file == "store/merchants.rs"
                    && write.verb == Verb::Delete
                    && (write.sql.ends_with("WHERE merchant_id = $1")
                        || write.sql == "DELETE FROM courier_companies WHERE test_merchant_id = $1")
                    || write.sql == "DELETE FROM merchants WHERE id = $1"
                {
                    continue;
                }
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
