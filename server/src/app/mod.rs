//! The application layer: every use-case of the service, one file per
//! resource, called by both front ends (the JSON API in [`crate::http`] and
//! the pages in [`crate::dashboard`]), which never import each other.
//!
//! A use-case takes the [`AppState`] and plain values, asks `domain` to
//! decide and `store` to read and write, and answers with its result or an
//! [`Error`] that names what went wrong, not an HTTP status: each front end
//! decides how to show it (a problem body, a page).
//!
//! This file is the layer's table of contents: the state ([`state`]), the
//! errors ([`error`]), the caches the state holds ([`caches`], [`key_cache`])
//! and one file per resource's use-cases.

pub mod api_keys;
pub mod auth;
pub mod caches;
pub mod couriers;
pub mod error;
pub mod fixtures;
pub mod health;
pub mod key_cache;
pub mod listed;
pub mod listen;
pub mod memo;
pub mod shipments;
pub mod state;
pub mod testing;
pub mod webhooks;

/// Who is acting on a shipment: a merchant or a courier company, by id. A
/// shipment is visible to its merchant and to its courier company.
///
/// Front ends name it from here; the store decides visibility with it.
pub use crate::domain::actor::Actor;
pub use error::{Error, Result, numeric_id};
pub use health::ping_database;
pub use state::{AppState, Shared};
