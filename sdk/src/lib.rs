//! Rust SDK for the merchant shipment service.
//!
//! The [`model`] module is the service's wire model: every request and
//! response body, shared with the reference server so the two cannot drift.
//! It depends only on serde, chrono and rust_decimal.
#![warn(missing_docs)]

pub mod model;
