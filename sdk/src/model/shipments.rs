//! Shipments: the [`Status`] lifecycle, the [`Shipment`] object, and the
//! bodies and queries of the shipment routes.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::common::number_option;
#[cfg(feature = "openapi")]
use super::openapi;
use super::{CourierId, DriverId, MerchantId, ShipmentCode, ShipmentId, timestamp};

/// The state of a shipment.
///
/// The interface calls the named values "the common values; other values may
/// exist", so a value this version does not know is kept as
/// [`Status::Unknown`] and written back unchanged instead of failing.
///
/// ```
/// use shipment_sdk::model::Status;
/// let s: Status = serde_json::from_str("\"on_the_moon\"").unwrap();
/// assert_eq!(s, Status::Unknown("on_the_moon".into()));
/// assert_eq!(serde_json::to_string(&s).unwrap(), "\"on_the_moon\"");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// Early state; never produced by the reference workflow, but accepted.
    Pending,
    /// Created and handed to a courier company.
    AssignedToCourier,
    /// A driver has been assigned.
    AssignedToDriver,
    /// The driver picked the shipment up.
    InTransit,
    /// Delivery completed (final).
    Delivered,
    /// A delivery attempt failed.
    Failed,
    /// Returned to the merchant (final).
    Returned,
    /// Cancelled by the merchant (final).
    Cancelled,
    /// A status this version of the model does not know, kept verbatim.
    Unknown(String),
}

impl Status {
    /// Every status the model knows, in lifecycle order.
    pub const KNOWN: [Status; 8] = [
        Status::Pending,
        Status::AssignedToCourier,
        Status::AssignedToDriver,
        Status::InTransit,
        Status::Delivered,
        Status::Failed,
        Status::Returned,
        Status::Cancelled,
    ];

    /// The wire spelling, e.g. `"in_transit"`.
    pub fn as_str(&self) -> &str {
        match self {
            Status::Pending => "pending",
            Status::AssignedToCourier => "assigned_to_courier",
            Status::AssignedToDriver => "assigned_to_driver",
            Status::InTransit => "in_transit",
            Status::Delivered => "delivered",
            Status::Failed => "failed",
            Status::Returned => "returned",
            Status::Cancelled => "cancelled",
            Status::Unknown(other) => other,
        }
    }

    /// Parses a known wire value; `None` for anything else.
    ///
    /// Use this where only known values make sense (a server validating a
    /// filter); [`FromStr`] keeps unknown values instead.
    pub fn parse_known(s: &str) -> Option<Status> {
        Status::KNOWN.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether no further change can happen (`delivered`, `returned`,
    /// `cancelled`).
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            Status::Delivered | Status::Returned | Status::Cancelled
        )
    }
}

impl FromStr for Status {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Status::parse_known(s).unwrap_or_else(|| Status::Unknown(s.to_owned())))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Ok(s.parse().unwrap_or_else(|never| match never {}))
    }
}

/// A shipment, exactly as `GET /shipments/:code` and webhook deliveries carry
/// it. Every key is always present; timestamps are null until their event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct Shipment {
    /// Numeric identifier.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub id: ShipmentId,
    /// Unique code, `SHP-XXXX-XXXX`; the idempotency key for receivers.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "SHP-7K3M-Q9ZX"))]
    pub code: ShipmentCode,
    /// Owning merchant.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub merchant_id: MerchantId,
    /// Current state.
    pub status: Status,
    /// Courier company the shipment is assigned to.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub courier_company_id: CourierId,
    /// Driver, once one is assigned.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub assigned_driver_id: Option<DriverId>,
    /// Free text supplied by the merchant.
    pub description: Option<String>,
    /// Weight in kilograms.
    #[serde(with = "rust_decimal::serde::float_option", default)]
    #[cfg_attr(feature = "openapi", schema(example = 4.5))]
    pub weight_kg: Option<Decimal>,
    /// Free-form dimensions text, without control characters other than
    /// tab and newline.
    pub dimensions: Option<String>,
    /// Item labels.
    #[serde(default)]
    pub items: Vec<String>,
    /// Pickup location (text, or `lat,lng`).
    #[cfg_attr(feature = "openapi", schema(example = "52.5200,13.4050"))]
    pub start_address: Option<String>,
    /// Delivery location (text, or `lat,lng`).
    #[cfg_attr(feature = "openapi", schema(example = "52.3759,4.8975"))]
    pub end_address: Option<String>,
    /// Fee computed by the service, two decimal places.
    #[serde(with = "rust_decimal::serde::float")]
    #[cfg_attr(feature = "openapi", schema(example = 69.4))]
    pub total_fee: Decimal,
    /// Per-shipment webhook address, if one was given.
    pub webhook_url: Option<String>,
    /// 1 at creation, +1 on every change; receivers keep the highest seen.
    pub version: i64,
    /// Rating 1 to 10, once rated.
    pub rating: Option<u8>,
    /// Reason given by the courier for the last failed attempt.
    pub failure_reason: Option<String>,
    /// When the shipment was created.
    #[serde(serialize_with = "timestamp::serialize")]
    #[cfg_attr(feature = "openapi", schema(example = "2026-11-21T09:30:12.123456Z"))]
    pub created_at: DateTime<Utc>,
    /// When it was (last) handed to the courier company.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub assigned_to_courier_at: Option<DateTime<Utc>>,
    /// When a driver was (last) assigned.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub assigned_to_driver_at: Option<DateTime<Utc>>,
    /// When the driver (last) picked it up.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub picked_up_at: Option<DateTime<Utc>>,
    /// When it was delivered.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub delivered_at: Option<DateTime<Utc>>,
    /// When a delivery attempt (last) failed.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub failed_at: Option<DateTime<Utc>>,
    /// When it was returned.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub returned_at: Option<DateTime<Utc>>,
    /// When it was cancelled.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub cancelled_at: Option<DateTime<Utc>>,
    /// When it was rated.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub rated_at: Option<DateTime<Utc>>,
    /// When anything about it last changed.
    #[serde(serialize_with = "timestamp::serialize")]
    #[cfg_attr(feature = "openapi", schema(example = "2026-11-21T09:30:12.123456Z"))]
    pub updated_at: DateTime<Utc>,
}

impl Shipment {
    /// A shipment just created at `at`: version 1, in
    /// `assigned_to_courier` since `at`, nothing else set. The service makes
    /// them; this is for servers built on this model and for tests.
    pub fn new(
        id: ShipmentId,
        code: ShipmentCode,
        merchant_id: MerchantId,
        courier_company_id: CourierId,
        total_fee: Decimal,
        at: DateTime<Utc>,
    ) -> Shipment {
        Shipment {
            id,
            code,
            merchant_id,
            status: Status::AssignedToCourier,
            courier_company_id,
            assigned_driver_id: None,
            description: None,
            weight_kg: None,
            dimensions: None,
            items: Vec::new(),
            start_address: None,
            end_address: None,
            total_fee,
            webhook_url: None,
            version: 1,
            rating: None,
            failure_reason: None,
            created_at: at,
            assigned_to_courier_at: Some(at),
            assigned_to_driver_at: None,
            picked_up_at: None,
            delivered_at: None,
            failed_at: None,
            returned_at: None,
            cancelled_at: None,
            rated_at: None,
            updated_at: at,
        }
    }
}

/// Body of `POST /shipments`. Only `courier_company_id` is required.
///
/// ```
/// use shipment_sdk::model::{CourierId, CreateShipment};
/// let req = CreateShipment::new(CourierId::new(7))
///     .description("Two boxes of books")
///     .weight_kg("4.5".parse().unwrap())
///     .item("book")
///     .start_address("52.5200,13.4050")
///     .end_address("52.3759,4.8975");
/// assert_eq!(req.items.as_deref(), Some(&["book".to_string()][..]));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(
        description = "Body of `POST /shipments`. Only `courier_company_id` is required; \
        `lat,lng` addresses make the fee include the distance."
    )
)]
#[serde(deny_unknown_fields)]
pub struct CreateShipment {
    /// Courier company linked to the merchant (required).
    #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 1))]
    #[cfg_attr(feature = "openapi", schema(example = 1))]
    pub courier_company_id: CourierId,
    /// Free text, without control characters other than tab and newline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 2000, pattern = "^[^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*$")
    )]
    #[cfg_attr(feature = "openapi", schema(example = "Two boxes of books"))]
    pub description: Option<String>,
    /// Weight in kilograms, greater than zero (a JSON number).
    #[serde(
        default,
        with = "number_option",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(minimum = 0.001, maximum = 100000))]
    #[cfg_attr(feature = "openapi", schema(example = 4.5))]
    pub weight_kg: Option<Decimal>,
    /// Free-form dimensions text, without control characters other than
    /// tab and newline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 200, pattern = "^[^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*$")
    )]
    #[cfg_attr(feature = "openapi", schema(example = "30x20x10 cm"))]
    pub dimensions: Option<String>,
    /// Item labels, without control characters other than tab and newline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::items))]
    pub items: Option<Vec<String>>,
    /// Pickup location (text, or `lat,lng`), without control characters
    /// other than tab and newline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 500, pattern = "^[^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*$")
    )]
    #[cfg_attr(feature = "openapi", schema(example = "52.5200,13.4050"))]
    pub start_address: Option<String>,
    /// Delivery location (text, or `lat,lng`), without control characters
    /// other than tab and newline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 500, pattern = "^[^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*$")
    )]
    #[cfg_attr(feature = "openapi", schema(example = "52.3759,4.8975"))]
    pub end_address: Option<String>,
    /// Per-shipment HTTPS webhook address (a `WebhookUrl`, kept normalised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::webhook_url))]
    pub webhook_url: Option<String>,
}

impl CreateShipment {
    /// A request for the given courier company with nothing else set.
    pub fn new(courier_company_id: CourierId) -> Self {
        CreateShipment {
            courier_company_id,
            description: None,
            weight_kg: None,
            dimensions: None,
            items: None,
            start_address: None,
            end_address: None,
            webhook_url: None,
        }
    }

    /// Sets the description.
    pub fn description(mut self, v: impl Into<String>) -> Self {
        self.description = Some(v.into());
        self
    }

    /// Sets the weight in kilograms.
    pub fn weight_kg(mut self, v: Decimal) -> Self {
        self.weight_kg = Some(v);
        self
    }

    /// Sets the dimensions text.
    pub fn dimensions(mut self, v: impl Into<String>) -> Self {
        self.dimensions = Some(v.into());
        self
    }

    /// Appends one item label.
    pub fn item(mut self, v: impl Into<String>) -> Self {
        self.items.get_or_insert_with(Vec::new).push(v.into());
        self
    }

    /// Sets the pickup address.
    pub fn start_address(mut self, v: impl Into<String>) -> Self {
        self.start_address = Some(v.into());
        self
    }

    /// Sets the delivery address.
    pub fn end_address(mut self, v: impl Into<String>) -> Self {
        self.end_address = Some(v.into());
        self
    }

    /// Sets the per-shipment webhook address.
    pub fn webhook_url(mut self, v: impl Into<String>) -> Self {
        self.webhook_url = Some(v.into());
        self
    }
}

/// Query of `GET /shipments`; every field optional.
///
/// ```
/// use shipment_sdk::model::{ListShipments, Status};
/// let query = ListShipments::default().status(Status::Delivered).page_size(50);
/// assert_eq!(query.page_size, Some(50));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ListShipments {
    /// Page number, from 1 (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Page size, 1 to 100 (default 20).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
    /// Only shipments in this state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// Only shipments of this courier company.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub courier_company_id: Option<CourierId>,
    /// Created at or after this instant.
    #[serde(
        serialize_with = "timestamp::serialize_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub created_after: Option<DateTime<Utc>>,
    /// Created before this instant.
    #[serde(
        serialize_with = "timestamp::serialize_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub created_before: Option<DateTime<Utc>>,
    /// Changed at or after this instant (how receivers catch up).
    #[serde(
        serialize_with = "timestamp::serialize_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub updated_after: Option<DateTime<Utc>>,
}

impl ListShipments {
    /// Asks for page `page` (from 1).
    pub fn page(mut self, page: u32) -> Self {
        self.page = Some(page);
        self
    }

    /// Asks for `page_size` items per page (1 to 100).
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = Some(page_size);
        self
    }

    /// Only shipments in `status`.
    pub fn status(mut self, status: Status) -> Self {
        self.status = Some(status);
        self
    }

    /// Only shipments of this courier company.
    pub fn courier_company_id(mut self, id: CourierId) -> Self {
        self.courier_company_id = Some(id);
        self
    }

    /// Only shipments created at or after `t`.
    pub fn created_after(mut self, t: DateTime<Utc>) -> Self {
        self.created_after = Some(t);
        self
    }

    /// Only shipments created before `t`.
    pub fn created_before(mut self, t: DateTime<Utc>) -> Self {
        self.created_before = Some(t);
        self
    }

    /// Only shipments changed at or after `t`.
    pub fn updated_after(mut self, t: DateTime<Utc>) -> Self {
        self.updated_after = Some(t);
        self
    }
}

/// Body of `POST /shipments/:code/rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RateShipment {
    /// Integer from 1 to 10.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10))]
    #[cfg_attr(feature = "openapi", schema(example = 9))]
    pub rating: u8,
}

/// Answer of `POST /shipments/:code/generate-confirmation-code`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct ConfirmationCode {
    /// The shipment code.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub code: ShipmentCode,
    /// Six digits the courier must enter at delivery.
    #[cfg_attr(feature = "openapi", schema(example = "482913"))]
    pub confirmation_code: String,
    /// When the confirmation code stops working (72 h).
    #[serde(serialize_with = "timestamp::serialize")]
    pub expires_at: DateTime<Utc>,
}

impl ConfirmationCode {
    /// The answer for `code`.
    pub fn new(code: ShipmentCode, confirmation_code: String, expires_at: DateTime<Utc>) -> Self {
        ConfirmationCode {
            code,
            confirmation_code,
            expires_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> serde_json::Value {
        serde_json::json!({
            "id": 42, "code": "SHP-7K3M-Q9ZX", "merchant_id": 3,
            "status": "assigned_to_driver", "courier_company_id": 7,
            "assigned_driver_id": 12, "description": "Two boxes of books",
            "weight_kg": 4.5, "dimensions": null, "items": ["book"],
            "start_address": "52.5200,13.4050", "end_address": "52.3759,4.8975",
            "total_fee": 12.75, "webhook_url": null, "version": 3, "rating": null,
            "failure_reason": null,
            "created_at": "2026-11-21T09:30:12.123456Z",
            "assigned_to_courier_at": "2026-11-21T09:30:12.123456Z",
            "assigned_to_driver_at": "2026-11-21T09:31:02.120000Z",
            "picked_up_at": null, "delivered_at": null, "failed_at": null,
            "returned_at": null, "cancelled_at": null, "rated_at": null,
            "updated_at": "2026-11-21T09:31:02.120000Z"
        })
    }

    #[test]
    fn a_weight_in_a_request_is_a_json_number_not_a_string() {
        let read = |body: serde_json::Value| serde_json::from_value::<CreateShipment>(body);
        let ok = read(serde_json::json!({"courier_company_id": 1, "weight_kg": 4.5})).unwrap();
        assert_eq!(ok.weight_kg, Some("4.5".parse().unwrap()));
        let ok = read(serde_json::json!({"courier_company_id": 1, "weight_kg": 2})).unwrap();
        assert_eq!(ok.weight_kg, Some(Decimal::from(2)));
        let ok = read(serde_json::json!({"courier_company_id": 1, "weight_kg": null})).unwrap();
        assert_eq!(ok.weight_kg, None);
        let err = read(serde_json::json!({"courier_company_id": 1, "weight_kg": "1"})).unwrap_err();
        assert!(err.to_string().contains("expected a number"), "{err}");
        // And what the SDK sends reads back the same.
        let sent = CreateShipment::new(CourierId::new(1)).weight_kg("0.25".parse().unwrap());
        let back = read(serde_json::to_value(&sent).unwrap()).unwrap();
        assert_eq!(back, sent);
    }

    #[test]
    fn a_shipment_round_trips_without_loss() {
        let value = sample();
        let shipment: Shipment = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(shipment.total_fee, "12.75".parse().unwrap());
        assert_eq!(serde_json::to_value(&shipment).unwrap(), value);
    }

    #[test]
    fn unknown_fields_and_statuses_in_responses_are_tolerated() {
        let mut value = sample();
        value["status"] = "held_at_customs".into();
        value["added_later"] = true.into();
        let shipment: Shipment = serde_json::from_value(value).unwrap();
        assert_eq!(shipment.status, Status::Unknown("held_at_customs".into()));
        let back = serde_json::to_value(&shipment).unwrap();
        assert_eq!(back["status"], "held_at_customs");
    }

    #[test]
    fn every_known_status_round_trips() {
        for status in Status::KNOWN {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(serde_json::from_str::<Status>(&json).unwrap(), status);
        }
    }

    #[test]
    fn create_requests_refuse_unknown_fields() {
        let err =
            serde_json::from_str::<CreateShipment>(r#"{"courier_company_id":1,"colour":"red"}"#)
                .unwrap_err();
        assert!(err.to_string().contains("unknown field `colour`"), "{err}");
    }

    #[test]
    fn create_requests_skip_unset_fields() {
        let json = serde_json::to_value(CreateShipment::new(CourierId::new(7)).item("a")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"courier_company_id": 7, "items": ["a"]})
        );
    }
}
