//! Lists at any size: walking a list by cursor, and totals from the kept
//! counts (per courier and status, and per day of creation) that equal a
//! count of the rows.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, DurationRound, TimeZone, Utc};
use rand::Rng;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_server::harness::{Pool, Store};
use shipment_testkit::{Db, Fixture, TestApp, assert_problem, db_tests, send};

use crate::OtherProcess;

db_tests!(
    a_cursor_walk_sees_every_shipment_once_while_others_are_made_and_changed,
    a_cursor_walk_keeps_its_filters_and_ends_with_a_null_cursor,
    cursor_edges_are_clear_errors,
    page_size_edges_walk_by_cursor,
    totals_by_date_equal_a_count_of_the_rows,
    deep_pages_answer_as_offset_does,
);

db_tests!(db; a_walk_goes_on_in_another_process_and_counts_its_creates);

/// The codes of a page, in order.
fn codes(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap_or_else(|| panic!("a page: {page}"))
        .iter()
        .map(|s| s["code"].as_str().unwrap().to_owned())
        .collect()
}

/// `path` with `cursor` appended (percent-encoding is not needed: a cursor
/// is digits, letters and dots).
fn with_cursor(path: &str, cursor: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}cursor={cursor}")
}

/// Every page of `path` by cursor: the codes in order, and each page.
async fn walk(app: &TestApp, f: &Fixture, path: &str) -> (Vec<String>, Vec<Value>) {
    let (status, mut page) = send(app.req(Method::GET, path, &f.key)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let mut seen = codes(&page);
    let mut pages = vec![page.clone()];
    while let Some(cursor) = page["next_cursor"].as_str().map(str::to_owned) {
        let (status, next) = send(app.req(Method::GET, &with_cursor(path, &cursor), &f.key)).await;
        assert_eq!(status, StatusCode::OK, "{next}");
        seen.extend(codes(&next));
        pages.push(next.clone());
        page = next;
        assert!(pages.len() < 10_000, "the walk ends");
    }
    (seen, pages)
}

async fn a_cursor_walk_sees_every_shipment_once_while_others_are_made_and_changed(app: &TestApp) {
    let f = app.fixture().await;
    let mut before = Vec::new();
    for _ in 0..40 {
        before.push(
            app.create_default(&f).await["code"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    // While the walk runs: new shipments, and changes to old ones (each
    // bumps `updated_at` and `version`, and the first moves a shipment out
    // of `assigned_to_courier`).
    let writer = async {
        for (i, code) in before.iter().enumerate().step_by(3) {
            app.create_default(&f).await;
            let (status, _) = app
                .courier_op(
                    &f,
                    code,
                    "assign-driver",
                    Some(json!({"driver_id": f.driver_id})),
                )
                .await;
            assert_eq!(status, StatusCode::OK);
            if i % 2 == 0 {
                app.courier_op(&f, code, "pickup", None).await;
            }
            tokio::task::yield_now().await;
        }
    };
    let walker = async {
        let mut seen = Vec::new();
        let mut path = "/shipments?page_size=3".to_owned();
        loop {
            let (status, page) = send(app.req(Method::GET, &path, &f.key)).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            seen.extend(codes(&page));
            match page["next_cursor"].as_str() {
                Some(c) => path = with_cursor("/shipments?page_size=3", c),
                None => break,
            }
            tokio::task::yield_now().await;
        }
        seen
    };
    let ((), seen) = tokio::join!(writer, walker);
    let mut times: BTreeMap<&str, usize> = BTreeMap::new();
    for code in &seen {
        *times.entry(code).or_default() += 1;
    }
    assert!(
        times.values().all(|n| *n == 1),
        "a shipment twice: {times:?}"
    );
    for code in &before {
        assert_eq!(times.get(code.as_str()), Some(&1), "{code} missed");
    }
    let walked: Vec<&String> = seen.iter().filter(|c| before.contains(c)).collect();
    let newest_first: Vec<&String> = before.iter().rev().collect();
    assert_eq!(walked, newest_first, "in the list's order");
}

async fn a_cursor_walk_keeps_its_filters_and_ends_with_a_null_cursor(app: &TestApp) {
    let f = app.fixture().await;
    let mut made = Vec::new();
    for _ in 0..7 {
        made.push(
            app.create_default(&f).await["code"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    for code in &made[..3] {
        let path = format!("/shipments/{code}/cancel");
        assert_eq!(
            send(app.req(Method::POST, &path, &f.key)).await.0,
            StatusCode::OK
        );
    }
    let (seen, pages) = walk(app, &f, "/shipments?status=cancelled&page_size=2").await;
    let cancelled: Vec<String> = made[..3].iter().rev().cloned().collect();
    assert_eq!(seen, cancelled);
    let numbers: Vec<(Value, Value, Value)> = pages
        .iter()
        .map(|p| {
            (
                p["page"].clone(),
                p["total"].clone(),
                p["total_pages"].clone(),
            )
        })
        .collect();
    assert_eq!(
        numbers,
        [
            (json!(1), json!(3), json!(2)),
            (json!(2), json!(3), json!(2))
        ],
        "a cursor page numbers and counts itself as the page-number request would"
    );
    assert_eq!(pages.last().unwrap()["next_cursor"], Value::Null);
    // A page-number request gives a cursor too, to the page after it.
    let (_, first) = send(app.req(Method::GET, "/shipments?page_size=5&page=1", &f.key)).await;
    let cursor = first["next_cursor"].as_str().unwrap();
    let (_, second) = send(app.req(
        Method::GET,
        &with_cursor("/shipments?page_size=5", cursor),
        &f.key,
    ))
    .await;
    let (_, numbered) = send(app.req(Method::GET, "/shipments?page_size=5&page=2", &f.key)).await;
    assert_eq!(codes(&second), codes(&numbered));
    assert_eq!(second["page"], 2);
    assert_eq!(second["next_cursor"], Value::Null);
    assert_eq!(
        numbered["next_cursor"],
        Value::Null,
        "the last page by number"
    );
    // An empty list: no rows, no cursor.
    let g = app.fixture().await;
    let (status, empty) = send(app.req(Method::GET, "/shipments", &g.key)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            empty["total"].clone(),
            empty["total_pages"].clone(),
            empty["next_cursor"].clone()
        ),
        (json!(0), json!(0), Value::Null)
    );
}

async fn cursor_edges_are_clear_errors(app: &TestApp) {
    let f = app.fixture().await;
    for _ in 0..3 {
        app.create_default(&f).await;
    }
    let (_, first) = send(app.req(
        Method::GET,
        "/shipments?page_size=1&status=assigned_to_courier",
        &f.key,
    ))
    .await;
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let refused = |body: Value, field: &str| {
        assert_eq!(body["field"], field, "{body}");
    };
    for bad in [
        "nonsense",
        "c1.1.2.3.4.5",
        &cursor[..cursor.len() - 2],
        &cursor.replacen('.', ":", 1),
    ] {
        let got = send(app.req(
            Method::GET,
            &format!("/shipments?status=assigned_to_courier&cursor={bad}"),
            &f.key,
        ))
        .await;
        refused(assert_problem(&got, 400, "invalid_field"), "cursor");
    }
    // With other filters than the page that gave it (none, or another).
    for path in ["/shipments", "/shipments?status=delivered"] {
        let got = send(app.req(Method::GET, &with_cursor(path, &cursor), &f.key)).await;
        let body = assert_problem(&got, 400, "invalid_field");
        refused(body.clone(), "cursor");
        assert!(
            body["detail"].as_str().unwrap().contains("other filters"),
            "{body}"
        );
    }
    // Of another merchant.
    let g = app.fixture().await;
    let got = send(app.req(
        Method::GET,
        &with_cursor("/shipments?status=assigned_to_courier", &cursor),
        &g.key,
    ))
    .await;
    refused(assert_problem(&got, 400, "invalid_field"), "cursor");
    // With a page number.
    let got = send(app.req(
        Method::GET,
        &with_cursor("/shipments?status=assigned_to_courier&page=2", &cursor),
        &f.key,
    ))
    .await;
    refused(assert_problem(&got, 400, "invalid_field"), "page");
    // Twice.
    let path = format!("/shipments?status=assigned_to_courier&cursor={cursor}&cursor={cursor}");
    let got = send(app.req(Method::GET, &path, &f.key)).await;
    refused(assert_problem(&got, 400, "invalid_field"), "cursor");
}

async fn page_size_edges_walk_by_cursor(app: &TestApp) {
    let f = app.fixture().await;
    let mut made = Vec::new();
    for _ in 0..4 {
        made.push(
            app.create_default(&f).await["code"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    made.reverse();
    let (seen, pages) = walk(app, &f, "/shipments?page_size=1").await;
    assert_eq!(seen, made);
    assert_eq!(pages.len(), 4, "no empty page after the last");
    let pages_numbers: Vec<Value> = pages.iter().map(|p| p["page"].clone()).collect();
    assert_eq!(pages_numbers, [json!(1), json!(2), json!(3), json!(4)]);
    let (seen, pages) = walk(app, &f, "/shipments?page_size=100").await;
    assert_eq!((seen, pages.len()), (made.clone(), 1));
    for bad in ["0", "101"] {
        let (_, first) = send(app.req(Method::GET, "/shipments?page_size=1", &f.key)).await;
        let cursor = first["next_cursor"].as_str().unwrap();
        let got = send(app.req(
            Method::GET,
            &with_cursor(&format!("/shipments?page_size={bad}"), cursor),
            &f.key,
        ))
        .await;
        assert_eq!(
            assert_problem(&got, 400, "invalid_field")["field"],
            "page_size"
        );
    }
}

/// Runs `sql` with `binds` (integers and instants) on the store's pool.
async fn execute(store: &Store, sql: &str, binds: &[Bind]) {
    macro_rules! run {
        ($pool:expr) => {{
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()));
            for b in binds {
                q = match b {
                    Bind::Int(n) => q.bind(*n),
                    Bind::Time(t) => q.bind(*t),
                    Bind::Text(s) => q.bind(s.clone()),
                };
            }
            q.execute($pool).await.unwrap();
        }};
    }
    match store.pool() {
        Pool::Sqlite(pool) => run!(pool),
        Pool::Postgres(pool) => run!(pool),
    }
}

/// The single integer `sql` reads with `binds`.
async fn scalar(store: &Store, sql: &str, binds: &[Bind]) -> i64 {
    macro_rules! run {
        ($pool:expr) => {{
            let mut q = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()));
            for b in binds {
                q = match b {
                    Bind::Int(n) => q.bind(*n),
                    Bind::Time(t) => q.bind(*t),
                    Bind::Text(s) => q.bind(s.clone()),
                };
            }
            q.fetch_one($pool).await.unwrap()
        }};
    }
    match store.pool() {
        Pool::Sqlite(pool) => run!(pool),
        Pool::Postgres(pool) => run!(pool),
    }
}

#[derive(Clone)]
enum Bind {
    Int(i64),
    Time(DateTime<Utc>),
    Text(String),
}

/// Moves the merchant's shipments to random instants of the last `days`
/// days, as if made then, and rebuilds the kept counts from the rows (as
/// the migrations that made them do): what an account that has existed
/// for a while looks like.
async fn spread_over_days(app: &TestApp, f: &Fixture, days: i64) {
    let ids: Vec<i64> = {
        let sql = "SELECT COUNT(*) FROM shipments WHERE merchant_id = $1";
        let n = scalar(&app.store, sql, &[Bind::Int(f.merchant_id)]).await;
        let mut ids = Vec::new();
        for i in 0..n {
            let sql =
                "SELECT id FROM shipments WHERE merchant_id = $1 ORDER BY id LIMIT 1 OFFSET $2";
            ids.push(scalar(&app.store, sql, &[Bind::Int(f.merchant_id), Bind::Int(i)]).await);
        }
        ids
    };
    let now = Utc::now()
        .duration_trunc(Duration::microseconds(1))
        .unwrap();
    for id in ids {
        let back = rand::rng().random_range(0..days * 86_400_000_000);
        // Some on a midnight exactly, the edge of a whole day.
        let at = if id % 7 == 0 {
            (now - Duration::days(back / 86_400_000_000))
                .duration_trunc(Duration::days(1))
                .unwrap()
        } else {
            now - Duration::microseconds(back)
        };
        let sql = "UPDATE shipments SET created_at = $1, updated_at = $1 WHERE id = $2";
        execute(&app.store, sql, &[Bind::Time(at), Bind::Int(id)]).await;
    }
    recount(&app.store, f.merchant_id).await;
}

/// Rebuilds the merchant's kept counts from its shipments.
async fn recount(store: &Store, merchant_id: i64) {
    let day = match store.pool() {
        Pool::Sqlite(_) => "CAST(strftime('%s', created_at) AS INTEGER) / 86400",
        Pool::Postgres(_) => "FLOOR(EXTRACT(EPOCH FROM created_at) / 86400)::BIGINT",
    };
    let m = [Bind::Int(merchant_id)];
    execute(
        store,
        "DELETE FROM shipment_counts_by_day WHERE merchant_id = $1",
        &m,
    )
    .await;
    execute(
        store,
        "DELETE FROM shipment_counts_by_courier WHERE merchant_id = $1",
        &m,
    )
    .await;
    let sql = format!(
        "INSERT INTO shipment_counts_by_day (merchant_id, day, courier_company_id, status, shard, n) \
         SELECT merchant_id, {day}, courier_company_id, status, 0, COUNT(*) FROM shipments \
         WHERE merchant_id = $1 GROUP BY 1, 2, 3, 4"
    );
    execute(store, &sql, &m).await;
    let sql = "INSERT INTO shipment_counts_by_courier (merchant_id, courier_company_id, status, shard, n) \
               SELECT merchant_id, courier_company_id, status, 0, COUNT(*) FROM shipments \
               WHERE merchant_id = $1 GROUP BY 1, 2, 3";
    execute(store, sql, &m).await;
}

/// A random instant of the last `days` days, a midnight one time in three.
fn random_instant(days: i64) -> DateTime<Utc> {
    let mut rng = rand::rng();
    let day = Utc::now().duration_trunc(Duration::days(1)).unwrap()
        - Duration::days(rng.random_range(0..=days));
    if rng.random_range(0..3) == 0 {
        day
    } else {
        day + Duration::seconds(rng.random_range(0..86_400))
    }
}

async fn totals_by_date_equal_a_count_of_the_rows(app: &TestApp) {
    let f = app.fixture().await;
    let other = app.fixture().await;
    app.store
        .link_courier(
            shipment_sdk::model::MerchantId::new(f.merchant_id),
            shipment_sdk::model::CourierId::new(other.courier_id),
        )
        .await
        .unwrap();
    let mut made = Vec::new();
    for i in 0..36 {
        let courier = if i % 3 == 0 {
            other.courier_id
        } else {
            f.courier_id
        };
        made.push(
            app.create(&f, json!({"courier_company_id": courier})).await["code"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    spread_over_days(app, &f, 9).await;
    // Status changes after the spread: written to the kept counts of the
    // shipments' own (earlier) days.
    let mut rng_codes = made.clone();
    for (i, code) in rng_codes.drain(..).enumerate() {
        match i % 4 {
            0 => {
                send(app.req(Method::POST, &format!("/shipments/{code}/cancel"), &f.key)).await;
            }
            1 if i % 3 != 0 => {
                app.courier_op(
                    &f,
                    &code,
                    "assign-driver",
                    Some(json!({"driver_id": f.driver_id})),
                )
                .await;
            }
            _ => {}
        }
    }
    // And some made today.
    for _ in 0..4 {
        app.create_default(&f).await;
    }
    let statuses = [None, Some("cancelled"), Some("assigned_to_courier")];
    let couriers = [None, Some(f.courier_id), Some(other.courier_id)];
    let mut checked = BTreeSet::new();
    for round in 0..40 {
        let after = (round % 4 != 1).then(|| random_instant(10));
        let before = (round % 4 != 2).then(|| random_instant(10));
        let status = statuses[round % 3];
        let courier = couriers[(round / 3) % 3];
        let mut path = "/shipments?page_size=1".to_owned();
        let mut sql = "SELECT COUNT(*) FROM shipments WHERE merchant_id = $1".to_owned();
        let mut binds = vec![Bind::Int(f.merchant_id)];
        let stamp = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        if let Some(t) = after {
            path.push_str(&format!("&created_after={}", stamp(t)));
            binds.push(Bind::Time(t));
            sql.push_str(&format!(" AND created_at >= ${}", binds.len()));
        }
        if let Some(t) = before {
            path.push_str(&format!("&created_before={}", stamp(t)));
            binds.push(Bind::Time(t));
            sql.push_str(&format!(" AND created_at < ${}", binds.len()));
        }
        if let Some(s) = status {
            path.push_str(&format!("&status={s}"));
            binds.push(Bind::Text(s.to_owned()));
            sql.push_str(&format!(" AND status = ${}", binds.len()));
        }
        if let Some(c) = courier {
            path.push_str(&format!("&courier_company_id={c}"));
            binds.push(Bind::Int(c));
            sql.push_str(&format!(" AND courier_company_id = ${}", binds.len()));
        }
        let path = path.replace('+', "%2B");
        let (status_code, page) = send(app.req(Method::GET, &path, &f.key)).await;
        assert_eq!(status_code, StatusCode::OK, "{path}: {page}");
        let scanned = scalar(&app.store, &sql, &binds).await;
        assert_eq!(page["total"], json!(scanned), "{path}");
        checked.insert(scanned);
    }
    assert!(
        checked.len() > 3,
        "the ranges counted different numbers: {checked:?}"
    );
}

async fn deep_pages_answer_as_offset_does(app: &TestApp) {
    let f = app.fixture().await;
    let template = app.create_default(&f).await;
    let template_id = scalar(
        &app.store,
        "SELECT id FROM shipments WHERE code = $1",
        &[Bind::Text(template["code"].as_str().unwrap().to_owned())],
    )
    .await;
    // Enough rows over enough days that pages past the seek threshold
    // (1,000 rows) find their day from the kept counts.
    let columns = "merchant_id, courier_company_id, description, weight_kg, dimensions, \
                   items, start_address, end_address, total_fee_minor, webhook_url, version, \
                   assigned_to_courier_at";
    let start = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
    let statuses = ["assigned_to_courier", "cancelled"];
    for i in 0..1_300i64 {
        let sql = format!(
            "INSERT INTO shipments (code, status, {columns}, created_at, updated_at) \
             SELECT $1, $2, {columns}, $3, $3 FROM shipments WHERE id = $4"
        );
        // Three rows on one instant: the order's tie-break by id must hold
        // across a seek.
        let at = start + Duration::minutes((i / 3) * 97);
        let code = format!("SHP-D{:03}-{:04}", i / 1000, i % 1000);
        let status = statuses[usize::from(i % 5 == 0)].to_owned();
        let binds = [
            Bind::Text(code),
            Bind::Text(status),
            Bind::Time(at),
            Bind::Int(template_id),
        ];
        execute(&app.store, &sql, &binds).await;
    }
    recount(&app.store, f.merchant_id).await;
    for (query, filter) in [
        ("", ""),
        (
            "&status=assigned_to_courier",
            " AND status = 'assigned_to_courier'",
        ),
    ] {
        let total = scalar(
            &app.store,
            &format!("SELECT COUNT(*) FROM shipments WHERE merchant_id = $1{filter}"),
            &[Bind::Int(f.merchant_id)],
        )
        .await;
        for (page, size) in [
            (11, 100),
            (12, 100),
            (14, 100),
            (1001, 1),
            (1040, 1),
            (1041, 1),
            (203, 5),
            (30, 100),
        ] {
            let (status, got) = send(app.req(
                Method::GET,
                &format!("/shipments?page={page}&page_size={size}{query}"),
                &f.key,
            ))
            .await;
            assert_eq!(status, StatusCode::OK, "{got}");
            let sql = format!(
                "SELECT code FROM shipments WHERE merchant_id = $1{filter} \
                 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
            );
            let want = texts(&app.store, &sql, f.merchant_id, size, (page - 1) * size).await;
            assert_eq!(codes(&got), want, "page {page} of {size}{query}");
            assert_eq!(got["total"], json!(total));
        }
    }
}

/// The texts `sql` (`$1` the merchant, `$2` a limit, `$3` an offset) reads.
async fn texts(store: &Store, sql: &str, merchant_id: i64, limit: i64, offset: i64) -> Vec<String> {
    match store.pool() {
        Pool::Sqlite(pool) => sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .bind(merchant_id)
            .bind(limit)
            .bind(offset)
            .fetch_all(pool)
            .await
            .unwrap(),
        Pool::Postgres(pool) => sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .bind(merchant_id)
            .bind(limit)
            .bind(offset)
            .fetch_all(pool)
            .await
            .unwrap(),
    }
}

/// Cursors and kept counts live in the database, not in a process: a walk
/// begun in one process goes on in another, and a total read in one counts
/// what another created, on either engine.
async fn a_walk_goes_on_in_another_process_and_counts_its_creates(db: Db) {
    let Some((a, b)) = OtherProcess::beside(db, |_| {}).await else {
        return;
    };
    let f = a.fixture().await;
    let mut made = Vec::new();
    for _ in 0..5 {
        made.push(
            a.create_default(&f).await["code"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    made.reverse();
    let in_b = |path: &str| {
        a.client
            .get(format!("{}{path}", b.base))
            .header("X-API-KEY", f.key.as_str())
    };
    let (_, first) = send(a.req(Method::GET, "/shipments?page_size=2", &f.key)).await;
    let mut seen = codes(&first);
    let mut cursor = first["next_cursor"].as_str().unwrap().to_owned();
    for turn in 0.. {
        let path = with_cursor("/shipments?page_size=2", &cursor);
        let (status, page) = if turn % 2 == 0 {
            send(in_b(&path)).await
        } else {
            send(a.req(Method::GET, &path, &f.key)).await
        };
        assert_eq!(status, StatusCode::OK, "{page}");
        seen.extend(codes(&page));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = c.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, made);
    let created = a
        .client
        .post(format!("{}/shipments", b.base))
        .header("X-API-KEY", f.key.as_str())
        .json(&json!({"courier_company_id": f.courier_id}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let today = Utc::now().format("%Y-%m-%d");
    let (_, page) = send(a.req(
        Method::GET,
        &format!("/shipments?created_after={today}"),
        &f.key,
    ))
    .await;
    assert_eq!(page["total"], 6);
    b.stop().await;
    a.stop().await;
}
