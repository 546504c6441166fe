//! What the server remembers of the database between requests: answers
//! that every request of a kind would otherwise ask again (a key's owner,
//! a courier company's prices, a shipment as a list shows it). One of each
//! hangs on the state every use-case runs with (`app::Shared`), so all of
//! a process's requests share it.
//!
//! A cache promises that an answer it kept is still right, so each file
//! says why its memory cannot go stale and what makes it forget early, and
//! a test that reads the server's SQL (`memo::statements`) fails on a new
//! write that would break the promise. The caches know the store and
//! nothing of the use-cases that consult them, so they sit below `app`;
//! above `webhooks`, whose listener relay forgets the keys other processes
//! revoke through a trait the key cache implements.
//!
//! This file is the table of contents:
//! - [`keys`]: API keys the database verified in the last moment.
//! - [`pricing`]: the prices of a merchant's linked courier companies.
//! - [`listed`]: shipments as lists show them, by id and version.
//! - [`memo`]: the bounded, expiring memory the three are built on.

pub(crate) mod keys;
pub(crate) mod listed;
pub(crate) mod memo;
pub(crate) mod pricing;
