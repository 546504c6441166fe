//! Run with: cargo run -p examples --example catch_up -- 2026-11-23T07:00:00Z
//!
//! After a webhook receiver was down, fetches every shipment changed since
//! then and applies each one through the same rule as live deliveries: keep
//! the highest `version` per `code` and drop anything older or equal. Run it
//! while the receiver is back up, and duplicates from either side are
//! harmless.
//!
//! Settings: `SHIPMENT_API_KEY` (required), `SHIPMENT_BASE_URL` (default:
//! the local reference server). The argument is when the receiver stopped
//! (RFC 3339); without it, the last hour.

use anyhow::Context as _;
use futures_util::TryStreamExt as _;
use shipment_sdk::Client;
// The SDK's own chrono, so this program need not match its version.
use shipment_sdk::chrono::{Duration, Utc};
use webhook_verify::shipment::Deduplicator;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::builder()
        .api_key(std::env::var("SHIPMENT_API_KEY").context("set SHIPMENT_API_KEY")?)
        .base_url(
            std::env::var("SHIPMENT_BASE_URL").unwrap_or_else(|_| shipment_sdk::STAGING_URL.into()),
        )
        .build()?;
    let since = match std::env::args().nth(1) {
        Some(t) => t.parse().context("the argument is an RFC 3339 time")?,
        None => Utc::now() - Duration::hours(1),
    };

    // In a real receiver this is the same store the webhook handler uses
    // (a table with a conditional upsert), not a fresh in-memory one.
    let applied = Deduplicator::new();
    let changed = client
        .shipments()
        .list()
        .updated_after(since)
        .page_size(100)
        .send()
        .await?
        .into_stream();
    futures_util::pin_mut!(changed);
    let (mut new, mut stale) = (0u64, 0u64);
    while let Some(shipment) = changed.try_next().await? {
        if applied.accept_shipment(&shipment) {
            new += 1;
            println!(
                "{} version {} is {}",
                shipment.code, shipment.version, shipment.status
            );
        } else {
            stale += 1;
        }
    }
    println!("caught up since {since}: {new} applied, {stale} already seen");
    Ok(())
}
