//! `shipctl listen --forward-to`: the real server (private webhook targets
//! NOT allowed: the server never connects to the local app), `shipctl`
//! forwarding each change to a local plain-HTTP receiver, which verifies
//! every body with `webhook-verify` and the key `shipctl` printed.

use std::io::{BufRead as _, BufReader, Read};
use std::process::Child;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use shipment_testkit::{TestApp, db_tests};

use crate::helpers::Shipctl;
use crate::snapshot;

db_tests!(
    config = |c| c.webhooks.allow_private_webhook_targets = false;
    listen_forwards_every_change_signed_to_a_local_app,
    a_local_app_that_is_down_or_failing_is_shown_not_fatal,
    the_listener_key_is_printed_and_replaced_on_request,
    listen_reconnects_when_the_stream_ends,
);

/// What the local app received.
#[derive(Clone, Debug)]
struct Got {
    headers: HeaderMap,
    body: Vec<u8>,
}

/// A plain-HTTP local app on a free port that answers `status`; returns its
/// URL and what it receives.
async fn local_app(status: StatusCode) -> (String, mpsc::Receiver<Got>) {
    let (tx, rx) = mpsc::channel();
    let tx = Arc::new(Mutex::new(tx));
    let app = Router::new()
        .route(
            "/webhooks",
            post(
                move |State(tx): State<Arc<Mutex<mpsc::Sender<Got>>>>,
                      headers: HeaderMap,
                      body: axum::body::Bytes| async move {
                    let _ = tx.lock().unwrap().send(Got {
                        headers,
                        body: body.to_vec(),
                    });
                    status
                },
            ),
        )
        .with_state(tx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://127.0.0.1:{port}/webhooks"), rx)
}

/// `shipctl listen` with its stdout and stderr read line by line.
struct Listening {
    child: Child,
    stdout: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
}

fn lines(from: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Listening {
    fn start(shipctl: &Shipctl, args: &[&str]) -> Listening {
        let mut child = shipctl.spawn(args);
        let stdout = lines(child.stdout.take().unwrap());
        let stderr = lines(child.stderr.take().unwrap());
        Listening {
            child,
            stdout,
            stderr,
        }
    }

    /// Waits for `Ready! …` and returns the signing key it shows; the other
    /// lines on the way (reconnection notes) are returned too.
    fn ready_after(&self) -> (String, Vec<String>) {
        let mut before = Vec::new();
        let line = loop {
            let line = self
                .stderr
                .recv_timeout(Duration::from_secs(20))
                .expect("listen says it is ready");
            if line.starts_with("Ready!") {
                break line;
            }
            before.push(line);
        };
        let key = line
            .split("Signing key: ")
            .nth(1)
            .unwrap_or_else(|| panic!("not the ready line: {line}"));
        assert!(line.starts_with("Ready! Forwarding to "), "{line}");
        (key.trim().to_owned(), before)
    }

    /// Waits for `Ready! …` and returns the signing key it shows.
    fn ready(&self) -> String {
        let (key, before) = self.ready_after();
        assert!(before.is_empty(), "{before:?}");
        key
    }

    fn line(&self) -> String {
        self.stdout
            .recv_timeout(Duration::from_secs(20))
            .expect("a line per delivery")
    }

    /// Ctrl-C, and the exit code.
    fn interrupt(mut self) -> (Option<i32>, Vec<String>) {
        let pid = self.child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = self.child.wait().unwrap();
        // Every line up to the end of the pipe: the reader thread may not
        // have passed on the last lines yet when the exit is seen, and it
        // ends (closing the channel) at the end of the pipe, which the
        // exit brings.
        let rest: Vec<String> = self.stderr.iter().collect();
        (status.code(), rest)
    }
}

fn shipctl_for(server: &TestApp, key: &str) -> Shipctl {
    Shipctl::new()
        .env("SHIPCTL_BASE_URL", &server.base)
        .env("SHIPCTL_API_KEY", key)
}

async fn listen_forwards_every_change_signed_to_a_local_app(server: &TestApp) {
    let f = server.fixture().await;
    let (url, received) = local_app(StatusCode::OK).await;
    let shipctl = shipctl_for(server, &f.key);
    let listening = tokio::task::block_in_place(|| {
        let l = Listening::start(&shipctl, &["listen", "--forward-to", &url]);
        let key = l.ready();
        (l, key)
    });
    let (listening, key) = listening;

    let code = server.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    server.advance(&f, &code, "delivered").await;

    let got: Vec<Got> = tokio::task::block_in_place(|| {
        (0..4)
            .map(|_| received.recv_timeout(Duration::from_secs(20)).unwrap())
            .collect()
    });
    let mut versions = Vec::new();
    for delivery in &got {
        let signature = delivery.headers["x-service-signature"].to_str().unwrap();
        assert_eq!(
            webhook_verify::verify(&key, &delivery.body, signature),
            Ok(()),
            "signed with the printed key"
        );
        assert_eq!(delivery.headers["content-type"], "application/json");
        let id = delivery.headers["x-service-delivery-id"].to_str().unwrap();
        assert!(id.starts_with("dlv_") && id.ends_with("_l"), "{id}");
        let body: serde_json::Value = serde_json::from_slice(&delivery.body).unwrap();
        assert_eq!(body["code"], code.as_str());
        versions.push(body["version"].as_i64().unwrap());
    }
    assert_eq!(versions, [1, 2, 3, 4]);
    // The last body is the shipment exactly as GET shows it.
    let current = server
        .client
        .get(format!("{}/shipments/{code}", server.base))
        .header("X-API-KEY", &f.key)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(got[3].body, current.to_vec());

    let printed: Vec<String> =
        tokio::task::block_in_place(|| (0..4).map(|_| listening.line()).collect());
    let mut text = printed.join("\n");
    text.push('\n');
    snapshot!("listen_lines", ms_redacted(&text));

    let (code, stderr) = tokio::task::block_in_place(|| listening.interrupt());
    assert_eq!(code, Some(0), "Ctrl-C ends it cleanly: {stderr:?}");
    assert!(stderr.iter().any(|l| l == "Stopped."), "{stderr:?}");
}

/// Durations vary from run to run.
fn ms_redacted(text: &str) -> String {
    text.lines()
        .map(|line| match line.rsplit_once("  ") {
            Some((rest, ms)) if ms.ends_with(" ms") => format!("{rest}  [MS] ms"),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

async fn a_local_app_that_is_down_or_failing_is_shown_not_fatal(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f.key);
    // Nothing listens on a port just freed.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!(
            "http://127.0.0.1:{}/webhooks",
            l.local_addr().unwrap().port()
        )
    };
    let down = tokio::task::block_in_place(|| {
        let l = Listening::start(
            &shipctl,
            &["listen", "--forward-to", &closed, "-o", "ndjson"],
        );
        l.ready();
        l
    });
    let (failing_url, failing) = local_app(StatusCode::INTERNAL_SERVER_ERROR).await;
    let refused = tokio::task::block_in_place(|| {
        let l = Listening::start(&shipctl, &["listen", "--forward-to", &failing_url]);
        l.ready();
        l
    });

    let code = server.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    server.advance(&f, &code, "assigned_to_driver").await;
    for _ in 0..2 {
        let line: serde_json::Value =
            serde_json::from_str(&tokio::task::block_in_place(|| down.line())).unwrap();
        assert_eq!(line["shipment_code"], code.as_str());
        assert!(line["response_status"].is_null(), "{line}");
        assert!(
            line["error"]
                .as_str()
                .unwrap()
                .starts_with("cannot connect"),
            "{line}"
        );
    }
    tokio::task::block_in_place(|| {
        for _ in 0..2 {
            failing.recv_timeout(Duration::from_secs(20)).unwrap();
            let line = refused.line();
            assert!(line.contains("-> the local app answered 500"), "{line}");
        }
    });
    // Still running after the failures; Ctrl-C ends both cleanly.
    for listening in [down, refused] {
        let (code, _) = tokio::task::block_in_place(|| listening.interrupt());
        assert_eq!(code, Some(0));
    }
}

async fn the_listener_key_is_printed_and_replaced_on_request(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f.key);
    // The first --print-secret makes the key; the next ones show the same.
    let first = shipctl
        .run_async(&["listen", "--print-secret"])
        .await
        .ok()
        .stdout;
    assert!(first.starts_with("whsec_"), "{first}");
    let again = shipctl
        .run_async(&["listen", "--print-secret"])
        .await
        .ok()
        .stdout;
    assert_eq!(first, again);
    let rotated = shipctl
        .run_async(&["listen", "--rotate-secret"])
        .await
        .ok()
        .stdout;
    assert_ne!(rotated, first);
    let shown = shipctl
        .run_async(&["listen", "--print-secret"])
        .await
        .ok()
        .stdout;
    assert_eq!(shown, rotated);

    // Usage: an address is needed to listen, and it must be http(s).
    let run = shipctl.run_async(&["listen"]).await.expect_code(2);
    assert!(run.stderr.contains("--forward-to"), "{run}");
    let run = shipctl
        .run_async(&["listen", "--forward-to", "localhost:3000"])
        .await
        .expect_code(2);
    snapshot!("listen_bad_address", run);
    // A refused key is exit 3, before anything is forwarded.
    let run = shipctl_for(server, "sk_test_00000000000000000000000000000000")
        .run_async(&["listen", "--forward-to", "http://127.0.0.1:9/x"])
        .await
        .expect_code(3);
    snapshot!("listen_key_refused", run);
}

async fn listen_reconnects_when_the_stream_ends(server: &TestApp) {
    let f = server.fixture().await;
    let (url, received) = local_app(StatusCode::OK).await;
    let shipctl = shipctl_for(server, &f.key);
    let (listening, old_key) = tokio::task::block_in_place(|| {
        let l = Listening::start(&shipctl, &["listen", "--forward-to", &url]);
        let key = l.ready();
        (l, key)
    });
    // Replacing the key ends the stream: `listen` reconnects by itself and
    // shows the new key.
    let new_key = shipctl
        .run_async(&["listen", "--rotate-secret"])
        .await
        .ok()
        .stdout
        .trim()
        .to_owned();
    assert_ne!(new_key, old_key);
    let (shown, notes) = tokio::task::block_in_place(|| listening.ready_after());
    assert_eq!(shown, new_key);
    assert_eq!(notes, ["The stream ended; reconnecting"]);

    server.create_default(&f).await;
    let got =
        tokio::task::block_in_place(|| received.recv_timeout(Duration::from_secs(20))).unwrap();
    let signature = got.headers["x-service-signature"].to_str().unwrap();
    assert_eq!(
        webhook_verify::verify(&new_key, &got.body, signature),
        Ok(())
    );
    let (code, _) = tokio::task::block_in_place(|| listening.interrupt());
    assert_eq!(code, Some(0));
}
