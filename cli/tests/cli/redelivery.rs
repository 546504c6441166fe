//! `shipctl webhooks redeliver` and `shipctl shipments deliveries` against
//! the real reference server, on SQLite and (with `TEST_DATABASE_URL`)
//! PostgreSQL: what they print, what they queue, and how they fail.

use std::time::Duration;

use serde_json::{Value, json};

use shipment_testkit::{TestApp, db_tests};

use crate::helpers::Shipctl;
use crate::snapshot;

db_tests!(deliveries_are_sent_again_and_a_shipments_history_is_listed);

db_tests!(
    config = |c| c.webhooks.redeliveries_per_minute = 1;
    a_run_the_budget_cuts_says_when_to_run_it_again,
);

/// `webhooks deliveries ID -o json` once it lists `n` attempts.
async fn log_of(shipctl: &Shipctl, id: &str, n: usize) -> Vec<Value> {
    for _ in 0..200 {
        let logged = shipctl
            .run_async(&["webhooks", "deliveries", id, "-o", "json"])
            .await
            .ok()
            .json();
        let rows = logged.as_array().unwrap();
        if rows.len() >= n {
            return rows.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the delivery log of webhook {id} never reached {n} entries");
}

async fn deliveries_are_sent_again_and_a_shipments_history_is_listed(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let shipctl = Shipctl::new()
        .env("SHIPCTL_BASE_URL", &server.base)
        .env("SHIPCTL_EMAIL", &f.email);

    // The history is read with the dashboard session, not the API key.
    let run = shipctl
        .clone()
        .env("SHIPCTL_API_KEY", &f.key)
        .run_async(&["shipments", "deliveries", "SHP-0000-0000"])
        .await
        .expect_code(3);
    assert_eq!(
        run.stderr,
        "error: not signed in\nhint: run `shipctl login`\n"
    );
    shipctl
        .run_with_stdin_async(
            &["login", "--password-stdin"],
            f.password.clone().unwrap().as_bytes(),
        )
        .await
        .ok();

    // Nothing listens on port 9: every attempt fails, first and again.
    let url = "https://127.0.0.1:9/hooks/shipments";
    let hook = shipctl
        .run_async(&["webhooks", "register", url, "-o", "json"])
        .await
        .ok()
        .json();
    let id = hook["webhook_id"].to_string();
    let created = shipctl
        .clone()
        .env("SHIPCTL_API_KEY", &f.key)
        .run_async(&[
            "shipments",
            "create",
            "--courier",
            &f.courier_id.to_string(),
            "-o",
            "json",
        ])
        .await
        .ok()
        .json();
    let code = created["code"].as_str().unwrap().to_owned();
    let first = log_of(&shipctl, &id, 1).await[0]["id"].to_string();

    let run = shipctl
        .run_async(&["webhooks", "redeliver", &id, &first])
        .await
        .ok();
    snapshot!("webhooks_redeliver", run);
    let log = log_of(&shipctl, &id, 2).await;
    assert_eq!(log[0]["redelivery_of"].to_string(), first, "{log:?}");
    assert_eq!(log[0]["version"], 1);

    // Failures since a time: the one change, once, naming its latest
    // failed attempt.
    let queued = shipctl
        .run_async(&[
            "webhooks",
            "redeliver",
            &id,
            "--failed-since",
            "2000-01-01",
            "-o",
            "json",
        ])
        .await
        .ok()
        .json();
    assert_eq!(queued, json!({"queued": 1, "truncated": false}));
    let log = log_of(&shipctl, &id, 3).await;
    assert_eq!(log[0]["redelivery_of"], log[1]["id"]);
    let run = shipctl
        .run_async(&[
            "webhooks",
            "redeliver",
            &id,
            "--failed-since",
            "2000-01-01",
            "--failed-until",
            "2000-01-02T00:00:00Z",
        ])
        .await
        .ok();
    snapshot!("webhooks_redeliver_failures_none", run);
    let run = shipctl
        .run_async(&["webhooks", "deliveries", &id])
        .await
        .ok();
    snapshot!("webhooks_deliveries_redelivered", run);

    // The shipment's history: the same attempts, with the webhook.
    let run = shipctl
        .run_async(&["shipments", "deliveries", &code])
        .await
        .ok();
    snapshot!("shipments_deliveries", run);
    let history = shipctl
        .run_async(&["shipments", "deliveries", &code, "-o", "json"])
        .await
        .ok()
        .json();
    let rows = history.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|d| d["webhook_id"] == hook["webhook_id"]));
    assert!(rows[2]["redelivery_of"].is_null());
    let run = shipctl
        .run_async(&[
            "shipments",
            "deliveries",
            &code,
            "--all",
            "--page-size",
            "1",
        ])
        .await
        .ok();
    assert_eq!(run.stdout.lines().count(), 4, "a header and 3 rows: {run}");
    assert_eq!(run.stderr, "3 deliveries\n");
    let run = shipctl
        .run_async(&["shipments", "deliveries", &code, "--page-size", "2"])
        .await
        .ok();
    assert_eq!(
        run.stderr,
        "page 1 of 2 (3 deliveries); next: --page 2, or --all\n"
    );

    // Refusals: exit codes and the command that helps.
    let run = shipctl
        .run_async(&["webhooks", "redeliver", &id, "999999"])
        .await
        .expect_code(4);
    snapshot!("webhooks_redeliver_unknown_delivery", run);
    let run = shipctl
        .run_async(&["shipments", "deliveries", "SHP-0000-0000"])
        .await
        .expect_code(4);
    assert!(
        run.stderr
            .ends_with("hint: `shipctl shipments list` shows your shipments\n"),
        "{run}"
    );
    shipctl
        .run_async(&["shipments", "deliveries", "not-a-code"])
        .await
        .expect_code(2);
    let run = shipctl
        .run_async(&[
            "webhooks",
            "redeliver",
            &id,
            "--failed-since",
            "2030-01-02",
            "--failed-until",
            "2030-01-01",
        ])
        .await
        .expect_code(1);
    assert!(
        run.stderr.contains("`failed_until` must not be before"),
        "{run}"
    );
}

/// A budget of one redelivered change a minute and two failed changes:
/// the run queues one and says in how many seconds to run it again (the
/// answer's `Retry-After`), not to rerun at once; a rerun before then is
/// refused with exit 6.
async fn a_run_the_budget_cuts_says_when_to_run_it_again(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let shipctl = Shipctl::new()
        .env("SHIPCTL_BASE_URL", &server.base)
        .env("SHIPCTL_EMAIL", &f.email);
    shipctl
        .run_with_stdin_async(
            &["login", "--password-stdin"],
            f.password.clone().unwrap().as_bytes(),
        )
        .await
        .ok();
    // Nothing listens on port 9: every attempt fails.
    let hook = shipctl
        .run_async(&[
            "webhooks",
            "register",
            "https://127.0.0.1:9/hooks/shipments",
            "-o",
            "json",
        ])
        .await
        .ok()
        .json();
    let id = hook["webhook_id"].to_string();
    server.create_default(&f).await;
    server.create_default(&f).await;
    log_of(&shipctl, &id, 2).await;

    let args = ["webhooks", "redeliver", &id, "--failed-since", "2000-01-01"];
    let run = shipctl.run_async(&args).await.ok();
    snapshot!("webhooks_redeliver_cut_by_the_budget", run);
    let run = shipctl.run_async(&args).await.expect_code(6);
    assert!(
        run.stderr.starts_with("error: ") && run.stderr.contains("try again"),
        "{run}"
    );
}

#[test]
fn redeliver_takes_a_delivery_or_a_time_but_not_both() {
    let shipctl = Shipctl::new();
    for args in [
        &["webhooks", "redeliver", "1"][..],
        &[
            "webhooks",
            "redeliver",
            "1",
            "2",
            "--failed-since",
            "2026-11-23",
        ],
        &[
            "webhooks",
            "redeliver",
            "1",
            "2",
            "--failed-until",
            "2026-11-23",
        ],
        &["webhooks", "redeliver", "1", "--failed-since", "yesterday"],
    ] {
        let run = shipctl.run(args).expect_code(2);
        assert!(run.stderr.starts_with("error: "), "{args:?}: {run}");
    }
    snapshot!(
        "help_webhooks_redeliver",
        shipctl.run(&["webhooks", "redeliver", "-h"]).ok().stdout
    );
}
