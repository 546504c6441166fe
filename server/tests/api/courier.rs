//! The courier side and the separation of merchant and courier keys.

use reqwest::{Method, StatusCode};
use serde_json::json;

use shipment_testkit::{TestApp, assert_problem, db_tests, send};

db_tests!(
    couriers_list_their_shipments_and_manage_drivers,
    a_courier_cannot_touch_another_couriers_shipment,
    merchant_and_courier_keys_stay_on_their_own_routes,
);

async fn couriers_list_their_shipments_and_manage_drivers(app: &TestApp) {
    let f = app.fixture().await;
    let s = app.create_default(&f).await;
    let (status, page) = send(app.req(
        Method::GET,
        "/courier/shipments?status=assigned_to_courier",
        &f.courier_key,
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["total"], 1);
    assert_eq!(page["data"][0]["code"], s["code"]);
    let (status, driver) = send(
        app.req(Method::POST, "/courier/drivers", &f.courier_key)
            .json(&json!({"name": "Linus"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{driver}");
    assert_eq!(driver["name"], "Linus");
    let (_, drivers) = send(app.req(Method::GET, "/courier/drivers", &f.courier_key)).await;
    assert_eq!(drivers["data"].as_array().unwrap().len(), 2);
    let blank = send(
        app.req(Method::POST, "/courier/drivers", &f.courier_key)
            .json(&json!({"name": " "})),
    )
    .await;
    assert_problem(&blank, 400, "invalid_field");
}

async fn a_courier_cannot_touch_another_couriers_shipment(app: &TestApp) {
    let f = app.fixture().await;
    let other = app.fixture().await;
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    for op in ["unassign-driver", "pickup", "deliver", "return"] {
        assert_problem(
            &app.courier_op(&other, &code, op, None).await,
            403,
            "forbidden",
        );
    }
    let (_, page) = send(app.req(Method::GET, "/courier/shipments", &other.courier_key)).await;
    assert_eq!(page["total"], 0);
    assert_problem(
        &app.courier_op(&f, "SHP-0000-0000", "pickup", None).await,
        404,
        "not_found",
    );
    assert_problem(
        &app.courier_op(&f, "nope", "pickup", None).await,
        400,
        "invalid_identifier",
    );
}

async fn merchant_and_courier_keys_stay_on_their_own_routes(app: &TestApp) {
    let f = app.fixture().await;
    let merchant_on_courier = send(app.req(Method::GET, "/courier/shipments", &f.key)).await;
    assert_problem(&merchant_on_courier, 403, "forbidden");
    let courier_on_merchant = send(app.req(Method::GET, "/shipments", &f.courier_key)).await;
    assert_problem(&courier_on_merchant, 403, "forbidden");
}
