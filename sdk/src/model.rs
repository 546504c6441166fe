//! The wire model: every JSON body the service sends or accepts.
//!
//! The reference server serializes with these very types, so a field added
//! here is added on both sides at once. Responses are read leniently (unknown
//! fields are ignored, unknown enum values are kept), requests are written
//! strictly (the server refuses fields it does not know).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::webhook_url::{WebhookUrl, WebhookUrlError};

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

/// Timestamps are written as RFC 3339 in UTC with exactly six fractional
/// digits (`2026-11-21T09:30:12.123456Z`), and read in any RFC 3339 form.
pub mod timestamp {
    use chrono::{DateTime, SecondsFormat, Utc};
    use serde::Serializer;

    /// Formats a timestamp the way the service writes it.
    pub fn format(t: &DateTime<Utc>) -> String {
        t.to_rfc3339_opts(SecondsFormat::Micros, true)
    }

    /// `serialize_with` for `DateTime<Utc>`.
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(t))
    }

    /// `serialize_with` for `Option<DateTime<Utc>>` (null when absent).
    pub fn serialize_option<S: Serializer>(
        t: &Option<DateTime<Utc>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&format(t)),
            None => s.serialize_none(),
        }
    }
}

/// An optional money-or-weight field of a request, read only from a JSON
/// number (or null): `"weight_kg": "1"` is a wrong type, not a weight, as
/// the OpenAPI document says. Written like `rust_decimal::serde::float_option`.
mod number_option {
    use std::fmt;
    use std::str::FromStr;

    use rust_decimal::Decimal;
    use serde::Deserializer;
    use serde::de::{Error, Unexpected, Visitor};

    pub use rust_decimal::serde::float_option::serialize;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
        d.deserialize_option(NumberVisitor)
    }

    struct NumberVisitor;

    impl<'de> Visitor<'de> for NumberVisitor {
        type Value = Option<Decimal>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a number")
        }

        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(NumberVisitor)
        }

        fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(Decimal::from(v)))
        }

        fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(Decimal::from(v)))
        }

        fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
            // Through the shortest text that reads back as `v`, as
            // rust_decimal does, so `4.5` is exactly 4.5.
            Decimal::from_str(&v.to_string())
                .map(Some)
                .map_err(|_| E::invalid_value(Unexpected::Float(v), &self))
        }
    }
}

/// A shipment, exactly as `GET /shipments/:code` and webhook deliveries carry
/// it. Every key is always present; timestamps are null until their event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Shipment {
    /// Numeric identifier.
    pub id: i64,
    /// Unique code, `SHP-XXXX-XXXX`; the idempotency key for receivers.
    #[cfg_attr(feature = "openapi", schema(example = "SHP-7K3M-Q9ZX"))]
    pub code: String,
    /// Owning merchant.
    pub merchant_id: i64,
    /// Current state.
    pub status: Status,
    /// Courier company the shipment is assigned to.
    pub courier_company_id: i64,
    /// Driver, once one is assigned.
    pub assigned_driver_id: Option<i64>,
    /// Free text supplied by the merchant.
    pub description: Option<String>,
    /// Weight in kilograms.
    #[serde(with = "rust_decimal::serde::float_option", default)]
    #[cfg_attr(feature = "openapi", schema(example = 4.5))]
    pub weight_kg: Option<Decimal>,
    /// Free-form dimensions text.
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

/// Body of `POST /shipments`. Only `courier_company_id` is required.
///
/// ```
/// use shipment_sdk::model::CreateShipment;
/// let req = CreateShipment::new(7)
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
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    #[cfg_attr(feature = "openapi", schema(example = 1))]
    pub courier_company_id: i64,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 2000, pattern = "^[^\\x00]*$")
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
    /// Free-form dimensions text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 200, pattern = "^[^\\x00]*$"))]
    #[cfg_attr(feature = "openapi", schema(example = "30x20x10 cm"))]
    pub dimensions: Option<String>,
    /// Item labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::items))]
    pub items: Option<Vec<String>>,
    /// Pickup location (text, or `lat,lng`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 500, pattern = "^[^\\x00]*$"))]
    #[cfg_attr(feature = "openapi", schema(example = "52.5200,13.4050"))]
    pub start_address: Option<String>,
    /// Delivery location (text, or `lat,lng`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 500, pattern = "^[^\\x00]*$"))]
    #[cfg_attr(feature = "openapi", schema(example = "52.3759,4.8975"))]
    pub end_address: Option<String>,
    /// Per-shipment HTTPS webhook address (a `WebhookUrl`, kept normalised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::webhook_url))]
    pub webhook_url: Option<String>,
}

impl CreateShipment {
    /// A request for the given courier company with nothing else set.
    pub fn new(courier_company_id: i64) -> Self {
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
    pub courier_company_id: Option<i64>,
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
    pub fn courier_company_id(mut self, id: i64) -> Self {
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

/// One page of a list, with enough to walk the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Page<T> {
    /// The items of this page.
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::page_data::<T>))]
    pub data: Vec<T>,
    /// This page's number, from 1.
    pub page: u32,
    /// The page size used.
    pub page_size: u32,
    /// Items across all pages.
    pub total: u64,
    /// Number of pages (0 when there are no items).
    pub total_pages: u64,
}

/// A list that is never paginated, such as `GET /merchant-couriers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct List<T> {
    /// Every item.
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::list_data::<T>))]
    pub data: Vec<T>,
}

/// An RFC 9457 problem body, the shape of every error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Problem {
    /// Always `about:blank`: the `code` says what went wrong.
    #[serde(rename = "type", default = "about_blank")]
    pub type_: String,
    /// The HTTP reason phrase.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong, for a person.
    pub detail: String,
    /// Stable machine-readable code, e.g. `missing_field`.
    pub code: String,
    /// The one request field at fault, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The request id, also in the `X-Request-Id` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

fn about_blank() -> String {
    "about:blank".to_owned()
}

/// A courier company linked to the merchant (`GET /merchant-couriers`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CourierCompany {
    /// The identifier used as `courier_company_id`.
    pub id: i64,
    /// Display name.
    #[cfg_attr(feature = "openapi", schema(example = "Swift Couriers"))]
    pub name: String,
    /// Whether the company takes new shipments.
    pub active: bool,
    /// Fixed part of the fee.
    #[serde(with = "rust_decimal::serde::float")]
    #[cfg_attr(feature = "openapi", schema(example = 5.0))]
    pub base_fee: Decimal,
    /// Fee per kilogram.
    #[serde(with = "rust_decimal::serde::float")]
    #[cfg_attr(feature = "openapi", schema(example = 1.5))]
    pub per_kg: Decimal,
    /// Fee per kilometre of great-circle distance.
    #[serde(with = "rust_decimal::serde::float")]
    #[cfg_attr(feature = "openapi", schema(example = 0.1))]
    pub per_km: Decimal,
    /// When the company was linked to the merchant.
    #[serde(serialize_with = "timestamp::serialize")]
    pub linked_at: DateTime<Utc>,
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
pub struct ConfirmationCode {
    /// The shipment code.
    pub code: String,
    /// Six digits the courier must enter at delivery.
    #[cfg_attr(feature = "openapi", schema(example = "482913"))]
    pub confirmation_code: String,
    /// When the confirmation code stops working (72 h).
    #[serde(serialize_with = "timestamp::serialize")]
    pub expires_at: DateTime<Utc>,
}

/// A secret string (API key, session token, signing key, password) whose
/// `Debug` and `Display` print `[redacted]`, so it never lands in a log line
/// or an error message by accident. It serializes as the plain string.
///
/// ```
/// use shipment_sdk::model::Secret;
/// let key = Secret::new("sk_test_abc");
/// assert_eq!(format!("{key:?} {key}"), "[redacted] [redacted]");
/// assert_eq!(key.expose(), "sk_test_abc");
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself: show it to the person who asked, store it, or send
    /// it; never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

/// Body of `POST /auth/login`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Login {
    /// The merchant's dashboard e-mail.
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::email))]
    pub email: String,
    /// The dashboard password (never used on API-key routes).
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::password))]
    pub password: Secret,
}

/// Answer of `POST /auth/login`: a dashboard session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Session {
    /// The Bearer token for the dashboard routes.
    pub token: Secret,
    /// Always `Bearer`.
    pub token_type: String,
    /// When the token stops working (12 h after sign-in).
    #[serde(serialize_with = "timestamp::serialize")]
    pub expires_at: DateTime<Utc>,
}

/// An API key as the dashboard lists it (`GET /api-keys`): never the secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiKey {
    /// Identifier, used in `DELETE /api-keys/:id`.
    pub id: i64,
    /// Name given at creation.
    #[cfg_attr(feature = "openapi", schema(example = "deploy"))]
    pub name: String,
    /// `sk_test_` or `sk_live_`.
    #[cfg_attr(feature = "openapi", schema(example = "sk_test_"))]
    pub prefix: String,
    /// The key's last four characters, to tell keys apart.
    #[cfg_attr(feature = "openapi", schema(example = "Ab3Z"))]
    pub last4: String,
    /// When the key was created.
    #[serde(serialize_with = "timestamp::serialize")]
    pub created_at: DateTime<Utc>,
    /// When the key was last used, if ever.
    #[serde(serialize_with = "timestamp::serialize_option", default)]
    pub last_used_at: Option<DateTime<Utc>>,
}

/// Answer of `POST /api-keys`: the listed fields and, this once, the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewApiKey {
    /// The key as it will be listed.
    #[serde(flatten)]
    pub api_key: ApiKey,
    /// The key itself; it cannot be retrieved again.
    pub key: Secret,
}

/// Body of `POST /api-keys`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateApiKey {
    /// A name to tell the key apart (the server picks one when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 100, pattern = "^[^\\x00]*$"))]
    pub name: Option<String>,
}

/// Body of `POST /api-keys/verify`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct VerifyApiKey {
    /// The pasted key string.
    pub key: Secret,
}

/// Answer of `POST /api-keys/verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeyVerdict {
    /// Whether the string is one of the merchant's working keys.
    pub valid: bool,
    /// The key's id, when valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// The key's name, when valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A merchant webhook as listed (`GET /webhooks`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Webhook {
    /// Identifier, used in `/webhooks/:id`.
    pub webhook_id: i64,
    /// The HTTPS address deliveries go to.
    #[cfg_attr(
        feature = "openapi",
        schema(example = "https://shop.example.com/hooks/shipments")
    )]
    pub url: String,
    /// Whether deliveries are sent.
    pub active: bool,
    /// When it was registered.
    #[serde(serialize_with = "timestamp::serialize")]
    pub created_at: DateTime<Utc>,
}

/// Answer of `POST /webhooks`: the webhook and, this once, its signing key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewWebhook {
    /// The webhook as it will be listed.
    #[serde(flatten)]
    pub webhook: Webhook,
    /// `whsec_...`: the HMAC key is the UTF-8 bytes of this whole string.
    pub signing_key: Secret,
}

/// Body of `POST /webhooks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RegisterWebhook {
    /// The HTTPS address to deliver to (a `WebhookUrl`, kept normalised).
    #[cfg_attr(feature = "openapi", schema(value_type = WebhookUrl))]
    pub url: String,
}

/// Body of `PATCH /webhooks/:id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SetWebhookActive {
    /// Whether deliveries should be sent.
    pub active: bool,
}

/// One attempt in a webhook's delivery log (`GET /webhooks/:id/deliveries`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Delivery {
    /// Identifier of the attempt.
    pub id: i64,
    /// The shipment whose change was delivered.
    pub shipment_code: String,
    /// The shipment version the body carried.
    pub version: i64,
    /// Where it was sent.
    pub url: String,
    /// Whether the receiver answered below 400.
    pub success: bool,
    /// The receiver's HTTP status, if it answered.
    #[serde(default)]
    pub status_code: Option<i64>,
    /// What went wrong, for a failure.
    #[serde(default)]
    pub error: Option<String>,
    /// How long the attempt took.
    pub duration_ms: i64,
    /// When the attempt was made.
    #[serde(serialize_with = "timestamp::serialize")]
    pub delivered_at: DateTime<Utc>,
}

/// Answer of `POST /webhooks/shipment-signing-key`: the key that signs
/// per-shipment `webhook_url` deliveries, shown once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SigningKey {
    /// `whsec_...`; the HMAC key is the UTF-8 bytes of this whole string.
    pub signing_key: Secret,
    /// When it was created (the previous one stopped working then).
    #[serde(serialize_with = "timestamp::serialize")]
    pub created_at: DateTime<Utc>,
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
        let sent = CreateShipment::new(1).weight_kg("0.25".parse().unwrap());
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
    fn timestamps_are_written_with_six_fraction_digits() {
        let t: DateTime<Utc> = "2026-11-21T09:30:12Z".parse().unwrap();
        assert_eq!(timestamp::format(&t), "2026-11-21T09:30:12.000000Z");
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
        let json = serde_json::to_value(CreateShipment::new(7).item("a")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"courier_company_id": 7, "items": ["a"]})
        );
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        let json = serde_json::json!({
            "id": 1, "name": "ci", "prefix": "sk_test_", "last4": "abcd",
            "created_at": "2026-11-21T09:30:12.123456Z", "last_used_at": null,
            "key": "sk_test_0123456789abcdefghijABCDEFGHIJ"
        });
        let key: NewApiKey = serde_json::from_value(json.clone()).unwrap();
        assert!(!format!("{key:?}").contains("0123456789"));
        assert_eq!(key.key.expose(), "sk_test_0123456789abcdefghijABCDEFGHIJ");
        assert_eq!(serde_json::to_value(&key).unwrap(), json);
    }
}

/// OpenAPI schemas of the types whose serde form is written by hand.
#[cfg(feature = "openapi")]
mod openapi {
    use std::borrow::Cow;

    use utoipa::openapi::schema::{ObjectBuilder, SchemaFormat, SchemaType, Type};
    use utoipa::openapi::{RefOr, Schema};
    use utoipa::{PartialSchema, ToSchema};

    use super::{Secret, Status, WebhookUrl};

    /// `CreateShipment::webhook_url`: a [`WebhookUrl`], or null.
    pub(super) fn webhook_url() -> impl Into<RefOr<Schema>> {
        utoipa::openapi::schema::OneOfBuilder::new()
            .description(Some(
                "Per-shipment HTTPS webhook address (a `WebhookUrl`, kept normalised).",
            ))
            .item(ObjectBuilder::new().schema_type(SchemaType::Type(Type::Null)))
            .item(utoipa::openapi::Ref::from_schema_name(WebhookUrl::name()))
    }

    /// `Page::data`: references to `T`'s component. A derived generic field
    /// would inline `T`, and generated clients would get a second type for
    /// the same object.
    pub(super) fn page_data<T: ToSchema>() -> impl Into<RefOr<Schema>> {
        refs::<T>("The items of this page.")
    }

    /// `List::data`: references to `T`'s component (see [`page_data`]).
    pub(super) fn list_data<T: ToSchema>() -> impl Into<RefOr<Schema>> {
        refs::<T>("Every item.")
    }

    fn refs<T: ToSchema>(description: &str) -> utoipa::openapi::schema::Array {
        utoipa::openapi::schema::ArrayBuilder::new()
            .items(utoipa::openapi::Ref::from_schema_name(T::name()))
            .description(Some(description))
            .build()
    }

    /// Text with something besides white space (as Rust's `trim` sees it)
    /// and no NUL.
    const NON_BLANK: &str = "^[^\\x00]*[^\\x00\\t\\n\\x0B\\f\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00]*$";

    /// `Login::email`: up to 256 characters, not blank.
    pub(super) fn email() -> impl Into<RefOr<Schema>> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .max_length(Some(256))
            .pattern(Some(NON_BLANK))
    }

    /// `Login::password`: up to 256 characters.
    pub(super) fn password() -> impl Into<RefOr<Schema>> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .max_length(Some(256))
    }

    /// `CreateShipment::items`: at most 100 labels of 1 to 200 characters,
    /// not only white space, or null.
    pub(super) fn items() -> impl Into<RefOr<Schema>> {
        let label = ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .min_length(Some(1))
            .max_length(Some(200))
            .pattern(Some(NON_BLANK));
        utoipa::openapi::schema::ArrayBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
            .items(label)
            .max_items(Some(100))
    }

    impl PartialSchema for Status {
        fn schema() -> RefOr<Schema> {
            // The values the service sends today; clients must also accept
            // others (the SDK keeps them as `Status::Unknown`).
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::String))
                .enum_values(Some(Status::KNOWN.iter().map(Status::as_str)))
                .description(Some(
                    "Lifecycle state. Clients must accept values not listed here.",
                ))
                .into()
        }
    }

    impl ToSchema for Status {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("Status")
        }
    }

    impl PartialSchema for WebhookUrl {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::String))
                .format(Some(SchemaFormat::Custom("uri".to_owned())))
                .max_length(Some(WebhookUrl::MAX_LEN))
                .description(Some(
                    "An HTTPS URL a browser would open. The scheme is `https`, in any case. \
                     The host is a host name per RFC 1123 (labels of letters, digits and \
                     inner hyphens, at most 63 characters each and 253 in all), an \
                     internationalised name (converted to punycode), or an IPv4 or IPv6 \
                     address; any port; any path and query, percent-encoded or not. \
                     Refused: credentials (`user:password@`), a fragment (`#...`), white \
                     space at either end or control characters, more than 2,048 bytes as \
                     sent or once normalised (a path of just `/` is not counted), and hosts \
                     that are not on the public internet. The service stores and shows the \
                     URL normalised (WHATWG URL serialisation: lowercase scheme and host, \
                     punycode, default port dropped, `/` for an empty path).",
                ))
                .examples(["https://shop.example.com/hooks/shipments"])
                .into()
        }
    }

    impl ToSchema for WebhookUrl {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("WebhookUrl")
        }
    }

    impl PartialSchema for Secret {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::String))
                .description(Some("A secret, sent or shown once."))
                .into()
        }
    }

    impl ToSchema for Secret {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("Secret")
        }
    }
}
