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
//! errors ([`error`]) and one file per resource's use-cases, so it reads as
//! the list of what the service does. What the state holds but is no
//! use-case lives below: what it remembers between requests in
//! [`crate::cache`], what the test controls armed in
//! [`crate::test_controls`]. The test surface, which calls these use-cases
//! and is none of the service's, lives above, in [`crate::testing`].

pub(crate) mod accounts;
pub(crate) mod api_keys;
pub(crate) mod auth;
pub(crate) mod couriers;
pub(crate) mod error;
pub(crate) mod health;
pub(crate) mod listen;
pub(crate) mod shipments;
pub(crate) mod state;
pub(crate) mod webhooks;

/// Who is acting on a shipment: a merchant or a courier company, by id. A
/// shipment is visible to its merchant and to its courier company.
///
/// Front ends name it from here; the store decides visibility with it.
pub(crate) use crate::domain::actor::Actor;
pub(crate) use error::{Error, Result, numeric_id};
pub(crate) use health::ping_database;
pub(crate) use state::{AppState, Shared};
