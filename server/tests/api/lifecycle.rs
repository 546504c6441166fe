//! The lifecycle over HTTP: every state reached, every refusal answered.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::CourierId;

use shipment_testkit::{Fixture, TestApp, assert_problem, db_tests, send};

db_tests!(
    a_shipment_goes_from_creation_to_rated,
    a_failed_attempt_can_be_retried_or_returned,
    a_driver_can_be_reassigned_and_unassigned,
    cancel_is_allowed_until_pickup_and_idempotent,
    rating_needs_a_delivered_shipment_and_happens_once,
    delivery_needs_the_confirmation_code_once_generated,
    five_wrong_confirmation_codes_void_it,
    confirmation_codes_are_refused_in_final_states,
);

async fn code_of(app: &TestApp, f: &Fixture) -> String {
    app.create_default(f).await["code"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn ok(app: &TestApp, f: &Fixture, code: &str, op: &str, body: Option<Value>) -> Value {
    let (status, s) = app.courier_op(f, code, op, body).await;
    assert_eq!(status, StatusCode::OK, "{op}: {s}");
    s
}

async fn merchant(
    app: &TestApp,
    f: &Fixture,
    code: &str,
    op: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut r = app.req(Method::POST, &format!("/shipments/{code}/{op}"), &f.key);
    if let Some(b) = body {
        r = r.json(&b);
    }
    send(r).await
}

async fn a_shipment_goes_from_creation_to_rated(app: &TestApp) {
    let f = app.fixture().await;
    let code = code_of(app, &f).await;
    let s = ok(
        app,
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    assert_eq!(
        (s["status"].clone(), s["version"].clone()),
        (json!("assigned_to_driver"), json!(2))
    );
    assert_eq!(s["assigned_driver_id"], f.driver_id);
    assert!(s["assigned_to_driver_at"].is_string());
    let s = ok(app, &f, &code, "pickup", None).await;
    assert_eq!(
        (s["status"].clone(), s["version"].clone()),
        (json!("in_transit"), json!(3))
    );
    assert!(s["picked_up_at"].is_string());
    let s = ok(app, &f, &code, "deliver", None).await;
    assert_eq!(
        (s["status"].clone(), s["version"].clone()),
        (json!("delivered"), json!(4))
    );
    assert!(s["delivered_at"].is_string());
    assert!(s["updated_at"].as_str() >= s["created_at"].as_str());
    let (status, s) = merchant(app, &f, &code, "rate", Some(json!({"rating": 9}))).await;
    assert_eq!(status, StatusCode::OK, "{s}");
    assert_eq!(
        (s["rating"].clone(), s["version"].clone()),
        (json!(9), json!(5))
    );
    assert!(s["rated_at"].is_string());
    let (_, fetched) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
    assert_eq!(fetched, s);
}

async fn a_failed_attempt_can_be_retried_or_returned(app: &TestApp) {
    let f = app.fixture().await;
    let code = code_of(app, &f).await;
    ok(
        app,
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    ok(app, &f, &code, "pickup", None).await;
    let s = ok(
        app,
        &f,
        &code,
        "fail",
        Some(json!({"reason": "nobody home"})),
    )
    .await;
    assert_eq!(
        (s["status"].clone(), s["failure_reason"].clone()),
        (json!("failed"), json!("nobody home"))
    );
    assert!(s["failed_at"].is_string());
    let s = ok(app, &f, &code, "pickup", None).await;
    assert_eq!(s["status"], "in_transit");
    ok(app, &f, &code, "fail", Some(json!({"reason": "closed"}))).await;
    let s = ok(app, &f, &code, "return", None).await;
    assert_eq!(
        (s["status"].clone(), s["version"].clone()),
        (json!("returned"), json!(7))
    );
    assert!(s["returned_at"].is_string());
    let got = app.courier_op(&f, &code, "pickup", None).await;
    let body = assert_problem(&got, 409, "invalid_state");
    assert_eq!(body["detail"], "cannot pickup a shipment that is returned");
    let missing_reason = app.courier_op(&f, &code, "fail", Some(json!({}))).await;
    assert_problem(&missing_reason, 400, "missing_field");
}

async fn a_driver_can_be_reassigned_and_unassigned(app: &TestApp) {
    let f = app.fixture().await;
    let second = app
        .store
        .create_driver(CourierId::new(f.courier_id), "Grace")
        .await
        .unwrap();
    let code = code_of(app, &f).await;
    ok(
        app,
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    let same = ok(
        app,
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    assert_eq!(
        same["version"], 2,
        "assigning the same driver again changes nothing"
    );
    let s = ok(
        app,
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": second.id})),
    )
    .await;
    assert_eq!(
        (s["assigned_driver_id"].clone(), s["version"].clone()),
        (json!(second.id), json!(3))
    );
    let s = ok(app, &f, &code, "unassign-driver", None).await;
    assert_eq!(
        (s["status"].clone(), s["assigned_driver_id"].clone()),
        (json!("assigned_to_courier"), Value::Null)
    );
    let other = app.fixture().await;
    let foreign = app
        .courier_op(
            &f,
            &code,
            "assign-driver",
            Some(json!({"driver_id": other.driver_id})),
        )
        .await;
    assert_eq!(
        assert_problem(&foreign, 400, "invalid_field")["field"],
        "driver_id"
    );
}

async fn cancel_is_allowed_until_pickup_and_idempotent(app: &TestApp) {
    let f = app.fixture().await;
    let code = code_of(app, &f).await;
    ok(
        app,
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    let (status, s) = merchant(app, &f, &code, "cancel", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (s["status"].clone(), s["version"].clone()),
        (json!("cancelled"), json!(3))
    );
    assert!(s["cancelled_at"].is_string());
    let (status, again) = merchant(app, &f, &code, "cancel", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, s, "cancelling twice changes nothing");

    let moving = code_of(app, &f).await;
    ok(
        app,
        &f,
        &moving,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    ok(app, &f, &moving, "pickup", None).await;
    let got = merchant(app, &f, &moving, "cancel", None).await;
    assert_eq!(
        assert_problem(&got, 409, "invalid_state")["detail"],
        "cannot cancel a shipment that is in_transit"
    );
}

async fn rating_needs_a_delivered_shipment_and_happens_once(app: &TestApp) {
    let f = app.fixture().await;
    let code = code_of(app, &f).await;
    assert_problem(
        &merchant(app, &f, &code, "rate", Some(json!({"rating": 5}))).await,
        409,
        "invalid_state",
    );
    ok(
        app,
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    ok(app, &f, &code, "pickup", None).await;
    ok(app, &f, &code, "deliver", None).await;
    for bad in [
        json!({"rating": 0}),
        json!({"rating": 11}),
        json!({"rating": 5.5}),
        json!({"rating": "5"}),
        json!({"rating": -1}),
    ] {
        let got = merchant(app, &f, &code, "rate", Some(bad.clone())).await;
        assert_eq!(
            assert_problem(&got, 400, "invalid_field")["field"],
            "rating",
            "{bad}"
        );
    }
    assert_problem(
        &merchant(app, &f, &code, "rate", Some(json!({}))).await,
        400,
        "missing_field",
    );
    for edge in [1, 10] {
        let c = code_of(app, &f).await;
        ok(
            app,
            &f,
            &c,
            "assign-driver",
            Some(json!({"driver_id": f.driver_id})),
        )
        .await;
        ok(app, &f, &c, "pickup", None).await;
        ok(app, &f, &c, "deliver", None).await;
        assert_eq!(
            merchant(app, &f, &c, "rate", Some(json!({"rating": edge})))
                .await
                .0,
            StatusCode::OK
        );
    }
    assert_eq!(
        merchant(app, &f, &code, "rate", Some(json!({"rating": 7})))
            .await
            .0,
        StatusCode::OK
    );
    assert_problem(
        &merchant(app, &f, &code, "rate", Some(json!({"rating": 8}))).await,
        409,
        "already_rated",
    );
}

async fn delivery_needs_the_confirmation_code_once_generated(app: &TestApp) {
    let f = app.fixture().await;
    let code = code_of(app, &f).await;
    let (status, cc) = merchant(app, &f, &code, "generate-confirmation-code", None).await;
    assert_eq!(status, StatusCode::CREATED, "{cc}");
    assert_eq!(cc["code"], code.as_str());
    let digits = cc["confirmation_code"].as_str().unwrap();
    assert!(
        digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_digit()),
        "{digits}"
    );
    assert!(cc["expires_at"].is_string());
    let (_, s) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
    assert_eq!(
        s["version"], 1,
        "a confirmation code is not a change of the shipment"
    );
    // A newer code replaces the older one.
    let (_, newer) = merchant(app, &f, &code, "generate-confirmation-code", None).await;
    let digits = newer["confirmation_code"].as_str().unwrap().to_owned();
    ok(
        app,
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    ok(app, &f, &code, "pickup", None).await;
    let without = app.courier_op(&f, &code, "deliver", None).await;
    assert_problem(&without, 400, "invalid_confirmation_code");
    let wrong = if digits == "000000" {
        "000001"
    } else {
        "000000"
    };
    let got = app
        .courier_op(
            &f,
            &code,
            "deliver",
            Some(json!({"confirmation_code": wrong})),
        )
        .await;
    assert_problem(&got, 400, "invalid_confirmation_code");
    let malformed = app
        .courier_op(
            &f,
            &code,
            "deliver",
            Some(json!({"confirmation_code": "12ab"})),
        )
        .await;
    assert_problem(&malformed, 400, "invalid_field");
    let s = ok(
        app,
        &f,
        &code,
        "deliver",
        Some(json!({"confirmation_code": digits})),
    )
    .await;
    assert_eq!(s["status"], "delivered");
}

async fn five_wrong_confirmation_codes_void_it(app: &TestApp) {
    let f = app.fixture().await;
    let code = code_of(app, &f).await;
    let (_, cc) = merchant(app, &f, &code, "generate-confirmation-code", None).await;
    let right = cc["confirmation_code"].as_str().unwrap().to_owned();
    let wrong = if right == "999999" {
        "999998"
    } else {
        "999999"
    };
    ok(
        app,
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    ok(app, &f, &code, "pickup", None).await;
    for _ in 0..5 {
        let got = app
            .courier_op(
                &f,
                &code,
                "deliver",
                Some(json!({"confirmation_code": wrong})),
            )
            .await;
        assert_problem(&got, 400, "invalid_confirmation_code");
    }
    let voided = app
        .courier_op(
            &f,
            &code,
            "deliver",
            Some(json!({"confirmation_code": right})),
        )
        .await;
    let body = assert_problem(&voided, 400, "invalid_confirmation_code");
    assert!(body["detail"].as_str().unwrap().contains("void"), "{body}");
    let (status, _) = merchant(app, &f, &code, "generate-confirmation-code", None).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "a new code can be generated in transit"
    );
}

async fn confirmation_codes_are_refused_in_final_states(app: &TestApp) {
    let f = app.fixture().await;
    let code = code_of(app, &f).await;
    assert_eq!(
        merchant(app, &f, &code, "cancel", None).await.0,
        StatusCode::OK
    );
    let got = merchant(app, &f, &code, "generate-confirmation-code", None).await;
    assert_problem(&got, 409, "invalid_state");
}
