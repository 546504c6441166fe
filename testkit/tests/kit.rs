//! The kit's own promises: a spawned server answers on both databases, and
//! every database it made is gone afterwards, on the normal path and when a
//! test panics.

use reqwest::{Method, StatusCode};
use serde_json::json;
use shipment_testkit::{Db, FreshDb, TEST_DATABASE_URL, TestApp, db_tests, send};

db_tests!(a_spawned_server_answers_healthz_and_its_fixtures_work);
db_tests!(
    config = |c| c.webhooks.allow_private_webhook_targets = false;
    the_configuration_closure_runs_before_the_server_starts,
);

async fn a_spawned_server_answers_healthz_and_its_fixtures_work(app: &TestApp) {
    let (status, _) = send(app.client.get(format!("{}/healthz", app.root))).await;
    assert_eq!(status, StatusCode::OK);
    let expected = match app.db {
        Db::Sqlite => "sqlite://",
        Db::Postgres => "postgres://",
    };
    assert!(
        app.database_url.starts_with(expected),
        "{}",
        app.database_url
    );

    let f = app.fixture().await;
    assert!(f.key.starts_with("sk_test_"), "{}", f.key);
    assert!(f.courier_key.starts_with("ck_test_"), "{}", f.courier_key);
    assert_eq!(f.password, None);
    let shipment = app.create_default(&f).await;
    let code = shipment["code"].as_str().unwrap();
    let delivered = app.advance(&f, code, "delivered").await;
    assert_eq!(delivered["status"], "delivered");

    // By default a test server delivers to private addresses (receivers
    // on this machine).
    assert_eq!(register_local_webhook(app).await, StatusCode::CREATED);
}

async fn the_configuration_closure_runs_before_the_server_starts(app: &TestApp) {
    assert_eq!(register_local_webhook(app).await, StatusCode::BAD_REQUEST);
}

/// Signs in as a new merchant and registers a webhook on 127.0.0.1.
async fn register_local_webhook(app: &TestApp) -> StatusCode {
    let (email, password) = app.fixture_with_login().await.credentials();
    let token = app.login(&email, &password).await;
    let request = app
        .bearer(Method::POST, "/webhooks", &token)
        .json(&json!({"url": "https://127.0.0.1:9/hooks"}));
    send(request).await.0
}

/// Whether the PostgreSQL server of `TEST_DATABASE_URL` has a database
/// named as the last path segment of `url`.
async fn exists(admin: &sqlx::PgPool, url: &str) -> bool {
    let name = url::Url::parse(url)
        .unwrap()
        .path()
        .trim_start_matches('/')
        .to_owned();
    assert!(name.starts_with("shipments_test_"), "{name}");
    sqlx::query_scalar::<_, bool>("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(name)
        .fetch_one(admin)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_postgres_database_is_dropped_after_use_and_after_a_panic() {
    let Ok(admin_url) = std::env::var(TEST_DATABASE_URL) else {
        eprintln!("SKIPPED (PostgreSQL): {TEST_DATABASE_URL} is not set");
        return;
    };
    let admin = sqlx::PgPool::connect(&admin_url).await.unwrap();

    // Dropped explicitly, with a connection still open.
    let fresh = FreshDb::create(Db::Postgres).await.unwrap();
    let url = fresh.url.clone();
    assert!(exists(&admin, &url).await);
    let open = sqlx::PgPool::connect(&url).await.unwrap();
    fresh.drop_database().await;
    assert!(!exists(&admin, &url).await);
    drop(open);

    // Dropped by `Drop`, as when a test panics.
    let fresh = FreshDb::create(Db::Postgres).await.unwrap();
    let url = fresh.url.clone();
    drop(fresh);
    assert!(!exists(&admin, &url).await);

    // A server stopped normally, and one whose test panicked.
    let app = TestApp::spawn(Db::Postgres).await.unwrap();
    let url = app.database_url.clone();
    assert!(exists(&admin, &url).await);
    app.stop().await;
    assert!(!exists(&admin, &url).await);

    let app = TestApp::spawn(Db::Postgres).await.unwrap();
    let url = app.database_url.clone();
    let panicked = tokio::spawn(async move {
        let _app = app;
        panic!("a failing test");
    })
    .await;
    assert!(panicked.unwrap_err().is_panic());
    assert!(!exists(&admin, &url).await);
    admin.close().await;
}

#[tokio::test]
async fn a_fresh_sqlite_database_goes_with_its_directory() {
    let fresh = FreshDb::create(Db::Sqlite).await.unwrap();
    let file = std::path::PathBuf::from(fresh.url.trim_start_matches("sqlite://"));
    let dir = file.parent().unwrap().to_owned();
    assert!(dir.is_dir());
    drop(fresh);
    assert!(!dir.exists(), "{} is left behind", dir.display());
}
