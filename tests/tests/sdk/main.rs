//! The SDK against the real reference server, on SQLite and PostgreSQL: one
//! test binary (linking the server is slow), one module per part of the
//! API, as in `server/tests/api`.

mod couriers;
mod dashboard;
mod errors;
mod keys;
mod listing;
mod network;
mod redelivery;
mod shipments;

use rust_decimal::Decimal;

/// A decimal from its text, for fees and weights.
fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}
