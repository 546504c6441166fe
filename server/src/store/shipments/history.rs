//! A shipment's changes, oldest first: each as the API showed it when it
//! was made, read from the outbox, which keeps a row per change.

use shipment_sdk::model::Shipment;

use super::ShipmentRecord;
use crate::store::{Store, StoreError};

/// The bodies of a shipment's changes, by version. Redeliveries copy a
/// change's row and are left out; the partial index of migration 0014
/// (`outbox_changes_by_shipment`) serves it, so a page that shows a
/// shipment's history reads that shipment's rows alone.
const CHANGES: &str = "SELECT payload FROM outbox \
                       WHERE shipment_id = $1 AND redelivery_of IS NULL ORDER BY version";

impl Store {
    /// Every change of `shipment` (as read by code), oldest first, as the
    /// shipment stood after it (its creation is the first).
    pub(crate) async fn shipment_changes(
        &self,
        shipment: &ShipmentRecord,
    ) -> Result<Vec<Shipment>, StoreError> {
        let bodies: Vec<String> = self.query(CHANGES).bind(shipment.id).scalars().await?;
        bodies
            .iter()
            .map(|body| {
                serde_json::from_str(body)
                    .map_err(|e| StoreError::Corrupt(format!("an outbox row's body: {e}")))
            })
            .collect()
    }
}
