//! Regressions found by property-based testing (schemathesis against the
//! OpenAPI document, `.ci/schemathesis.sh`): each was a request the
//! document allowed and the server refused, or one that PostgreSQL could
//! not store.

use reqwest::Method;
use serde_json::json;

use shipment_testkit::{TestApp, assert_problem, db_tests, send};

db_tests!(
    an_integral_float_is_an_integer,
    an_optional_body_is_absent_or_an_object_never_null,
    nul_characters_are_refused_before_the_database,
    a_webhook_url_at_the_limit_is_accepted_after_normalising,
);

async fn an_integral_float_is_an_integer(app: &TestApp) {
    let f = app.fixture().await;
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    // 8.0 is the integer 8: refused for the shipment's state, not its type.
    let got = send(
        app.req(Method::POST, &format!("/shipments/{code}/rate"), &f.key)
            .json(&json!({"rating": 8.0})),
    )
    .await;
    assert_problem(&got, 409, "invalid_state");
    let got = send(
        app.req(Method::POST, &format!("/shipments/{code}/rate"), &f.key)
            .json(&json!({"rating": 8.5})),
    )
    .await;
    assert_problem(&got, 400, "invalid_field");
    let created = send(
        app.req(Method::POST, "/shipments", &f.key)
            .json(&json!({"courier_company_id": f.courier_id as f64})),
    )
    .await;
    assert_eq!(created.0.as_u16(), 201, "{}", created.1);
}

async fn an_optional_body_is_absent_or_an_object_never_null(app: &TestApp) {
    // The document describes optional bodies as the object with
    // `required: false` (a `oneOf` with `null` broke generated clients), so
    // `null` is not a body the document allows, and the server agrees.
    let f = app.fixture().await;
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    app.courier_op(
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    app.courier_op(&f, &code, "pickup", None).await;
    let got = app
        .courier_op(&f, &code, "deliver", Some(serde_json::Value::Null))
        .await;
    assert_problem(&got, 400, "invalid_json");
    let (status, shipment) = app.courier_op(&f, &code, "deliver", None).await;
    assert_eq!(status.as_u16(), 200, "{shipment}");
    assert_eq!(shipment["status"], "delivered");
}

async fn nul_characters_are_refused_before_the_database(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let got = send(
        app.bearer(Method::POST, "/api-keys", &token)
            .json(&json!({"name": "a\u{0}b"})),
    )
    .await;
    assert_problem(&got, 400, "invalid_field");
    let got = send(
        app.req(Method::POST, "/shipments", &f.key)
            .json(&json!({"courier_company_id": f.courier_id, "items": ["a\u{0}"]})),
    )
    .await;
    assert_problem(&got, 400, "invalid_field");
    let got = send(
        app.client
            .post(format!("{}/auth/login", app.base))
            .json(&json!({"email": "a\u{0}@example.com", "password": "x"})),
    )
    .await;
    assert_problem(&got, 400, "invalid_field");
    let got = send(
        app.req(Method::POST, "/courier/drivers", &f.courier_key)
            .json(&json!({"name": "\u{0}"})),
    )
    .await;
    assert_problem(&got, 400, "invalid_field");
}

async fn a_webhook_url_at_the_limit_is_accepted_after_normalising(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    let token = app.login(&email, &password).await;
    // 2,048 bytes as sent; normalising adds the `/` of the empty path.
    let url = format!("https://a?{}", "0".repeat(2048 - "https://a?".len()));
    let got = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({"url": url})),
    )
    .await;
    assert_eq!(got.0.as_u16(), 201, "{}", got.1);
    let longer = format!("{url}0");
    let got = send(
        app.bearer(Method::POST, "/webhooks", &token)
            .json(&json!({"url": longer})),
    )
    .await;
    assert_problem(&got, 400, "invalid_field");
}
