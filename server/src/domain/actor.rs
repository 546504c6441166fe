//! Who acts on a shipment: the type every layer names, owned here, below
//! the store, so the store can take it and `app` can hand it on.

use shipment_sdk::model::{CourierId, MerchantId};

/// Who is acting on a shipment; a shipment is visible to its merchant and
/// to its courier company.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Actor {
    /// A merchant, by id.
    Merchant(MerchantId),
    /// A courier company, by id.
    Courier(CourierId),
}

impl Actor {
    /// Whether a shipment of this merchant and courier company is the
    /// actor's to see.
    pub(crate) fn may_see(self, merchant_id: MerchantId, courier_id: CourierId) -> bool {
        match self {
            Actor::Merchant(id) => merchant_id == id,
            Actor::Courier(id) => courier_id == id,
        }
    }

    /// The merchant's or the courier company's raw id, for a query that
    /// filters by the column [`Actor`]'s variant names.
    pub(crate) fn raw_id(self) -> i64 {
        match self {
            Actor::Merchant(id) => id.get(),
            Actor::Courier(id) => id.get(),
        }
    }
}
