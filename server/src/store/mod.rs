//! The database: one [`Store`] over SQLite (embedded default) or PostgreSQL.
//!
//! The store is two layers:
//!
//! - The resource files say what is read and written, as plain statements
//!   on a transaction ([`Tx`]) or on the pool, readable top to bottom:
//!   `shipments.rs` (create, read by code, change; the list in
//!   `shipments/list.rs`), `outbox/` (the outbox row of a change in
//!   `enqueue.rs`, the dispatcher's claims and finishes in `claim.rs`,
//!   redeliveries in `redelivery.rs`), `webhooks.rs`,
//!   `merchants.rs`, `couriers.rs`, `api_keys.rs`, `auth.rs`, `listen.rs`.
//! - `engine` decides how: group commit, rows written at commit, batched
//!   reads, padded `IN` lists, one statement text for both engines, the
//!   pools. Its module documentation lists the small interface the
//!   resource files use, and why each piece exists.
//!
//! A shipment create, for one: `Store::create_shipment` (`shipments.rs`)
//! hands its row to the next group commit (`Store::write_at_commit`); at
//! the commit, `NewRow`'s `AtCommit::write`, next to it, inserts the
//! group's rows in one `INSERT … RETURNING *` and queues each shipment's
//! outbox row (`outbox::enqueue`, whose `INSERT` is in
//! `outbox/enqueue.rs`) and its count.
//!
//! Every statement is written once, in SQL both engines understand (`$1`
//! parameters, `RETURNING`), as a `&'static str` (two constants where the
//! engines differ, as for `FOR UPDATE SKIP LOCKED`), and run through the
//! engine's `Query` on whichever pool the URL chose, or on an open [`Tx`];
//! rows come back as `#[derive(sqlx::FromRow)]` structs, one per table,
//! converted to the wire model in one place each way (for shipments,
//! `ShipmentRecord::into_model` and `NewRow`'s `INSERT`). The shipment
//! list, whose filters vary per request, is built with `sqlx::QueryBuilder`
//! instead (`shipments/list.rs`). Every error passes through
//! [`StoreError`]'s `From<sqlx::Error>`, which names the unique constraint
//! a write ran into (`unique_violation`). Timestamps are truncated to
//! microseconds in Rust ([`now`]) so both engines store exactly what the
//! API shows.

pub(crate) mod api_keys;
pub(crate) mod auth;
pub(crate) mod couriers;
pub(crate) mod engine;
pub(crate) mod error;
pub(crate) mod handle;
pub(crate) mod listen;
pub(crate) mod merchants;
pub(crate) mod outbox;
pub(crate) mod shipments;
pub(crate) mod webhooks;

pub(crate) use engine::{Backend, Tx, now};
pub use engine::{Pool, PoolSettings};
pub use error::StoreError;
pub use handle::Store;

#[cfg(test)]
mod tests;
