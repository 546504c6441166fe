//! Tests of the `shipctl` binary: offline behaviour, configuration, and
//! every command against the real reference server.

mod config;
mod dashboard;
mod helpers;
mod import;
mod offline;
mod online;
