//! Webhook delivery under load: latency from a change to its arrival at the
//! receiver, at a steady rate, and sustained deliveries per second.
//!
//! ```sh
//! cargo bench -p shipment-server --bench delivery                       # SQLite
//! BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   cargo bench -p shipment-server --bench delivery                     # PostgreSQL
//! ```
//!
//! The real server runs in this process on port 0 with a fresh database,
//! delivering to an HTTPS receiver (a local CA made here, the same as the
//! tests use). Phase 1 creates shipments at a steady `RATE` per second for
//! `SECS` seconds and reports, per change, the time from sending the create
//! to the delivery's arrival (p50, p99, max). Phase 2 creates as fast as 32
//! clients can for `SECS` seconds and reports deliveries per second from the
//! first create to the last arrival.

#![allow(clippy::print_stdout)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use shipment_server::Environment;
use shipment_server::harness::DataKey;
use shipment_server::{Application, Config};
use tokio::sync::Mutex;

#[path = "../tests/api/receiver.rs"]
#[allow(dead_code)]
mod receiver;

use receiver::Receiver;

/// The allocator the server binary runs with (server/src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let rate = setting("RATE", 200);
    let secs = setting("SECS", 15);
    let dir = tempfile::tempdir()?;
    let (url, backend) = match std::env::var("BENCH_DATABASE_URL") {
        Ok(admin) => {
            let name = format!("shipments_delivery_bench_{}", std::process::id());
            let pool = sqlx::PgPool::connect(&admin).await?;
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .execute(&pool)
                .await?;
            let mut u = url::Url::parse(&admin)?;
            u.set_path(&name);
            (u.to_string(), "PostgreSQL")
        }
        Err(_) => (
            format!("sqlite://{}", dir.path().join("bench.db").display()),
            "SQLite",
        ),
    };

    let data_key = DataKey::generate();
    let mut config = Config::local(&url);
    config.webhooks.webhook_ca_file = Some(receiver::ca().pem_file.clone());
    config.data_key.data_key = Some(data_key.to_hex());
    let app = Application::build(&config).await?;
    let base = format!("http://{}/api/v1", app.local_addr());
    let store = app.store().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stopped.await;
    }));

    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let merchant = store
        .create_merchant("Bench", "bench@example.com", "x")
        .await?;
    let key = store
        .create_api_key(merchant, "bench", Environment::Staging)
        .await?;
    let key = key.key.expose().to_owned();
    let courier = store.create_courier("Swift", 500, 100, 10).await?;
    store.link_courier(merchant, courier).await?;
    store
        .create_webhook(merchant, &receiver.url, &data_key.seal("whsec_bench"))
        .await?;
    let client = reqwest::Client::builder().no_proxy().build()?;
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();

    let create = {
        let (client, base, key, sent) = (client.clone(), base.clone(), key.clone(), sent.clone());
        move || {
            let (client, base, key, sent) =
                (client.clone(), base.clone(), key.clone(), sent.clone());
            async move {
                let started = Instant::now();
                let response = client
                    .post(format!("{base}/shipments"))
                    .header("X-API-KEY", &key)
                    .json(&json!({"courier_company_id": courier}))
                    .send()
                    .await
                    .expect("the server answers");
                assert_eq!(response.status(), StatusCode::CREATED);
                let body: Value = response.json().await.expect("a shipment");
                let code = body["code"].as_str().expect("a code").to_owned();
                sent.lock().await.insert(code, started);
            }
        }
    };

    // Phase 1: a steady rate.
    let total = usize::try_from(rate * secs)?;
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = Vec::with_capacity(total);
    for _ in 0..total {
        ticks.tick().await;
        tasks.push(tokio::spawn(create()));
    }
    for t in tasks {
        t.await?;
    }
    let got = receiver.wait_for(total).await;
    let sent_at = sent.lock().await.clone();
    let mut latencies: Vec<Duration> = got
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).expect("JSON");
            let code = body["code"].as_str().expect("a code");
            r.at.duration_since(sent_at[code])
        })
        .collect();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "delivery benchmark on {backend}: {} changes",
        latencies.len()
    );
    println!(
        "steady {rate} changes/s for {secs} s: change -> arrival p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies.last().expect("some").as_secs_f64() * 1e3,
    );

    // Phase 2: as fast as 32 clients can create.
    let before = receiver.received().len();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut clients = Vec::new();
    for _ in 0..32 {
        let create = create.clone();
        clients.push(tokio::spawn(async move {
            let mut n = 0usize;
            while Instant::now() < deadline {
                create().await;
                n += 1;
            }
            n
        }));
    }
    let mut created = 0;
    for c in clients {
        created += c.await?;
    }
    let create_secs = started.elapsed().as_secs_f64();
    let got = receiver.wait_for(before + created).await;
    let last = got[before..].iter().map(|r| r.at).max().expect("some");
    let span = last.duration_since(started).as_secs_f64();
    println!(
        "burst: {created} creates in {create_secs:.1} s ({:.0}/s); all delivered after {span:.1} s: {:.0} deliveries/s",
        created as f64 / create_secs,
        created as f64 / span
    );

    let _ = stop.send(());
    server.await??;
    if backend == "PostgreSQL"
        && let Ok(admin) = std::env::var("BENCH_DATABASE_URL")
    {
        let pool = sqlx::PgPool::connect(&admin).await?;
        let name = format!("shipments_delivery_bench_{}", std::process::id());
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .execute(&pool)
        .await?;
    }
    Ok(())
}
