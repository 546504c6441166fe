//! `shipctl shipments import` against the real reference server, on SQLite
//! and (with `TEST_DATABASE_URL`) PostgreSQL: CSV and NDJSON files, running
//! a file twice, bad rows, dry runs and the results file.

use std::path::{Path, PathBuf};

use serde_json::Value;
use shipment_testkit::{Fixture, TestApp, db_tests};
use tempfile::TempDir;

use crate::helpers::{Run, Shipctl};
use crate::snapshot;

db_tests!(
    a_csv_file_creates_every_row_once,
    bad_rows_fail_without_stopping_the_others,
    a_dry_run_checks_every_row_and_sends_nothing,
    ndjson_from_stdin_creates_every_line_once,
);

/// A `shipctl` pointed at `server` with the fixture's API key.
fn shipctl_for(server: &TestApp, f: &Fixture) -> Shipctl {
    Shipctl::new()
        .env("SHIPCTL_BASE_URL", &server.base)
        .env("SHIPCTL_API_KEY", &f.key)
}

/// Writes `text` to `name` in `dir`.
fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The results file, one object per line.
fn results(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// Every shipment of the merchant, newest first.
async fn list(shipctl: &Shipctl) -> Vec<Value> {
    let run = shipctl
        .run_async(&["shipments", "list", "-o", "json", "--page-size", "100"])
        .await
        .ok();
    run.json().as_array().unwrap().clone()
}

fn str_path(path: &Path) -> &str {
    path.to_str().unwrap()
}

async fn a_csv_file_creates_every_row_once(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f);
    let dir = tempfile::tempdir().unwrap();
    let c = f.courier_id;
    // Quoting: a comma and a doubled quote in a description, a line break in
    // another (the row after it keeps its own line number), items with `;`.
    let csv = write(
        &dir,
        "shipments.csv",
        &format!(
            "courier_company_id,description,weight_kg,dimensions,items,start_address,end_address\n\
             {c},\"Books, \"\"rare\"\" ones\",4.5,30x20x10 cm,book;lamp,\"52.5200,13.4050\",\"52.3759,4.8975\"\n\
             {c},\"two\nlines\",1,,mug,,\n\
             {c},,,,,,\n"
        ),
    );
    let out = dir.path().join("results.ndjson");
    let run = shipctl
        .run_async(&[
            "shipments",
            "import",
            str_path(&csv),
            "--concurrency",
            "2",
            "--results",
            str_path(&out),
        ])
        .await
        .ok();
    assert_eq!(run.stdout, "", "{run}");
    assert_eq!(
        run.stderr, "3 rows: 3 created, 0 already existed, 0 failed\n",
        "{run}"
    );
    let first = results(&out);
    let lines: Vec<&Value> = first.iter().map(|r| &r["line"]).collect();
    assert_eq!(lines, [2, 3, 5], "input order; a record's first line");
    assert!(first.iter().all(|r| r["status"] == "created"), "{first:?}");

    // Created concurrently, so found by the code each line was given.
    let all = list(&shipctl).await;
    assert_eq!(all.len(), 3);
    let of_line = |i: usize| {
        all.iter()
            .find(|s| s["code"] == first[i]["code"])
            .unwrap_or_else(|| panic!("line {} was created: {all:?}", first[i]["line"]))
    };
    assert_eq!(of_line(0)["description"], "Books, \"rare\" ones");
    assert_eq!(of_line(0)["items"], serde_json::json!(["book", "lamp"]));
    assert_eq!(of_line(0)["dimensions"], "30x20x10 cm");
    assert_eq!(of_line(0)["start_address"], "52.5200,13.4050");
    assert_eq!(of_line(0)["weight_kg"], 4.5);
    assert_eq!(of_line(1)["description"], "two\nlines");
    assert_eq!(
        of_line(2)["description"],
        Value::Null,
        "an empty cell is absent"
    );

    // Again: nothing new, every row reported with the code made the first
    // time (how an interrupted import resumes).
    let run = shipctl
        .run_async(&[
            "shipments",
            "import",
            str_path(&csv),
            "--results",
            str_path(&out),
        ])
        .await
        .ok();
    assert_eq!(
        run.stderr, "3 rows: 0 created, 3 already existed, 0 failed\n",
        "{run}"
    );
    let second = results(&out);
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a["code"], b["code"]);
        assert_eq!(b["status"], "exists");
    }
    assert_eq!(list(&shipctl).await.len(), 3);
    snapshot!(
        "import_results_again",
        std::fs::read_to_string(&out).unwrap()
    );
}

async fn bad_rows_fail_without_stopping_the_others(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f);
    let dir = tempfile::tempdir().unwrap();
    let c = f.courier_id;
    let csv = write(
        &dir,
        "bad.csv",
        &format!(
            "courier_company_id,weight_kg,items,idempotency_key\n\
             999999,1,,\n\
             {c},abc,,\n\
             {c},2,box,order-1\n\
             {c},3,box,order-1\n\
             {c},1\n"
        ),
    );
    let out = dir.path().join("results.ndjson");
    let run = shipctl
        .run_async(&[
            "shipments",
            "import",
            str_path(&csv),
            "--results",
            str_path(&out),
            // One at a time: lines 4 and 5 share a key, and the first wins.
            "--concurrency",
            "1",
        ])
        .await
        .expect_code(1);
    assert!(
        run.stderr
            .contains("5 rows: 1 created, 0 already existed, 4 failed\n"),
        "{run}"
    );
    let lines = results(&out);
    let statuses: Vec<(&Value, &Value)> =
        lines.iter().map(|r| (&r["line"], &r["status"])).collect();
    assert_eq!(
        statuses,
        [
            (&2.into(), &"failed".into()),
            (&3.into(), &"failed".into()),
            (&4.into(), &"created".into()),
            (&5.into(), &"failed".into()),
            (&6.into(), &"failed".into()),
        ]
    );
    assert_eq!(list(&shipctl).await.len(), 1, "only the good row");
    snapshot!("import_bad_rows", run);
    snapshot!(
        "import_bad_rows_results",
        std::fs::read_to_string(&out).unwrap()
    );

    // A refused key is no row's fault: the import stops (exit 3) instead of
    // failing every row the same way.
    let revoked = Shipctl::new().env("SHIPCTL_BASE_URL", &server.base).env(
        "SHIPCTL_API_KEY",
        "sk_test_0000000000000000000000000000ZZZZ",
    );
    let good = write(
        &dir,
        "good.csv",
        &format!("courier_company_id\n{c}\n{c}\n{c}\n"),
    );
    let run = revoked
        .run_async(&["shipments", "import", str_path(&good), "--concurrency", "1"])
        .await
        .expect_code(3);
    assert!(
        run.stderr
            .contains("1 row: 0 created, 0 already existed, 1 failed\n")
            && run.stderr.contains("error: the import stopped: "),
        "{run}"
    );
}

async fn a_dry_run_checks_every_row_and_sends_nothing(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f);
    let dir = tempfile::tempdir().unwrap();
    let c = f.courier_id;
    let bad = write(
        &dir,
        "bad.csv",
        &format!("courier_company_id,weight_kg\n{c},abc\n{c},2\n"),
    );
    let run = shipctl
        .run_async(&[
            "shipments",
            "import",
            str_path(&bad),
            "--dry-run",
            "--results",
            "-",
        ])
        .await
        .expect_code(1);
    snapshot!("import_dry_run", run);

    // A good file passes, still without sending (and without an API key).
    let good = write(&dir, "good.csv", &format!("courier_company_id\n{c}\n{c}\n"));
    let keyless = Shipctl::new().env("SHIPCTL_BASE_URL", &server.base);
    let run = keyless
        .run_async(&["shipments", "import", str_path(&good), "--dry-run"])
        .await
        .ok();
    assert_eq!(
        run.stderr, "2 rows: 2 valid, 0 failed (dry run: nothing was sent)\n",
        "{run}"
    );
    assert_eq!(list(&shipctl).await, Vec::<Value>::new());
}

async fn ndjson_from_stdin_creates_every_line_once(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = shipctl_for(server, &f);
    let c = f.courier_id;
    let input = format!(
        "{{\"courier_company_id\": {c}, \"weight_kg\": 2.5, \"items\": [\"a\", \"b\"], \"idempotency_key\": \"order-77\"}}\n\
         \n\
         {{\"courier_company_id\": {c}, \"description\": \"from a pipe\"}}\n\
         {{\"courier_company_id\": {c}, \"colour\": \"red\"}}\n"
    );
    let args = [
        "shipments",
        "import",
        "-",
        "--format",
        "ndjson",
        "--results",
        "-",
    ];
    let run = shipctl
        .run_with_stdin_async(&args, input.as_bytes())
        .await
        .expect_code(1);
    assert!(
        run.stderr
            .contains("3 rows: 2 created, 0 already existed, 1 failed\n"),
        "{run}"
    );
    snapshot!("import_ndjson_stdin", run);
    let all = list(&shipctl).await;
    assert_eq!(all.len(), 2);
    assert!(
        all.iter()
            .any(|s| s["weight_kg"] == 2.5 && s["items"][1] == "b")
    );

    let again = shipctl
        .run_with_stdin_async(&args, input.as_bytes())
        .await
        .expect_code(1);
    assert!(
        again
            .stderr
            .contains("3 rows: 0 created, 2 already existed, 1 failed\n"),
        "{again}"
    );
    assert_eq!(list(&shipctl).await.len(), 2);
}

#[test]
fn an_unknown_column_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(&dir, "x.csv", "courier_company_id,colour\n1,red\n");
    // Checked before anything else: no key, no server needed.
    let run: Run = Shipctl::new()
        .run(&["shipments", "import", str_path(&csv)])
        .expect_code(2);
    assert!(run.stderr.contains("unknown column `colour`"), "{run}");
    let run = Shipctl::new()
        .run_with_stdin(
            &["shipments", "import", "-"],
            b"description\nno courier column\n",
        )
        .expect_code(2);
    snapshot!("import_missing_column", run);
    let run = Shipctl::new()
        .run(&["shipments", "import", "/nonexistent/file.csv"])
        .expect_code(2);
    assert!(run.stderr.contains("cannot read"), "{run}");
}
