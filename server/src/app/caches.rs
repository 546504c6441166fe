//! The caches the state holds besides the keys' ([`super::key_cache`]):
//! courier prices by merchant and company, and shipments as lists show them,
//! by id and version. Each says why it cannot go stale, and its rule is held
//! by a test; only the methods here put anything in.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use shipment_sdk::model::{CourierId, MerchantId, Shipment};

use super::memo::Memo;
use crate::domain::fee::Pricing;
use crate::store::shipments::RowVersion;
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

/// How long a listed shipment is remembered after it was read.
pub(crate) const LISTED_MEMORY_TTL: Duration = Duration::from_secs(60);

/// Listed shipments remembered at most: a hundred full pages.
const LISTED_MEMORY_ENTRIES: usize = 10_000;

/// Listed shipments by id and version.
///
/// Why it cannot go stale: an id and a version name one content for good,
/// since every `UPDATE` of a shipment raises its version (the tests
/// `every_update_of_a_shipment_sets_its_version` in `app/listed.rs` and
/// `every_change_raises_the_version` in `server/tests/api/caches.rs` fail
/// on one that does not). A deletion of rows must forget here, through a method of this
/// type ([`ListedMemo::forget_merchant`]).
#[derive(Debug)]
pub(crate) struct ListedMemo(Memo<RowVersion, ListedShipment>);

/// An empty [`ListedMemo`].
pub(crate) fn listed_memo() -> ListedMemo {
    ListedMemo(Memo::new(LISTED_MEMORY_TTL, LISTED_MEMORY_ENTRIES))
}

impl ListedMemo {
    /// The shipments remembered for `rows`, in their order (`None` where
    /// one is not).
    pub(crate) fn get_each<'r>(
        &self,
        rows: impl IntoIterator<Item = &'r RowVersion>,
    ) -> Vec<Option<ListedShipment>> {
        self.0.get_each(rows)
    }

    /// Remembers shipments just read, each under the version read.
    pub(crate) fn remember_each(
        &self,
        read: impl IntoIterator<Item = (RowVersion, ListedShipment)>,
    ) {
        self.0.remember_each(read);
    }

    /// Forgets every listed shipment of `merchant_id`: its rows are
    /// deleted (the test controls' merchant deletion). No id is given
    /// again, and a page serves a remembered row only to its owner
    /// (`app::listed::page`), so this only frees the memory at once.
    pub(crate) fn forget_merchant(&self, merchant_id: MerchantId) {
        self.0
            .forget_where(|| {}, |_, listed| listed.merchant_id == merchant_id);
    }
}

/// A shipment on a page, with its JSON written once: it serializes as that
/// JSON, and derefs to the [`Shipment`] for the dashboard's pages.
#[derive(Debug, Clone)]
pub(crate) struct ListedShipment(Arc<Listed>);

#[derive(Debug)]
struct Listed {
    shipment: Shipment,
    json: Box<RawValue>,
}

impl ListedShipment {
    /// `shipment`, written as JSON now.
    pub(crate) fn new(shipment: Shipment) -> ListedShipment {
        let json = serde_json::value::to_raw_value(&shipment).expect("shipments serialize");
        ListedShipment(Arc::new(Listed { shipment, json }))
    }
}

impl Deref for ListedShipment {
    type Target = Shipment;

    fn deref(&self) -> &Shipment {
        &self.0.shipment
    }
}

impl Serialize for ListedShipment {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.json.serialize(serializer)
    }
}
