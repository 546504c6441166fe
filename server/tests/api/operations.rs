//! Operational endpoints: `/metrics` (on the main address or its own) and
//! JSON logs that carry the request id.

use std::process::Stdio;
use std::time::Duration;

use reqwest::Method;
use tokio::io::{AsyncBufReadExt, BufReader};

use shipment_testkit::{Db, TestApp, send};

/// The value of the first sample of `metric` whose labels contain every
/// one of `labels`.
fn sample(text: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(metric) && labels.iter().all(|want| l.contains(want)))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_by_route_and_show_the_outbox_and_pool() {
    let app = TestApp::spawn_with(Db::Sqlite, |c| c.webhooks.no_webhook_delivery = true)
        .await
        .unwrap();
    let f = app.fixture().await;
    for _ in 0..3 {
        send(app.req(Method::GET, "/shipments/SHP-0000-0000", &f.key)).await;
    }
    app.create_default(&f).await;
    let text = app
        .client
        .get(format!("{}/metrics", app.root))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let route = r#"route="/api/v1/shipments/{code}""#;
    let not_found = sample(&text, "http_requests_total", &[route, r#"status="404""#]).unwrap();
    assert!(not_found >= 3.0, "{text}");
    assert!(sample(&text, "http_request_duration_seconds_count", &[route]).is_some());
    // Nothing delivers in this server, so the create's row waits.
    assert_eq!(sample(&text, "outbox_depth", &[]), Some(1.0), "{text}");
    assert!(sample(&text, "outbox_oldest_age_seconds", &[]).unwrap() >= 0.0);
    assert_eq!(sample(&text, "db_pool_max_connections", &[]), Some(8.0));
    assert!(sample(&text, "db_pool_connections", &[r#"state="idle""#]).is_some());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_can_move_to_their_own_address() {
    let config_addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let app = TestApp::spawn_with(Db::Sqlite, move |c| c.metrics_addr = Some(config_addr))
        .await
        .unwrap();
    let (status, _) = send(app.client.get(format!("{}/metrics", app.root))).await;
    assert_eq!(status.as_u16(), 404, "metrics left on the main address");
    app.stop().await;
}

#[tokio::test]
async fn json_logs_carry_the_request_id() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("logs.db").display());
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_shipment-server"))
        .args([
            "--log-format",
            "json",
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            &db,
        ])
        .current_dir(dir.path())
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next_line().await.unwrap().expect("the server logs");
        let json: serde_json::Value = serde_json::from_str(&line).expect("every line is JSON");
        if json["fields"]["message"] == "serving" {
            break json["fields"]["addr"].as_str().unwrap().to_owned();
        }
    };
    reqwest::Client::new()
        .get(format!("http://{addr}/api/v1/shipments"))
        .header("X-Request-Id", "trace-me-42")
        .send()
        .await
        .unwrap();
    let logged = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the server logs");
            let json: serde_json::Value = serde_json::from_str(&line).expect("every line is JSON");
            if json["span"]["request_id"] == "trace-me-42" {
                return json;
            }
        }
    })
    .await
    .expect("a log line with the request id");
    assert_eq!(logged["fields"]["status"], 401);
    child.kill().await.unwrap();
}
