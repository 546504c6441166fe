//! The `shipment-server` binary itself: admin commands, migrate, demo and
//! graceful shutdown, as operators and CI pipelines run them.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
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
