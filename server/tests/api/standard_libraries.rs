//! The official Standard Webhooks libraries, for Python (`standardwebhooks`
//! on PyPI) and for JavaScript (`standardwebhooks` on npm), verify every
//! kind of delivery the server sends, given only the raw request and the
//! `whsec_` key as the API showed it; and refuse each of them replayed 6
//! minutes later, as `webhook-verify`'s `Verifier` does. The seed's
//! `X-Service-Signature` still verifies every one.
//!
//! The libraries run in the scripts of `tests/standard-webhooks/`, at the
//! versions pinned there (`requirements.txt`, `package-lock.json`), which
//! `.ci/run` installs: Python's into `python3`, JavaScript's under
//! `$TMPDIR/shipment-ci-standardwebhooks`. A replay 6 minutes later is
//! shown by moving each library's own clock ahead (the scripts'
//! `--clock-offset`, which says how for each library), never by changing
//! the headers. Without the libraries the test fails under CI (`CI` set)
//! and prints `SKIPPED (...)` elsewhere.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_testkit::{TestApp, db_tests, send};

use crate::receiver::{Received, Receiver};
use crate::standard_webhooks::{standard_check, unix_now};
use crate::{duplicates, signed_in_webhook};
use webhook_verify::VerifyError;

db_tests!(
    config = |c| c.test_controls = true;
    the_official_libraries_verify_every_kind_of_delivery_and_refuse_a_replay,
);

/// How much later the replay comes: beyond the 5 minutes receivers allow.
const REPLAYED_AFTER_SECS: i64 = 6 * 60;

/// `tests/standard-webhooks/` of the repository.
fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/standard-webhooks")
}

/// Where `.ci/run` installs the JavaScript library
/// (`${TMPDIR:-/tmp}/shipment-ci-standardwebhooks`).
fn node_prefix() -> PathBuf {
    std::env::temp_dir().join("shipment-ci-standardwebhooks")
}

/// The version `requirements.txt` pins (`standardwebhooks==X`).
fn pinned_for_python() -> String {
    let text = std::fs::read_to_string(scripts().join("requirements.txt")).unwrap();
    let pin = text
        .lines()
        .find_map(|l| l.strip_prefix("standardwebhooks=="));
    pin.expect("requirements.txt pins standardwebhooks")
        .trim()
        .to_owned()
}

/// The version `package.json` pins.
fn pinned_for_node() -> String {
    let text = std::fs::read_to_string(scripts().join("package.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    manifest["dependencies"]["standardwebhooks"]
        .as_str()
        .expect("package.json pins standardwebhooks")
        .to_owned()
}

/// One library, as its script runs it.
struct Library {
    /// For messages: `Python` or `JavaScript`.
    name: &'static str,
    /// The command and its leading arguments (the script, and where the
    /// library is).
    command: Vec<String>,
}

impl Library {
    fn python() -> Library {
        let script = scripts().join("verify.py");
        Library {
            name: "Python",
            command: vec!["python3".into(), script.display().to_string()],
        }
    }

    fn node() -> Library {
        let script = scripts().join("verify.mjs");
        Library {
            name: "JavaScript",
            command: vec![
                "node".into(),
                script.display().to_string(),
                "--prefix".into(),
                node_prefix().display().to_string(),
            ],
        }
    }

    async fn run(&self, args: &[String]) -> std::io::Result<std::process::Output> {
        tokio::process::Command::new(&self.command[0])
            .args(&self.command[1..])
            .args(args)
            .kill_on_drop(true)
            .output()
            .await
    }

    /// Whether the script runs with the library at the pinned version.
    async fn has(&self, pinned: &str) -> Result<(), String> {
        let out = self
            .run(&["--version".into()])
            .await
            .map_err(|e| format!("{} cannot run: {e}", self.command[0]))?;
        let printed = String::from_utf8_lossy(&out.stdout);
        let wanted = format!("standardwebhooks {pinned}");
        if out.status.success() && printed.trim() == wanted {
            return Ok(());
        }
        // The line that says why (Node.js prints the place first).
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr
            .lines()
            .find(|l| l.starts_with("Error"))
            .or_else(|| stderr.lines().next())
            .unwrap_or_default();
        Err(format!(
            "{} library: wanted {wanted}, the script printed {:?} ({why})",
            self.name,
            printed.trim()
        ))
    }

    /// Each delivery of `file` verified by the library with its clock
    /// `offset` seconds ahead: `None` when verified, else the library's
    /// reason.
    async fn verify(&self, file: &Path, offset: i64) -> Vec<Option<String>> {
        let args = [
            "--clock-offset".to_owned(),
            offset.to_string(),
            file.display().to_string(),
        ];
        let out = self.run(&args).await.unwrap();
        assert!(
            out.status.success(),
            "the {} script failed: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|line| {
                let result: Value = serde_json::from_str(line).unwrap();
                match result["verified"].as_bool() {
                    Some(true) => None,
                    _ => Some(result["error"].as_str().unwrap_or("?").to_owned()),
                }
            })
            .collect()
    }
}

/// Whether both libraries are there at their pinned versions; when not,
/// fails under CI (`.ci/run` installs them) and prints `SKIPPED` elsewhere.
async fn libraries_available() -> bool {
    let python = Library::python().has(&pinned_for_python()).await;
    let node = Library::node().has(&pinned_for_node()).await;
    let missing: Vec<String> = [python, node].into_iter().filter_map(Result::err).collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the official Standard Webhooks libraries are missing: .ci/run installs them ({})",
        missing.join("; ")
    );
    eprintln!("SKIPPED ({})", missing.join("; "));
    false
}

/// A delivery as the scripts read it: the key as the API showed it, every
/// header as received, the body byte for byte (hex).
fn line_of(r: &Received, key: &str) -> String {
    let headers: serde_json::Map<String, Value> = r
        .headers
        .iter()
        .map(|(name, value)| (name.to_string(), json!(value.to_str().unwrap())))
        .collect();
    let line = json!({"key": key, "headers": headers, "body_hex": hex::encode(&r.body)});
    format!("{line}\n")
}

async fn the_official_libraries_verify_every_kind_of_delivery_and_refuse_a_replay(app: &TestApp) {
    if !libraries_available().await {
        return;
    }
    let hooked = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let own = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let f = app.fixture_with_login().await;
    let (token, hook, key) = signed_in_webhook(app, &f, &hooked.url).await;
    let path = "/webhooks/shipment-signing-key";
    let (_, signing) = send(app.bearer(Method::POST, path, &token)).await;
    let own_key = signing["signing_key"].as_str().unwrap().to_owned();

    // A change to both targets; the next sent twice by the test controls;
    // the first redelivered to the webhook.
    let created = app
        .create(
            &f,
            json!({"courier_company_id": f.courier_id, "webhook_url": own.url}),
        )
        .await;
    let code = created["code"].as_str().unwrap().to_owned();
    hooked.nth(0).await;
    own.nth(0).await;
    let (status, armed) = duplicates(app, &f, 2).await;
    assert_eq!(status, StatusCode::OK, "{armed}");
    app.advance(&f, &code, "cancelled").await;
    own.wait_for(3).await;
    hooked.wait_for(3).await;
    let log_path = format!("/webhooks/{hook}/deliveries");
    let (_, log) = send(app.bearer(Method::GET, &log_path, &token)).await;
    let v1 = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["version"] == 1)
        .expect("version 1 is logged");
    let again = format!("{log_path}/{}/redeliver", v1["id"]);
    let (status, queued) = send(app.bearer(Method::POST, &again, &token)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    let to_hook = hooked.wait_for(4).await;
    let to_own = own.received();
    assert_eq!((to_hook.len(), to_own.len()), (4, 3));

    let deliveries: Vec<(&Received, &str)> = to_hook
        .iter()
        .map(|r| (r, key.as_str()))
        .chain(to_own.iter().map(|r| (r, own_key.as_str())))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deliveries.ndjson");
    let lines: String = deliveries.iter().map(|(r, key)| line_of(r, key)).collect();
    std::fs::write(&file, lines).unwrap();

    let n = deliveries.len();
    for library in [Library::python(), Library::node()] {
        let now = library.verify(&file, 0).await;
        assert_eq!(now, vec![None; n], "{}: verified as received", library.name);
        let later = library.verify(&file, REPLAYED_AFTER_SECS).await;
        let too_old = Some("Message timestamp too old".to_owned());
        assert_eq!(
            later,
            vec![too_old; n],
            "{}: refused 6 minutes later",
            library.name
        );
    }
    for (r, key) in &deliveries {
        assert_eq!(standard_check(&r.headers, &r.body, key, unix_now()), Ok(()));
        let later = unix_now() + REPLAYED_AFTER_SECS;
        let refused = standard_check(&r.headers, &r.body, key, later);
        assert!(
            matches!(refused, Err(VerifyError::TimestampTooOld { .. })),
            "{refused:?}"
        );
        let signature = r.headers["x-service-signature"].to_str().unwrap();
        assert_eq!(webhook_verify::verify(key, &r.body, signature), Ok(()));
    }
}
