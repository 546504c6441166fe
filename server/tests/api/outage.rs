//! A PostgreSQL crash under load (issue 28, item 9): the server runs on a
//! PostgreSQL cluster of the test's own, which is killed with `pg_ctl stop
//! -m immediate` while creates and reads keep coming, and started again 5 s
//! later.
//!
//! While it is down every answer is 503 `unavailable` with `Retry-After`
//! (never 500), and comes within 2 s (the issue asks for 1 s once the
//! database is known to be unreachable; the margin is for a loaded
//! machine), `/readyz` included. Once it is back the server recovers by
//! itself, every create that was answered 201 exists once, and a change
//! whose delivery ended while the database was down (so its outbox row
//! could not be marked done) is followed by the shipment's next change
//! within 10 s of the restart, not after the 60 s lease.
//!
//! PostgreSQL only, by nature: skipped with `SKIPPED (PostgreSQL)` when
//! `initdb` is not installed. SQLite has unit tests of the error mapping
//! (`http::error`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_server::Environment;
use shipment_server::Store;
use shipment_server::{Application, Config};
use shipment_testkit::send;

use crate::receiver::{Receiver, ca};

/// How long the database stays down, as in the issue.
const DOWN_FOR: Duration = Duration::from_secs(5);
/// The longest an answer may take while the database is down.
const QUICK: Duration = Duration::from_secs(2);
/// How soon after the restart a held-back change must be delivered.
const RESUMED_WITHIN: Duration = Duration::from_secs(10);
/// How long the test receiver holds each delivery before answering: long
/// enough for the database to be killed meanwhile.
const RECEIVER_DELAY: Duration = Duration::from_secs(2);

/// A PostgreSQL cluster of this test's own, in a temporary directory, on a
/// free port, trusting local connections. Dropping it kills the server
/// and removes the directory, also when the test panics.
struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

impl Cluster {
    /// `initdb` and `pg_ctl start`; `None` when PostgreSQL's programs are
    /// not installed.
    fn start() -> Option<Cluster> {
        let bin = postgres_bin()?;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let cluster = Cluster { bin, dir, port };
        if as_root() {
            // initdb refuses to run as root: the cluster belongs to `postgres`.
            run(Command::new("chown")
                .arg("-R")
                .arg("postgres:")
                .arg(cluster.dir.path()));
        }
        let data = cluster.data();
        run(cluster
            .command("initdb")
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(&data));
        cluster.pg_ctl_start();
        Some(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The URL of its `postgres` database.
    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// PostgreSQL's program `name`, run as `postgres` when this test runs
    /// as root.
    fn command(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        if as_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    /// Starts the server and waits until it takes connections.
    fn pg_ctl_start(&self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        run(self
            .command("pg_ctl")
            .args(["start", "-w", "-t", "60", "-o", &options, "-l"])
            .arg(self.dir.path().join("log"))
            .arg("-D")
            .arg(self.data()));
    }

    /// Kills the server the way a crash would: no checkpoint, every
    /// connection cut.
    fn crash(&self) {
        run(self
            .command("pg_ctl")
            .args(["stop", "-m", "immediate", "-D"])
            .arg(self.data()));
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args(["stop", "-m", "immediate", "-D"])
            .arg(self.data())
            .output();
    }
}

/// The directory of `initdb` and `pg_ctl`: PostgreSQL 15's on Debian, or
/// wherever `PATH` has them.
fn postgres_bin() -> Option<PathBuf> {
    let debian = Path::new("/usr/lib/postgresql/15/bin");
    if debian.join("initdb").is_file() {
        return Some(debian.to_owned());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
}

fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// Runs `command`, panicking with its output unless it succeeds.
fn run(command: &mut Command) {
    let out = command.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The server on the cluster, in this process.
struct Server {
    base: String,
    root: String,
    store: Store,
    client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    running: Option<tokio::task::JoinHandle<()>>,
}

impl Server {
    async fn start(url: &str) -> Server {
        let mut config = Config::local(url);
        config.webhooks.webhook_ca_file = Some(ca().pem_file.clone());
        config.webhooks.outbox_poll_ms = 50;
        let app = Application::build(&config)
            .await
            .expect("the server starts");
        let addr = app.local_addr();
        let store = app.store().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(async move {
            app.run_until(async {
                let _ = stopped.await;
            })
            .await
            .expect("the server runs");
        });
        Server {
            base: format!("http://{addr}/api/v1"),
            root: format!("http://{addr}"),
            store,
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("an HTTP client"),
            stop: Some(stop),
            running: Some(running),
        }
    }

    fn req(&self, method: Method, path: &str, key: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .header("X-API-KEY", key)
    }

    /// A merchant with a key, a linked courier company and, with
    /// `password`, a dashboard sign-in; returns its key, the courier
    /// company's id and its own.
    async fn merchant(&self, email: &str, password: Option<&str>) -> (String, i64, i64) {
        let s = &self.store;
        let hash = match password {
            Some(p) => shipment_server::harness::hash_password(p.to_owned())
                .await
                .unwrap(),
            None => "no password".to_owned(),
        };
        let merchant = s.create_merchant("Shop", email, &hash).await.unwrap();
        let key = s
            .create_api_key(merchant, "k", Environment::Staging)
            .await
            .unwrap();
        let courier = s.create_courier("Swift", 500, 150, 10).await.unwrap();
        s.link_courier(merchant, courier).await.unwrap();
        (key.key.expose().to_owned(), courier.get(), merchant.get())
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(running) = self.running.take() {
            running.await.unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// One answered request of the load.
#[derive(Debug, Clone)]
struct Answer {
    what: &'static str,
    started: Instant,
    took: Duration,
    status: StatusCode,
    code: Value,
    retry_after: bool,
}

/// Every idempotency key the load sent, with the code of the shipment a
/// 201 gave it.
type Keys = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Sends `r`, timing it.
async fn timed(what: &'static str, r: reqwest::RequestBuilder) -> (Answer, Value) {
    let started = Instant::now();
    let response = r.send().await.expect("the server answers");
    let status = response.status();
    let retry_after = response.headers().contains_key("retry-after");
    let body: Value = response.json().await.unwrap_or(Value::Null);
    let answer = Answer {
        what,
        started,
        took: started.elapsed(),
        status,
        code: body["code"].clone(),
        retry_after,
    };
    (answer, body)
}

/// A create with an idempotency key of its own, then a read of what it
/// made, over and over until `stop`; every answer goes to `answers`, and
/// every key to `keys` with the code a 201 gave it.
async fn load(
    server: Arc<Server>,
    key: String,
    courier: i64,
    answers: Arc<Mutex<Vec<Answer>>>,
    keys: Keys,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    while !*stop.borrow() {
        let idem = uuid::Uuid::new_v4().to_string();
        let create = server
            .req(Method::POST, "/shipments", &key)
            .header("Idempotency-Key", &idem)
            .json(&json!({"courier_company_id": courier}));
        let (answer, body) = timed("POST /shipments", create).await;
        let code = (answer.status == StatusCode::CREATED)
            .then(|| body["code"].as_str().unwrap().to_owned());
        answers.lock().unwrap().push(answer);
        keys.lock().unwrap().push((idem, code.clone()));
        if let Some(code) = code {
            let read = server.req(Method::GET, &format!("/shipments/{code}"), &key);
            let (answer, _) = timed("GET /shipments/{code}", read).await;
            answers.lock().unwrap().push(answer);
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
            _ = stop.changed() => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_crash_answers_503_at_once_and_deliveries_resume_when_it_is_back() {
    let Some(cluster) = tokio::task::spawn_blocking(Cluster::start).await.unwrap() else {
        eprintln!("SKIPPED (PostgreSQL): initdb is not installed");
        return;
    };
    let server = Arc::new(Server::start(&cluster.url()).await);

    // A merchant whose webhook answers each delivery after 2 s.
    let receiver = Receiver::start(StatusCode::OK, RECEIVER_DELAY).await;
    let (hook_key, hook_courier, _) = server
        .merchant("hooked@example.com", Some("correct horse battery"))
        .await;
    let (status, token) = send(
        server
            .client
            .post(format!("{}/auth/login", server.base))
            .json(&json!({"email": "hooked@example.com", "password": "correct horse battery"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{token}");
    let (status, hook) = send(
        server
            .client
            .post(format!("{}/webhooks", server.base))
            .bearer_auth(token["token"].as_str().unwrap())
            .json(&json!({"url": receiver.url})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");

    // Load by another merchant, which has no webhooks.
    let (load_key, load_courier, load_merchant) = server.merchant("load@example.com", None).await;
    let answers = Arc::new(Mutex::new(Vec::new()));
    let keys = Arc::new(Mutex::new(Vec::new()));
    let (stop_load, stopped) = tokio::sync::watch::channel(false);
    let loaders: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(load(
                server.clone(),
                load_key.clone(),
                load_courier,
                answers.clone(),
                keys.clone(),
                stopped.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    // A shipment of the hooked merchant, and its cancellation: the
    // creation's delivery is held by the receiver while the database dies,
    // and the cancellation waits behind it.
    let (status, created) = send(
        server
            .req(Method::POST, "/shipments", &hook_key)
            .json(&json!({"courier_company_id": hook_courier})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let code = created["code"].as_str().unwrap().to_owned();
    let (status, cancelled) = send(server.req(
        Method::POST,
        &format!("/shipments/{code}/cancel"),
        &hook_key,
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    tokio::time::sleep(Duration::from_millis(300)).await;

    let crashed_at = Instant::now();
    tokio::task::block_in_place(|| cluster.crash());

    // While it is down: creates, reads and /readyz, one after another.
    let mut probes = Vec::new();
    while crashed_at.elapsed() < DOWN_FOR {
        let create = server
            .req(Method::POST, "/shipments", &load_key)
            .header("Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .json(&json!({"courier_company_id": load_courier}));
        probes.push(timed("POST /shipments (down)", create).await.0);
        let read = server.req(Method::GET, &format!("/shipments/{code}"), &hook_key);
        probes.push(timed("GET /shipments/{code} (down)", read).await.0);
        let ready = server.client.get(format!("{}/readyz", server.root));
        probes.push(timed("GET /readyz (down)", ready).await.0);
    }

    tokio::task::block_in_place(|| cluster.pg_ctl_start());
    let restarted_at = Instant::now();

    // The server recovers by itself.
    let mut ready_after = None;
    while restarted_at.elapsed() < Duration::from_secs(30) {
        let got = send(server.client.get(format!("{}/readyz", server.root))).await;
        if got.0 == StatusCode::OK {
            ready_after = Some(restarted_at.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The cancellation is delivered within 10 s of the restart.
    let deadline = restarted_at + RESUMED_WITHIN;
    let versions_of = |receiver: &Receiver| -> Vec<(i64, Instant)> {
        receiver
            .received()
            .iter()
            .filter_map(|r| {
                let body: Value = serde_json::from_slice(&r.body).ok()?;
                (body["code"] == code.as_str()).then(|| (body["version"].as_i64().unwrap(), r.at))
            })
            .collect()
    };
    while Instant::now() < deadline + RECEIVER_DELAY
        && !versions_of(&receiver).iter().any(|(v, _)| *v == 2)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let delivered = versions_of(&receiver);

    let _ = stop_load.send(true);
    for loader in loaders {
        loader.await.unwrap();
    }

    let mut failures = Vec::new();
    let answers = answers.lock().unwrap().clone();
    for a in answers.iter().chain(&probes) {
        // The load's requests may succeed (before the crash, after the
        // restart); the ones sent while the database was down may not.
        if a.status.is_success() && !a.what.ends_with("(down)") {
            continue;
        }
        if a.status != StatusCode::SERVICE_UNAVAILABLE || a.code != "unavailable" || !a.retry_after
        {
            failures.push(format!(
                "{} answered {} {} (retry-after: {}), not 503 unavailable with Retry-After",
                a.what, a.status, a.code, a.retry_after
            ));
        } else if a.took >= QUICK {
            failures.push(format!(
                "{} took {:?} for its 503 ({:?} after the crash)",
                a.what,
                a.took,
                a.started.saturating_duration_since(crashed_at)
            ));
        }
    }
    if !probes.iter().any(|a| a.what == "GET /readyz (down)") {
        failures.push("no /readyz answered while the database was down".to_owned());
    }
    match ready_after {
        Some(after) => eprintln!("ready {after:?} after the restart"),
        None => failures.push("/readyz never answered 200 after the restart".to_owned()),
    }
    let creations = delivered.iter().filter(|(v, _)| *v == 1).count();
    match delivered.iter().find(|(v, _)| *v == 2) {
        Some((_, at)) if *at <= deadline => {}
        Some((_, at)) => failures.push(format!(
            "the cancellation was delivered {:?} after the restart",
            at.saturating_duration_since(restarted_at)
        )),
        None => failures.push(format!(
            "the cancellation was not delivered within {RESUMED_WITHIN:?} of the restart (got versions {:?})",
            delivered.iter().map(|(v, _)| v).collect::<Vec<_>>()
        )),
    }
    if creations != 1 {
        failures.push(format!("the creation was delivered {creations} times"));
    }

    // Nothing answered 201 is lost, nothing is made twice: every key sent
    // again now gives its shipment (the same one for a 201), and the
    // merchant has one shipment per key.
    let keys = keys.lock().unwrap().clone();
    let mut codes = std::collections::HashSet::new();
    for (idem, code) in &keys {
        let again = server
            .req(Method::POST, "/shipments", &load_key)
            .header("Idempotency-Key", idem)
            .json(&json!({"courier_company_id": load_courier}));
        let (status, body) = send(again).await;
        if status != StatusCode::CREATED {
            failures.push(format!("key {idem} sent again: {status} {body}"));
            continue;
        }
        let now = body["code"].as_str().unwrap().to_owned();
        if let Some(code) = code
            && *code != now
        {
            failures.push(format!("key {idem} made {code}, and {now} when sent again"));
        }
        codes.insert(now);
    }
    let pool = sqlx::PgPool::connect(&cluster.url()).await.unwrap();
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM shipments WHERE merchant_id = $1")
        .bind(load_merchant)
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    let acknowledged = keys.iter().filter(|(_, c)| c.is_some()).count();
    eprintln!(
        "{} creates ({acknowledged} answered 201), {} requests while down, {count} shipments",
        keys.len(),
        probes.len()
    );
    if usize::try_from(count).ok() != Some(codes.len()) || codes.len() != keys.len() {
        failures.push(format!(
            "{} keys, {} distinct shipments for them, {count} shipments stored",
            keys.len(),
            codes.len()
        ));
    }

    Arc::into_inner(server)
        .expect("the load has stopped")
        .stop()
        .await;
    drop(cluster);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
