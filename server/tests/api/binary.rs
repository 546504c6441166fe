//! The `shipment-server` binary itself: admin commands, migrate, demo and
//! graceful shutdown, as operators and CI pipelines run them.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use shipment_testkit::{TestApp, db_tests};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_shipment-server");

fn server() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("DATABASE_URL")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    c
}

async fn admin_json(db: &str, args: &[&str]) -> Value {
    let out = server()
        .args(["admin", "--json", "--database-url", db])
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.lines().count(),
        1,
        "exactly one JSON object: {stdout}"
    );
    serde_json::from_str(&stdout).unwrap()
}

#[tokio::test]
async fn admin_commands_make_working_fixtures_without_sql() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("a.db").display());
    let migrated = server()
        .args(["migrate", "--database-url", &db])
        .output()
        .await
        .unwrap();
    assert!(migrated.status.success());
    let m = admin_json(
        &db,
        &[
            "create-merchant",
            "--name",
            "Shop",
            "--email",
            "s@example.com",
            "--password",
            "long enough",
        ],
    )
    .await;
    let merchant = m["merchant_id"].as_i64().unwrap().to_string();
    let key = admin_json(&db, &["create-api-key", "--merchant-id", &merchant]).await;
    assert!(key["key"].as_str().unwrap().starts_with("sk_test_"));
    let c = admin_json(
        &db,
        &["create-courier", "--name", "Swift", "--base-fee", "4.50"],
    )
    .await;
    let courier = c["courier_company_id"].as_i64().unwrap().to_string();
    admin_json(
        &db,
        &[
            "link-courier",
            "--merchant-id",
            &merchant,
            "--courier-id",
            &courier,
        ],
    )
    .await;
    let ck = admin_json(&db, &["create-courier-key", "--courier-id", &courier]).await;
    assert!(ck["key"].as_str().unwrap().starts_with("ck_test_"));
    let d = admin_json(
        &db,
        &["create-driver", "--courier-id", &courier, "--name", "Ada"],
    )
    .await;
    assert!(d["driver_id"].as_i64().is_some());

    // Mistakes are one clear line and a failing exit code.
    let dup = server()
        .args([
            "admin",
            "--database-url",
            &db,
            "create-merchant",
            "--name",
            "X",
            "--email",
            "S@example.com",
            "--password",
            "long enough",
        ])
        .output()
        .await
        .unwrap();
    assert!(!dup.status.success());
    assert!(
        String::from_utf8_lossy(&dup.stderr).contains("exists"),
        "{}",
        String::from_utf8_lossy(&dup.stderr)
    );
    let ghost = server()
        .args([
            "admin",
            "--database-url",
            &db,
            "create-api-key",
            "--merchant-id",
            "999",
        ])
        .output()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&ghost.stderr).contains("no merchant has id 999"));
    let cents = server()
        .args([
            "admin",
            "--database-url",
            &db,
            "create-courier",
            "--name",
            "Y",
            "--per-km",
            "0.125",
        ])
        .output()
        .await
        .unwrap();
    assert!(!cents.status.success());
}

#[tokio::test]
async fn the_demo_prints_working_credentials_and_stops_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("demo.db").display());
    let mut child = server()
        .args(["demo", "--addr", "127.0.0.1:0", "--database-url", &db])
        // The demo keeps its data key beside the working directory.
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut base, mut key) = (String::new(), String::new());
    let read = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["API", "base", "URL", url] => base = (*url).to_owned(),
                ["Merchant", "API", "key", k] => key = (*k).to_owned(),
                ["Stop", "with", ..] => break,
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the demo prints its banner");
    assert!(key.starts_with("sk_test_"), "{key}");
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let couriers: Value = client
        .get(format!("{base}/merchant-couriers"))
        .header("X-API-KEY", &key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(couriers["data"].as_array().unwrap().len(), 2, "{couriers}");

    terminate(child).await;
}

/// Logs read by `docker logs`, a CI job or a file are plain text: colour
/// only when stderr is a terminal (it is a pipe here).
#[tokio::test]
async fn logs_to_a_pipe_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("a.db").display());
    let mut child = server()
        .args(["serve", "--addr", "127.0.0.1:0", "--database-url", &db])
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .current_dir(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let serving = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("serving") {
                return line;
            }
        }
        panic!("the server ended without logging that it serves");
    })
    .await
    .expect("a log line within 30 s");
    assert!(!serving.contains('\u{1b}'), "{serving:?}");
    assert!(
        serving.contains(" INFO shipment_server: serving addr=127.0.0.1:"),
        "{serving:?}"
    );
    terminate(child).await;
}

#[tokio::test]
async fn the_simulating_demo_moves_shipments_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("sim.db").display());
    let mut child = server()
        .args([
            "demo",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            &db,
            "--simulate",
            "1",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut base, mut key) = (String::new(), String::new());
    let read = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["API", "base", "URL", url] => base = (*url).to_owned(),
                ["Merchant", "API", "key", k] => key = (*k).to_owned(),
                ["Simulating:", ..] => break,
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the demo says it simulates");
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    // Within a few ticks a shipment has been created and moved on.
    let mut moved = false;
    for _ in 0..60 {
        let page: Value = client
            .get(format!("{base}/shipments?page_size=100"))
            .header("X-API-KEY", &key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        moved = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["version"].as_i64().unwrap() >= 2);
        if moved {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(moved, "no simulated shipment moved");
    child.kill().await.unwrap();
}

db_tests!(the_healthcheck_asks_readyz_where_serve_listens);

/// `healthcheck` reads `serve`'s flags and environment: the container
/// image's HEALTHCHECK follows a port moved with `SHIPMENT_ADDR`, and an
/// address on every interface is asked on loopback.
async fn the_healthcheck_asks_readyz_where_serve_listens(app: &TestApp) {
    let addr = app.root.strip_prefix("http://").unwrap();
    let port = addr.rsplit_once(':').unwrap().1;
    for (flag, env) in [
        (None, Some(addr.to_owned())),
        (Some(format!("0.0.0.0:{port}")), None),
        // The flag wins over the environment, as for `serve`.
        (Some(addr.to_owned()), Some("127.0.0.1:1".to_owned())),
    ] {
        let mut check = server();
        check.arg("healthcheck").env_remove("SHIPMENT_ADDR");
        if let Some(flag) = &flag {
            check.args(["--addr", flag]);
        }
        if let Some(env) = &env {
            check.env("SHIPMENT_ADDR", env);
        }
        let out = check.output().await.unwrap();
        assert!(
            out.status.success(),
            "{flag:?} {env:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            format!("http://127.0.0.1:{port}/readyz answered 200 OK\n")
        );
    }
}

/// Exit 1 with the reason when nothing listens, when `/readyz` is not 2xx
/// (a server whose database is gone answers 503) and when it does not
/// answer in time.
#[tokio::test]
async fn the_healthcheck_fails_when_the_server_is_not_ready() {
    async fn check(addr: std::net::SocketAddr) -> (Option<i32>, String) {
        let out = server()
            .env_remove("SHIPMENT_ADDR")
            .args(["healthcheck", "--addr", &addr.to_string()])
            .output()
            .await
            .unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (code, stderr) = check(closed).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("http://{closed}/readyz: no answer")),
        "{stderr}"
    );

    let unready = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = unready.local_addr().unwrap();
    let answering = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let (mut socket, _) = unready.accept().await.unwrap();
        let mut request = [0; 1024];
        let _ = socket.read(&mut request).await.unwrap();
        socket
            .write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        // A listener that accepts and never answers: the time-out.
        let (_silent, _) = unready.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let (code, stderr) = check(addr).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("answered 503 Service Unavailable"),
        "{stderr}"
    );
    let started = std::time::Instant::now();
    let (code, stderr) = check(addr).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no answer"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the healthcheck gives up by itself: {:?}",
        started.elapsed()
    );
    answering.abort();
}

/// Stops a child with SIGTERM and checks that it exits cleanly.
pub(crate) async fn terminate(mut child: Child) {
    let pid = child.id().unwrap().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(
        status.success(),
        "SIGTERM ends the server cleanly: {status}"
    );
}
