//! Run with (against a running server, ideally a release build):
//!   cargo run --release -p examples --example sdk_overhead -- SHP-XXXX-XXXX
//!
//! The SDK's `shipments().get(code)` beside a bare reqwest GET of the same
//! URL with the same key, both parsing the body into the SDK's `Shipment`,
//! so the difference is what the SDK adds (checks, retry wrapper, tracing
//! span, error mapping). Rounds alternate, so load that comes and goes
//! affects both alike. Settings: `SHIPMENT_API_KEY`, `SHIPMENT_BASE_URL`,
//! `CONCURRENCY` (16), `ROUND_SECS` (5), `ROUNDS` (3).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use shipment_sdk::Client;
use shipment_sdk::model::Shipment;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let code = std::env::args().nth(1).context("pass a shipment code")?;
    let key = std::env::var("SHIPMENT_API_KEY").context("set SHIPMENT_API_KEY")?;
    let base =
        std::env::var("SHIPMENT_BASE_URL").unwrap_or_else(|_| shipment_sdk::STAGING_URL.into());
    let concurrency = setting("CONCURRENCY", 16);
    let round = Duration::from_secs(setting("ROUND_SECS", 5));
    let sdk = Client::builder().api_key(&key).base_url(&base).build()?;
    let bare = reqwest::Client::new();
    let url = format!("{base}/shipments/{code}");

    let (mut sdk_total, mut bare_total) = (0.0, 0.0);
    for r in 1..=setting("ROUNDS", 3) {
        let b = rate(concurrency, round, {
            let (bare, url, key) = (bare.clone(), url.clone(), key.clone());
            move || {
                let (bare, url, key) = (bare.clone(), url.clone(), key.clone());
                async move {
                    let response = bare.get(&url).header("X-API-KEY", &key).send().await?;
                    let _: Shipment = response.error_for_status()?.json().await?;
                    anyhow::Ok(())
                }
            }
        })
        .await?;
        let s = rate(concurrency, round, {
            let (sdk, code) = (sdk.clone(), code.clone());
            move || {
                let (sdk, code) = (sdk.clone(), code.clone());
                async move {
                    sdk.shipments().get(&code).await?;
                    anyhow::Ok(())
                }
            }
        })
        .await?;
        println!(
            "round {r}: bare reqwest {b:.0} req/s, SDK {s:.0} req/s ({:.1}%)",
            100.0 * s / b
        );
        bare_total += b;
        sdk_total += s;
    }
    println!(
        "overall: SDK at {:.1}% of bare reqwest",
        100.0 * sdk_total / bare_total
    );
    Ok(())
}

/// Requests per second that `concurrency` tasks calling `call` in a loop
/// complete in `round`.
async fn rate<F, Fut>(concurrency: u64, round: Duration, call: F) -> anyhow::Result<f64>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + round;
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (call, done) = (call.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                call().await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / round.as_secs_f64())
}
