//! The `shipments` row as read, and its one conversion to the wire model
//! (the other way is `NewRow`'s `INSERT`, in `shipments.rs`).

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use shipment_sdk::model::{
    CourierId, DriverId, MerchantId, Shipment, ShipmentCode, ShipmentId, Status,
};

use crate::domain::fee::from_minor_units;
use crate::store::error::StoreError;

/// A shipment row, as stored. Changes are decided on its wire form
/// ([`ShipmentRecord::into_model`], by `domain::lifecycle`) and written back
/// by [`Store::update_shipment`](crate::store::Store::update_shipment).
///
/// One field per column of `shipments`, read by name, so queries read it
/// with `SELECT *` and `RETURNING *`.
#[derive(Debug, Clone, sqlx::FromRow)]
#[allow(missing_docs)]
pub(crate) struct ShipmentRecord {
    pub id: i64,
    pub code: String,
    pub merchant_id: i64,
    pub courier_company_id: i64,
    pub status: String,
    pub assigned_driver_id: Option<i64>,
    pub description: Option<String>,
    pub weight_kg: Option<String>,
    pub dimensions: Option<String>,
    pub items: String,
    pub start_address: Option<String>,
    pub end_address: Option<String>,
    pub total_fee_minor: i64,
    pub webhook_url: Option<String>,
    pub version: i64,
    pub rating: Option<i64>,
    pub failure_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub assigned_to_courier_at: Option<DateTime<Utc>>,
    pub assigned_to_driver_at: Option<DateTime<Utc>>,
    pub picked_up_at: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub failed_at: Option<DateTime<Utc>>,
    pub returned_at: Option<DateTime<Utc>>,
    pub cancelled_at: Option<DateTime<Utc>>,
    pub rated_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

impl ShipmentRecord {
    /// The status as the wire model knows it.
    pub(crate) fn status(&self) -> Status {
        self.status.parse().unwrap_or_else(|never| match never {})
    }

    /// The wire form, taking the record's strings instead of copying them:
    /// the one conversion of a read row (the weight from its text, the
    /// items from their JSON).
    pub(crate) fn into_model(self) -> Result<Shipment, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("shipment {}: {what}", self.id));
        let weight_kg = self
            .weight_kg
            .as_deref()
            .map(|w| w.parse::<Decimal>().map_err(|_| corrupt("weight_kg")))
            .transpose()?;
        let items = serde_json::from_str(&self.items).map_err(|_| corrupt("items"))?;
        let rating = self
            .rating
            .map(|r| u8::try_from(r).map_err(|_| corrupt("rating")))
            .transpose()?;
        let code = ShipmentCode::parse(&self.code).map_err(|_| corrupt("code"))?;
        let status = self.status();
        let mut s = Shipment::new(
            ShipmentId::new(self.id),
            code,
            MerchantId::new(self.merchant_id),
            CourierId::new(self.courier_company_id),
            from_minor_units(self.total_fee_minor),
            self.created_at,
        );
        s.status = status;
        s.assigned_driver_id = self.assigned_driver_id.map(DriverId::new);
        s.description = self.description;
        s.weight_kg = weight_kg;
        s.dimensions = self.dimensions;
        s.items = items;
        s.start_address = self.start_address;
        s.end_address = self.end_address;
        s.webhook_url = self.webhook_url;
        s.version = self.version;
        s.rating = rating;
        s.failure_reason = self.failure_reason;
        s.assigned_to_courier_at = self.assigned_to_courier_at;
        s.assigned_to_driver_at = self.assigned_to_driver_at;
        s.picked_up_at = self.picked_up_at;
        s.delivered_at = self.delivered_at;
        s.failed_at = self.failed_at;
        s.returned_at = self.returned_at;
        s.cancelled_at = self.cancelled_at;
        s.rated_at = self.rated_at;
        s.updated_at = self.updated_at;
        Ok(s)
    }
}
