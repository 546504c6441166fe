//! Sign and verify the shipment service's webhook deliveries.
//!
//! Every delivery is a `POST` carrying two signatures made with the one
//! signing key the service showed (`whsec_...`):
//!
//! - [Standard Webhooks](https://www.standardwebhooks.com) (module
//!   [`standard`]): `webhook-id`, `webhook-timestamp` (Unix seconds) and
//!   `webhook-signature: v1,<base64>`, the HMAC-SHA256 of
//!   `id.timestamp.body` keyed with the base64-decoded part of the key.
//!   The signature covers the timestamp, and a receiver refuses one more
//!   than five minutes from its clock: a captured delivery cannot be
//!   replayed later. Any language's official Standard Webhooks library
//!   verifies it.
//! - `X-Service-Signature: sha256=<hex>`, the lowercase hex HMAC-SHA256 of
//!   the raw request body, keyed with the UTF-8 bytes of the whole key
//!   string (prefix included, exactly as shown): the original scheme. It
//!   covers the body alone, so a captured delivery verifies forever.
//!
//! The reference server signs with [`standard::sign`] and [`sign`];
//! receivers check with a [`Verifier`], which holds one or more keys and
//! checks both schemes. Both sides share this crate and the test vectors in
//! `shared/test-vectors/webhook-signatures.json` (copied into the
//! repository as `test-vectors/webhook-signatures.json`) and
//! `test-vectors/standard-webhooks.json`.
//!
//! # The replay-safe way
//!
//! Give [`Verifier::verify_standard`] the three header values (each empty
//! when absent) and the raw body; answer `401`, and do not process the
//! body, on any error: it says which check failed.
//!
//! ```
//! use webhook_verify::{Verifier, VerifyError, standard};
//!
//! let key = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
//! let body = br#"{"code":"SHP-7K3M-Q9ZX","version":3}"#;
//! let signature = standard::sign(key, "msg_41_w7", 1_764_324_120, body)?;
//! let headers = standard::Headers {
//!     id: "msg_41_w7",
//!     timestamp: "1764324120",
//!     signature: &signature,
//! };
//!
//! // `verify_standard` reads the system clock; `_at` takes it, for tests.
//! let verifier = Verifier::new(key);
//! assert_eq!(verifier.verify_standard_at(headers, body, 1_764_324_125), Ok(()));
//! // Replayed ten minutes later:
//! assert_eq!(
//!     verifier.verify_standard_at(headers, body, 1_764_324_720),
//!     Err(VerifyError::TimestampTooOld { age_secs: 600, tolerance_secs: 300 })
//! );
//! # Ok::<(), standard::KeyError>(())
//! ```
//!
//! The axum extractors (section 3) check the Standard Webhooks headers
//! whenever any is present; [`Verifier::require_standard`] makes them
//! refuse a delivery without them, so a replay with the headers stripped
//! is refused too. [`Verifier::verify_strongest`] does the same choice
//! for other frameworks.
//!
//! # 1. Verify the raw body, before anything parses it
//!
//! The signature covers the exact bytes that were sent. Parsing the JSON and
//! serializing it again changes whitespace, key order or number formatting,
//! and the signature no longer matches. Verify the bytes as read off the
//! wire, then parse those same bytes.
//!
//! ```
//! use webhook_verify::{VerifyError, sign, verify};
//!
//! let key = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
//! let sent = b"{\n  \"code\": \"SHP-7K3M-Q9ZX\",\n  \"version\": 3\n}";
//! let header = sign(key, sent);
//!
//! assert_eq!(verify(key, sent, &header), Ok(()));
//!
//! let value: serde_json::Value = serde_json::from_slice(sent)?;
//! let reserialized = serde_json::to_vec(&value)?;
//! assert_eq!(verify(key, &reserialized, &header), Err(VerifyError::Mismatch));
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! # 2. The minimal call, `X-Service-Signature` only
//!
//! Give [`verify`] the key, the raw body and the header value; answer `401`
//! (and do not process the body) on any error. Prefer the replay-safe way
//! above wherever the Standard Webhooks headers can be read.
//!
//! ```
//! use webhook_verify::{SIGNATURE_HEADER, VerifyError, verify};
//!
//! fn receive(key: &str, header: Option<&str>, body: &[u8]) -> Result<(), VerifyError> {
//!     verify(key, body, header.ok_or(VerifyError::MissingHeader)?)?;
//!     // ... now, and only now, parse and use `body` ...
//!     Ok(())
//! }
//! # let key = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
//! # let body = b"{}";
//! # let header = webhook_verify::sign(key, body);
//! # assert_eq!(SIGNATURE_HEADER, "X-Service-Signature");
//! # assert_eq!(receive(key, Some(&header), body), Ok(()));
//! # assert_eq!(receive(key, None, body), Err(VerifyError::MissingHeader));
//! ```
//!
//! The key may be a `&str`, a `String`, a [`SigningKey`] (whose `Debug` and
//! `Display` print `[redacted]`) or any other `AsRef<[u8]>`.
//!
//! # 3. An axum receiver
//!
//! With the `axum` feature, the extractors `VerifiedBody`,
//! `VerifiedJson<T>` and `VerifiedDelivery<T>` (module `axum`) take the
//! [`Verifier`] from the router's state, check the stronger scheme the
//! delivery carries, refuse a bad signature or an expired timestamp with
//! `401` before the handler runs, and hand the handler the verified bytes,
//! or those bytes parsed as JSON (`400` if they do not parse). With the `shipment` feature too, `T` can be the SDK's
//! `Shipment`, and `shipment::Deduplicator` drops duplicates and late
//! arrivals.
//!
//! ```no_run
//! # #[cfg(feature = "axum")]
//! # mod receiver {
//! use axum::{Router, http::StatusCode, routing::post};
//! use webhook_verify::{Verifier, axum::VerifiedJson};
//!
//! async fn shipment_changed(VerifiedJson(shipment): VerifiedJson<serde_json::Value>) -> StatusCode {
//!     // Answer quickly: hand slow work to a background task.
//!     println!("{} is now {}", shipment["code"], shipment["status"]);
//!     StatusCode::NO_CONTENT
//! }
//!
//! pub async fn serve() -> std::io::Result<()> {
//!     let key = std::env::var("WEBHOOK_SIGNING_KEY").unwrap_or_default();
//!     // The service sends the Standard Webhooks headers on every delivery:
//!     // require them, so a replay with them stripped is refused.
//!     let verifier = Verifier::new(key).require_standard();
//!     let app = Router::new()
//!         .route("/webhooks/shipments", post(shipment_changed))
//!         .with_state(verifier);
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//!     axum::serve(listener, app).await
//! }
//! # }
//! # fn main() {}
//! ```
//!
//! The `examples` package has a complete receiver (`webhook_receiver`) that
//! also de-duplicates and answers before the work is done.
//!
//! # 4. Key rotation
//!
//! A [`Verifier`] holds several keys and accepts a delivery signed with any
//! of them, in either scheme; a `webhook-signature` header may also carry
//! several `v1,` signatures, separated by spaces. To rotate: deploy the receiver with the new key and the old one,
//! switch the service to the new key, then deploy with the new key alone.
//!
//! ```
//! use webhook_verify::{Verifier, VerifyError, sign};
//!
//! let (old, new) = ("whsec_Z9aY8bX7cW6dV5eU4fT3gS2hR1iQ0jPp", "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA");
//! let body = b"{\"code\":\"SHP-7K3M-Q9ZX\",\"version\":4}";
//!
//! // Step 1: both keys, newest first (keys are tried in order).
//! let verifier = Verifier::from_keys([new, old]).expect("at least one key");
//! assert_eq!(verifier.verify(body, sign(old, body)), Ok(()));
//! assert_eq!(verifier.verify(body, sign(new, body)), Ok(()));
//!
//! // Step 3: the old key is gone.
//! let verifier = Verifier::new(new);
//! assert_eq!(verifier.verify(body, sign(old, body)), Err(VerifyError::Mismatch));
//! ```
//!
//! # Strictness and cost
//!
//! Standard Webhooks: each header must be present, the timestamp decimal
//! Unix seconds, and the signature header hold at least one and at most
//! [`standard::MAX_SIGNATURES`] `v1,` signatures (other versions are
//! ignored); the timestamp is checked against the tolerance before any
//! MAC is computed. Each refusal is its own [`VerifyError`] variant.
//!
//! `X-Service-Signature`: a header is accepted only as `sha256=` followed by exactly 64 lowercase
//! hex characters: another prefix, uppercase hex, a short or long digest,
//! surrounding whitespace or a comma-separated list is
//! [`VerifyError::MalformedHeader`], refused before any MAC is computed. The
//! MAC is compared in constant time, and a mismatch never says where it
//! differs. Verifying allocates nothing: the digest is decoded into a
//! 32-byte array on the stack.
//!
//! # Features
//!
//! | feature | adds | pulls in |
//! |---|---|---|
//! | (default) | [`Verifier`], module [`standard`], [`sign`], [`verify`], [`SigningKey`] | hmac, sha2, hex, base64, thiserror |
//! | `axum` | module `axum`: `VerifiedBody`, `VerifiedJson<T>`, `VerifiedDelivery<T>`; `Verifier::verify_header_map`, `standard::Headers::from_header_map` | axum, serde, serde_json |
//! | `shipment` | module `shipment`: `Verifier::verify_shipment`, `Deduplicator` | shipment-sdk (model only), serde_json |
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's Rust examples, compiled and run with the doc tests (its
/// axum receiver needs both features, as CI's `--all-features` gives).
#[cfg(all(doctest, feature = "axum", feature = "shipment"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod error;
mod key;
mod signature;
pub mod standard;
mod verifier;

#[cfg(feature = "axum")]
pub mod axum;
#[cfg(feature = "shipment")]
pub mod shipment;

pub use error::VerifyError;
pub use key::SigningKey;
pub use signature::{SIGNATURE_HEADER, SIGNATURE_PREFIX, sign, verify};
pub use verifier::{Scheme, Verifier};
