//! The client against a wiremock server, for what the real server will not
//! do on demand: failures, retries, slow and broken answers.

mod dashboard;
mod drops;
mod errors;
mod helpers;
mod keys;
mod listen;
mod redelivery;
mod redirects;
mod retries;
mod shipments;
mod spans;
