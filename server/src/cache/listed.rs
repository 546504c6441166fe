//! Shipments as lists show them, remembered by version: a list reads the
//! ids and versions of its page and takes from memory the rows this process
//! listed at that version before; only the others are decoded and written
//! as JSON (`Store::list_shipments` says how each engine reads them).
//!
//! Why it may: a shipment's `version` goes up with every change written to
//! its row, and no id is ever given out twice (PostgreSQL's identity
//! columns never go back, SQLite's ids are `AUTOINCREMENT`: migration 0012),
//! so an id and a version name one content for good, in every process
//! sharing the database, even after a test merchant's shipments are
//! deleted. A row changed elsewhere comes back with another version and is
//! read again. The memory lasts [`LISTED_MEMORY_TTL`], which only bounds
//! how long a hand edit of a row that leaves its `version` alone goes
//! unseen. And as a second wall, a remembered row is served only to an
//! actor that may see it today (`Actor::may_see`): whatever the memory
//! holds, a page never shows another merchant's shipment.
//!
//! The rule is held by two tests: `every_update_of_a_shipment_sets_its_version`
//! fails on any statement of the server that updates `shipments` without
//! setting `version` (or deletes or replaces a row), and
//! `server/tests/api/caches.rs` runs every kind of change with a database
//! trigger that refuses an update that does not raise it.
//!
//! Why: copying 27 columns of 100 rows out of the database, decoding them
//! and writing them as JSON was most of a list's time; a first page listed
//! again is now three times as fast on SQLite and half again on PostgreSQL
//! (docs/src/appendix/benchmarks-history.md, "List rows remembered by version").

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use shipment_sdk::model::{MerchantId, Shipment};

use super::memo::Memo;
use crate::domain::actor::Actor;
use crate::domain::list_query::Listing;
use crate::store::shipments::{ListedRows, PageRow, RowVersion};
use crate::store::{Store, StoreError};

/// How long a listed shipment is remembered after it was read.
pub(crate) const LISTED_MEMORY_TTL: Duration = Duration::from_secs(60);

/// Listed shipments remembered at most: a hundred full pages.
const LISTED_MEMORY_ENTRIES: usize = 10_000;

/// Listed shipments by id and version.
///
/// Why it cannot go stale: an id and a version name one content for good,
/// since every `UPDATE` of a shipment raises its version (the tests
/// `every_update_of_a_shipment_sets_its_version` below and
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
    /// A page of `actor`'s shipments, the total, and the key of the last
    /// row when rows follow it (`ListedRows::next`): the rows listed before at
    /// the page's version from memory, the others read from `store`, written
    /// as JSON and remembered (under the version read, which may be newer
    /// than the page's). The one way into this memory.
    pub(crate) async fn page(
        &self,
        store: &Store,
        actor: Actor,
        listing: &Listing,
    ) -> Result<ListedRows<ListedShipment>, StoreError> {
        let held = |rows: &[RowVersion]| {
            let mut held = self.get_each(rows);
            for slot in &mut held {
                if slot
                    .as_ref()
                    .is_some_and(|l| !actor.may_see(l.merchant_id, l.courier_company_id))
                {
                    *slot = None;
                }
            }
            held
        };
        let ListedRows { rows, total, next } = store.list_shipments(actor, listing, held).await?;
        let mut read = Vec::new();
        let shipments = rows
            .into_iter()
            .map(|row| match row {
                PageRow::Held(listed) => Ok(listed),
                PageRow::Read(record) => {
                    let version = RowVersion {
                        id: record.id,
                        version: record.version,
                    };
                    let listed = ListedShipment::new(record.into_model()?);
                    read.push((version, listed.clone()));
                    Ok(listed)
                }
            })
            .collect::<Result<_, StoreError>>()?;
        self.remember_each(read);
        Ok(ListedRows {
            rows: shipments,
            total,
            next,
        })
    }

    /// The shipments remembered for `rows`, in their order (`None` where
    /// one is not).
    fn get_each<'r>(
        &self,
        rows: impl IntoIterator<Item = &'r RowVersion>,
    ) -> Vec<Option<ListedShipment>> {
        self.0.get_each(rows)
    }

    /// Remembers shipments just read, each under the version read.
    fn remember_each(&self, read: impl IntoIterator<Item = (RowVersion, ListedShipment)>) {
        self.0.remember_each(read);
    }

    /// Forgets every listed shipment of `merchant_id`: its rows are
    /// deleted (the test controls' merchant deletion). No id is given
    /// again, and a page serves a remembered row only to its owner
    /// ([`ListedMemo::page`]), so this only frees the memory at once.
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

#[cfg(test)]
mod tests {
    use crate::cache::memo::statements::{Verb, writing};
    use chrono::Utc;
    use shipment_sdk::model::{CourierId, MerchantId, Shipment, ShipmentCode, ShipmentId};

    use super::*;

    /// The rule of the module, as far as the statements say: whether the
    /// version set is a higher one is the trigger's test to see.
    #[test]
    fn every_update_of_a_shipment_sets_its_version() {
        let writes = writing("shipments");
        assert!(writes.iter().any(|w| w.verb == Verb::Update), "{writes:?}");
        for write in writes {
            let sql = write.sql.to_ascii_lowercase();
            let ok = match write.verb {
                // A new row: a new id.
                Verb::Insert => true,
                Verb::Update => {
                    let set = sql
                        .split_once(" set ")
                        .map(|(_, rest)| rest.split(" where ").next().unwrap_or(rest))
                        .unwrap_or("");
                    set.split(',').any(|a| a.trim().starts_with("version ="))
                }
                // The test controls' merchant deletion, whose use-case
                // forgets the merchant's listed rows (`ListedMemo::forget_merchant`).
                Verb::Delete => {
                    write.file == "store/merchants.rs"
                        && write.sql == "DELETE FROM shipments WHERE merchant_id = $1"
                }
                Verb::Upsert => false,
            };
            assert!(
                ok,
                "`{}` in {} changes a shipment without raising its `version`, or deletes one \
                 (whose id could come back): lists would show what they remembered of it",
                write.sql, write.file
            );
        }
    }

    #[test]
    fn a_listed_shipment_is_written_as_the_shipment_itself() {
        let code = ShipmentCode::parse("SHP-ABCD-2345").expect("a valid code");
        let fee = rust_decimal::Decimal::new(1250, 2);
        let at = Utc::now();
        let mut shipment = Shipment::new(
            ShipmentId::new(7),
            code,
            MerchantId::new(1),
            CourierId::new(2),
            fee,
            at,
        );
        shipment.weight_kg = Some(rust_decimal::Decimal::new(25, 1));
        shipment.description = Some("a \"quoted\" book\n".into());
        let page =
            shipment_sdk::model::Page::new(vec![ListedShipment::new(shipment.clone())], 1, 20, 1);
        let plain = shipment_sdk::model::Page::new(vec![shipment], 1, 20, 1);
        assert_eq!(
            serde_json::to_string(&page).expect("serializes"),
            serde_json::to_string(&plain).expect("serializes")
        );
    }
}
