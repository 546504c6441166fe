//! Declared fixtures (`--fixtures FILE`): the book's example applied and
//! working end to end, applied again without making anything twice, every
//! refusal naming its line, nothing half-applied, `sqlite::memory:`, and
//! a file's restricted and expired keys held to their terms; each on
//! SQLite and PostgreSQL. The binary's `serve --fixtures`, `demo
//! --fixtures` and `admin apply-fixtures` are in `fixtures/binary.rs`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_server::harness::{Pool, Store};
use shipment_server::{Application, Config, StartError};
use shipment_testkit::{Db, FreshDb, TestApp, send};

use crate::receiver::{Received, Receiver};

/// `server/fixtures/example.toml`, the example of the book's "Use it in
/// CI" chapter (`docs/src/ci.md`).
pub const EXAMPLE: &str = include_str!("../../fixtures/example.toml");
/// Its values, as CI configuration would name them.
pub const API_KEY: &str = "sk_test_llQ4cEamIu7sKZT1jElDpUseMjgse0wW";
pub const COURIER_KEY: &str = "ck_test_oJetnpjGrMUNtBPxzQB9c32hlpYD24Fy";
pub const SHIPMENT_SIGNING_KEY: &str = "whsec_jDex7lgzRwaF38lGEdIVkKaUNJFylpww";
pub const WEBHOOK_SIGNING_KEY: &str = "whsec_bzyJmFcNxwFUC1I2JE6TzkHxqXDdub0B";
pub const EMAIL: &str = "dev@acme.test";
pub const PASSWORD: &str = "correct horse battery staple";
pub const EXAMPLE_URL: &str = "https://localhost:3443/hooks";
/// One data key for every apply of a test, as servers sharing a database
/// have.
pub const DATA_KEY: &str = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";
/// Every secret of the example: none may appear in a message.
pub const SECRETS: [&str; 5] = [
    API_KEY,
    COURIER_KEY,
    SHIPMENT_SIGNING_KEY,
    WEBHOOK_SIGNING_KEY,
    PASSWORD,
];

mod binary;

shipment_testkit::db_tests!(
    db;
    the_issues_example_works_end_to_end,
    applying_twice_creates_nothing_twice,
    each_refusal_names_its_line_and_applies_nothing,
    a_file_over_one_mib_is_refused_without_being_read_whole,
    a_file_the_database_disagrees_with_is_refused_whole,
    processes_starting_at_once_make_everything_once,
    restricted_and_expired_keys_of_the_file_are_held_to_their_terms,
);

/// A fixtures file in a temporary directory.
pub struct FixturesFile {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl FixturesFile {
    pub fn new(text: &str) -> FixturesFile {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fixtures.toml");
        std::fs::write(&path, text).unwrap();
        FixturesFile { _dir: dir, path }
    }
}

fn with_fixtures(path: &Path) -> impl FnOnce(&mut Config) {
    let path = path.to_owned();
    move |c| {
        c.fixtures = Some(path);
        c.data_key.data_key = Some(DATA_KEY.into());
    }
}

/// A server on `url` applying `path` at start, as a second process would:
/// it applies the file, starts, and stops at once.
async fn apply_again(url: &str, path: &Path) -> Result<(), StartError> {
    let mut config = Config::local(url);
    with_fixtures(path)(&mut config);
    let app = Application::build(&config).await?;
    app.run_until(std::future::ready(())).await.unwrap();
    Ok(())
}

/// Rows of every table fixtures write.
async fn counts(store: &Store) -> Vec<(&'static str, i64)> {
    let mut out = Vec::new();
    for table in [
        "courier_companies",
        "courier_keys",
        "drivers",
        "merchants",
        "api_keys",
        "merchant_couriers",
        "webhooks",
        "shipment_signing_keys",
    ] {
        let sql = sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}"));
        let n: i64 = match store.pool() {
            Pool::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
            Pool::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
        };
        out.push((table, n));
    }
    out
}

fn assert_signed_with(r: &Received, key: &str) -> Value {
    let header = r.headers["x-service-signature"].to_str().unwrap();
    assert_eq!(webhook_verify::verify(key, &r.body, header), Ok(()));
    serde_json::from_slice(&r.body).unwrap()
}

async fn the_issues_example_works_end_to_end(db: Db) {
    let hooks = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let own = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let file = FixturesFile::new(&EXAMPLE.replace(EXAMPLE_URL, &hooks.url));
    let Some(app) = TestApp::spawn_with(db, with_fixtures(&file.path)).await else {
        return;
    };
    // The API key, exactly as declared, authenticates and sees its courier.
    let (status, couriers) = send(app.req(Method::GET, "/merchant-couriers", API_KEY)).await;
    assert_eq!(status, StatusCode::OK, "{couriers}");
    let courier = &couriers["data"][0];
    assert_eq!(couriers["data"].as_array().unwrap().len(), 1);
    assert_eq!(
        (
            &courier["name"],
            &courier["base_fee"],
            &courier["per_kg"],
            &courier["per_km"]
        ),
        (
            &json!("Swift Couriers"),
            &json!(5.0),
            &json!(1.5),
            &json!(0.1)
        )
    );
    // The courier key works on the courier routes; the drivers exist.
    let (status, drivers) = send(app.req(Method::GET, "/courier/drivers", COURIER_KEY)).await;
    assert_eq!(status, StatusCode::OK, "{drivers}");
    let names: Vec<&str> = drivers["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Dana", "Eli"]);
    // The merchant signs in with the declared password; the webhook is there.
    let token = app.login(EMAIL, PASSWORD).await;
    let (_, listed) = send(app.bearer(Method::GET, "/webhooks", &token)).await;
    assert_eq!(listed["data"][0]["url"], hooks.url.as_str(), "{listed}");
    assert_eq!(listed["data"][0]["active"], true);
    let (_, keys) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    assert_eq!(keys["data"][0]["last4"], &API_KEY[API_KEY.len() - 4..]);

    // A shipment with its own URL (which needs the shipment signing key),
    // moved by the courier: every delivery is signed with the declared keys.
    let (status, created) = send(app.req(Method::POST, "/shipments", API_KEY).json(&json!({
        "courier_company_id": courier["id"],
        "webhook_url": own.url,
    })))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let code = created["code"].as_str().unwrap();
    let dana = drivers["data"][0]["id"].clone();
    let (status, moved) = send(
        app.req(
            Method::POST,
            &format!("/courier/shipments/{code}/assign-driver"),
            COURIER_KEY,
        )
        .json(&json!({ "driver_id": dana })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    for (n, status) in [(0, "assigned_to_courier"), (1, "assigned_to_driver")] {
        let hooked = assert_signed_with(&hooks.nth(n).await, WEBHOOK_SIGNING_KEY);
        let owned = assert_signed_with(&own.nth(n).await, SHIPMENT_SIGNING_KEY);
        for body in [hooked, owned] {
            assert_eq!(
                (body["code"].as_str(), body["status"].as_str()),
                (Some(code), Some(status))
            );
        }
    }
    app.stop().await;
}

async fn applying_twice_creates_nothing_twice(db: Db) {
    let file = FixturesFile::new(EXAMPLE);
    let Some(app) = TestApp::spawn_with(db, with_fixtures(&file.path)).await else {
        return;
    };
    let first = counts(&app.store).await;
    assert!(first.iter().all(|(_, n)| *n >= 1), "{first:?}");
    assert_eq!(first.iter().find(|(t, _)| *t == "drivers").unwrap().1, 2);
    // Every CI run on a kept database: the same file, again and again.
    for _ in 0..2 {
        apply_again(&app.database_url, &file.path).await.unwrap();
    }
    assert_eq!(counts(&app.store).await, first);
    // And what the API shows is still one of each.
    let token = app.login(EMAIL, PASSWORD).await;
    for (path, n) in [("/api-keys", 1), ("/webhooks", 1)] {
        let (_, listed) = send(app.bearer(Method::GET, path, &token)).await;
        assert_eq!(
            listed["data"].as_array().unwrap().len(),
            n,
            "{path}: {listed}"
        );
    }
    let (_, couriers) = send(app.req(Method::GET, "/merchant-couriers", API_KEY)).await;
    assert_eq!(couriers["data"].as_array().unwrap().len(), 1);
    // Records the API added since are left alone, and nothing is re-made
    // that the API took away: a deleted key comes back, nothing else moves.
    let (_, keys) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    let fixture_key = keys["data"][0]["id"].as_i64().unwrap();
    let (status, _) = send(
        app.bearer(Method::POST, "/api-keys", &token)
            .json(&json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) =
        send(app.bearer(Method::DELETE, &format!("/api-keys/{fixture_key}"), &token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = send(app.req(Method::GET, "/merchant-couriers", API_KEY)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    apply_again(&app.database_url, &file.path).await.unwrap();
    let (status, _) = send(app.req(Method::GET, "/merchant-couriers", API_KEY)).await;
    assert_eq!(status, StatusCode::OK);
    let (_, keys) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    assert_eq!(keys["data"].as_array().unwrap().len(), 2, "{keys}");
    app.stop().await;
}

/// The refusal of starting with `text` on a fresh database of `db`, after
/// checking that it names `line`, quotes no secret, and left nothing.
async fn refusal(db: Db, text: &str, allow_private: bool, line: usize) -> Option<String> {
    let fresh = FreshDb::create(db).await?;
    let file = FixturesFile::new(text);
    let mut config = Config::local(&fresh.url);
    with_fixtures(&file.path)(&mut config);
    config.webhooks.allow_private_webhook_targets = allow_private;
    let err = match Application::build(&config).await {
        Ok(_) => panic!("started with a refused file:\n{text}"),
        Err(StartError::Fixtures(e)) => e,
        Err(other) => panic!("refused for another reason: {other}"),
    };
    let message = err.to_string();
    assert!(
        err.lines().contains(&line),
        "line {line} expected: {message}"
    );
    assert!(message.contains(&format!("line {line}:")), "{message}");
    assert!(
        message.contains(&file.path.display().to_string()),
        "{message}"
    );
    for secret in SECRETS {
        assert!(!message.contains(secret), "a secret in: {message}");
    }
    let store = Store::connect(&fresh.url, Default::default())
        .await
        .unwrap();
    assert!(
        counts(&store).await.iter().all(|(_, n)| *n == 0),
        "half applied"
    );
    store.close().await;
    fresh.drop_database().await;
    Some(message)
}

async fn each_refusal_names_its_line_and_applies_nothing(db: Db) {
    let cases: [(&str, String, usize, &str); 11] = [
        (
            "a key of the other environment",
            EXAMPLE.replace("sk_test_", "sk_live_"),
            22,
            "other environment",
        ),
        (
            "a malformed key",
            EXAMPLE.replace(COURIER_KEY, &COURIER_KEY[..30]),
            15,
            "not a key",
        ),
        (
            "a signing key that is not whsec_ and 32 base62",
            EXAMPLE.replace(WEBHOOK_SIGNING_KEY, "whsec_short"),
            28,
            "not a signing key",
        ),
        (
            "an unknown courier name",
            EXAMPLE.replace("couriers = [\"Swift Couriers\"]", "couriers = [\"Swift\"]"),
            23,
            "no `[[couriers]]`",
        ),
        (
            "an unknown field",
            EXAMPLE.replace("drivers = [", "driverz = ["),
            16,
            "unknown field `driverz`",
        ),
        (
            "malformed TOML",
            EXAMPLE.replace("per_kg = 1.5", "per_kg = 1.5.0"),
            13,
            "",
        ),
        (
            "a webhook URL that is not HTTPS",
            EXAMPLE.replace(EXAMPLE_URL, "http://localhost:3443/hooks"),
            27,
            "`url` cannot be used",
        ),
        (
            "a value of the wrong type (serde would quote it)",
            EXAMPLE.replace(&format!("[\"{API_KEY}\"]"), &format!("\"{API_KEY}\"")),
            22,
            "invalid type",
        ),
        (
            // Issue 28: serde escapes the quotes, which fooled the redaction.
            "a value of the wrong type with escaped quotes in it",
            EXAMPLE.replace(&format!("[\"{API_KEY}\"]"), r#""sk_test_\"LEAKME\"_rest""#),
            22,
            "`merchants.api_keys`: invalid type: string, expected a sequence",
        ),
        (
            "a key with escaped quotes in it",
            EXAMPLE.replace(API_KEY, r#"sk_test_\"LEAKME\"_rest"#),
            22,
            "`api_keys`: not a key",
        ),
        (
            "a control character in a name",
            EXAMPLE.replace("name = \"Acme\"", "name = \"Acme\\u001b]0;pwned\\u0007\""),
            19,
            "`name` must not contain control characters",
        ),
    ];
    for (what, text, line, says) in cases {
        let Some(message) = refusal(db, &text, true, line).await else {
            return;
        };
        assert!(message.contains(says), "{what}: {message}");
        assert!(!message.contains("LEAKME"), "{what}: {message}");
        assert!(
            !message.chars().any(|c| c.is_control() && c != '\n'),
            "{what}: {message:?}"
        );
    }
    // A host the server would not deliver to, unless private targets are
    // allowed: the same guard and message as registration.
    let message = refusal(db, EXAMPLE, false, 27).await.unwrap();
    assert!(
        message.contains("does not resolve to a public internet address"),
        "{message}"
    );
}

/// Issue 28: `/dev/zero` as the fixtures file took 6 GB in 20 s.
async fn a_file_over_one_mib_is_refused_without_being_read_whole(db: Db) {
    let Some(fresh) = FreshDb::create(db).await else {
        return;
    };
    // The example, padded with a comment to 1 MiB and one byte.
    let mut text = format!("{EXAMPLE}\n#");
    text.push_str(&"x".repeat(1024 * 1024 + 1 - text.len()));
    let over = FixturesFile::new(&text);
    // The same, 1 MiB exactly, is applied.
    let at_cap = FixturesFile::new(&text[..text.len() - 1]);
    apply_again(&fresh.url, &at_cap.path)
        .await
        .expect("a file of 1 MiB is applied");
    for path in [over.path.clone(), PathBuf::from("/dev/zero")] {
        let mut config = Config::local(&fresh.url);
        with_fixtures(&path)(&mut config);
        // A generous bound: the capped read takes milliseconds; without a
        // cap this never ends (and eats memory), so fail instead of hanging.
        let built = tokio::time::timeout(Duration::from_secs(60), Application::build(&config))
            .await
            .expect("the file is refused, not read whole");
        let message = match built {
            Ok(_) => panic!("started with {}", path.display()),
            Err(StartError::Fixtures(e)) => e.to_string(),
            Err(other) => panic!("refused for another reason: {other}"),
        };
        assert!(
            message.contains(&path.display().to_string())
                && message.contains("larger than 1 MiB (1048576 bytes)"),
            "{message}"
        );
    }
    fresh.drop_database().await;
}

async fn a_file_the_database_disagrees_with_is_refused_whole(db: Db) {
    let file = FixturesFile::new(EXAMPLE);
    let Some(app) = TestApp::spawn_with(db, with_fixtures(&file.path)).await else {
        return;
    };
    let before = counts(&app.store).await;
    // A new merchant first (it would be made), then Acme with another
    // password: the whole file is refused, the new merchant included.
    let newcomer = "[[merchants]]\nname = \"Newcomer\"\nemail = \"new@acme.test\"\n\
                    password = \"long enough\"\ncouriers = [\"Swift Couriers\"]\n\n";
    let cases = [
        (
            EXAMPLE.replace(PASSWORD, "another long password"),
            21,
            "has another password",
        ),
        (
            EXAMPLE.replace("per_km = 0.1", "per_km = 0.2"),
            14,
            "per_km 0.10, the file says 0.20",
        ),
        (
            EXAMPLE.replace("name = \"Acme\"", "name = \"Acme Inc\""),
            19,
            "is named `Acme`",
        ),
        (
            EXAMPLE.replace(
                WEBHOOK_SIGNING_KEY,
                "whsec_00000000000000000000000000000000",
            ),
            28,
            "another signing key",
        ),
        (
            EXAMPLE.replace(
                SHIPMENT_SIGNING_KEY,
                "whsec_00000000000000000000000000000000",
            ),
            24,
            "another signing key",
        ),
    ];
    for (text, line, says) in cases {
        let text = text.replacen("[[merchants]]", &format!("{newcomer}[[merchants]]"), 1);
        let line = line + newcomer.lines().count() * usize::from(line > 17);
        let changed = FixturesFile::new(&text);
        let err = apply_again(&app.database_url, &changed.path)
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&format!("line {line}: ")),
            "line {line}: {message}"
        );
        assert!(
            message.contains(says) && message.contains("nothing was applied"),
            "{message}"
        );
        for secret in SECRETS {
            assert!(!message.contains(secret), "a secret in: {message}");
        }
        assert_eq!(counts(&app.store).await, before, "{message}");
    }
    // A key that belongs to someone else already.
    let other = app.fixture().await;
    let stolen = FixturesFile::new(&EXAMPLE.replace(API_KEY, &other.key));
    let message = apply_again(&app.database_url, &stolen.path)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("line 22: ") && message.contains("belongs to merchant"),
        "{message}"
    );
    assert!(!message.contains(&other.key), "{message}");
    // Signing keys sealed under another data key cannot be compared.
    let mut config = Config::local(&app.database_url);
    config.fixtures = Some(file.path.clone());
    let message = match Application::build(&config).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("another data key opened the sealed keys"),
    };
    assert!(
        message.contains("line 24: ") && message.contains("data key"),
        "{message}"
    );
    app.stop().await;
}

async fn processes_starting_at_once_make_everything_once(db: Db) {
    let Some(fresh) = FreshDb::create(db).await else {
        return;
    };
    let store = Store::connect(&fresh.url, Default::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    // Several servers on one database, each with `--fixtures`: the applies
    // run one after another, and the later ones find everything made.
    let file = FixturesFile::new(EXAMPLE);
    let applies = (0..3).map(|_| apply_again(&fresh.url, &file.path));
    for applied in futures_util::future::join_all(applies).await {
        applied.unwrap();
    }
    let once: Vec<i64> = counts(&store).await.into_iter().map(|(_, n)| n).collect();
    assert_eq!(once, [1, 1, 2, 1, 1, 1, 1, 1]);
    store.close().await;
    fresh.drop_database().await;
}

/// `--database-url sqlite::memory:`: one database for the whole pool,
/// under concurrent requests and the dispatcher.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_memory_is_one_database_for_the_pool() {
    let hooks = Receiver::start(StatusCode::OK, Duration::ZERO).await;
    let file = FixturesFile::new(&EXAMPLE.replace(EXAMPLE_URL, &hooks.url));
    let app = TestApp::spawn_with(Db::Sqlite, |c| {
        with_fixtures(&file.path)(c);
        c.database.database_url = "sqlite::memory:".into();
    })
    .await
    .unwrap();
    let (_, couriers) = send(app.req(Method::GET, "/merchant-couriers", API_KEY)).await;
    let courier_id = couriers["data"][0]["id"].clone();
    // Twenty creates at once: every connection of the pool writes to the
    // same database, and each change is delivered.
    let creates = (0..20).map(|_| {
        send(
            app.req(Method::POST, "/shipments", API_KEY)
                .json(&json!({ "courier_company_id": courier_id })),
        )
    });
    for (status, body) in futures_util::future::join_all(creates).await {
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (_, page) = send(app.req(Method::GET, "/shipments?page_size=100", API_KEY)).await;
    assert_eq!(page["total"], 20, "{page}");
    let got = hooks.wait_for(20).await;
    for r in &got {
        assert_signed_with(r, WEBHOOK_SIGNING_KEY);
    }
    let usage = app.store.pool_usage();
    assert!(usage.max > 1, "a real pool: {usage:?}");
    app.stop().await;
}

/// The in-memory database outlives the pool's connections (which the pool
/// closes when idle or old): it lives until the pool itself is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_memory_outlives_every_pool_connection() {
    let store = Store::connect("sqlite::memory:", Default::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let Pool::Sqlite(pool) = store.pool() else {
        unreachable!("sqlite::memory: is SQLite")
    };
    sqlx::query("INSERT INTO courier_companies (name, active, base_fee_minor, per_kg_minor, per_km_minor, created_at) VALUES ('Kept', TRUE, 1, 1, 1, '2026-01-01T00:00:00Z')")
        .execute(pool)
        .await
        .unwrap();
    // Close every connection the pool has open, at once.
    let mut open = Vec::new();
    while pool.size() > u32::try_from(open.len()).unwrap() {
        open.push(pool.acquire().await.unwrap());
    }
    for connection in open {
        connection.close().await.unwrap();
    }
    assert_eq!(pool.size(), 0);
    let kept: String = sqlx::query_scalar("SELECT name FROM courier_companies")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(kept, "Kept");
    // Another `sqlite::memory:` is another database.
    let other = Store::connect("sqlite::memory:", Default::default())
        .await
        .unwrap();
    other.migrate().await.unwrap();
    assert!(counts(&other).await.iter().all(|(_, n)| *n == 0));
    other.close().await;
    store.close().await;
}

#[test]
fn the_book_shows_the_example_file() {
    let chapter = include_str!("../../../docs/src/ci.md");
    let body = &EXAMPLE[EXAMPLE.find("[[couriers]]").unwrap()..];
    assert!(
        chapter.contains(&format!("```toml\n{body}```")),
        "docs/src/ci.md's \"Declared fixtures\" must show server/fixtures/example.toml"
    );
}

/// The book's restricted and expiring keys, in the example in place of its
/// one key, are a file the server takes.
#[test]
fn the_books_key_tables_are_read() {
    let chapter = include_str!("../../../docs/src/ci.md");
    let start = chapter
        .find(&format!("```toml\napi_keys = [\n    \"{API_KEY}\",\n"))
        .expect("docs/src/ci.md shows key tables")
        + "```toml\n".len();
    let end = start + chapter[start..].find("\n]\n").unwrap() + "\n]".len();
    let text = EXAMPLE.replace(&format!("api_keys = [\"{API_KEY}\"]"), &chapter[start..end]);
    let read =
        shipment_server::harness::fixtures::parse(&text, shipment_server::Environment::Staging)
            .unwrap_or_else(|problems| panic!("{problems:?}\n{text}"));
    let keys = &read.merchants[0].api_keys;
    assert_eq!(keys.len(), 4);
    assert!(keys[1].permissions.is_some() && keys[2].expires_at.is_some());
    assert!(keys[3].expires_at.as_ref().unwrap().value < chrono::Utc::now());
}

/// A restricted key of the file reads and is refused writes, naming the
/// permission; a key the file declares expired is refused as expired; and
/// applying the file again with other permissions for the key is refused.
async fn restricted_and_expired_keys_of_the_file_are_held_to_their_terms(db: Db) {
    const RESTRICTED: &str = "rk_test_Rk7fixturesReadOnly0000000000000";
    const EXPIRED: &str = "sk_test_Sk7fixturesExpired00000000000000";
    let keys = |permissions: &str| {
        format!(
            "api_keys = [\n  \"{API_KEY}\",\n  {{ key = \"{RESTRICTED}\", permissions = \
             {{ {permissions} }}, expires_in = \"30d\" }},\n  {{ key = \"{EXPIRED}\", \
             expires_at = \"2026-01-01T00:00:00Z\" }},\n]"
        )
    };
    let declared = format!("api_keys = [\"{API_KEY}\"]");
    assert!(EXAMPLE.contains(&declared));
    let text = EXAMPLE.replace(
        &declared,
        &keys("shipments = \"read\", couriers = \"read\""),
    );
    let file = FixturesFile::new(&text);
    let Some(app) = TestApp::spawn_with(db, with_fixtures(&file.path)).await else {
        return;
    };
    let (status, couriers) = send(app.req(Method::GET, "/merchant-couriers", RESTRICTED)).await;
    assert_eq!(status, StatusCode::OK, "{couriers}");
    let courier_id = couriers["data"][0]["id"].clone();
    let body = json!({"courier_company_id": courier_id});
    let (status, shipment) = send(app.req(Method::POST, "/shipments", API_KEY).json(&body)).await;
    assert_eq!(status, StatusCode::CREATED, "{shipment}");
    let (status, list) = send(app.req(Method::GET, "/shipments", RESTRICTED)).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["data"][0]["code"], shipment["code"]);

    let refused = send(app.req(Method::POST, "/shipments", RESTRICTED).json(&body)).await;
    let problem = shipment_testkit::assert_problem(&refused, 403, "insufficient_permission");
    assert_eq!(problem["required_permission"], "shipments: write");

    // Its terms as the key sees them: restricted, expiring 30 days after
    // the start.
    let (status, current) = send(app.req(Method::GET, "/api-keys/current", RESTRICTED)).await;
    assert_eq!(status, StatusCode::OK, "{current}");
    assert_eq!(current["prefix"], "rk_test_");
    assert_eq!(
        current["permissions"],
        json!({"shipments": "read", "couriers": "read", "listen": "none", "testing": "none"})
    );
    let expires_at: chrono::DateTime<chrono::Utc> =
        current["expires_at"].as_str().unwrap().parse().unwrap();
    let in_30_days = chrono::Utc::now() + chrono::Duration::days(30);
    assert!(
        (in_30_days - expires_at).num_seconds().abs() < 120,
        "{current}"
    );

    let expired = send(app.req(Method::GET, "/shipments", EXPIRED)).await;
    let problem = shipment_testkit::assert_problem(&expired, 401, "api_key_expired");
    assert_eq!(
        problem["detail"],
        "this API key expired at 2026-01-01T00:00:00Z"
    );

    // Applied again unchanged: nothing new, the expiry as first made.
    let before = counts(&app.store).await;
    apply_again(&app.database_url, &file.path).await.unwrap();
    assert_eq!(counts(&app.store).await, before);
    let (_, again) = send(app.req(Method::GET, "/api-keys/current", RESTRICTED)).await;
    assert_eq!(again["expires_at"], current["expires_at"]);
    // Other permissions for the same key: refused whole, naming the line.
    let changed = FixturesFile::new(&EXAMPLE.replace(&declared, &keys("shipments = \"write\"")));
    let err = apply_again(&app.database_url, &changed.path)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("line 24: ") && err.contains("exists with other permissions"),
        "{err}"
    );
    assert!(!err.contains(RESTRICTED), "{err}");
    let (status, _) = send(app.req(Method::POST, "/shipments", RESTRICTED).json(&body)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}
