//! The transactional outbox: a row per shipment change, written in the
//! change's own transaction with what its delivery needs, claimed by a
//! dispatcher under a lease, and marked done once every target has been
//! attempted; and a row per redelivery someone asked for, which copies the
//! change's row and goes to one webhook only.
//!
//! One table, but the request path, the dispatcher and the people asking
//! for redeliveries use it apart, each with its own statements and reasons,
//! so each has a file, readable without the others:
//!
//! - `enqueue.rs`: a change's row ([`enqueue()`],
//!   [`Enqueued`](enqueue::Enqueued)), queued in the change's transaction
//!   and written at its commit: all a shipment write needs to know of the
//!   outbox.
//! - `claim.rs`: the dispatcher's side, from claim to finish: claims and
//!   their leases (renewed, released), the targets of a claimed row, the
//!   attempts logged, the backlog ([`Backlog`](claim::Backlog)). The
//!   claim's SQL is shaped by query plans that went wrong, and its
//!   documentation says how; it stays next to the code that depends on it.
//! - `finished.rs`: the dispatcher's finished rows and delivery log rows,
//!   written at commit for a whole group: machinery for `claim.rs`, kept
//!   out of the way of its statements.
//! - `redelivery.rs`: rows someone asked for again, one or in bulk
//!   ([`Redelivery`], [`BulkRedelivery`],
//!   [`WaitingRedelivery`](redelivery::WaitingRedelivery)): their own
//!   statements, checks and lock, which the dispatcher never needs (it
//!   sends a redelivery's row like any other).
//! - `budget.rs`: how many redeliveries a merchant may ask for, counted
//!   from the outbox, so every process counts the same.
//!
//! Every item callers name is re-exported here, so it is
//! `store::outbox::X` whichever file holds it.

mod budget;
mod claim;
mod enqueue;
mod finished;
mod redelivery;

pub use budget::RedeliveryBudget;
pub(crate) use claim::{OutboxRow, Target};
pub(crate) use enqueue::enqueue;
pub(crate) use finished::Attempt;
pub use redelivery::{BulkRedelivery, Redelivery};
