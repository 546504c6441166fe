//! Whole server processes on one database: a server killed with SIGKILL in
//! the middle of a burst loses no committed change, and two servers sharing
//! PostgreSQL deliver every change exactly once.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use shipment_server::Environment;
use shipment_server::harness::DataKey;
use shipment_server::harness::{Pool, PoolSettings, Store};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::outbox_drained;
use crate::receiver::{Receiver, ca};
use shipment_testkit::{Db, FreshDb};

const BIN: &str = env!("CARGO_BIN_EXE_shipment-server");

/// A `shipment-server serve` process.
struct ServerProcess {
    child: Child,
    base: String,
}

/// How long a claim holds before the other process may take the row: short
/// where a killed process's rows must be taken over soon, long where a
/// busy machine must not make a slow delivery look abandoned (a row
/// claimed twice is delivered twice: the lease is the at-least-once rule).
const LEASE_TAKEOVER: &str = "2";
const LEASE_NO_TAKEOVER: &str = "60";

async fn start_server(url: &str, data_key: &DataKey, lease_secs: &str) -> ServerProcess {
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--database-url", url])
        .args([
            "--data-key",
            &data_key.to_hex(),
            "--allow-private-webhook-targets",
        ])
        .arg("--webhook-ca-file")
        .arg(&ca().pem_file)
        .args([
            "--webhook-timeout-secs",
            "1",
            "--outbox-lease-secs",
            lease_secs,
            "--outbox-poll-ms",
            "50",
        ])
        .env("RUST_LOG", "shipment_server=info")
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server logs its address in time")
            .unwrap()
            .expect("the server is running");
        if line.contains("serving")
            && let Some(addr) = line.split("addr=").nth(1)
        {
            break addr.split_whitespace().next().unwrap().to_owned();
        }
    };
    // Keep reading, so a full pipe never blocks the server.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    ServerProcess {
        child,
        base: format!("http://{addr}/api/v1"),
    }
}

/// A merchant with a key and a webhook to `url`, a linked courier with a
/// key and a driver; made directly in the database.
struct Cast {
    key: String,
    courier_key: String,
    driver_id: i64,
    courier_id: i64,
}

async fn cast(store: &Store, data_key: &DataKey, url: &str) -> Cast {
    let merchant = store
        .create_merchant("Shop", "p@example.com", "x")
        .await
        .unwrap();
    let key = store
        .create_api_key(merchant, "k", Environment::Staging)
        .await
        .unwrap();
    let courier_id = store.create_courier("Swift", 500, 100, 10).await.unwrap();
    store.link_courier(merchant, courier_id).await.unwrap();
    let courier_key = store
        .create_courier_key(courier_id, Environment::Staging)
        .await
        .unwrap();
    let driver = store.create_driver(courier_id, "Ada").await.unwrap();
    store
        .create_webhook(merchant, url, &data_key.seal("whsec_processes"))
        .await
        .unwrap();
    Cast {
        key: key.key.expose().to_owned(),
        courier_key: courier_key.key.expose().to_owned(),
        driver_id: driver.id,
        courier_id: courier_id.get(),
    }
}

/// Creates a shipment and moves it through `steps` courier operations;
/// stops at the first failure (the server may be gone).
async fn drive(
    client: &reqwest::Client,
    base: &str,
    cast: &Cast,
    steps: usize,
    created: &AtomicUsize,
) -> Option<()> {
    let response = client
        .post(format!("{base}/shipments"))
        .header("X-API-KEY", &cast.key)
        .json(&json!({"courier_company_id": cast.courier_id}))
        .send()
        .await
        .ok()?;
    if response.status() != StatusCode::CREATED {
        return None;
    }
    created.fetch_add(1, Ordering::SeqCst);
    let code = response.json::<Value>().await.ok()?["code"]
        .as_str()?
        .to_owned();
    let ops = [
        ("assign-driver", Some(json!({"driver_id": cast.driver_id}))),
        ("pickup", None),
        ("deliver", None),
    ];
    for (op, body) in ops.into_iter().take(steps) {
        let mut r = client
            .post(format!("{base}/courier/shipments/{code}/{op}"))
            .header("X-API-KEY", &cast.courier_key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        if r.send().await.ok()?.status() != StatusCode::OK {
            return None;
        }
    }
    Some(())
}

/// Every (code, version) the database holds.
async fn committed_changes(store: &Store) -> Vec<(String, i64)> {
    let sql = "SELECT code, version FROM shipments";
    match store.pool() {
        Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_all(pool).await.unwrap(),
        Pool::Postgres(pool) => sqlx::query_as(sql).fetch_all(pool).await.unwrap(),
    }
}

fn received_changes(receiver: &Receiver) -> Vec<(String, i64)> {
    receiver
        .received()
        .iter()
        .map(|r| {
            let b: Value = serde_json::from_slice(&r.body).unwrap();
            (
                b["code"].as_str().unwrap().to_owned(),
                b["version"].as_i64().unwrap(),
            )
        })
        .collect()
}

async fn a_killed_server_loses_no_committed_change(db: Db) {
    let Some(fresh) = FreshDb::create(db).await else {
        return;
    };
    let data_key = DataKey::generate();
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let store = Store::connect(&fresh.url, PoolSettings::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let cast = Arc::new(cast(&store, &data_key, &receiver.url).await);

    let mut first = start_server(&fresh.url, &data_key, LEASE_TAKEOVER).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let created = Arc::new(AtomicUsize::new(0));
    let mut burst = Vec::new();
    for _ in 0..40 {
        let (client, base, cast, created) = (
            client.clone(),
            first.base.clone(),
            cast.clone(),
            created.clone(),
        );
        burst.push(tokio::spawn(async move {
            drive(&client, &base, &cast, 3, &created).await;
        }));
    }
    // Kill it while the burst is under way.
    while created.load(Ordering::SeqCst) < 10 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.child.start_kill().unwrap();
    first.child.wait().await.unwrap();
    for task in burst {
        task.await.unwrap();
    }

    let second = start_server(&fresh.url, &data_key, LEASE_TAKEOVER).await;
    outbox_drained(&store, Duration::from_secs(30)).await;
    let got: HashSet<(String, i64)> = received_changes(&receiver).into_iter().collect();
    let committed = committed_changes(&store).await;
    assert!(committed.len() >= 10, "{} shipments", committed.len());
    for (code, version) in committed {
        for v in 1..=version {
            assert!(
                got.contains(&(code.clone(), v)),
                "{code} version {v} was never delivered"
            );
        }
    }
    drop(second);
    store.close().await;
    fresh.drop_database().await;
}

async fn two_servers_deliver_every_change_exactly_once(db: Db) {
    let Some(fresh) = FreshDb::create(db).await else {
        return;
    };
    let data_key = DataKey::generate();
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let store = Store::connect(&fresh.url, PoolSettings::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let cast = Arc::new(cast(&store, &data_key, &receiver.url).await);
    let servers = [
        start_server(&fresh.url, &data_key, LEASE_NO_TAKEOVER).await,
        start_server(&fresh.url, &data_key, LEASE_NO_TAKEOVER).await,
    ];

    // 125 shipments x 4 changes = 500 changes, spread over both servers.
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let created = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Semaphore::new(16));
    let mut tasks = Vec::new();
    for i in 0..125 {
        let (client, base, cast, created, gate) = (
            client.clone(),
            servers[i % 2].base.clone(),
            cast.clone(),
            created.clone(),
            gate.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let _slot = gate.acquire().await.unwrap();
            drive(&client, &base, &cast, 3, &created)
                .await
                .expect("every change succeeds");
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    outbox_drained(&store, Duration::from_secs(30)).await;
    let got = received_changes(&receiver);
    let mut per_change: HashMap<(String, i64), usize> = HashMap::new();
    for change in &got {
        *per_change.entry(change.clone()).or_default() += 1;
    }
    let twice: Vec<_> = per_change.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    assert_eq!(per_change.len(), 500, "every change delivered");
    drop(servers);
    store.close().await;
    fresh.drop_database().await;
}

shipment_testkit::db_tests!(
    db;
    a_killed_server_loses_no_committed_change,
    two_servers_deliver_every_change_exactly_once,
);
