//! The rule lists rely on (`cache::listed`): every write to a shipment raises
//! its `version`. A trigger on the test's database refuses any `UPDATE` of
//! `shipments` that does not, and every kind of change the server makes
//! runs through it: a write path that forgot the version would fail here
//! (answered 500), where the unit test over the statements can only see
//! that the version is set, not that it rises.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_server::harness::{Pool, Store};
use shipment_testkit::{Db, Fixture, TestApp, send};

const REFUSED: &str = "an UPDATE of shipments left its version alone";

/// Makes the database refuse an update of a shipment that does not raise
/// its version (with the message [`REFUSED`]).
async fn guard_versions(store: &Store) {
    match store.pool() {
        Pool::Sqlite(pool) => {
            let trigger = "CREATE TRIGGER shipments_version_rises BEFORE UPDATE ON shipments \
                           WHEN NEW.version <= OLD.version BEGIN \
                           SELECT RAISE(ABORT, 'an UPDATE of shipments left its version alone'); \
                           END";
            sqlx::query(trigger).execute(pool).await.unwrap();
        }
        Pool::Postgres(pool) => {
            let function = "CREATE FUNCTION shipments_version_rises() RETURNS trigger \
                            LANGUAGE plpgsql AS $$ BEGIN IF NEW.version <= OLD.version THEN \
                            RAISE EXCEPTION 'an UPDATE of shipments left its version alone'; \
                            END IF; RETURN NEW; END $$";
            sqlx::query(function).execute(pool).await.unwrap();
            let trigger = "CREATE TRIGGER shipments_version_rises BEFORE UPDATE ON shipments \
                           FOR EACH ROW EXECUTE FUNCTION shipments_version_rises()";
            sqlx::query(trigger).execute(pool).await.unwrap();
        }
    }
}

/// The guard is live: an update by hand that leaves the version alone is
/// refused.
async fn hand_edit_is_refused(store: &Store, code: &str) {
    let sql = "UPDATE shipments SET description = 'by hand' WHERE code = $1";
    let refused = match store.pool() {
        Pool::Sqlite(pool) => sqlx::query(sql).bind(code).execute(pool).await.err(),
        Pool::Postgres(pool) => sqlx::query(sql).bind(code).execute(pool).await.err(),
    };
    let refused = refused.expect("the guard refuses an update without a new version");
    assert!(refused.to_string().contains(REFUSED), "{refused}");
}

async fn new_code(app: &TestApp, f: &Fixture) -> String {
    app.create_default(f).await["code"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn ok(what: &str, request: reqwest::RequestBuilder) -> Value {
    let (status, body) = send(request).await;
    assert!(status.is_success(), "{what}: {status} {body}");
    body
}

async fn every_change_raises_the_version(db: Db) {
    let Some(app) = TestApp::spawn_with(db, |c| c.test_controls = true).await else {
        return;
    };
    guard_versions(&app.store).await;
    let f = app.fixture().await;
    let mut codes = Vec::new();

    // The courier's steps, then the merchant's rating.
    let code = new_code(&app, &f).await;
    app.advance(&f, &code, "delivered").await;
    let rate = app
        .req(Method::POST, &format!("/shipments/{code}/rate"), &f.key)
        .json(&json!({"rating": 9}));
    ok("rate", rate).await;
    codes.push(code);

    // A failure and the return.
    let code = new_code(&app, &f).await;
    app.advance(&f, &code, "returned").await;
    codes.push(code);

    // A driver assigned and unassigned, then the merchant's cancel.
    let code = new_code(&app, &f).await;
    app.advance(&f, &code, "assigned_to_driver").await;
    app.courier_step(&f, &code, "unassign-driver", None).await;
    app.advance(&f, &code, "cancelled").await;
    codes.push(code);

    // A delivery with a confirmation code, after a wrong one.
    let code = new_code(&app, &f).await;
    let generate = app.req(
        Method::POST,
        &format!("/shipments/{code}/generate-confirmation-code"),
        &f.key,
    );
    let digits = ok("generate a code", generate).await["confirmation_code"]
        .as_str()
        .unwrap()
        .to_owned();
    let wrong = if digits == "000000" {
        "000001"
    } else {
        "000000"
    };
    app.advance(&f, &code, "in_transit").await;
    let refused = app
        .courier_op(
            &f,
            &code,
            "deliver",
            Some(json!({"confirmation_code": wrong})),
        )
        .await;
    assert_eq!(refused.0, StatusCode::BAD_REQUEST, "{}", refused.1);
    let body = json!({"confirmation_code": digits});
    app.courier_step(&f, &code, "deliver", Some(body)).await;
    codes.push(code);

    // The test controls' walk.
    let code = new_code(&app, &f).await;
    let advance = app
        .req(
            Method::POST,
            &format!("/testing/shipments/{code}/advance"),
            &f.key,
        )
        .json(&json!({"to": "returned"}));
    ok("advance by the test controls", advance).await;
    codes.push(code);

    // And a list shows each as a read by code does.
    let (status, page) = send(app.req(Method::GET, "/shipments?page_size=100", &f.key)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    for code in &codes {
        let (_, read) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
        let listed = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["code"] == *code)
            .expect("listed");
        assert_eq!(listed, &read);
        assert!(read["version"].as_i64().unwrap() > 1, "{read}");
    }
    hand_edit_is_refused(&app.store, &codes[0]).await;
    app.stop().await;
}

shipment_testkit::db_tests!(
    db;
    every_change_raises_the_version,
);
