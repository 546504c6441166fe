//! `shipctl listen` for scripts and CI, and `shipctl replay`: filters,
//! waiting (`--until-status`, `--count`, `--max-wait`) and each exit code,
//! `--ready-file`, `--record`, and replaying a recording to a local
//! receiver that verifies every signature, with no server at all.
//!
//! Against the real server on both databases where a change must really
//! happen; against a stand-in stream where timing must be controlled (a
//! `ready` event held back, a service that stops answering).

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::Value;
use shipment_testkit::{TestApp, db_tests};

use crate::helpers::{Run, Shipctl};
use crate::listen_helpers::{
    Got, Listening, STAND_IN_KEY, assert_standard, closed_base, create, event_stream, header,
    local_app, merchant, ms_redacted, ready_event, receive, shipctl_at, shipctl_for, stand_in,
};
use crate::snapshot;

db_tests!(
    config = |c| c.webhooks.allow_private_webhook_targets = false;
    until_status_waits_for_one_shipment_and_the_recording_replays_byte_for_byte,
    status_and_count_forward_only_matching_changes_then_end,
    a_max_wait_that_runs_out_ends_with_exit_1_and_a_refused_key_with_3,
);

/// Waits (at most 20 s) for `path` to exist, and returns what it holds.
fn wait_for_file(path: &Path) -> String {
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{} did not appear",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (at most 30 s) for `listen` to end by itself: its exit code, and
/// every line it wrote on stdout and stderr.
fn finish(listening: &mut Listening) -> (Option<i32>, Vec<String>, Vec<String>) {
    let started = Instant::now();
    let status = loop {
        if let Some(status) = listening.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "listen did not end: {:?}",
            listening.stderr.try_iter().collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // The reader threads end (closing their channels) at the end of the
    // pipes, which the exit brings.
    (
        status.code(),
        listening.stdout.iter().collect(),
        listening.stderr.iter().collect(),
    )
}

/// Starts `listen` with `args`, which name `ready` as its `--ready-file`,
/// and waits for the file: the running `listen`, and what the file holds.
fn start_when_ready(shipctl: &Shipctl, args: &[&str], ready: &Path) -> (Listening, String) {
    tokio::task::block_in_place(|| {
        let listening = Listening::start(shipctl, args);
        let pid = wait_for_file(ready);
        (listening, pid)
    })
}

/// Checks that `got` is the delivery `recorded` as it was first sent: the
/// same body and delivery id, its signature good for `key`. Returns the
/// signature.
fn assert_sent_as_recorded<'a>(got: &'a Got, recorded: &Value, key: &str) -> &'a str {
    assert_eq!(got.body, recorded["body"].as_str().unwrap().as_bytes());
    let signature = header(got, "x-service-signature");
    assert_eq!(webhook_verify::verify(key, &got.body, signature), Ok(()));
    assert_eq!(
        header(got, "x-service-delivery-id"),
        recorded["delivery_id"]
    );
    signature
}

/// A `shipctl` with no key, at an address where nothing listens: what
/// `replay` runs with, to show that it needs neither.
fn offline() -> Shipctl {
    Shipctl::new().env("SHIPCTL_BASE_URL", &closed_base())
}

/// `shipctl replay RECORDING --forward-to URL ARGS...`, [`offline`].
async fn replay_offline(recording: &Path, url: &str, args: &[&str]) -> Run {
    let mut all = vec!["replay", recording.to_str().unwrap(), "--forward-to", url];
    all.extend_from_slice(args);
    offline().run_async(&all).await
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

async fn until_status_waits_for_one_shipment_and_the_recording_replays_byte_for_byte(
    server: &TestApp,
) {
    let (f, shipctl) = merchant(server).await;
    let key = shipctl
        .run_async(&["listen", "--print-secret"])
        .await
        .ok()
        .stdout
        .trim()
        .to_owned();
    let watched = create(server, &f).await;
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("listen.ready");
    let recording = dir.path().join("deliveries.ndjson");
    // Nothing is queued for a listener not yet connected: every change
    // made after the file appears must arrive, or the file came too early.
    let (mut listening, pid) = start_when_ready(
        &shipctl,
        &[
            "listen",
            "--code",
            &watched,
            "--until-status",
            "delivered",
            "--max-wait",
            "60s",
            "--ready-file",
            ready.to_str().unwrap(),
            "--record",
            recording.to_str().unwrap(),
        ],
        &ready,
    );
    assert_eq!(pid, format!("{}\n", listening.child.id()));

    // Another shipment delivered: filtered out, it does not end the wait.
    let other = create(server, &f).await;
    server.advance(&f, &other, "delivered").await;
    server.advance(&f, &watched, "delivered").await;

    let (code, stdout, stderr) = tokio::task::block_in_place(|| finish(&mut listening));
    assert_eq!(code, Some(0), "{stderr:?}");
    assert!(
        stderr.contains(&format!("Done: {watched} is delivered.")),
        "{stderr:?}"
    );
    assert!(
        stderr
            .iter()
            .any(|l| l.starts_with("Ready! Printing each change (no --forward-to).")),
        "{stderr:?}"
    );
    // Its creation (v1) came before `listen` connected, but its delivery
    // reaches listeners when a dispatcher claims it, which may be after:
    // then it is printed first (and recorded and replayed).
    let late_v1 = stdout.first().is_some_and(|l| l.contains("  v1 "));
    let text: String = stdout
        .iter()
        .skip(usize::from(late_v1))
        .map(|l| format!("{l}\n"))
        .collect();
    snapshot!("listen_until_status_lines", text);

    // The recording: every delivery received (the other shipment's too, as
    // far as they came before the end), each exactly as sent.
    let recorded = records(&recording);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&recording).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "bodies carry addresses: owner only");
    }
    let mut versions = Vec::new();
    for r in &recorded {
        let body = r["body"].as_str().unwrap();
        let signature = r["headers"]["X-Service-Signature"].as_str().unwrap();
        assert_eq!(
            webhook_verify::verify(&key, body.as_bytes(), signature),
            Ok(()),
            "{r}"
        );
        assert_eq!(r["headers"]["X-Service-Delivery-Id"], r["delivery_id"]);
        assert!(r["received_at"].as_str().unwrap().ends_with('Z'), "{r}");
        let shipment: Value = serde_json::from_str(body).unwrap();
        assert_eq!(shipment["code"], r["shipment_code"]);
        assert_eq!(shipment["version"], r["version"]);
        if r["shipment_code"] == watched.as_str() {
            versions.push(r["version"].as_i64().unwrap());
        }
    }
    let expected: &[i64] = if late_v1 { &[1, 2, 3, 4] } else { &[2, 3, 4] };
    assert_eq!(versions, expected, "{recorded:?}");
    let watched_records: Vec<&Value> = recorded
        .iter()
        .filter(|r| r["shipment_code"] == watched.as_str())
        .collect();

    // Replayed with no server (nothing listens at the base URL, no key):
    // the receiver gets the same bytes, signature and delivery id, and
    // verifies them with the key of the time.
    let n = watched_records.len();
    let (url, received) = local_app(StatusCode::OK).await;
    let replay = replay_offline(&recording, &url, &["--code", &watched])
        .await
        .ok();
    let got = receive(&received, n);
    assert_eq!(got.len(), n);
    for (got, r) in got.iter().zip(&watched_records) {
        let signature = assert_sent_as_recorded(got, r, &key);
        assert_eq!(signature, r["headers"]["X-Service-Signature"]);
        assert_eq!(header(got, "content-type"), "application/json");
    }
    assert!(
        replay.stderr.contains(&format!(
            "Replayed {n} of {} recorded deliveries",
            recorded.len()
        )),
        "{replay}"
    );
    let text: String = replay
        .stdout
        .lines()
        .skip(usize::from(late_v1))
        .map(|l| format!("{l}\n"))
        .collect();
    snapshot!("replay_lines", ms_redacted(&text));

    // The status filter; and a local app that fails is exit 1.
    let (failing, failing_got) = local_app(StatusCode::INTERNAL_SERVER_ERROR).await;
    let run = replay_offline(
        &recording,
        &failing,
        &["--status", "delivered", "--code", &watched, "-o", "ndjson"],
    )
    .await
    .expect_code(1);
    let line: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(line["status"], "delivered", "{run}");
    assert_eq!(line["response_status"], 500, "{run}");
    assert!(
        run.stderr
            .contains("error: 1 of 1 deliveries were not accepted"),
        "{run}"
    );
    let got = receive(&failing_got, 1);
    assert_eq!(got.len(), 1);
}

async fn status_and_count_forward_only_matching_changes_then_end(server: &TestApp) {
    let (f, shipctl) = merchant(server).await;
    let (url, received) = local_app(StatusCode::OK).await;
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready");
    let (mut listening, _) = start_when_ready(
        &shipctl,
        &[
            "listen",
            "--forward-to",
            &url,
            "--status",
            "delivered",
            "--status",
            "cancelled",
            "--count",
            "2",
            "--max-wait",
            "1m",
            "--ready-file",
            ready.to_str().unwrap(),
            "-o",
            "ndjson",
        ],
        &ready,
    );
    let mut codes = Vec::new();
    for _ in 0..3 {
        codes.push(create(server, &f).await);
    }
    server.advance(&f, &codes[0], "in_transit").await;
    server.advance(&f, &codes[1], "cancelled").await;
    server.advance(&f, &codes[2], "delivered").await;

    let (code, stdout, stderr) = tokio::task::block_in_place(|| finish(&mut listening));
    assert_eq!(code, Some(0), "{stderr:?}");
    assert!(
        stderr.contains(&"Done: 2 changes received.".to_owned()),
        "{stderr:?}"
    );
    let lines: Vec<Value> = stdout
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut seen: Vec<(String, String)> = lines
        .iter()
        .map(|l| {
            assert_eq!(l["response_status"], 200, "{l}");
            (
                l["shipment_code"].as_str().unwrap().to_owned(),
                l["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    let mut expected = vec![
        (codes[1].clone(), "cancelled".to_owned()),
        (codes[2].clone(), "delivered".to_owned()),
    ];
    expected.sort();
    assert_eq!(seen, expected);
    // Only those two were forwarded.
    let got = receive(&received, 2);
    assert_eq!(got.len(), 2);
    for got in &got {
        let body: Value = serde_json::from_slice(&got.body).unwrap();
        assert!(
            ["delivered", "cancelled"].contains(&body["status"].as_str().unwrap()),
            "{body}"
        );
    }
}

async fn a_max_wait_that_runs_out_ends_with_exit_1_and_a_refused_key_with_3(server: &TestApp) {
    let (_, shipctl) = merchant(server).await;
    // A code no shipment has: nothing it waits for can come.
    let code = "SHP-0000-0000";
    let started = Instant::now();
    let run = shipctl
        .run_async(&[
            "listen",
            "--code",
            code,
            "--until-status",
            "cancelled",
            "--max-wait",
            "2s",
        ])
        .await
        .expect_code(1);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "{took:?}"
    );
    snapshot!("listen_max_wait_ran_out", run);

    let run = shipctl
        .run_async(&["listen", "--count", "3", "--max-wait", "1s", "-o", "ndjson"])
        .await
        .expect_code(1);
    assert!(
        run.stderr
            .contains("error: --max-wait 1 s ran out: 0 of 3 changes received"),
        "{run}"
    );

    let run = shipctl_for(server, "sk_test_00000000000000000000000000000000")
        .run_async(&["listen", "--until-status", "delivered", "--max-wait", "30s"])
        .await
        .expect_code(3);
    assert!(run.stderr.contains("HTTP 401"), "{run}");
}

/// Every usage error is exit 2, caught before anything is sent.
#[test]
fn usage_errors_of_listen_and_replay_are_exit_2() {
    let shipctl = shipctl_at(&closed_base());
    let dir = tempfile::tempdir().unwrap();
    let no_dir = dir.path().join("missing").join("ready");
    let no_dir = no_dir.to_str().unwrap();
    let bad_file = dir.path().join("bad.ndjson");
    std::fs::write(&bad_file, "{\"delivery_id\":\"dlv_1_l\"}\n").unwrap();
    let bad_file = bad_file.to_str().unwrap();
    // Its second line is one byte over the limit (1 MiB), and not JSON:
    // the length is what is named.
    let long_file = dir.path().join("long.ndjson");
    std::fs::write(&long_file, format!("\n{}\n", "x".repeat((1 << 20) + 1))).unwrap();
    let long_file = long_file.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["listen", "--max-wait", "2m"],
        &["listen", "--until-status", "deliverd"],
        &["listen", "--code", "SHP-NOPE", "--count", "1"],
        &["listen", "--count", "0"],
        &["listen", "--count", "1", "--max-wait", "25h"],
        &[
            "listen",
            "--status",
            "delivered",
            "--until-status",
            "cancelled",
        ],
        &["listen", "--print-secret", "--record", "x.ndjson"],
        &["listen", "--ready-file", no_dir],
        &["listen", "--record", no_dir],
        &["replay", bad_file, "--forward-to", "http://127.0.0.1:9/x"],
        &[
            "replay",
            "no-such-file.ndjson",
            "--forward-to",
            "http://127.0.0.1:9/x",
        ],
        &["replay", bad_file, "--forward-to", "localhost:3000"],
        &["replay", long_file, "--forward-to", "http://127.0.0.1:9/x"],
    ];
    let mut text = String::new();
    for args in cases {
        let run = shipctl.run(args).expect_code(2);
        // The message, without clap's usage line after it.
        let message: Vec<&str> = run.stderr.lines().take_while(|l| !l.is_empty()).collect();
        text.push_str(&format!(
            "$ shipctl {}\n{}\n",
            args.join(" "),
            message.join("\n")
        ));
    }
    let text = text.replace(dir.path().to_str().unwrap(), "[DIR]");
    snapshot!("listen_usage_errors", text);
}

/// A recording that never ends a line, fed through a pipe: `replay` reads
/// it a line at a time and stops after 1 MiB, naming the line, instead of
/// reading the whole input into memory first.
#[test]
fn replay_reads_a_pipe_as_it_comes_and_stops_at_a_line_over_1_mib() {
    use std::io::Read as _;
    let mut child = offline().spawn_fed(&[
        "replay",
        "/dev/stdin",
        "--forward-to",
        "http://127.0.0.1:9/x",
    ]);
    let mut input = child.stdin.take().unwrap();
    let chunk = vec![b'x'; 64 * 1024];
    let mut written = 0_usize;
    // Until the reader goes away, or far beyond the limit.
    while written < 128 << 20 && input.write_all(&chunk).is_ok() {
        written += chunk.len();
    }
    drop(input);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/dev/stdin line 1 is longer than 1 MiB"),
        "{stderr}"
    );
    // 1 MiB read, and what the pipe's buffer took.
    assert!(written < 32 << 20, "{written} bytes written");
}

/// Waiting, a service that is not there is exit 6 at once; and a service
/// that goes away is exit 6 when --max-wait runs out, not exit 1.
#[tokio::test(flavor = "multi_thread")]
async fn an_unavailable_service_is_exit_6_when_waiting() {
    let started = Instant::now();
    let run = shipctl_at(&closed_base())
        .run_async(&["listen", "--until-status", "delivered", "--max-wait", "1m"])
        .await
        .expect_code(6);
    assert!(started.elapsed() < Duration::from_secs(15), "at once");
    assert!(run.stderr.contains("hint: is the service running"), "{run}");

    // The first stream ends at once; every later connection is closed
    // without an answer.
    let (base, _) = stand_in(|n, stream| {
        if n == 0 {
            let _ = event_stream(stream, &ready_event(STAND_IN_KEY));
        }
    });
    let run = shipctl_at(&base)
        .run_async(&["listen", "--count", "1", "--max-wait", "3s"])
        .await
        .expect_code(6);
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: --max-wait 3 s ran out while the service was unavailable ("),
        "{run}"
    );
}

/// The ready file is written once the stream is connected (its `ready`
/// event read), not before; one left from an earlier run is removed at
/// the start.
#[tokio::test(flavor = "multi_thread")]
async fn the_ready_file_appears_only_once_connected() {
    let (base, _) = stand_in(|_, stream| {
        // The service answers slowly.
        std::thread::sleep(Duration::from_millis(1500));
        let _ = event_stream(stream, &ready_event(STAND_IN_KEY));
        std::thread::sleep(Duration::from_secs(30));
    });
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready");
    std::fs::write(&ready, "stale\n").unwrap();
    let shipctl = shipctl_at(&base);
    let listening = tokio::task::block_in_place(|| {
        Listening::start(
            &shipctl,
            &["listen", "--ready-file", ready.to_str().unwrap()],
        )
    });
    let started = Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!ready.exists(), "the stale file is removed at the start");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        !ready.exists(),
        "not written before the stream is connected"
    );
    let pid = tokio::task::block_in_place(|| wait_for_file(&ready));
    assert!(started.elapsed() >= Duration::from_millis(1400));
    assert_eq!(pid, format!("{}\n", listening.child.id()));
    // No temporary file is left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let (code, _) = listening.interrupt();
    assert_eq!(code, Some(0));
}

/// A delivery as a stand-in stream sends it, signed with [`STAND_IN_KEY`].
fn delivery_event(id: i64, code: &str, version: i64, status: &str) -> String {
    let body =
        serde_json::json!({ "code": code, "version": version, "status": status }).to_string();
    let delivery = serde_json::json!({
        "delivery_id": format!("dlv_{id}_l"),
        "shipment_code": code,
        "version": version,
        "signature": webhook_verify::sign(STAND_IN_KEY, body.as_bytes()),
        "body": body,
    });
    format!("id: {id}\nevent: delivery\ndata: {delivery}\n\n")
}

/// `--record` keeps every delivery received, before the filters; the
/// recording replays with no server to a receiver that verifies each.
#[tokio::test(flavor = "multi_thread")]
async fn the_recording_holds_every_delivery_and_replays_without_a_server() {
    const A: &str = "SHP-AAAA-AAAA";
    const B: &str = "SHP-BBBB-BBBB";
    let text = format!(
        "{}{}{}{}",
        ready_event(STAND_IN_KEY),
        delivery_event(1, A, 1, "assigned_to_courier"),
        delivery_event(2, B, 1, "assigned_to_courier"),
        delivery_event(3, A, 2, "assigned_to_driver"),
    );
    let (base, _) = stand_in(move |_, stream| {
        let _ = event_stream(stream, &text);
        std::thread::sleep(Duration::from_secs(30));
    });
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("deliveries.ndjson");
    // A line from an earlier run stays: the file is appended to.
    let earlier = {
        let body = format!(r#"{{"code":"{A}","version":0,"status":"pending"}}"#);
        serde_json::json!({
            "delivery_id": "dlv_0_l",
            "received_at": "2026-11-24T09:00:00Z",
            "shipment_code": A,
            "version": 0,
            "headers": {
                "X-Service-Signature": webhook_verify::sign(STAND_IN_KEY, body.as_bytes()),
                "X-Service-Delivery-Id": "dlv_0_l",
            },
            "body": body,
        })
    };
    std::fs::write(&recording, format!("{earlier}\n")).unwrap();
    let run = shipctl_at(&base)
        .run_async(&[
            "listen",
            "--code",
            A,
            "--count",
            "2",
            "--record",
            recording.to_str().unwrap(),
        ])
        .await
        .ok();
    assert_eq!(run.stdout.lines().count(), 2, "{run}");
    assert!(!run.stdout.contains(B), "{run}");
    let recorded = records(&recording);
    let ids: Vec<&str> = recorded
        .iter()
        .map(|r| r["delivery_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["dlv_0_l", "dlv_1_l", "dlv_2_l", "dlv_3_l"]);

    // Replayed in order, no server, no configuration.
    let (url, received) = local_app(StatusCode::OK).await;
    let replay = replay_offline(&recording, &url, &["-o", "ndjson"])
        .await
        .ok();
    let got = receive(&received, 4);
    assert_eq!(got.len(), 4, "{replay}");
    for (got, r) in got.iter().zip(&recorded) {
        assert_sent_as_recorded(got, r, STAND_IN_KEY);
    }
    let lines: Vec<Value> = replay
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[3]["delivery_id"], "dlv_3_l");
    assert_eq!(lines[3]["status"], "assigned_to_driver");
    assert_eq!(lines[3]["response_status"], 200);

    // The recording keeps each webhook-id (not the earlier line, written
    // before there were any); without the key, no Standard Webhooks
    // header is sent, and the note says how to sign them anew.
    let kept: Vec<Option<&str>> = recorded
        .iter()
        .map(|r| r["headers"]["webhook-id"].as_str())
        .collect();
    assert_eq!(
        kept,
        [None, Some("msg_1_l"), Some("msg_2_l"), Some("msg_3_l")]
    );
    for got in &got {
        for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
            assert!(!got.headers.contains_key(name), "{name} sent without a key");
        }
    }
    assert!(replay.stderr.contains("give --signing-key"), "{replay}");
    // With the listener signing key, each is signed anew when it is sent:
    // a timestamp of now, the webhook-id kept (made from the delivery id
    // for the earlier line), both signatures with that key.
    let resigned = replay_offline(&recording, &url, &["--signing-key", STAND_IN_KEY])
        .await
        .ok();
    let got = receive(&received, 4);
    assert_eq!(got.len(), 4, "{resigned}");
    for (got, r) in got.iter().zip(&recorded) {
        assert_sent_as_recorded(got, r, STAND_IN_KEY);
        assert_standard(got, STAND_IN_KEY);
    }
    assert!(
        !resigned.stderr.contains("give --signing-key"),
        "{resigned}"
    );
    // A key that cannot sign is a usage error, before anything is sent,
    // and the message does not repeat it.
    let bad = "whsec_not base64!";
    let run = replay_offline(&recording, &url, &["--signing-key", bad])
        .await
        .expect_code(2);
    assert!(
        run.stderr.contains("--signing-key is not a signing key"),
        "{run}"
    );
    assert!(!run.stderr.contains(bad), "{run}");
    assert!(
        received.recv_timeout(Duration::from_millis(300)).is_err(),
        "nothing sent"
    );

    // A file with a bad line sends nothing.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&recording)
        .unwrap();
    writeln!(file, "{{\"delivery_id\":").unwrap();
    let run = replay_offline(&recording, &url, &[]).await.expect_code(2);
    assert!(run.stderr.contains("line 5 is not a delivery"), "{run}");
    assert!(
        received.recv_timeout(Duration::from_millis(300)).is_err(),
        "nothing sent"
    );
}
