//! The wire model: every JSON body the service sends or accepts.
//!
//! The reference server serializes with these very types, so a field added
//! here is added on both sides at once. Responses are read leniently (unknown
//! fields are ignored, unknown enum values are kept), requests are written
//! strictly (the server refuses fields it does not know).
//!
//! The types live in one module per resource and are all re-exported here,
//! so `shipment_sdk::model::Shipment` is the one path to use:
//!
//! - shipments: [`Shipment`], [`Status`], [`CreateShipment`],
//!   [`ListShipments`], [`RateShipment`], [`ConfirmationCode`], and the
//!   parsed [`ShipmentCode`] and [`IdempotencyKey`];
//! - couriers: [`CourierCompany`];
//! - API keys: [`ApiKey`], [`NewApiKey`], [`CreateApiKey`], [`VerifyApiKey`],
//!   [`KeyVerdict`], a restricted key's [`Permissions`] (an [`Access`] per
//!   [`Resource`]), and [`CurrentKey`], a key's view of itself;
//! - webhooks: [`Webhook`], [`NewWebhook`], [`RegisterWebhook`],
//!   [`SetWebhookActive`], [`Delivery`], [`RedeliverFailures`],
//!   [`RedeliveryQueued`], [`SigningKey`], [`WebhookUrl`];
//! - the dashboard sign-in: [`Login`], [`Session`], and [`Secret`] for every
//!   key, token and password;
//! - what they share: the envelopes [`Page`] and [`List`], the error body
//!   [`Problem`] with its [`ProblemCode`], the [`timestamp`] format, and one
//!   id type per resource ([`ShipmentId`], [`CourierId`], [`DriverId`],
//!   [`ApiKeyId`], [`WebhookId`], [`DeliveryId`], [`MerchantId`]), so ids of
//!   different resources cannot be mixed up.
//!
//! Response types are `#[non_exhaustive]`: a field the service adds later is
//! not a breaking change. Read their fields; build them (in tests, say) with
//! their constructors or from JSON.
//!
//! Money and weights are [`Decimal`]s and instants are [`DateTime<Utc>`],
//! re-exported here from the versions of `rust_decimal` and `chrono` the
//! model is built with (also as [`crate::rust_decimal`] and
//! [`crate::chrono`]).

mod api_keys;
mod auth;
mod code;
mod common;
mod couriers;
mod ids;
mod listen;
#[cfg(feature = "openapi")]
mod openapi;
mod problem;
mod shipments;
pub mod timestamp;
mod webhook_url;
mod webhooks;

#[doc(no_inline)]
pub use chrono::{DateTime, Utc};
#[doc(no_inline)]
pub use rust_decimal::Decimal;

pub use api_keys::{
    Access, ApiKey, CreateApiKey, CurrentKey, InvalidPermissions, KeyVerdict, NewApiKey,
    Permissions, Resource, VerifyApiKey,
};
pub use auth::{Login, Secret, Session};
pub use code::{
    IdempotencyKey, InvalidIdempotencyKey, InvalidShipmentCode, MAX_IDEMPOTENCY_KEY_LEN,
    SHIPMENT_CODE_ALPHABET, SHIPMENT_CODE_PATTERN, ShipmentCode,
};
pub use common::{List, Page};
pub use couriers::CourierCompany;
pub use ids::{ApiKeyId, CourierId, DeliveryId, DriverId, MerchantId, ShipmentId, WebhookId};
pub use listen::ListenerDelivery;
pub use problem::{Problem, ProblemCode};
pub use shipments::{
    ConfirmationCode, CreateShipment, ListShipments, RateShipment, Shipment, Status,
};
pub use webhook_url::{WebhookUrl, WebhookUrlError};
pub use webhooks::{
    Delivery, NewWebhook, RedeliverFailures, RedeliveryQueued, RegisterWebhook, SetWebhookActive,
    SigningKey, Webhook,
};
