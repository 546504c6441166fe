//! The engine: how the store's statements reach the database, and the
//! machinery that makes them fast. The resource files (`shipments.rs`,
//! `outbox.rs`, `webhooks.rs`, …) say *what* they read and write, as plain
//! statements on a transaction ([`Tx`]) or on the pool (`Store::query`);
//! this module decides *how*, behind a small interface:
//!
//! - `tx.query(SQL).bind(…).fetch_…()`, or `store.query(…)` on the pool:
//!   the engine runs it on SQLite or PostgreSQL ([`Query`](query::Query)).
//! - `store.write(move |tx| Box::pin(…))`: the closure runs in the next
//!   group commit's transaction ([`group_commit`]).
//! - `impl AtCommit for Row`, then `tx.at_commit(row)`: a transaction's
//!   rows of that kind are written in one call at its commit ([`AtCommit`]).
//! - `store.write_at_commit(row)`: both; the row rides the next group
//!   commit, and its request gets back what writing it made (a create's
//!   shipment, from `RETURNING *`).
//! - `impl ReadMany for Kind`, then `reads.read(db, key)`: concurrent
//!   requests' keys are read in one statement ([`reads`]).
//! - `PaddedIn::new(…)`, `multi_row(…)`: one statement per size class for
//!   `IN` lists and multi-row `VALUES` ([`query`]).
//!
//! What lies behind it, and why each piece exists
//! (docs/src/appendix/benchmarks-history.md has the figures):
//!
//! - [`group_commit`]: concurrent writes share one transaction, so SQLite
//!   writes the WAL and takes its write lock once for many requests, and
//!   PostgreSQL flushes its WAL once. A write must be repeatable: a group
//!   that fails is rolled back and each write runs again alone.
//! - [`lanes`]: the queue to a few tasks that each take everything queued
//!   meanwhile, up to a bound: the group commit's committers and the
//!   batched reads' readers. Nothing waits on purpose to gather a batch.
//! - [`AtCommit`]: rows that many writes of a group make alike are
//!   written at the commit, each kind in one call, in the order of
//!   [`Kind`]: new shipments (which queue their outbox rows and counts),
//!   outbox rows, finished outbox rows (which queue their delivery log
//!   rows), delivery log rows, counts.
//! - [`reads`]: reads by key (shipments by code) in batches.
//! - [`query`]: one statement text for both engines, anonymous parameters
//!   for SQLite, padded `IN` lists, statements planned afresh where a cached
//!   plan goes stale.
//! - [`db`]: the pools, SQLite's one writer connection, and [`reach`]:
//!   PostgreSQL known to be unreachable fails requests at once.
//!
//! Tracing spans follow the work: a write or read runs in the span of the
//! request that asked for it, even on a committer or reader task, so a
//! request's trace shows its SQL; what a batch does for several requests
//! at once runs in a span of its own that follows from theirs.

pub(crate) mod backend;
pub(crate) mod db;
pub(crate) mod group_commit;
mod lanes;
pub(crate) mod query;
pub(crate) mod reach;
pub(crate) mod reads;
mod tx;

pub(crate) use backend::{Backend, now};
pub(crate) use db::Db;
pub(crate) use db::PoolUsage;
pub use db::{Pool, PoolSettings};
pub(crate) use group_commit::{ATTEMPTS, MAX_GROUP};
pub(crate) use query::{PaddedIn, Sql, multi_row};
pub(crate) use reads::{ReadMany, Reads};
pub(crate) use tx::Tx;
pub(crate) use tx::{AtCommit, Kind};
