//! A merchant per test (`POST /testing/merchants`, `DELETE
//! /testing/merchants/{id}`): twenty made and used at once, none seeing
//! another's shipments, deliveries, faults, duplicates or listener events;
//! a deletion removes everything and the key is refused at once; the
//! refusals and limits.

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_server::harness::{Pool, Store};
use shipment_testkit::{Fixture, TestApp, assert_problem, db_tests, send};

use crate::receiver::Receiver;
use crate::{advance, duplicates, wait_for_empty_outbox};

db_tests!(the_merchant_routes_do_not_exist_without_the_flag);

db_tests!(
    config = |c| c.test_controls = true;
    twenty_merchants_made_and_used_at_once_see_only_their_own,
    a_deletion_removes_everything_it_owns_and_the_key_is_refused_at_once,
    bad_bodies_and_others_ids_are_refused_with_problems,
    the_ci_chapters_pytest_suite_passes_in_parallel,
);

const MERCHANTS: &str = "/testing/merchants";

/// Makes a merchant with `caller`'s key; panics unless 201.
async fn make(app: &TestApp, caller: &str, body: Value) -> Value {
    let (status, made) = send(app.req(Method::POST, MERCHANTS, caller).json(&body)).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    made
}

/// The new merchant as the kit's fixture, to reuse its helpers.
fn fixture_of(m: &Value) -> Fixture {
    Fixture {
        merchant_id: m["merchant_id"].as_i64().unwrap(),
        key: m["api_key"].as_str().unwrap().to_owned(),
        courier_id: m["courier_companies"][0]["id"].as_i64().unwrap(),
        courier_key: m["courier_key"].as_str().unwrap().to_owned(),
        driver_id: m["driver"]["id"].as_i64().unwrap(),
        email: m["email"].as_str().unwrap().to_owned(),
        password: Some(m["password"].as_str().unwrap().to_owned()),
    }
}

async fn delete(app: &TestApp, key: &str, id: i64) -> (StatusCode, Value) {
    send(app.req(Method::DELETE, &format!("{MERCHANTS}/{id}"), key)).await
}

/// Rows of `table` naming the merchant in `merchant_id`.
async fn rows(store: &Store, table: &str, merchant_id: i64) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table} WHERE merchant_id = $1");
    count(store, &sql, merchant_id).await
}

/// The count `sql` (one `$1`, bound to `id`) reads.
async fn count(store: &Store, sql: &str, id: i64) -> i64 {
    match store.pool() {
        Pool::Sqlite(pool) => sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap(),
        Pool::Postgres(pool) => sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap(),
    }
}

/// Every table that names a merchant, and the merchant's own row.
async fn rows_left(store: &Store, merchant_id: i64) -> Vec<(&'static str, i64)> {
    let tables = [
        "shipments",
        "outbox",
        "webhook_deliveries",
        "webhooks",
        "shipment_signing_keys",
        "listener_signing_keys",
        "api_keys",
        "sessions",
        "merchant_couriers",
        "idempotency_keys",
        "shipment_counts_by_courier",
    ];
    let mut left = Vec::new();
    for table in tables {
        let n = rows(store, table, merchant_id).await;
        if n > 0 {
            left.push((table, n));
        }
    }
    let own = count(
        store,
        "SELECT COUNT(*) FROM merchants WHERE id = $1",
        merchant_id,
    )
    .await;
    if own > 0 {
        left.push(("merchants", own));
    }
    left
}

async fn the_merchant_routes_do_not_exist_without_the_flag(app: &TestApp) {
    let f = app.fixture().await;
    let got = send(app.req(Method::POST, MERCHANTS, &f.key).json(&json!({}))).await;
    assert_problem(&got, 404, "not_found");
    let got = delete(app, &f.key, f.merchant_id).await;
    assert_problem(&got, 404, "not_found");
    // The merchant is still there.
    let (status, _) = send(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_eq!(status, StatusCode::OK);
}

/// What one merchant of the twenty does and sees: two shipments (one
/// advanced to in transit: four changes), one duplicated delivery, one
/// fault on its list; what it sees of it all, checked here.
async fn one_merchant_of_many(app: &TestApp, m: &Value, receiver: &Receiver) -> BTreeSet<String> {
    let f = fixture_of(m);
    let sdk = app.sdk(&f.key);
    let mut stream = sdk.listener().connect(None).await.unwrap();
    let (status, _) = duplicates(app, &f, 1).await;
    assert_eq!(status, StatusCode::OK);
    let (status, fault) = send(
        app.req(Method::POST, "/testing/faults", &f.key)
            .json(&json!({"method": "GET", "path": "/shipments", "status": 503})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{fault}");
    let first = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, moved) = advance(app, &f, &first, "in_transit").await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    let own: BTreeSet<String> = [first, second].into();

    // Its own fault, once: nobody else's.
    let got = send(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_problem(&got, 503, "unavailable");
    let (status, page) = send(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let listed: BTreeSet<String> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["code"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!((listed, page["total"].as_i64()), (own.clone(), Some(2)));

    // Its listener: its four changes, nobody else's.
    for _ in 0..4 {
        let event = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("a change within 20 s")
            .expect("the stream stays open")
            .expect("a well-formed change");
        assert!(own.contains(event.delivery.shipment_code.as_str()));
    }
    // Its webhook: four changes, one of them twice (the duplicate).
    let got = receiver.wait_for(5).await;
    for r in &got {
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert!(own.contains(body["code"].as_str().unwrap()), "{body}");
    }
    // The delivery log, seen through its dashboard sign-in: its four.
    let token = app
        .login(
            m["email"].as_str().unwrap(),
            m["password"].as_str().unwrap(),
        )
        .await;
    let hook = m["webhooks"][0]["webhook_id"].as_i64().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (status, log) = send(app.bearer(
            Method::GET,
            &format!("/webhooks/{hook}/deliveries?page_size=100"),
            &token,
        ))
        .await;
        assert_eq!(status, StatusCode::OK, "{log}");
        let data = log["data"].as_array().unwrap();
        assert!(
            data.iter()
                .all(|d| own.contains(d["shipment_code"].as_str().unwrap())),
            "{log}"
        );
        if data.len() == 4 {
            break;
        }
        assert!(data.len() < 4, "{log}");
        assert!(tokio::time::Instant::now() < deadline, "{log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    own
}

async fn twenty_merchants_made_and_used_at_once_see_only_their_own(app: &TestApp) {
    let caller = app.fixture().await;
    let receivers =
        join_all((0..20).map(|_| Receiver::start(StatusCode::OK, Duration::ZERO))).await;
    let made = join_all(receivers.iter().enumerate().map(|(i, r)| {
        make(
            app,
            &caller.key,
            json!({"name": format!("parallel test {i}"), "webhook_urls": [r.url]}),
        )
    }))
    .await;
    let ids: BTreeSet<i64> = made
        .iter()
        .map(|m| m["merchant_id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 20);
    assert!(!ids.contains(&caller.merchant_id));
    for m in &made {
        // The caller's courier company, a key and a driver of it.
        assert_eq!(m["courier_companies"][0]["id"], caller.courier_id, "{m}");
        assert_eq!(m["driver"]["courier_company_id"], caller.courier_id);
        assert!(m["courier_key"].as_str().unwrap().starts_with("ck_test_"));
        assert!(m["api_key"].as_str().unwrap().starts_with("sk_test_"));
        assert!(
            m["webhooks"][0]["signing_key"]
                .as_str()
                .unwrap()
                .starts_with("whsec_")
        );
    }
    let owns = join_all(
        made.iter()
            .zip(&receivers)
            .map(|(m, r)| one_merchant_of_many(app, m, r)),
    )
    .await;
    wait_for_empty_outbox(app).await;
    for (i, (m, r)) in made.iter().zip(&receivers).enumerate() {
        // Nothing more reached its webhook than its own.
        assert_eq!(r.received().len(), 5, "merchant {i}");
        // Another merchant's shipment is refused, as for any merchant.
        let other = owns[(i + 1) % 20].first().unwrap();
        let got = send(app.req(
            Method::GET,
            &format!("/shipments/{other}"),
            m["api_key"].as_str().unwrap(),
        ))
        .await;
        assert_problem(&got, 403, "forbidden");
    }
    // Every one deleted at once: its own rows, nobody else's.
    let deleted = join_all(made.iter().map(|m| {
        delete(
            app,
            m["api_key"].as_str().unwrap(),
            m["merchant_id"].as_i64().unwrap(),
        )
    }))
    .await;
    for ((status, body), m) in deleted.iter().zip(&made) {
        assert_eq!(*status, StatusCode::OK, "{body}");
        assert_eq!(body["merchant_id"], m["merchant_id"]);
        let removed = &body["removed"];
        assert_eq!(
            (
                &removed["shipments"],
                &removed["outbox_rows"],
                &removed["deliveries"],
                &removed["webhooks"],
                &removed["api_keys"],
                &removed["sessions"],
                &removed["courier_links"],
                &removed["faults"],
                &removed["duplicate_deliveries"],
            ),
            (
                &json!(2),
                &json!(4),
                &json!(4),
                &json!(1),
                &json!(1),
                &json!(1),
                &json!(1),
                &json!(0),
                &json!(0)
            ),
            "{body}"
        );
        let id = m["merchant_id"].as_i64().unwrap();
        assert_eq!(rows_left(&app.store, id).await, vec![]);
    }
    // The caller is untouched.
    let (status, _) = send(app.req(Method::GET, "/shipments", &caller.key)).await;
    assert_eq!(status, StatusCode::OK);
}

async fn a_deletion_removes_everything_it_owns_and_the_key_is_refused_at_once(app: &TestApp) {
    let caller = app.fixture().await;
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let m = make(
        app,
        &caller.key,
        json!({"courier_company_ids": [caller.courier_id], "webhook_urls": [receiver.url]}),
    )
    .await;
    assert_eq!(m["name"], "Test merchant");
    let f = fixture_of(&m);
    let id = f.merchant_id;
    let token = app.login(&f.email, f.password.as_deref().unwrap()).await;
    let mut stream = app.sdk(&f.key).listener().connect(None).await.unwrap();
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    // A create with an idempotency key, and a pending confirmation code.
    let (status, _) = send(
        app.req(Method::POST, "/shipments", &f.key)
            .header("Idempotency-Key", "one")
            .json(&json!({"courier_company_id": f.courier_id})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = send(app.req(
        Method::POST,
        &format!("/shipments/{code}/generate-confirmation-code"),
        &f.key,
    ))
    .await;
    assert_eq!(status, StatusCode::CREATED);
    receiver.wait_for(2).await;
    wait_for_empty_outbox(app).await;
    // Armed in memory: two faults, three duplicates.
    for _ in 0..2 {
        let (status, _) = send(
            app.req(Method::POST, "/testing/faults", &f.key)
                .json(&json!({"method": "GET", "path": "/couriers", "status": 503})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (status, _) = duplicates(app, &f, 3).await;
    assert_eq!(status, StatusCode::OK);
    // The courier company sees the merchant's shipments until the deletion.
    let courier_total = |key: String| async move {
        let (status, page) = send(app.req(Method::GET, "/courier/shipments", &key)).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        page["total"].as_i64().unwrap()
    };
    assert_eq!(courier_total(caller.courier_key.clone()).await, 2);

    let (status, body) = delete(app, &f.key, id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({
            "merchant_id": id,
            "removed": {
                "shipments": 2, "confirmation_codes": 1, "outbox_rows": 2, "deliveries": 2,
                "webhooks": 1, "signing_keys": 1, "api_keys": 1, "sessions": 1,
                "courier_links": 1, "idempotency_keys": 1, "login_attempts": 0,
                "faults": 2, "duplicate_deliveries": 3
            }
        })
    );
    assert_eq!(rows_left(&app.store, id).await, vec![]);
    // (The listener key was made by the stream; no shipment signing key
    // was, as no shipment named its own `webhook_url`.)
    // Refused at once: the key (even though it was just verified and
    // cached), the session; the open listen stream ends.
    let got = send(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_problem(&got, 401, "unauthenticated");
    let got = send(app.bearer(Method::GET, "/webhooks", &token)).await;
    assert_problem(&got, 401, "unauthenticated");
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        // Changes made before the deletion may still arrive first.
        while let Some(Ok(_)) = stream.next().await {}
    })
    .await;
    assert!(ended.is_ok(), "the listen stream ended");
    // The courier company, its key and driver stay; the shipments left it.
    assert_eq!(courier_total(caller.courier_key.clone()).await, 0);
    assert_eq!(courier_total(f.courier_key.clone()).await, 0);
    let (status, drivers) = send(app.req(Method::GET, "/courier/drivers", &f.courier_key)).await;
    assert_eq!(status, StatusCode::OK, "{drivers}");
    // The caller still works.
    let (status, _) = send(app.req(Method::GET, "/shipments", &caller.key)).await;
    assert_eq!(status, StatusCode::OK);
}

async fn bad_bodies_and_others_ids_are_refused_with_problems(app: &TestApp) {
    let caller = app.fixture().await;
    let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let url = |i: usize| format!("{}/{i}", receiver.url.trim_end_matches('/'));
    let name_at_limit = "n".repeat(100);
    let cases: Vec<(&str, Value, u16, &str, Option<&str>)> = vec![
        (
            "unknown_field",
            json!({"nme": "x"}),
            400,
            "unknown_field",
            Some("nme"),
        ),
        (
            "name_too_long",
            json!({"name": "n".repeat(101)}),
            400,
            "invalid_field",
            Some("name"),
        ),
        (
            "name_control_character",
            json!({"name": "a\u{7}b"}),
            400,
            "invalid_field",
            Some("name"),
        ),
        (
            "too_many_webhook_urls",
            json!({"webhook_urls": (0..11).map(url).collect::<Vec<_>>()}),
            400,
            "invalid_field",
            Some("webhook_urls"),
        ),
        (
            "same_webhook_url_twice",
            json!({"webhook_urls": [url(1), url(1)]}),
            400,
            "invalid_field",
            Some("webhook_urls"),
        ),
        (
            "bad_webhook_url",
            json!({"webhook_urls": ["ftp://example.com/hook"]}),
            400,
            "invalid_field",
            Some("webhook_urls"),
        ),
        (
            "unknown_courier_company",
            json!({"courier_company_ids": [caller.courier_id + 1000]}),
            400,
            "invalid_field",
            Some("courier_company_ids"),
        ),
        (
            "too_many_courier_companies",
            json!({"courier_company_ids": vec![caller.courier_id; 21]}),
            400,
            "invalid_field",
            Some("courier_company_ids"),
        ),
    ];
    for (name, body, status, code, field) in cases {
        let got = send(app.req(Method::POST, MERCHANTS, &caller.key).json(&body)).await;
        let problem = assert_problem(&got, status, code);
        if let Some(field) = field {
            assert_eq!(problem["field"], field, "{name}: {problem}");
        }
        insta::with_settings!({ prepend_module_to_snapshot => false }, {
            insta::assert_json_snapshot!(
                format!("testing_merchants_{name}"),
                problem,
                { ".request_id" => "[request_id]" }
            );
        });
    }
    // A refused body made nobody: the caller is still the only merchant.
    // (Every id is above 0: this counts them all.)
    let merchants = count(
        &app.store,
        "SELECT COUNT(*) FROM merchants WHERE id > $1",
        0,
    )
    .await;
    assert_eq!(merchants, 1);
    // At the limits: 100 characters, 10 URLs, 20 courier companies (the
    // same one repeated links it once).
    let m = make(
        app,
        &caller.key,
        json!({
            "name": name_at_limit,
            "webhook_urls": (0..10).map(url).collect::<Vec<_>>(),
            "courier_company_ids": vec![caller.courier_id; 20],
        }),
    )
    .await;
    assert_eq!(m["name"].as_str().unwrap().chars().count(), 100);
    assert_eq!(m["webhooks"].as_array().unwrap().len(), 10);
    assert_eq!(m["courier_companies"].as_array().unwrap().len(), 1);
    // No courier company at all: no courier key, no driver.
    let bare = make(app, &caller.key, json!({"courier_company_ids": []})).await;
    assert_eq!(
        (
            &bare["courier_companies"],
            &bare["courier_key"],
            &bare["driver"]
        ),
        (&json!([]), &Value::Null, &Value::Null)
    );
    // Another merchant's id, with a live key: not found, as for any of
    // another merchant's resources; nothing deleted.
    let got = delete(app, &caller.key, m["merchant_id"].as_i64().unwrap()).await;
    assert_problem(&got, 404, "not_found");
    let got = delete(app, m["api_key"].as_str().unwrap(), caller.merchant_id).await;
    let problem = assert_problem(&got, 404, "not_found");
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_json_snapshot!(
            "testing_merchants_another_merchants_id",
            problem,
            { ".request_id" => "[request_id]" }
        );
    });
    let got = delete(app, &caller.key, 0).await;
    assert_problem(&got, 400, "invalid_identifier");
    let got = send(app.req(Method::DELETE, &format!("{MERCHANTS}/abc"), &caller.key)).await;
    assert_problem(&got, 400, "invalid_identifier");
    // No key or a wrong one: 401, as every route.
    let got = send(
        app.client
            .post(format!("{}{MERCHANTS}", app.base))
            .json(&json!({})),
    )
    .await;
    assert_problem(&got, 401, "unauthenticated");
    // Its own id, once; then its key is gone.
    let (status, _) = delete(
        app,
        m["api_key"].as_str().unwrap(),
        m["merchant_id"].as_i64().unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let got = delete(
        app,
        m["api_key"].as_str().unwrap(),
        m["merchant_id"].as_i64().unwrap(),
    )
    .await;
    assert_problem(&got, 401, "unauthenticated");
}

/// The CI chapter's pytest example (`docs/src/ci.md`, "A merchant per
/// test"): its `conftest.py` and `test_checkout.py`, as written.
fn pytest_example() -> (String, String) {
    let chapter = include_str!("../../../docs/src/ci.md");
    let section = &chapter[chapter
        .find("## A merchant per test")
        .expect("the chapter's section")..];
    let start = section.find("```python\n").expect("a python block") + "```python\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let split = block
        .find("# test_checkout.py\n")
        .expect("the block's second file");
    (block[..split].to_owned(), block[split..].to_owned())
}

/// Whether pytest, pytest-xdist and requests import; in CI they must
/// (`.ci/run` installs them), elsewhere the test is skipped without them.
fn pytest_available() -> bool {
    let imports = std::process::Command::new("python3")
        .args(["-c", "import pytest, xdist, requests"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !imports {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 with pytest, pytest-xdist and requests is missing: .ci/run installs them"
        );
        eprintln!("SKIPPED (no pytest, pytest-xdist or requests)");
    }
    imports
}

/// The docs' pytest suite, run as a merchant's CI would run it: its test
/// file eight times over, on four workers at once, each test making,
/// using and deleting a merchant with the server's one fixed key. Each
/// test sees exactly its own one shipment however the others interleave.
async fn the_ci_chapters_pytest_suite_passes_in_parallel(app: &TestApp) {
    if !pytest_available() {
        return;
    }
    let (conftest, test_file) = pytest_example();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("conftest.py"), conftest).unwrap();
    for i in 0..8 {
        std::fs::write(dir.path().join(format!("test_checkout_{i}.py")), &test_file).unwrap();
    }
    let caller = app.fixture().await;
    let out = tokio::process::Command::new("python3")
        .args(["-m", "pytest", "-q", "-n", "4", "-p", "no:cacheprovider"])
        .current_dir(dir.path())
        .env("SHIPMENT_BASE", &app.base)
        .env("SHIPMENT_KEY", &caller.key)
        .output()
        .await
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{report}");
    assert!(report.contains("8 passed"), "{report}");
    // Each test's fixture deleted its merchant, and its shipment with it.
    let made_since = "SELECT COUNT(*) FROM merchants WHERE id > $1";
    assert_eq!(count(&app.store, made_since, caller.merchant_id).await, 0);
    let shipments = "SELECT COUNT(*) FROM shipments WHERE merchant_id > $1";
    assert_eq!(count(&app.store, shipments, caller.merchant_id).await, 0);
}
