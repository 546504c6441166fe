//! What a service `shipctl` does not control can put in its answers:
//! control characters that a terminal would obey (`ESC]0;…BEL` sets the
//! window title, `ESC[2J` clears the screen, U+009B is a one-byte CSI).
//! Human output shows them escaped (`\u{1b}`), on every path: detail views,
//! tables, errors and their hints, `doctor`; `-o json` keeps them exact.
//!
//! The reference server refuses such text, so a stand-in plays a hostile
//! service here. `--color always` makes `shipctl` write as it would to a
//! terminal (without it, `anstream` strips escape sequences from a pipe,
//! which would hide the defect).

use axum::Router;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::helpers::{Run, Shipctl};

/// Sets the window title, rings the bell, clears the screen, then a C1 CSI
/// (`U+009B`), a DEL and a NUL.
pub const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{7f}\u{0}";
/// [`HOSTILE`] as `shipctl` shows it.
pub const SHOWN: &str = r"\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{7f}\u{0}";

const CODE: &str = "SHP-7K3M-Q9ZX";

/// A shipment whose every free text carries [`HOSTILE`].
fn shipment() -> Value {
    json!({
        "id": 1,
        "code": CODE,
        "merchant_id": 1,
        "status": format!("failed{HOSTILE}"),
        "courier_company_id": 1,
        "assigned_driver_id": null,
        "description": format!("Two boxes{HOSTILE}"),
        "weight_kg": 4.5,
        "dimensions": format!("30x20x10{HOSTILE}"),
        "items": [format!("book{HOSTILE}"), "lamp"],
        "start_address": format!("Berlin{HOSTILE}"),
        "end_address": "Amsterdam\r\nline two\tcolumn",
        "total_fee": 69.4,
        "webhook_url": null,
        "version": 1,
        "rating": null,
        "failure_reason": format!("the courier says{HOSTILE}"),
        "created_at": "2026-11-24T09:00:00Z",
        "assigned_to_courier_at": "2026-11-24T09:00:00Z",
        "assigned_to_driver_at": null,
        "picked_up_at": null,
        "delivered_at": null,
        "failed_at": null,
        "returned_at": null,
        "cancelled_at": null,
        "rated_at": null,
        "updated_at": "2026-11-24T09:00:00Z"
    })
}

fn problem(status: StatusCode) -> Response {
    let body = json!({
        "type": "about:blank",
        "title": "Error",
        "status": status.as_u16(),
        "detail": format!("refused{HOSTILE}"),
        "code": format!("invalid_state{HOSTILE}"),
        "request_id": format!("req{HOSTILE}"),
    });
    (
        status,
        [(header::CONTENT_TYPE, "application/problem+json")],
        body.to_string(),
    )
        .into_response()
}

/// The hostile service: a shipment to read and list, a cancel it refuses,
/// and an API key it refuses (what `doctor` shows).
pub async fn hostile_service() -> String {
    let app = Router::new().fallback(|method: Method, uri: Uri| async move {
        let path = uri.path().trim_start_matches("/api/v1");
        match (method, path) {
            (Method::GET, "/shipments") => axum::Json(json!({
                "data": [shipment()],
                "page": 1,
                "page_size": 20,
                "total": 1,
                "total_pages": 1,
            }))
            .into_response(),
            (Method::GET, p) if p == format!("/shipments/{CODE}") => {
                axum::Json(shipment()).into_response()
            }
            (Method::POST, p) if p.ends_with("/cancel") => problem(StatusCode::CONFLICT),
            (Method::GET, "/merchant-couriers") => problem(StatusCode::UNAUTHORIZED),
            _ => problem(StatusCode::NOT_FOUND),
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://127.0.0.1:{port}/api/v1")
}

/// Asserts that none of [`HOSTILE`]'s characters reached the output, and
/// that `expected` escaped texts did (each at least once).
#[track_caller]
pub fn assert_escaped(run: &Run, expected: &[&str]) {
    let text = format!("{}{}", run.stdout, run.stderr);
    // `--color always` styles use ESC themselves: the hostile sequences
    // are looked for instead.
    for c in HOSTILE.chars().filter(|c| c.is_control() && *c != '\u{1b}') {
        assert!(!text.contains(c), "U+{:04X} written raw:\n{run}", c as u32);
    }
    for raw in ["\u{1b}]0;", "\u{1b}[2J"] {
        assert!(!text.contains(raw), "{raw:?} written raw:\n{run}");
    }
    for shown in expected {
        assert!(text.contains(shown), "{shown} not shown:\n{run}");
    }
}

fn shipctl_at(base: &str) -> Shipctl {
    Shipctl::new()
        .env("SHIPCTL_BASE_URL", base)
        .env("SHIPCTL_API_KEY", "sk_test_0123456789abcdefghijABCDEFGHIJ")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_detail_view_and_a_table_show_control_characters_escaped() {
    let shipctl = shipctl_at(&hostile_service().await);
    let run = shipctl
        .run_async(&["--color", "always", "shipments", "get", CODE])
        .await
        .ok();
    for field in [
        "Two boxes",
        "30x20x10",
        "book",
        "Berlin",
        "the courier says",
        "failed",
    ] {
        assert_escaped(&run, &[&format!("{field}{SHOWN}")]);
    }
    // Newlines, carriage returns and tabs keep a field on its line.
    assert_escaped(&run, &[r"Amsterdam\r\nline two\tcolumn"]);

    let run = shipctl
        .run_async(&["--color", "always", "shipments", "list"])
        .await
        .ok();
    assert_escaped(&run, &[&format!("failed{SHOWN}")]);
}

#[tokio::test(flavor = "multi_thread")]
async fn json_output_keeps_the_text_exact() {
    let shipctl = shipctl_at(&hostile_service().await);
    for format in ["json", "ndjson"] {
        let run = shipctl
            .run_async(&["shipments", "get", CODE, "-o", format])
            .await
            .ok();
        let got: Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(got["description"], format!("Two boxes{HOSTILE}"), "{run}");
        assert_eq!(got["end_address"], "Amsterdam\r\nline two\tcolumn");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_and_doctor_show_control_characters_escaped() {
    let shipctl = shipctl_at(&hostile_service().await);
    let run = shipctl
        .run_async(&["--color", "always", "shipments", "cancel", CODE])
        .await
        .expect_code(5);
    assert_escaped(
        &run,
        &[
            &format!("refused{SHOWN}"),
            &format!("invalid_state{SHOWN}"),
            &format!("req{SHOWN}"),
        ],
    );

    let run = shipctl
        .run_async(&["--color", "always", "doctor"])
        .await
        .expect_code(1);
    assert_escaped(&run, &[&format!("refused{SHOWN}")]);
}
