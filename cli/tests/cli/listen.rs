//! `shipctl listen --forward-to`: the real server (private webhook targets
//! NOT allowed: the server never connects to the local app), `shipctl`
//! forwarding each change to a local plain-HTTP receiver, which verifies
//! every body with `webhook-verify` and the key `shipctl` printed.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use shipment_testkit::{Db, TestApp, db_tests};

use crate::listen_helpers::{
    Got, Listening, STAND_IN_KEY, assert_standard, closed_url, create, event_stream, header,
    local_app, local_app_with, merchant, ms_redacted, next_got, ready_event, shipctl_at,
    shipctl_for, stand_in,
};
use crate::snapshot;
use crate::terminal::{HOSTILE, SHOWN};

db_tests!(
    config = |c| c.webhooks.allow_private_webhook_targets = false;
    listen_forwards_every_change_signed_to_a_local_app,
    a_local_app_that_is_down_or_failing_is_shown_not_fatal,
    the_listener_key_is_printed_and_replaced_on_request,
    listen_reconnects_when_the_stream_ends,
    a_key_revoked_while_listening_ends_listen_with_exit_3,
);

db_tests!(db; listen_outlives_a_server_that_stops);

async fn listen_forwards_every_change_signed_to_a_local_app(server: &TestApp) {
    let (f, shipctl) = merchant(server).await;
    let (url, received) = local_app(StatusCode::OK).await;
    let (listening, key) = Listening::start_ready(&shipctl, &["listen", "--forward-to", &url]);

    // Created in the merchant's trace (W3C `traceparent`): the forwarded
    // delivery of that change carries it on, as a webhook delivery does.
    let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let created = server
        .req(reqwest::Method::POST, "/shipments", &f.key)
        .header("traceparent", trace)
        .json(&serde_json::json!({"courier_company_id": f.courier_id}));
    let (status, created) = shipment_testkit::send(created).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let code = created["code"].as_str().unwrap().to_owned();
    server.advance(&f, &code, "delivered").await;

    let got: Vec<Got> =
        tokio::task::block_in_place(|| (0..4).map(|_| next_got(&received)).collect());
    let mut versions = Vec::new();
    for delivery in &got {
        let signature = header(delivery, "x-service-signature");
        assert_eq!(
            webhook_verify::verify(&key, &delivery.body, signature),
            Ok(()),
            "signed with the printed key"
        );
        assert_eq!(delivery.headers["content-type"], "application/json");
        let id = header(delivery, "x-service-delivery-id");
        assert!(id.starts_with("dlv_") && id.ends_with("_l"), "{id}");
        assert_standard(delivery, &key);
        let body: serde_json::Value = serde_json::from_slice(&delivery.body).unwrap();
        assert_eq!(body["code"], code.as_str());
        versions.push(body["version"].as_i64().unwrap());
    }
    assert_eq!(versions, [1, 2, 3, 4]);
    let traces: Vec<Option<&str>> = got
        .iter()
        .map(|d| d.headers.get("traceparent").map(|v| v.to_str().unwrap()))
        .collect();
    assert_eq!(traces, [Some(trace), None, None, None]);
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

    let (code, stderr) = listening.interrupt();
    assert_eq!(code, Some(0), "Ctrl-C ends it cleanly: {stderr:?}");
    assert!(stderr.iter().any(|l| l == "Stopped."), "{stderr:?}");
}

async fn a_local_app_that_is_down_or_failing_is_shown_not_fatal(server: &TestApp) {
    let (f, shipctl) = merchant(server).await;
    // Nothing listens on a port just freed.
    let closed = closed_url("/webhooks");
    let (down, _) = Listening::start_ready(
        &shipctl,
        &["listen", "--forward-to", &closed, "-o", "ndjson"],
    );
    let (failing_url, failing) = local_app(StatusCode::INTERNAL_SERVER_ERROR).await;
    let (refused, _) = Listening::start_ready(&shipctl, &["listen", "--forward-to", &failing_url]);

    let code = create(server, &f).await;
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
            next_got(&failing);
            let line = refused.line();
            assert!(line.contains("-> the local app answered 500"), "{line}");
        }
    });
    // Still running after the failures; Ctrl-C ends both cleanly.
    for listening in [down, refused] {
        let (code, _) = listening.interrupt();
        assert_eq!(code, Some(0));
    }
}

async fn the_listener_key_is_printed_and_replaced_on_request(server: &TestApp) {
    let (_, shipctl) = merchant(server).await;
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

    // Usage: --max-wait needs something to wait for, and an address must
    // be http(s).
    let run = shipctl
        .run_async(&["listen", "--max-wait", "1m"])
        .await
        .expect_code(2);
    assert!(run.stderr.contains("--until-status"), "{run}");
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
    let (f, shipctl) = merchant(server).await;
    let (url, received) = local_app(StatusCode::OK).await;
    let (listening, old_key) = Listening::start_ready(&shipctl, &["listen", "--forward-to", &url]);
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
    assert_eq!(notes, ["The stream ended; reconnecting in 1 s"]);

    server.create_default(&f).await;
    let got = tokio::task::block_in_place(|| next_got(&received));
    let signature = header(&got, "x-service-signature");
    assert_eq!(
        webhook_verify::verify(&new_key, &got.body, signature),
        Ok(())
    );
    let (code, _) = listening.interrupt();
    assert_eq!(code, Some(0));
}

/// The listener key rotated by the session ends the stream of a key that
/// was deleted meanwhile: the reconnection is refused (401), and `listen`
/// ends with exit code 3 and the usual hint, instead of retrying.
async fn a_key_revoked_while_listening_ends_listen_with_exit_3(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let (url, _received) = local_app(StatusCode::OK).await;
    let shipctl = shipctl_for(server, &f.key);
    let (listening, _) = Listening::start_ready(&shipctl, &["listen", "--forward-to", &url]);
    let (email, password) = f.credentials();
    let token = server.login(&email, &password).await;
    let (status, keys) =
        shipment_testkit::send(server.bearer(reqwest::Method::GET, "/api-keys", &token)).await;
    assert_eq!(status, 200, "{keys}");
    let last4 = &f.key[f.key.len() - 4..];
    let keys = keys["data"].as_array().unwrap();
    let id = keys
        .iter()
        .find(|k| k["last4"] == last4)
        .unwrap_or_else(|| panic!("the fixture's key in {keys:?}"))["id"]
        .to_string();
    let (status, _) = shipment_testkit::send(server.bearer(
        reqwest::Method::DELETE,
        &format!("/api-keys/{id}"),
        &token,
    ))
    .await;
    assert_eq!(status, 204);
    // Ends every listener's stream (if the deletion did not already).
    let (status, _) = shipment_testkit::send(server.bearer(
        reqwest::Method::POST,
        "/webhooks/listener-signing-key",
        &token,
    ))
    .await;
    assert!(status.is_success(), "{status}");

    let (code, stderr) = tokio::task::block_in_place(|| listening.wait_for_exit());
    assert_eq!(code, Some(3), "{stderr:?}");
    let text = stderr.join("\n");
    assert!(text.contains("error: "), "{text}");
    assert!(text.contains("HTTP 401"), "{text}");
    assert!(text.contains("hint: the API key was refused"), "{text}");
}

/// A server that shuts down ends its streams cleanly: `listen` keeps
/// trying, with back-off, instead of ending with "error sending request".
async fn listen_outlives_a_server_that_stops(db: Db) {
    let Some(server) = TestApp::spawn(db).await else {
        return;
    };
    let (_, shipctl) = merchant(&server).await;
    let (url, _received) = local_app(StatusCode::OK).await;
    let (mut listening, _) = Listening::start_ready(&shipctl, &["listen", "--forward-to", &url]);
    server.stop().await;
    let notes: Vec<String> = tokio::task::block_in_place(|| {
        (0..2)
            .map(|_| listening.note("a note per attempt"))
            .collect()
    });
    assert!(
        listening.child.try_wait().unwrap().is_none(),
        "listen is still running: {notes:?}"
    );
    // Ended by the shutdown (or cut by it, should it close the socket first).
    assert!(notes[0].starts_with("The stream "), "{notes:?}");
    assert!(
        notes[1].starts_with("Cannot reach the service"),
        "{notes:?}"
    );
    assert!(notes[1].ends_with("reconnecting in 2 s"), "{notes:?}");
    let (code, _) = listening.interrupt();
    assert_eq!(code, Some(0));
}

/// A stream that ends right after `ready` is reconnected after a pause
/// that grows (1 s, 2 s, 4 s ...), not at once: before, 827 connections in
/// 4 s. `ready` alone does not make a stream healthy.
#[tokio::test(flavor = "multi_thread")]
async fn a_stream_that_ends_at_once_is_reconnected_with_back_off() {
    let (base, connections) = stand_in(|_, stream| {
        let _ = event_stream(stream, &ready_event(STAND_IN_KEY));
    });
    let (url, _received) = local_app(StatusCode::OK).await;
    let shipctl = shipctl_at(&base);
    let (listening, _) = Listening::start_ready(&shipctl, &["listen", "--forward-to", &url]);
    // Connections at about 0, 1, 3 and 7 s.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let made = connections.load(Ordering::SeqCst);
    let (code, stderr) = listening.interrupt();
    assert_eq!(code, Some(0), "{stderr:?}");
    assert!((2..=4).contains(&made), "{made} connections in 4 s");
    let notes: Vec<&String> = stderr
        .iter()
        .filter(|l| l.starts_with("The stream ended"))
        .collect();
    assert_eq!(
        notes.first().map(|s| s.as_str()),
        Some("The stream ended; reconnecting in 1 s"),
        "{stderr:?}"
    );
    assert_eq!(
        notes.get(1).map(|s| s.as_str()),
        Some("The stream ended; reconnecting in 2 s"),
        "{stderr:?}"
    );
}

/// A stream that ends, then a service that closes the next connection
/// without answering (as one shutting down does): `listen` tries again
/// (before, it ended with "error sending request").
#[tokio::test(flavor = "multi_thread")]
async fn a_connection_closed_without_an_answer_is_tried_again() {
    let (base, connections) = stand_in(|n, stream| match n {
        0 => {
            let _ = event_stream(stream, &ready_event(STAND_IN_KEY));
        }
        1 => {}
        _ => {
            let _ = event_stream(stream, &ready_event(STAND_IN_KEY));
            std::thread::sleep(Duration::from_secs(30));
        }
    });
    let (url, _received) = local_app(StatusCode::OK).await;
    let shipctl = shipctl_at(&base);
    let (listening, _) = Listening::start_ready(&shipctl, &["listen", "--forward-to", &url]);
    let notes: Vec<String> = tokio::task::block_in_place(|| {
        (0..3)
            .map(|_| listening.note("notes until it is connected again"))
            .collect()
    });
    assert_eq!(
        notes[0], "The stream ended; reconnecting in 1 s",
        "{notes:?}"
    );
    assert!(
        notes[1].starts_with("Cannot reach the service"),
        "{notes:?}"
    );
    assert!(notes[1].ends_with("; reconnecting in 2 s"), "{notes:?}");
    assert_eq!(notes[2], "Reconnected", "{notes:?}");
    assert_eq!(connections.load(Ordering::SeqCst), 3);
    let (code, _) = listening.interrupt();
    assert_eq!(code, Some(0));
}

/// An event line that never ends: `listen` drops the connection after
/// 1 MiB and reconnects, instead of reading it into memory for ever.
#[tokio::test(flavor = "multi_thread")]
async fn an_endless_event_drops_the_connection_and_reconnects() {
    let sent = Arc::new(AtomicUsize::new(0));
    let counted = sent.clone();
    let (base, connections) = stand_in(move |n, stream| {
        let _ = event_stream(stream, &ready_event(STAND_IN_KEY));
        if n > 0 {
            // The next stream stays open and quiet.
            std::thread::sleep(Duration::from_secs(30));
            return;
        }
        let _ = stream.write_all(b"data: ");
        let chunk = vec![b'x'; 64 * 1024];
        // Until the reader goes away, or far beyond any limit.
        while counted.load(Ordering::SeqCst) < 512 << 20 && stream.write_all(&chunk).is_ok() {
            counted.fetch_add(chunk.len(), Ordering::SeqCst);
        }
    });
    let (url, _received) = local_app(StatusCode::OK).await;
    let shipctl = shipctl_at(&base);
    let (listening, _) = Listening::start_ready(&shipctl, &["listen", "--forward-to", &url]);
    let note = tokio::task::block_in_place(|| listening.note("a note that the stream broke off"));
    assert!(note.starts_with("The stream broke off"), "{note}");
    assert!(note.contains("longer than 1 MiB"), "{note}");
    let started = Instant::now();
    while connections.load(Ordering::SeqCst) < 2 && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(connections.load(Ordering::SeqCst), 2, "reconnected");
    // What was written before the connection dropped: 1 MiB, and what the
    // sockets' buffers took.
    let written = sent.load(Ordering::SeqCst);
    assert!(written < 64 << 20, "{written} bytes written");
    let (code, _) = listening.interrupt();
    assert_eq!(code, Some(0));
}

/// What the stream carries is shown escaped on the `listen` line and in
/// the ready line; the local app still gets the body byte for byte.
#[tokio::test(flavor = "multi_thread")]
async fn listen_lines_show_control_characters_escaped() {
    let body =
        serde_json::json!({ "code": "SHP-7K3M-Q9ZX", "status": format!("delivered{HOSTILE}") })
            .to_string();
    let delivery = serde_json::json!({
        "delivery_id": "dlv_7_l",
        "shipment_code": format!("SHP-7K3M-Q9ZX{HOSTILE}"),
        "version": 3,
        "signature": "sha256=00",
        "body": body,
    });
    let stream_text = format!(
        "{}id: 7\nevent: delivery\ndata: {delivery}\n\n",
        ready_event(&format!("whsec_key{HOSTILE}"))
    );
    let (base, _) = stand_in(move |_, stream| {
        let _ = event_stream(stream, &stream_text);
        std::thread::sleep(Duration::from_secs(30));
    });
    let (url, received) = local_app(StatusCode::OK).await;
    let shipctl = shipctl_at(&base);
    let listening = tokio::task::block_in_place(|| {
        Listening::start(
            &shipctl,
            &["--color", "always", "listen", "--forward-to", &url],
        )
    });
    let (key, line, got) = tokio::task::block_in_place(|| {
        let (key, _) = listening.ready_after();
        let line = listening.line();
        (key, line, next_got(&received))
    });
    assert_eq!(got.body, body.as_bytes());
    assert_eq!(key, format!("whsec_key{SHOWN}"));
    assert!(
        line.contains(&format!("SHP-7K3M-Q9ZX{SHOWN}  v3")),
        "{line:?}"
    );
    assert!(line.contains(&format!("delivered{SHOWN}")), "{line:?}");
    assert!(
        !line.contains(['\u{7}', '\u{9b}', '\u{7f}', '\u{0}']),
        "{line:?}"
    );
    let (code, _) = listening.interrupt();
    assert_eq!(code, Some(0));
}

/// A local app that answers with a redirect is shown with where it points,
/// and not followed: the delivery is not re-posted elsewhere.
#[tokio::test(flavor = "multi_thread")]
async fn a_local_app_that_redirects_is_shown_not_followed() {
    let (elsewhere, elsewhere_got) = local_app(StatusCode::OK).await;
    let (url, received) = local_app_with(
        StatusCode::TEMPORARY_REDIRECT,
        &[("location", elsewhere.clone())],
    )
    .await;
    let body = r#"{"code":"SHP-7K3M-Q9ZX","status":"delivered"}"#;
    let delivery = serde_json::json!({
        "delivery_id": "dlv_7_l",
        "shipment_code": "SHP-7K3M-Q9ZX",
        "version": 3,
        "signature": "sha256=00",
        "body": body,
    });
    let stream_text = format!(
        "{}id: 7\nevent: delivery\ndata: {delivery}\n\n",
        ready_event(STAND_IN_KEY)
    );
    let (base, _) = stand_in(move |_, stream| {
        let _ = event_stream(stream, &stream_text);
        std::thread::sleep(Duration::from_secs(30));
    });
    let shipctl = shipctl_at(&base);
    for format in ["table", "ndjson"] {
        let (listening, _) =
            Listening::start_ready(&shipctl, &["listen", "--forward-to", &url, "-o", format]);
        let line = tokio::task::block_in_place(|| {
            next_got(&received);
            listening.line()
        });
        if format == "table" {
            assert!(
                line.contains(&format!("-> 307, a redirect to {elsewhere} (not followed)")),
                "{line}"
            );
        } else {
            let line: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(line["response_status"], 307, "{line}");
            assert_eq!(line["location"], elsewhere.as_str(), "{line}");
        }
        let (code, _) = listening.interrupt();
        assert_eq!(code, Some(0));
    }
    assert!(
        elsewhere_got
            .recv_timeout(Duration::from_millis(200))
            .is_err(),
        "the redirect was followed"
    );
}
