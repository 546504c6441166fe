//! Run with: cargo run -p examples --example rotate_api_key -- OLD_KEY_ID
//!
//! Rotates an API key without downtime: create the new key, check that it
//! works, switch your deployment to it, and only then delete the old one
//! (which stops working at once).
//!
//! Settings: `SHIPMENT_EMAIL` and `SHIPMENT_PASSWORD` (the dashboard
//! sign-in; `shipment-server demo` prints one), `SHIPMENT_BASE_URL`
//! (default: the local reference server). Without OLD_KEY_ID it lists the
//! keys and stops.

use anyhow::Context as _;
use shipment_sdk::model::ApiKeyId;
use shipment_sdk::{Client, DashboardClient};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let base =
        std::env::var("SHIPMENT_BASE_URL").unwrap_or_else(|_| shipment_sdk::STAGING_URL.into());
    let dashboard = DashboardClient::login(
        &base,
        &std::env::var("SHIPMENT_EMAIL").context("set SHIPMENT_EMAIL")?,
        &std::env::var("SHIPMENT_PASSWORD").context("set SHIPMENT_PASSWORD")?,
    )
    .await?;
    let keys = dashboard.api_keys();

    let Some(old_id) = std::env::args().nth(1) else {
        for key in keys.list().await? {
            println!("{}  {}  {}...{}", key.id, key.name, key.prefix, key.last4);
        }
        println!("pass the id of the key to replace");
        return Ok(());
    };
    let old_id: ApiKeyId = old_id.parse().context("the key id is a number")?;

    // 1. A new key; this answer is the only time it is shown.
    let new = keys.create("rotated").await?;
    let secret = new.key.expose().to_owned();

    // 2. Prove it works before anything depends on it.
    let client = Client::builder().api_key(&secret).base_url(&base).build()?;
    client.couriers().list().await?;
    anyhow::ensure!(
        keys.verify(&secret).await?.valid,
        "the new key does not verify"
    );

    // 3. Here a real deployment stores `secret` in its secret manager and
    //    rolls out; every instance must use the new key before step 4.
    println!(
        "new key {} ({}...{}) works",
        new.api_key.id, new.api_key.prefix, new.api_key.last4
    );

    // 4. Retire the old key: from now on it is refused with 401. If it is
    //    already gone (an earlier run, a colleague), the goal is reached.
    match keys.delete(old_id).await {
        Ok(()) => println!("deleted key {old_id}"),
        Err(e) if e.is_not_found() => println!("key {old_id} was already deleted"),
        Err(e) => return Err(e.into()),
    }
    dashboard.logout().await?;
    Ok(())
}
