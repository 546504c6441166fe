//! Integration tests: the real server on port 0, a fresh database per test,
//! every body run on SQLite and (with `TEST_DATABASE_URL`) on PostgreSQL,
//! through the `shipment-testkit` harness.

mod receiver;

mod binary;
mod courier;
mod dashboard;
mod dashboard_pages;
mod delivery;
mod errors;
mod fixtures;
mod generated;
mod hardening;
mod lifecycle;
mod listen;
mod openapi;
mod operations;
mod processes;
mod redelivery;
mod revocation;
mod shipments;
mod testing;
mod testing_deliveries;
