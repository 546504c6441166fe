//! The crate's integration tests: the shared test vectors, one test per
//! failure mode, properties, and the optional features.

mod failure_modes;
mod helpers;
mod properties;
mod rotation;
mod vectors;

#[cfg(feature = "axum")]
mod extractor;
#[cfg(feature = "shipment")]
mod shipment;
