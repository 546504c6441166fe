//! Run with: cargo run -p examples --example webhook_receiver
//!
//! A complete webhook receiver for shipment deliveries:
//!
//! 1. `VerifiedJson<Shipment>` checks the Standard Webhooks headers
//!    (`webhook-id`, `webhook-timestamp`, `webhook-signature`) against the
//!    raw body before the handler runs, and answers `401` to a bad
//!    signature or to a timestamp more than 5 minutes from this clock (a
//!    captured delivery replayed later). The verifier requires that scheme
//!    (`require_standard`), which every delivery of the service carries:
//!    one with `X-Service-Signature` alone (the same capture with the three
//!    headers stripped) is refused too, since that signature, over the body
//!    alone, would verify forever.
//! 2. The handler only queues the shipment and answers `202 Accepted`: the
//!    service expects an answer within seconds and never retries, so slow
//!    work must not hold the response.
//! 3. A background task drops duplicates and late arrivals (by `code` and
//!    `version`) and does the work.
//!
//! Settings:
//! - `WEBHOOK_SIGNING_KEYS` (required): the signing key, or several, comma
//!   separated and newest first, while rotating (`whsec_new,whsec_old`).
//! - `LISTEN_ADDR` (default `127.0.0.1:3000`).
//! - `TLS_CERT` and `TLS_KEY` (optional): PEM files; with them the receiver
//!   serves HTTPS, which the service requires of every webhook URL. For a
//!   local try, `cargo run -p examples --example dev_certificate` makes a
//!   pair for `localhost` and the CA to give the server.
//!
//! Deliveries that fail are not retried by the service: after downtime, catch
//! up with `GET /shipments?updated_after=...` and feed the results through
//! the same de-duplication.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{FromRef, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;
use tokio::sync::mpsc;
use webhook_verify::Verifier;
use webhook_verify::axum::VerifiedJson;
use webhook_verify::shipment::{Deduplicator, Shipment};

/// How many verified deliveries may wait for the worker before the receiver
/// answers `503` (which the service logs as a failed delivery).
const QUEUE: usize = 1024;

#[derive(Clone)]
struct AppState {
    verifier: Verifier,
    work: mpsc::Sender<Shipment>,
}

// The extractors find the verifier through `FromRef`.
impl FromRef<AppState> for Verifier {
    fn from_ref(state: &AppState) -> Self {
        state.verifier.clone()
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let keys = std::env::var("WEBHOOK_SIGNING_KEYS").unwrap_or_default();
    let verifier = Verifier::from_keys(keys.split(',').map(str::trim).filter(|k| !k.is_empty()))
        .context(
            "no signing key: set WEBHOOK_SIGNING_KEYS to the key shown when the webhook was \
             registered (several, comma separated, while rotating)",
        )?
        .require_standard();
    let addr = std::env::var("LISTEN_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());

    let (work, queue) = mpsc::channel(QUEUE);
    let worker = tokio::spawn(process(queue, Arc::new(Deduplicator::new())));

    let app = Router::new()
        .route("/webhooks/shipments", post(receive_shipment))
        .with_state(AppState { verifier, work });
    let tls = match (std::env::var_os("TLS_CERT"), std::env::var_os("TLS_KEY")) {
        (Some(cert), Some(key)) => Some(
            RustlsConfig::from_pem_file(&cert, &key)
                .await
                .context("cannot load TLS_CERT / TLS_KEY")?,
        ),
        _ => None,
    };
    let addr: SocketAddr = addr
        .parse()
        .with_context(|| format!("LISTEN_ADDR {addr} is not an address"))?;
    let handle = axum_server::Handle::new();
    let stopping = handle.clone();
    tokio::spawn(async move {
        // If the signal handler cannot be installed, run until killed.
        if tokio::signal::ctrl_c().await.is_ok() {
            stopping.graceful_shutdown(Some(Duration::from_secs(10)));
        }
    });
    let scheme = if tls.is_some() { "https" } else { "http" };
    eprintln!("listening on {scheme}://{addr}/webhooks/shipments");
    let service = app.into_make_service();
    match tls {
        Some(tls) => {
            axum_server::bind_rustls(addr, tls)
                .handle(handle)
                .serve(service)
                .await?;
        }
        None => {
            axum_server::bind(addr)
                .handle(handle)
                .serve(service)
                .await?;
        }
    }

    // The router, and with it the queue's sender, is gone: the worker
    // finishes what is queued and stops.
    worker.await?;
    Ok(())
}

/// Runs only for a delivery whose signature checked out.
async fn receive_shipment(
    State(state): State<AppState>,
    VerifiedJson(shipment): VerifiedJson<Shipment>,
) -> StatusCode {
    match state.work.try_send(shipment) {
        Ok(()) => StatusCode::ACCEPTED,
        Err(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// The background worker: de-duplicates, then does the slow work in order.
async fn process(mut queue: mpsc::Receiver<Shipment>, seen: Arc<Deduplicator>) {
    while let Some(shipment) = queue.recv().await {
        if !seen.accept_shipment(&shipment) {
            eprintln!(
                "{} version {}: duplicate or late, dropped",
                shipment.code, shipment.version
            );
            continue;
        }
        // Replace with the real work: update an order, notify a customer...
        // With a database, make the write conditional on the version too
        // (`... WHERE version < $new`), so several receivers stay correct.
        eprintln!(
            "{} version {} is now {}",
            shipment.code, shipment.version, shipment.status
        );
    }
}
