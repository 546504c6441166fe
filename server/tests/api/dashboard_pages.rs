//! The dashboard's web pages over plain HTTP, cookies handled by hand:
//! sign-in and its throttle, the session cookie, CSRF refusals, security
//! headers, secrets shown once, and labels on every input.

pub(crate) mod browser;

mod api_keys;
mod auth;
mod cross_origin;
mod health;
mod redelivery;
mod return_path;
mod serving;
mod shipments;
mod webhooks;
