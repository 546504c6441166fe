//! `shipctl`'s API-key commands (`couriers`, `shipments`) against the real
//! reference server (`shipment_testkit::TestApp`), a fresh database per
//! test, on SQLite and (with `TEST_DATABASE_URL`) PostgreSQL. The commands
//! of a signed-in merchant are in `dashboard.rs`.

use std::io::{BufRead as _, BufReader};
use std::sync::mpsc;
use std::time::Duration;

use shipment_testkit::{Fixture, TestApp, db_tests};

use crate::helpers::{Run, Shipctl};
use crate::snapshot;

db_tests!(
    shipments_are_created_listed_and_read,
    shipments_are_cancelled_rated_and_given_a_confirmation_code,
    list_all_streams_every_page,
    a_repeated_create_with_one_idempotency_key_makes_one_shipment,
    the_services_refusals_map_to_exit_codes,
    watch_follows_a_shipment_to_the_end,
);

/// A `shipctl` pointed at `server` with the fixture's API key.
fn shipctl_for(server: &TestApp, f: &Fixture) -> Shipctl {
    Shipctl::new()
        .env("SHIPCTL_BASE_URL", &server.base)
        .env("SHIPCTL_API_KEY", &f.key)
}

async fn create(shipctl: &Shipctl, f: &Fixture, description: &str) -> String {
    let courier = f.courier_id.to_string();
    let run = shipctl
        .run_async(&[
            "shipments",
            "create",
            "--courier",
            &courier,
            "--weight",
            "2",
            "--description",
            description,
            "-o",
            "json",
        ])
        .await
        .ok();
    run.json()["code"].as_str().unwrap().to_owned()
}

async fn shipments_are_created_listed_and_read(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f);

    let run = shipctl.run_async(&["couriers", "list"]).await.ok();
    snapshot!("couriers_list", run);
    let couriers = shipctl
        .run_async(&["couriers", "list", "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(couriers[0]["id"], f.courier_id);

    let courier = f.courier_id.to_string();
    let run = shipctl
        .run_async(&[
            "shipments",
            "create",
            "--courier",
            &courier,
            "--weight",
            "4.5",
            "--dimensions",
            "30x20x10 cm",
            "--from",
            "52.5200,13.4050",
            "--to",
            "52.3759,4.8975",
            "--item",
            "book",
            "--item",
            "lamp",
            "--description",
            "Two boxes",
        ])
        .await
        .ok();
    snapshot!("shipments_create_table", run);
    let code = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("code"))
        .unwrap()
        .trim()
        .to_owned();

    // The same shipment as JSON, through get.
    let got = shipctl
        .run_async(&["shipments", "get", &code, "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(got["code"], code.as_str());
    assert_eq!(got["items"], serde_json::json!(["book", "lamp"]));
    assert_eq!(got["status"], "assigned_to_courier");
    snapshot!(
        "shipments_get_json",
        shipctl
            .run_async(&["shipments", "get", &code, "-o", "json"])
            .await
            .ok()
    );

    // From a file on stdin, in the API's own shape.
    let body = format!(r#"{{"courier_company_id": {courier}, "weight_kg": 1, "items": ["mug"]}}"#);
    let from_file = shipctl
        .run_with_stdin_async(
            &["shipments", "create", "--file", "-", "-o", "json"],
            body.as_bytes(),
        )
        .await
        .ok()
        .json();
    assert_eq!(from_file["items"], serde_json::json!(["mug"]));

    let run = shipctl.run_async(&["shipments", "list"]).await.ok();
    snapshot!("shipments_list_table", run);
    let run = shipctl
        .run_async(&["shipments", "list", "-o", "ndjson"])
        .await
        .ok();
    let lines: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one object per line"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["code"], code.as_str(), "newest first");
    assert_eq!(run.stderr, "", "no page summary outside tables");
    let run = shipctl
        .run_async(&[
            "shipments",
            "list",
            "-o",
            "json",
            "--page-size",
            "1",
            "--page",
            "2",
        ])
        .await
        .ok();
    assert_eq!(run.json().as_array().unwrap().len(), 1);
    assert_eq!(run.json()[0]["code"], code.as_str());

    // Filters reach the service.
    let run = shipctl
        .run_async(&["shipments", "list", "-o", "json", "--status", "delivered"])
        .await
        .ok();
    assert_eq!(run.json(), serde_json::json!([]));
    let run = shipctl
        .run_async(&[
            "shipments",
            "list",
            "-o",
            "json",
            "--created-after",
            "2000-01-01",
        ])
        .await
        .ok();
    assert_eq!(run.json().as_array().unwrap().len(), 2);
}

async fn shipments_are_cancelled_rated_and_given_a_confirmation_code(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f);
    let first = create(&shipctl, &f, "to cancel").await;
    let second = create(&shipctl, &f, "to deliver").await;

    let run = shipctl
        .run_async(&["shipments", "cancel", &first])
        .await
        .ok();
    snapshot!("shipments_cancel_table", run);
    // Cancelling again is harmless.
    let again = shipctl
        .run_async(&["shipments", "cancel", &first, "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(again["status"], "cancelled");

    let run = shipctl
        .run_async(&["shipments", "confirmation-code", &second])
        .await
        .ok();
    snapshot!("shipments_confirmation_code", run);
    let generated = shipctl
        .run_async(&["shipments", "confirmation-code", &second, "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(generated["code"], second.as_str());
    assert_eq!(generated["confirmation_code"].as_str().unwrap().len(), 6);

    // Rating waits for delivery.
    let run = shipctl
        .run_async(&["shipments", "rate", &second, "9"])
        .await
        .expect_code(5);
    snapshot!("shipments_rate_before_delivery", run);
    server
        .courier_step(
            &f,
            &second,
            "assign-driver",
            Some(serde_json::json!({"driver_id": f.driver_id})),
        )
        .await;
    server.courier_step(&f, &second, "pickup", None).await;
    server
        .courier_step(
            &f,
            &second,
            "deliver",
            Some(serde_json::json!({
                "confirmation_code": generated["confirmation_code"]
            })),
        )
        .await;
    let rated = shipctl
        .run_async(&["shipments", "rate", &second, "9", "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(rated["rating"], 9);
    let run = shipctl
        .run_async(&["shipments", "rate", &second, "3"])
        .await
        .expect_code(5);
    snapshot!("shipments_rate_twice", run);
    let run = shipctl
        .run_async(&["shipments", "cancel", &second])
        .await
        .expect_code(5);
    assert!(run.stderr.contains("invalid_state"), "{run}");
}

async fn list_all_streams_every_page(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f);
    let mut codes = Vec::new();
    for i in 0..5 {
        codes.push(create(&shipctl, &f, &format!("parcel {i}")).await);
    }
    codes.reverse();
    let run = shipctl
        .run_async(&[
            "shipments",
            "list",
            "--all",
            "--page-size",
            "2",
            "-o",
            "ndjson",
        ])
        .await
        .ok();
    let streamed: Vec<String> = run
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["code"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(streamed, codes, "every page, newest first, each once");

    let run = shipctl
        .run_async(&[
            "shipments",
            "list",
            "--all",
            "--page-size",
            "2",
            "-o",
            "json",
        ])
        .await
        .ok();
    assert_eq!(run.json().as_array().unwrap().len(), 5);

    let run = shipctl
        .run_async(&["shipments", "list", "--all", "--page-size", "2"])
        .await
        .ok();
    assert_eq!(
        run.stdout.lines().count(),
        6,
        "a header and five rows:\n{run}"
    );
    assert_eq!(run.stderr, "5 shipments\n");
}

async fn a_repeated_create_with_one_idempotency_key_makes_one_shipment(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f);
    let courier = f.courier_id.to_string();
    let args = [
        "shipments",
        "create",
        "--courier",
        &courier,
        "--idempotency-key",
        "order-1234",
        "-o",
        "json",
    ];
    let first = shipctl.run_async(&args).await.ok().json();
    let second = shipctl.run_async(&args).await.ok().json();
    assert_eq!(first["code"], second["code"]);
    // In a table, a note says that nothing new was made.
    let code = first["code"].as_str().unwrap();
    let table = shipctl.run_async(&args[..6]).await.ok();
    assert!(table.stdout.contains(code), "{table}");
    assert!(
        table
            .stderr
            .contains("this idempotency key was used before")
            && table.stderr.contains(code),
        "{table}"
    );
    let all = shipctl
        .run_async(&["shipments", "list", "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(all.as_array().unwrap().len(), 1);
}

async fn the_services_refusals_map_to_exit_codes(server: &TestApp) {
    let f = server.fixture().await;
    let other = server.fixture().await;
    let shipctl = shipctl_for(server, &f);
    let mine = create(&shipctl, &f, "mine").await;
    let theirs = create(&shipctl_for(server, &other), &other, "theirs").await;

    let mut all = String::new();
    let mut record = |what: &str, run: Run| {
        all.push_str(&format!("# {what}\n{run}\n"));
    };
    record(
        "not found: 4",
        shipctl
            .run_async(&["shipments", "get", "SHP-ZZZZ-ZZZZ"])
            .await
            .expect_code(4),
    );
    record(
        "another merchant's shipment: 3",
        shipctl
            .run_async(&["shipments", "get", &theirs])
            .await
            .expect_code(3),
    );
    record(
        "a malformed code, never sent: 2",
        shipctl
            .run_async(&["shipments", "get", "not-a-code"])
            .await
            .expect_code(2),
    );
    record(
        "a courier that is not linked: 1",
        shipctl
            .run_async(&["shipments", "create", "--courier", "999999"])
            .await
            .expect_code(1),
    );
    let revoked = Shipctl::new().env("SHIPCTL_BASE_URL", &server.base).env(
        "SHIPCTL_API_KEY",
        "sk_test_0000000000000000000000000000ZZZZ",
    );
    record(
        "an unknown key: 3",
        revoked
            .run_async(&["shipments", "get", &mine])
            .await
            .expect_code(3),
    );
    snapshot!("refusals", all);
}

async fn watch_follows_a_shipment_to_the_end(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f);
    let code = create(&shipctl, &f, "watched").await;
    let mut child = shipctl.spawn(&["shipments", "watch", &code, "--interval", "50ms"]);
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let next_line = || {
        rx.recv_timeout(Duration::from_secs(20))
            .expect("watch prints each change")
    };
    let mut lines = vec![tokio::task::block_in_place(next_line)];
    for (op, body) in [
        (
            "assign-driver",
            Some(serde_json::json!({"driver_id": f.driver_id})),
        ),
        ("pickup", None),
        ("fail", Some(serde_json::json!({"reason": "nobody home"}))),
        ("return", None),
    ] {
        server.courier_step(&f, &code, op, body).await;
        lines.push(tokio::task::block_in_place(next_line));
    }
    let status = tokio::task::block_in_place(|| child.wait()).unwrap();
    assert_eq!(status.code(), Some(0), "watch ends at a final state");
    let mut text = lines.join("\n");
    text.push('\n');
    snapshot!("shipments_watch", text);
}
