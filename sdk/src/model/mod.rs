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
//!   [`ListShipments`], [`RateShipment`], [`ConfirmationCode`];
//! - couriers: [`CourierCompany`];
//! - API keys: [`ApiKey`], [`NewApiKey`], [`CreateApiKey`], [`VerifyApiKey`],
//!   [`KeyVerdict`];
//! - webhooks: [`Webhook`], [`NewWebhook`], [`RegisterWebhook`],
//!   [`SetWebhookActive`], [`Delivery`], [`SigningKey`], [`WebhookUrl`];
//! - the dashboard sign-in: [`Login`], [`Session`], and [`Secret`] for every
//!   key, token and password;
//! - what they share: the envelopes [`Page`] and [`List`], the error body
//!   [`Problem`] with its [`ProblemCode`], and the [`timestamp`] format.
//!
//! Money and weights are [`Decimal`]s and instants are [`DateTime<Utc>`],
//! re-exported here from the versions of `rust_decimal` and `chrono` the
//! model is built with (also as [`crate::rust_decimal`] and
//! [`crate::chrono`]).

mod api_keys;
mod auth;
mod common;
mod couriers;
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

pub use api_keys::{ApiKey, CreateApiKey, KeyVerdict, NewApiKey, VerifyApiKey};
pub use auth::{Login, Secret, Session};
pub use common::{List, Page};
pub use couriers::CourierCompany;
pub use problem::{Problem, ProblemCode};
pub use shipments::{
    ConfirmationCode, CreateShipment, ListShipments, RateShipment, Shipment, Status,
};
pub use webhook_url::{WebhookUrl, WebhookUrlError};
pub use webhooks::{Delivery, NewWebhook, RegisterWebhook, SetWebhookActive, SigningKey, Webhook};
