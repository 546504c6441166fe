//! Run with: cargo run -p examples --example create_and_track
//!
//! Creates a shipment, then follows it until it reaches a final state
//! (delivered, returned, cancelled) or Ctrl-C, printing each change.
//!
//! Settings: `SHIPMENT_API_KEY` (required, `sk_test_...` from
//! `shipment-server demo`), `SHIPMENT_BASE_URL` (default: the local reference
//! server), `SHIPMENT_COURIER_ID` (default: the first linked courier).
//!
//! Polling is for a script like this one; a service should receive webhooks
//! (see `webhook_receiver.rs`) and poll only to catch up.

use std::time::Duration;

use anyhow::Context as _;
use shipment_sdk::Client;
use shipment_sdk::model::CreateShipment;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::builder()
        .api_key(std::env::var("SHIPMENT_API_KEY").context("set SHIPMENT_API_KEY")?)
        .base_url(
            std::env::var("SHIPMENT_BASE_URL").unwrap_or_else(|_| shipment_sdk::STAGING_URL.into()),
        )
        .build()?;
    let courier = match std::env::var("SHIPMENT_COURIER_ID") {
        Ok(id) => id.parse().context("SHIPMENT_COURIER_ID is a number")?,
        Err(_) => {
            client
                .couriers()
                .list()
                .await?
                .first()
                .context("no linked courier")?
                .id
        }
    };

    let shipment = client
        .shipments()
        .create(
            &CreateShipment::new(courier)
                .description("Two boxes of books")
                .weight_kg("4.5".parse()?)
                .item("book")
                .start_address("52.5200,13.4050")
                .end_address("52.3759,4.8975"),
        )
        .send()
        .await?
        .into_inner();
    println!(
        "created {} ({}), fee {}",
        shipment.code, shipment.status, shipment.total_fee
    );

    let mut seen = shipment.version;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            () = tokio::time::sleep(Duration::from_secs(2)) => {}
        }
        let now = client.shipments().get(&shipment.code).await?;
        if now.version != seen {
            seen = now.version;
            println!("{} version {}: {}", now.code, now.version, now.status);
        }
        if now.status.is_final() {
            break;
        }
    }
    Ok(())
}
