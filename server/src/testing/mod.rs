//! The test surface: what a merchant's CI (and this repository's own tests)
//! use to set a server up and make it misbehave, never what the service
//! does for a merchant. Each of it runs through the use-cases of
//! [`crate::app`] like any front end, and none of `app` calls it back.
//!
//! - [`controls`]: the test controls (`--test-controls`): faults on a
//!   merchant's next requests, advancing a shipment through the real
//!   lifecycle, duplicated webhook deliveries, a key made to expire now. What they arm lives lower, in
//!   [`crate::test_controls`], since the state every use-case runs with holds it.
//! - [`merchants`]: a merchant per test, made with everything a test needs
//!   and deleted with everything it owns.
//! - [`fixtures`]: a declared fixtures file (`--fixtures`, `admin
//!   apply-fixtures`) made in the database, idempotently.
//! - [`error`]: why a test control refused.

pub(crate) mod controls;
pub(crate) mod error;
pub(crate) mod fixtures;
pub(crate) mod merchants;

pub(crate) use controls::{
    AdvanceShipment, ArmFault, DuplicateDeliveries, advance_shipment, arm_fault, disarm_faults,
    duplicate_deliveries, expire_api_key,
};
pub(crate) use error::{Result, TestingError};
