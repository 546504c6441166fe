//! Flags of `serve` that only make sense together: a combination that
//! would be changed behind the operator's back is refused at start, with
//! the rule and the fix, before the database is touched.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_shipment-server");

/// `serve` on a new SQLite file in `dir` with `args`.
fn serve(dir: &std::path::Path, args: &[&str]) -> Command {
    let db = format!("sqlite://{}", dir.join("a.db").display());
    let mut c = Command::new(BIN);
    c.args(["serve", "--addr", "127.0.0.1:0", "--database-url", &db])
        .args(args)
        .env_remove("DATABASE_URL")
        .env_remove("SHIPMENT_OUTBOX_LEASE_SECS")
        .env_remove("SHIPMENT_WEBHOOK_TIMEOUT_SECS")
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .kill_on_drop(true);
    c
}

#[tokio::test]
async fn a_lease_shorter_than_two_delivery_timeouts_is_refused_at_start() {
    for (timeout, lease, shortest) in [("10", "19", "20"), ("0", "1", "2"), ("30", "0", "60")] {
        let dir = tempfile::tempdir().unwrap();
        let run = serve(
            dir.path(),
            &[
                "--webhook-timeout-secs",
                timeout,
                "--outbox-lease-secs",
                lease,
            ],
        )
        .output();
        // Refused at once; a server that starts would run until killed.
        let out = tokio::time::timeout(Duration::from_secs(30), run)
            .await
            .expect("refused, not serving")
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "--outbox-lease-secs {lease} is shorter than twice --webhook-timeout-secs"
            )),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("set --outbox-lease-secs to {shortest} or more")),
            "{stderr}"
        );
        assert!(
            !dir.path().join("a.db").exists(),
            "refused before the database was made"
        );
    }
}

#[tokio::test]
async fn a_lease_of_exactly_two_delivery_timeouts_starts() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = serve(
        dir.path(),
        &["--webhook-timeout-secs", "10", "--outbox-lease-secs", "20"],
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let serving = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("serving") {
                return true;
            }
        }
        false
    })
    .await
    .expect("the server starts in time");
    assert!(serving, "the server ended without serving");
    crate::binary::terminate(child).await;
}
