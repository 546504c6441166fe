//! Several `shipment-server serve` processes on one fresh database: what
//! the multi-process tests start (a deployment of N servers behind a load
//! balancer), each a real process that a test can kill (SIGKILL) and start
//! again, sharing only the database and the data key.
//!
//! [`Cluster::start`] makes the database and the processes; [`Cast`] is a
//! merchant with what a test drives changes with, written straight into the
//! database (so no process is asked before the test means to).

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use shipment_server::Environment;
use shipment_server::harness::{DataKey, Pool, PoolSettings, Store};
use shipment_testkit::{Db, FreshDb};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::receiver::ca;

const BIN: &str = env!("CARGO_BIN_EXE_shipment-server");

/// How a cluster's processes are started.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// `--outbox-lease-secs`: how long a claim holds before another
    /// process may take the row. Short where a killed process's rows must
    /// be taken over soon; long where a busy machine must not make a slow
    /// delivery look abandoned (a row claimed twice is delivered twice).
    pub lease_secs: u32,
}

/// A lease no test outlives: no row is ever taken over.
pub(crate) const NO_TAKEOVER: Settings = Settings { lease_secs: 60 };
/// A lease short enough for a killed process's rows to be taken over
/// within a test.
pub(crate) const TAKEOVER: Settings = Settings { lease_secs: 2 };

/// One `shipment-server serve` process.
struct Process {
    child: Child,
    base: String,
}

/// N server processes on one fresh database.
pub(crate) struct Cluster {
    /// The database every process uses.
    pub url: String,
    /// The test's own connection to it.
    pub store: Store,
    /// The data key every process seals and opens signing keys with.
    pub data_key: DataKey,
    settings: Settings,
    processes: Vec<Option<Process>>,
    fresh: FreshDb,
}

impl Cluster {
    /// A fresh database on `db`, migrated, and `n` processes serving it;
    /// `None` where `db` is skipped.
    pub(crate) async fn start(db: Db, n: usize, settings: Settings) -> Option<Cluster> {
        let fresh = FreshDb::create(db).await?;
        let store = Store::connect(&fresh.url, PoolSettings::default())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let mut cluster = Cluster {
            url: fresh.url.clone(),
            store,
            data_key: DataKey::generate(),
            settings,
            processes: Vec::new(),
            fresh,
        };
        for _ in 0..n {
            let process = cluster.spawn().await;
            cluster.processes.push(Some(process));
        }
        Some(cluster)
    }

    /// How many processes the cluster was started with (running or not).
    pub(crate) fn len(&self) -> usize {
        self.processes.len()
    }

    /// Process `i`'s API root (`http://…/api/v1`); panics if it is stopped.
    pub(crate) fn base(&self, i: usize) -> &str {
        &self.processes[i]
            .as_ref()
            .expect("the process is running")
            .base
    }

    /// An SDK client of process `i` with `api_key`.
    pub(crate) fn sdk(&self, i: usize, api_key: &str) -> shipment_sdk::Client {
        shipment_sdk::Client::builder()
            .api_key(api_key)
            .base_url(self.base(i))
            .build()
            .unwrap()
    }

    /// Kills process `i` with SIGKILL (no shutdown of any kind).
    pub(crate) async fn kill(&mut self, i: usize) {
        let mut process = self.processes[i].take().expect("the process is running");
        process.child.start_kill().unwrap();
        process.child.wait().await.unwrap();
    }

    /// Starts process `i` again (after [`Cluster::kill`]), on a new port.
    pub(crate) async fn restart(&mut self, i: usize) {
        assert!(self.processes[i].is_none(), "process {i} is running");
        let process = self.spawn().await;
        self.processes[i] = Some(process);
    }

    /// Stops every process and drops the database.
    pub(crate) async fn stop(mut self) {
        for process in self.processes.iter_mut().filter_map(Option::take) {
            drop(process);
        }
        self.store.close().await;
        self.fresh.drop_database().await;
    }

    async fn spawn(&self) -> Process {
        let mut child = Command::new(BIN)
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--database-url",
                &self.url,
            ])
            .args([
                "--data-key",
                &self.data_key.to_hex(),
                "--allow-private-webhook-targets",
            ])
            .arg("--webhook-ca-file")
            .arg(&ca().pem_file)
            .args(["--webhook-timeout-secs", "1", "--outbox-poll-ms", "50"])
            .args(["--outbox-lease-secs", &self.settings.lease_secs.to_string()])
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
        Process {
            child,
            base: format!("http://{addr}/api/v1"),
        }
    }
}

/// A merchant with an API key, a dashboard sign-in and (optionally) a
/// webhook, and a linked courier company with a key and a driver.
pub(crate) struct Cast {
    pub key: String,
    pub email: String,
    pub password: String,
    pub courier_key: String,
    pub driver_id: i64,
    pub courier_id: i64,
}

impl Cast {
    /// Writes the cast into the cluster's database; with `webhook`, the
    /// merchant's webhook to that URL.
    pub(crate) async fn make(cluster: &Cluster, webhook: Option<&str>) -> Cast {
        let store = &cluster.store;
        let password = "correct horse battery".to_owned();
        let hash = shipment_server::harness::hash_password(password.clone())
            .await
            .unwrap();
        let email = format!("shop-{}@example.com", rand_suffix());
        let merchant = store.create_merchant("Shop", &email, &hash).await.unwrap();
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
        if let Some(url) = webhook {
            store
                .create_webhook(merchant, url, &cluster.data_key.seal("whsec_processes"))
                .await
                .unwrap();
        }
        Cast {
            key: key.key.expose().to_owned(),
            email,
            password,
            courier_key: courier_key.key.expose().to_owned(),
            driver_id: driver.id,
            courier_id: courier_id.get(),
        }
    }

    /// Signs in to the dashboard API through `base`; the Bearer token.
    pub(crate) async fn login(&self, client: &reqwest::Client, base: &str) -> String {
        let response = client
            .post(format!("{base}/auth/login"))
            .json(&json!({"email": self.email, "password": self.password}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.unwrap();
        body["token"].as_str().unwrap().to_owned()
    }
}

fn rand_suffix() -> String {
    shipment_server::harness::random_token("")
        .expose()
        .chars()
        .take(12)
        .collect()
}

/// `shipments` shipments driven through their four changes, spread over
/// the cluster's processes, at most 16 requests at once.
pub(crate) async fn burst(cluster: &Cluster, cast: &Arc<Cast>, shipments: usize) {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let created = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Semaphore::new(16));
    let mut tasks = Vec::new();
    for i in 0..shipments {
        let (client, base, cast, created, gate) = (
            client.clone(),
            cluster.base(i % cluster.len()).to_owned(),
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
}

/// Creates a shipment through `base` and moves it through `steps` courier
/// operations (assign a driver, pick up, deliver); stops at the first
/// failure (the server may be gone). `created` counts the creates answered.
pub(crate) async fn drive(
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

/// Every (code, version) the database holds: each shipment's every change.
pub(crate) async fn committed_changes(store: &Store) -> Vec<(String, i64)> {
    let sql = "SELECT code, version FROM shipments";
    let latest: Vec<(String, i64)> = match store.pool() {
        Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_all(pool).await.unwrap(),
        Pool::Postgres(pool) => sqlx::query_as(sql).fetch_all(pool).await.unwrap(),
    };
    latest
        .into_iter()
        .flat_map(|(code, version)| (1..=version).map(move |v| (code.clone(), v)))
        .collect()
}
