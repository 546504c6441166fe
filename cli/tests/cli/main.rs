//! Tests of the `shipctl` binary: offline behaviour, configuration, and
//! every command against the real reference server.

mod config;
mod dashboard;
mod doctor;
mod helpers;
mod import;
mod keys;
mod listen;
mod listen_helpers;
mod listen_scripts;
mod offline;
mod offline_standard;
mod online;
mod readme;
mod redelivery;
mod terminal;
