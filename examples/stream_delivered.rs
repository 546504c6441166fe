//! Run with: cargo run -p examples --example stream_delivered
//!
//! Prints every delivered shipment, however many pages there are, holding
//! one page at a time: `Page::into_stream` goes on from the first page and
//! fetches the next only when the current one is used up.
//!
//! Settings: `SHIPMENT_API_KEY` (required), `SHIPMENT_BASE_URL` (default:
//! the local reference server).

use anyhow::Context as _;
use futures_util::TryStreamExt as _;
use shipment_sdk::Client;
use shipment_sdk::model::Status;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::builder()
        .api_key(std::env::var("SHIPMENT_API_KEY").context("set SHIPMENT_API_KEY")?)
        .base_url(
            std::env::var("SHIPMENT_BASE_URL").unwrap_or_else(|_| shipment_sdk::STAGING_URL.into()),
        )
        .build()?;

    let first = client
        .shipments()
        .list()
        .status(Status::Delivered)
        .page_size(100)
        .send()
        .await?;
    eprintln!(
        "{} delivered shipments in {} pages",
        first.total, first.total_pages
    );
    let delivered = first.into_stream();
    futures_util::pin_mut!(delivered);
    let mut count = 0u64;
    while let Some(shipment) = delivered.try_next().await? {
        count += 1;
        println!(
            "{}  delivered {}  rating {}",
            shipment.code,
            shipment
                .delivered_at
                .map_or_else(|| "?".to_owned(), |t| t.to_rfc3339()),
            shipment
                .rating
                .map_or_else(|| "-".to_owned(), |r| r.to_string()),
        );
    }
    println!("{count} delivered shipments");
    Ok(())
}
