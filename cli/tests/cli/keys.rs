//! Restricted and expiring keys through `shipctl` against the real
//! reference server, on SQLite and (with `TEST_DATABASE_URL`) PostgreSQL:
//! made with `keys create --permissions/--expires-in`, listed, used from a
//! profile, refused with the permission named, warned of before they
//! expire, and refused once expired. And the flags' bad values, refused
//! before anything is sent.

use serde_json::Value;
use shipment_testkit::{TestApp, db_tests, send};

use crate::helpers::{Run, Shipctl, signed_in};
use crate::snapshot;

db_tests!(
    config = |c| c.test_controls = true;
    a_read_only_key_reads_and_is_refused_every_write_with_the_permission_named,
    a_key_near_its_expiry_warns_once_per_run_then_is_refused_as_expired,
);

/// A `shipctl` at `server` with `key` in its default profile and no
/// session: what support staff are given.
async fn with_key(server: &TestApp, key: &str) -> Shipctl {
    let shipctl = Shipctl::new().env("SHIPCTL_BASE_URL", &server.base);
    shipctl
        .run_with_stdin_async(&["config", "set", "api-key"], format!("{key}\n").as_bytes())
        .await
        .ok();
    shipctl
}

/// How many lines of `run`'s stderr are the expiry warning.
fn warnings(run: &Run) -> usize {
    run.stderr
        .lines()
        .filter(|l| l.starts_with("warning: this API key expires at "))
        .count()
}

async fn a_read_only_key_reads_and_is_refused_every_write_with_the_permission_named(
    server: &TestApp,
) {
    let f = server.fixture_with_login().await;
    let merchant = signed_in(server, &f).await;
    let shipment = server.create_default(&f).await;
    let code = shipment["code"].as_str().unwrap();

    let created = merchant
        .run_async(&[
            "keys",
            "create",
            "--name",
            "support",
            "--permissions",
            "shipments:read,couriers:read",
            "-o",
            "json",
        ])
        .await
        .ok()
        .json();
    let key = created["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("rk_test_"), "{created}");
    assert_eq!(
        created["permissions"],
        serde_json::json!({"shipments": "read", "couriers": "read", "listen": "none", "testing": "none"})
    );
    assert_eq!(created["expires_at"], Value::Null);

    // The list, in each format: `full` for the fixture's key.
    let run = merchant.run_async(&["keys", "list"]).await.ok();
    snapshot!("keys_list_restricted", run);
    let rows: Vec<Value> = merchant
        .run_async(&["keys", "list", "-o", "ndjson"])
        .await
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0]["permissions"],
        Value::Null,
        "the full key: {rows:?}"
    );
    assert_eq!(rows[1]["permissions"]["shipments"], "read", "{rows:?}");
    assert_eq!(rows[1]["expired"], false, "{rows:?}");
    let listed = merchant
        .run_async(&["keys", "list", "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(Value::Array(rows), listed);

    // In a profile of its own: it reads...
    let support = with_key(server, &key).await;
    let run = support
        .run_async(&["shipments", "get", code, "-o", "json"])
        .await
        .ok();
    assert_eq!(run.json()["code"], code);
    support.run_async(&["shipments", "list"]).await.ok();
    support.run_async(&["couriers", "list"]).await.ok();
    let run = support.run_async(&["whoami"]).await.ok();
    snapshot!("whoami_restricted", run);
    let me = support
        .run_async(&["whoami", "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(me["api_key_restricted"], true);
    assert_eq!(me["api_key_permissions"]["couriers"], "read");
    assert_eq!(me["api_key_expires_at"], Value::Null);

    // ...and every write is refused, naming what it needs, exit 3.
    let run = support
        .run_async(&["shipments", "cancel", code])
        .await
        .expect_code(3);
    snapshot!("keys_insufficient_permission", run);
    for args in [
        vec!["shipments", "rate", code, "5"],
        vec!["shipments", "confirmation-code", code],
        vec![
            "shipments",
            "create",
            "--courier",
            &f.courier_id.to_string(),
        ],
    ] {
        let run = support.run_async(&args).await.expect_code(3);
        assert!(
            run.stderr.starts_with(
                "error: this API key may not do this: it needs shipments: write (HTTP 403 \
                 insufficient_permission"
            ),
            "{args:?}: {run}"
        );
    }
    let run = support
        .run_async(&["listen", "--print-secret"])
        .await
        .expect_code(3);
    assert!(run.stderr.contains("it needs listen: read"), "{run}");

    // doctor names what it cannot run, and checks the listener key only
    // with what can see it.
    let run = support.run_async(&["doctor"]).await.ok();
    let access = run
        .stdout
        .lines()
        .find(|l| l.contains("key access"))
        .unwrap_or_else(|| panic!("no key access line: {run}"));
    assert!(access.starts_with("✓"), "{run}");
    assert!(
        access.contains(
            "shipments: read, couriers: read; never expires; cannot run: \
             shipments create/cancel/rate/confirmation-code/import need shipments: write"
        ),
        "{run}"
    );
    assert!(run.stdout.contains("listen: read, or a session"), "{run}");
    assert_eq!(warnings(&run), 0, "{run}");

    // The full key is as it was.
    let full = with_key(server, &f.key).await;
    let run = full.run_async(&["whoami", "-o", "json"]).await.ok();
    assert_eq!(run.json()["api_key_restricted"], false);
    assert_eq!(run.json()["api_key_permissions"]["shipments"], "write");
}

async fn a_key_near_its_expiry_warns_once_per_run_then_is_refused_as_expired(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let merchant = signed_in(server, &f).await;
    let created = merchant
        .run_async(&[
            "keys",
            "create",
            "--name",
            "ci",
            "--expires-in",
            "3d",
            "-o",
            "json",
        ])
        .await
        .ok()
        .json();
    let key = created["key"].as_str().unwrap().to_owned();
    assert!(
        key.starts_with("sk_test_"),
        "a full key that expires: {created}"
    );
    assert!(created["expires_at"].is_string(), "{created}");
    let far = merchant
        .run_async(&["keys", "create", "--expires-in", "30d", "-o", "json"])
        .await
        .ok()
        .json();

    // Every answer carries the warning; each run prints it once, on
    // stderr, whatever number of requests it sends.
    let ci = with_key(server, &key).await;
    let run = ci.run_async(&["couriers", "list", "-o", "json"]).await.ok();
    assert_eq!(warnings(&run), 1, "{run}");
    assert!(run.json().is_array(), "stdout keeps the data only: {run}");
    assert!(
        run.stderr.contains(", in 2 days") || run.stderr.contains(", in 3 days"),
        "{run}"
    );
    // doctor asks the key twice (itself, the listener key): one warning,
    // and a failed check that says to make a new key.
    let run = ci.run_async(&["doctor"]).await.expect_code(1);
    assert_eq!(warnings(&run), 1, "{run}");
    let access = run
        .stdout
        .lines()
        .find(|l| l.contains("key access"))
        .unwrap();
    assert!(
        access.starts_with("✗") && access.contains("full; expires "),
        "{run}"
    );
    assert!(run.stdout.contains("the key stops working soon"), "{run}");
    // A key 30 days from its end is not warned of.
    let quiet = with_key(server, far["key"].as_str().unwrap()).await;
    let run = quiet.run_async(&["couriers", "list"]).await.ok();
    assert_eq!(warnings(&run), 0, "{run}");

    // Expired now, through the test control: refused with its own code,
    // exit 3, everywhere.
    let id = created["id"].as_i64().unwrap();
    let (status, body) = send(server.req(
        reqwest::Method::POST,
        &format!("/testing/api-keys/{id}/expire"),
        &f.key,
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    let run = ci.run_async(&["couriers", "list"]).await.expect_code(3);
    snapshot!("keys_expired", run);
    let run = ci.run_async(&["whoami"]).await.expect_code(3);
    assert!(run.stdout.contains("expired "), "{run}");
    assert!(
        run.stderr.starts_with("error: the API key has expired"),
        "{run}"
    );
    let run = merchant.run_async(&["keys", "list"]).await.ok();
    let row = run.stdout.lines().find(|l| l.contains(" ci ")).unwrap();
    assert!(row.contains("expired "), "{run}");
}

#[test]
fn bad_permissions_and_lifetimes_are_usage_errors_before_anything_is_sent() {
    // No server anywhere: the flags are refused by the parser.
    let shipctl = Shipctl::new().env("SHIPCTL_BASE_URL", "http://127.0.0.1:9/api/v1");
    for (args, says) in [
        (
            vec!["--permissions", "couriers:write"],
            "`write` is not a level of couriers",
        ),
        (vec!["--permissions", "refunds:read"], "refunds"),
        (vec!["--expires-in", "30"], "`30` is not a key lifetime"),
        (vec!["--expires-in", "367d"], "a key lives from 1m to 366d"),
        (vec!["--expires-in", "0m"], "out of range"),
        (vec!["--expires-at", "next week"], "expected RFC 3339"),
        (
            vec!["--expires-in", "1d", "--expires-at", "2027-01-01"],
            "cannot be used with",
        ),
    ] {
        let mut argv = vec!["keys", "create"];
        argv.extend(&args);
        let run = shipctl.run(&argv).expect_code(2);
        assert!(run.stderr.contains(says), "{args:?}: {run}");
    }
}
