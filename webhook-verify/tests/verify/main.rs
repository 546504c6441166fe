//! The crate's integration tests: the shared test vectors, one test per
//! failure mode, properties, Standard Webhooks, and the optional features.

mod failure_modes;
mod helpers;
mod properties;
mod rotation;
mod standard;
mod standard_properties;
mod vectors;

#[cfg(feature = "axum")]
mod extractor;
#[cfg(feature = "shipment")]
mod shipment;
