//! Shipments read by code in batches: the reads of concurrent requests in
//! one `SELECT … WHERE code IN (…)` (`engine::reads`).

use std::sync::LazyLock;

use super::record::ShipmentRecord;
use crate::store::engine::{Db, PaddedIn, ReadMany};
use crate::store::error::StoreError;

/// `SELECT * FROM shipments WHERE code IN (…)` with 1, 2, 4, … up to a
/// batch of reads by code.
static BY_CODES: LazyLock<PaddedIn> = LazyLock::new(|| {
    PaddedIn::new(
        "SELECT * FROM shipments WHERE code",
        1,
        crate::store::engine::reads::BATCH,
    )
});

/// Shipments read by code in batches (`engine::reads`), for
/// [`Store::shipment`]: the reads of concurrent requests in one
/// `SELECT … WHERE code IN (…)`.
pub(crate) struct ByCode;

impl ReadMany for ByCode {
    type Key = String;
    type Row = ShipmentRecord;

    fn key(row: &ShipmentRecord) -> &String {
        &row.code
    }

    async fn read(db: &Db, codes: &[String]) -> Result<Vec<ShipmentRecord>, StoreError> {
        let codes: Vec<&str> = codes.iter().map(String::as_str).collect();
        let query = BY_CODES.query(|sql| db.query(sql), &codes)?;
        Ok(query.fetch_all().await?)
    }
}
