//! Rust SDK for the merchant shipment service: a typed async client for
//! every endpoint, and the service's wire model.
//!
//! # Five-minute quickstart
//!
//! 1. Start the local reference server, which prints a demo merchant's
//!    API key (`sk_test_...`) and dashboard credentials:
//!
//!    ```text
//!    cargo run -p shipment-server -- demo
//!    ```
//!
//! 2. Add the SDK and an async runtime to your program:
//!
//!    ```toml
//!    [dependencies]
//!    shipment-sdk = "0.1"                 # the `client` feature is on by default
//!    tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//!    futures-util = "0.3"                 # TryStreamExt, to read page streams
//!    ```
//!
//! 3. Create a shipment, then follow it:
//!
//! ```no_run
//! use futures_util::TryStreamExt as _;
//! use shipment_sdk::model::{CreateShipment, Status};
//! use shipment_sdk::Client;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), shipment_sdk::Error> {
//!     // Staging is the default and talks to http://127.0.0.1:8080/api/v1.
//!     let client = Client::builder()
//!         .api_key(std::env::var("SHIPMENT_API_KEY").expect("set SHIPMENT_API_KEY"))
//!         .build()?;
//!
//!     // Which courier companies may carry our parcels?
//!     let courier = client.couriers().list().await?.remove(0);
//!
//!     // Hand a parcel to one. Safe to call on a flaky network: retries
//!     // reuse one Idempotency-Key, so there is never a second shipment;
//!     // with our own key (the order number), not even after a restart.
//!     let shipment = client
//!         .shipments()
//!         .create(
//!             &CreateShipment::new(courier.id)
//!                 .description("Two boxes of books")
//!                 .weight_kg("4.5".parse().unwrap())
//!                 .start_address("52.5200,13.4050")
//!                 .end_address("52.3759,4.8975"),
//!         )
//!         .idempotency_key("order-10293")
//!         .send()
//!         .await?;
//!     if shipment.replayed {
//!         println!("order 10293 was handed over before");
//!     }
//!     println!("{} is {} and costs {}", shipment.code, shipment.status, shipment.total_fee);
//!
//!     // Look it up again, and list what is still waiting for a driver:
//!     // one page, then every page as a stream.
//!     let again = client.shipments().get(&shipment.code).await?;
//!     assert_eq!(again.status, Status::AssignedToCourier);
//!     let waiting = client
//!         .shipments()
//!         .list()
//!         .status(Status::AssignedToCourier)
//!         .page_size(100)
//!         .send()
//!         .await?;
//!     println!("{} shipments wait for a driver", waiting.total);
//!     let mut waiting = std::pin::pin!(waiting.into_stream());
//!     while let Some(s) = waiting.try_next().await? {
//!         println!("{} since {:?}", s.code, s.assigned_to_courier_at);
//!     }
//!
//!     // Changed our mind.
//!     client.shipments().cancel(&shipment.code).await?;
//!     Ok(())
//! }
//! ```
//!
//! # A tour
//!
//! - [`Client`] talks to the merchant API with an API key. Build it with
//!   [`Client::builder`]; pick the [`Environment`] (staging by default,
//!   production with the address your operator gave you). A key of the other
//!   environment is refused before anything is sent.
//! - [`Client::shipments`] creates, lists, fetches, cancels and rates
//!   shipments, and generates delivery confirmation codes.
//!   [`Client::couriers`] lists the linked courier companies.
//! - Calls with optional parameters are request builders that end in
//!   `.send()`, as in octocrab: [`Shipments::create`] (an optional
//!   idempotency key; the answer, a [`Created`], says whether the service
//!   [replayed](Created::replayed) an earlier create) and
//!   [`Shipments::list`] (filters, page and page size).
//! - Paged lists answer a [`Page`](model::Page); its
//!   [`into_stream`](model::Page::into_stream) yields every item of this
//!   and the following pages, fetching each page when the previous one is
//!   used up, and [`next_page`](model::Page::next_page) fetches the next.
//! - [`DashboardClient`] signs in with the merchant's e-mail and password
//!   (built like [`Client`]: `DashboardClient::builder().base_url(..).login(email, password)`)
//!   and manages [API keys](DashboardClient::api_keys) and
//!   [webhooks](DashboardClient::webhooks), whose
//!   [delivery log](Webhooks::deliveries) pages and streams the same way.
//! - Every failure is one [`Error`]: the service's refusals carry the HTTP
//!   status, the problem [`code`](Error::code) (a
//!   [`ProblemCode`](model::ProblemCode)), `detail`, `field` and request id;
//!   network failures, time-outs and unreadable answers are their own
//!   variants; and arguments that cannot be right (a rating of 11, a page
//!   size of 500, a malformed shipment code) fail before any request.
//!   Helpers answer the usual questions without matching:
//!   [`is_not_found`](Error::is_not_found),
//!   [`is_conflict`](Error::is_conflict),
//!   [`is_rate_limited`](Error::is_rate_limited),
//!   [`retry_after`](Error::retry_after), ...
//! - Reads and shipment creation are retried on connection failures,
//!   time-outs, 429, 502, 503 and 504, with exponential back-off and full
//!   jitter, honouring `Retry-After`. Other errors are never retried.
//! - On a production network, the builder takes an HTTP
//!   [proxy](Builder::proxy) (by default the `HTTPS_PROXY`, `HTTP_PROXY`,
//!   `ALL_PROXY` and `NO_PROXY` variables are honoured, as curl does;
//!   [`no_proxy`](Builder::no_proxy) ignores them), extra
//!   [root certificates](Builder::add_root_certificate_pem), a
//!   [client certificate](Builder::client_certificate_pem) for mutual TLS,
//!   and [hooks] run on every attempt
//!   ([`on_request`](Builder::on_request), which may add headers but not
//!   touch the credential or the `Idempotency-Key`, and
//!   [`on_response`](Builder::on_response)).
//! - Each call runs in a `tracing` span `shipment_sdk.request` with the
//!   method, the path template, the attempt, the status and the request id.
//! - [`model`] is the wire model shared with the reference server. A status
//!   this version does not know is kept as
//!   [`Status::Unknown`](model::Status::Unknown), so a value the service
//!   adds later never breaks a client. Keys, tokens and passwords are
//!   [`Secret`](model::Secret)s, which `Debug` prints as `[redacted]`.
//!
//! # Handling errors
//!
//! ```no_run
//! use shipment_sdk::model::ProblemCode;
//!
//! # async fn run(client: shipment_sdk::Client) -> shipment_sdk::Result<()> {
//! match client.shipments().cancel("SHP-7K3M-Q9ZX").await {
//!     Ok(shipment) => println!("cancelled at {:?}", shipment.cancelled_at),
//!     Err(e) if e.code() == Some(&ProblemCode::InvalidState) => {
//!         println!("too late to cancel: {e}");
//!     }
//!     Err(e) if e.is_not_found() => println!("no such shipment"),
//!     Err(e) => return Err(e),
//! }
//! # Ok(()) }
//! ```
//!
//! # Dependencies you share with the SDK
//!
//! The model's money is [`rust_decimal::Decimal`] and its instants are
//! [`chrono::DateTime<Utc>`](chrono::DateTime). Both crates are re-exported
//! ([`shipment_sdk::chrono`](crate::chrono),
//! [`shipment_sdk::rust_decimal`](crate::rust_decimal)), and the two types
//! also as [`model::Decimal`], [`model::DateTime`] and [`model::Utc`], so a
//! program can use the SDK's versions instead of matching them in its own
//! `Cargo.toml`:
//!
//! ```
//! use shipment_sdk::chrono::{Duration, Utc};
//! use shipment_sdk::model::{CourierId, CreateShipment, Decimal, ListShipments};
//!
//! let since = Utc::now() - Duration::hours(1);
//! let query = ListShipments::default().updated_after(since);
//! let request = CreateShipment::new(CourierId::new(7)).weight_kg(Decimal::new(45, 1)); // 4.5 kg
//! # let _ = (query, request);
//! ```
//!
//! No type of the HTTP stack (reqwest, hyper) is part of the SDK's API:
//! network failures are a [`TransportError`], whose
//! [`source`](std::error::Error::source) chain leads to the cause.
//!
//! # Features
//!
//! - `client` (default): the HTTP client, on reqwest with rustls. Without it
//!   only [`model`] is built, with serde, chrono, rust_decimal and url
//!   behind it.
//! - `opentelemetry`: W3C Trace Context on every request (`traceparent`,
//!   and `tracestate` when not empty) naming the SDK's span of the call, a
//!   child of the caller's current `tracing` span, read through
//!   `tracing-opentelemetry` (the application's subscriber needs its
//!   `OpenTelemetryLayer`). The server continues the trace to the webhook
//!   delivery of the change.
//! - `openapi`: `utoipa::ToSchema` for every wire type (the server's
//!   OpenAPI document).
#![warn(missing_docs)]

pub mod keys;
pub mod model;

/// The README's Rust examples, compiled (not run) with the doc tests.
#[cfg(all(doctest, feature = "client"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use chrono;
pub use rust_decimal;

#[cfg(feature = "client")]
mod builder;
#[cfg(feature = "client")]
mod checks;
#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client")]
mod dashboard;
#[cfg(feature = "client")]
mod error;
#[cfg(feature = "client")]
pub mod hooks;
#[cfg(feature = "client")]
mod network;
#[cfg(feature = "client")]
pub mod resources;
#[cfg(feature = "client")]
mod retry;
#[cfg(feature = "client")]
mod transport;

#[cfg(feature = "client")]
pub use builder::{Builder, ClientBuilder, DashboardBuilder};
#[cfg(feature = "client")]
pub use client::{Client, Environment, STAGING_URL};
#[cfg(feature = "client")]
pub use dashboard::DashboardClient;
#[cfg(feature = "client")]
pub use error::{ApiError, Error, Result, TransportError};
#[cfg(feature = "client")]
pub use resources::Created;
#[cfg(feature = "client")]
pub use resources::api_keys::ApiKeys;
#[cfg(feature = "client")]
pub use resources::couriers::Couriers;
#[cfg(feature = "client")]
pub use resources::listen::{Listener, ListenerEvent, ListenerStream};
#[cfg(feature = "client")]
pub use resources::shipments::Shipments;
#[cfg(feature = "client")]
pub use resources::webhooks::Webhooks;
