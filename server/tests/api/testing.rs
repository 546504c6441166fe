//! Test controls (`--test-controls`): faults on a merchant's next requests,
//! and the refusals (no flag, production, bad bodies). Advancing a shipment
//! and duplicate deliveries are in `testing_deliveries.rs`.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_server::Environment;
use shipment_server::{Application, Config, StartError};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use shipment_testkit::{Fixture, TestApp, assert_problem, db_tests, send};

db_tests!(the_routes_do_not_exist_without_the_flag);

db_tests!(
    config = |c| c.test_controls = true;
    a_status_fault_answers_instead_of_running_then_the_request_runs,
    faults_match_templates_or_concrete_paths_and_are_taken_once,
    a_delay_fault_delays_the_request_then_runs_it,
    a_drop_fault_closes_the_connection_without_an_answer,
    faults_touch_only_their_merchant_and_delete_disarms_them,
    bad_fault_bodies_are_refused_with_problems,
);

const FAULTS: &str = "/testing/faults";

/// Arms `fault` for the fixture's merchant; returns the armed fault.
async fn arm(app: &TestApp, f: &Fixture, fault: &Value) -> Value {
    let (status, body) = send(app.req(Method::POST, FAULTS, &f.key).json(fault)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

async fn list_total(app: &TestApp, f: &Fixture) -> i64 {
    let (status, page) = send(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["total"].as_i64().unwrap()
}

async fn the_routes_do_not_exist_without_the_flag(app: &TestApp) {
    let f = app.fixture().await;
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let routes = [
        (
            Method::POST,
            FAULTS.to_owned(),
            Some(json!({"method": "GET", "path": "/shipments", "status": 503})),
        ),
        (Method::DELETE, FAULTS.to_owned(), None),
        (
            Method::POST,
            format!("/testing/shipments/{code}/advance"),
            Some(json!({"to": "delivered"})),
        ),
        (
            Method::POST,
            "/testing/webhooks/duplicates".to_owned(),
            Some(json!({"times": 1})),
        ),
    ];
    for (method, path, body) in routes {
        let mut request = app.req(method.clone(), &path, &f.key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let got = send(request).await;
        assert_problem(&got, 404, "not_found");
    }
    // Nothing moved.
    let (_, shipment) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
    assert_eq!(shipment["status"], "assigned_to_courier");
}

#[tokio::test]
async fn a_production_server_refuses_to_start_with_test_controls() {
    let mut config = Config::local("sqlite::memory:");
    config.environment.environment = Environment::Production;
    config.test_controls = true;
    let err = match Application::build(&config).await {
        Ok(_) => panic!("a production server started with --test-controls"),
        Err(e) => e,
    };
    assert!(matches!(err, StartError::TestControlsInProduction), "{err}");
    assert!(err.to_string().contains("--test-controls"), "{err}");

    // The binary says so and exits, before it opens any database.
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_shipment-server"))
        .current_dir(dir.path())
        .env_remove("DATABASE_URL")
        .env("RUST_LOG", "warn")
        .env("SHIPMENT_TEST_CONTROLS", "true")
        .args([
            "serve",
            "--environment",
            "production",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            "sqlite::memory:",
        ])
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--test-controls is refused with --environment production"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

async fn a_status_fault_answers_instead_of_running_then_the_request_runs(app: &TestApp) {
    let f = app.fixture().await;
    let armed = arm(
        app,
        &f,
        &json!({"method": "POST", "path": "/shipments", "status": 503, "retry_after": 1, "times": 2}),
    )
    .await;
    assert!(armed["id"].as_u64().unwrap() >= 1, "{armed}");
    assert_eq!(
        (
            &armed["method"],
            &armed["path"],
            &armed["status"],
            &armed["times"]
        ),
        (&json!("POST"), &json!("/shipments"), &json!(503), &json!(2))
    );
    assert_eq!(armed["retry_after"], 1);
    assert_eq!(armed["drop_connection"], false);
    assert!(armed["delay_ms"].is_null());

    let create = || {
        app.req(Method::POST, "/shipments", &f.key)
            .json(&json!({"courier_company_id": f.courier_id}))
    };
    for _ in 0..2 {
        let response = create().send().await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()["retry-after"], "1");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
        let body: Value = response.json().await.unwrap();
        assert_problem(&(StatusCode::SERVICE_UNAVAILABLE, body), 503, "unavailable");
        // Not run: no shipment was created.
        assert_eq!(list_total(app, &f).await, 0);
    }
    // Used up: the third runs.
    let (status, created) = send(create()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(list_total(app, &f).await, 1);
    // Requests the fault does not match were never touched.
    let (status, _) = send(app.req(Method::GET, "/merchant-couriers", &f.key)).await;
    assert_eq!(status, StatusCode::OK);
}

async fn faults_match_templates_or_concrete_paths_and_are_taken_once(app: &TestApp) {
    let f = app.fixture().await;
    let a = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let b = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let get = |code: &str| app.req(Method::GET, &format!("/shipments/{code}"), &f.key);

    // A route template catches any shipment; two racing requests for the
    // one use: exactly one is caught.
    arm(
        app,
        &f,
        &json!({"method": "get", "path": "/shipments/{code}", "status": 500}),
    )
    .await;
    let (one, two) = tokio::join!(send(get(&a)), send(get(&b)));
    let mut statuses = [one.0.as_u16(), two.0.as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 500], "{} {}", one.1, two.1);
    let caught = if one.0 == StatusCode::INTERNAL_SERVER_ERROR {
        one
    } else {
        two
    };
    assert_problem(&caught, 500, "internal");
    assert_eq!(send(get(&a)).await.0, StatusCode::OK);

    // A concrete path catches that shipment only; 429 is `rate_limited`.
    arm(
        app,
        &f,
        &json!({"method": "GET", "path": format!("/shipments/{b}"), "status": 429, "times": 1}),
    )
    .await;
    assert_eq!(send(get(&a)).await.0, StatusCode::OK);
    let response = get(&b).send().await.unwrap();
    assert!(response.headers().get("retry-after").is_none());
    let body: Value = response.json().await.unwrap();
    assert_problem(&(StatusCode::TOO_MANY_REQUESTS, body), 429, "rate_limited");
    assert_eq!(send(get(&b)).await.0, StatusCode::OK);

    // 502 and 504 are `unavailable`; another method of the same path is
    // not caught.
    for status in [502, 504] {
        arm(
            app,
            &f,
            &json!({"method": "POST", "path": "/shipments/{code}/cancel", "status": status}),
        )
        .await;
        assert_eq!(send(get(&a)).await.0, StatusCode::OK);
        let got = send(app.req(Method::POST, &format!("/shipments/{a}/cancel"), &f.key)).await;
        assert_problem(&got, status, "unavailable");
    }
    let (_, shipment) = send(get(&a)).await;
    assert_eq!(shipment["status"], "assigned_to_courier", "never cancelled");
}

async fn a_delay_fault_delays_the_request_then_runs_it(app: &TestApp) {
    let f = app.fixture().await;
    let delay = Duration::from_millis(400);
    let armed = arm(
        app,
        &f,
        &json!({"method": "POST", "path": "/shipments", "delay_ms": 400}),
    )
    .await;
    assert_eq!(armed["delay_ms"], 400);
    assert!(armed["status"].is_null());
    let started = Instant::now();
    let (status, created) = send(
        app.req(Method::POST, "/shipments", &f.key)
            .json(&json!({"courier_company_id": f.courier_id})),
    )
    .await;
    // A lower bound only: the server slept at least this long.
    assert!(started.elapsed() >= delay, "{:?}", started.elapsed());
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(list_total(app, &f).await, 1, "the delayed request ran");
}

/// The `host:port` the test server listens on.
fn addr(app: &TestApp) -> String {
    app.root.trim_start_matches("http://").to_owned()
}

async fn a_drop_fault_closes_the_connection_without_an_answer(app: &TestApp) {
    let f = app.fixture().await;
    arm(
        app,
        &f,
        &json!({"method": "GET", "path": "/merchant-couriers", "drop_connection": true, "times": 2}),
    )
    .await;

    // On the wire: the request goes out and the connection ends with no
    // byte of an answer.
    let addr = addr(app);
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "GET /api/v1/merchant-couriers HTTP/1.1\r\nHost: {addr}\r\nX-API-KEY: {}\r\n\r\n",
        f.key
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("the server closes the connection");
    match read {
        Ok(n) => assert_eq!(n, 0, "{}", String::from_utf8_lossy(&answer)),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }

    // Through an HTTP client: a request error, not a response.
    let err = app
        .req(Method::GET, "/merchant-couriers", &f.key)
        .send()
        .await
        .expect_err("no response");
    assert!(err.is_request() || err.is_connect(), "{err:?}");
    assert!(err.status().is_none());

    // Used up: the next request is answered, and the server is fine.
    let (status, couriers) = send(app.req(Method::GET, "/merchant-couriers", &f.key)).await;
    assert_eq!(status, StatusCode::OK, "{couriers}");
    assert_eq!(couriers["data"][0]["id"], f.courier_id);
}

async fn faults_touch_only_their_merchant_and_delete_disarms_them(app: &TestApp) {
    let a = app.fixture().await;
    let b = app.fixture().await;
    arm(
        app,
        &a,
        &json!({"method": "GET", "path": "/merchant-couriers", "status": 503, "times": 5}),
    )
    .await;
    // Merchant B, a wrong key, and a courier key are not merchant A.
    let (status, _) = send(app.req(Method::GET, "/merchant-couriers", &b.key)).await;
    assert_eq!(status, StatusCode::OK);
    let wrong = format!("sk_test_{}", "x".repeat(32));
    let got = send(app.req(Method::GET, "/merchant-couriers", &wrong)).await;
    assert_problem(&got, 401, "unauthenticated");
    let got = send(app.req(Method::GET, "/merchant-couriers", &a.courier_key)).await;
    assert_problem(&got, 403, "forbidden");
    // A's request is caught; B disarming its own faults changes nothing.
    let got = send(app.req(Method::GET, "/merchant-couriers", &a.key)).await;
    assert_problem(&got, 503, "unavailable");
    let (status, body) = send(app.req(Method::DELETE, FAULTS, &b.key)).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let got = send(app.req(Method::GET, "/merchant-couriers", &a.key)).await;
    assert_problem(&got, 503, "unavailable");
    // A disarms: its requests run again (and disarming twice is fine).
    for _ in 0..2 {
        let (status, _) = send(app.req(Method::DELETE, FAULTS, &a.key)).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
    }
    let (status, _) = send(app.req(Method::GET, "/merchant-couriers", &a.key)).await;
    assert_eq!(status, StatusCode::OK);
    // The testing routes need the merchant's key too.
    let got = send(app.client.delete(format!("{}{FAULTS}", app.base))).await;
    assert_problem(&got, 401, "unauthenticated");
}

async fn bad_fault_bodies_are_refused_with_problems(app: &TestApp) {
    let f = app.fixture().await;
    let refused = |body: Value, code: &'static str, field: Option<&'static str>| {
        let request = app.req(Method::POST, FAULTS, &f.key).json(&body);
        async move {
            let got = send(request).await;
            let problem = assert_problem(&got, 400, code);
            assert_eq!(problem["field"].as_str(), field, "{body}: {problem}");
        }
    };
    let fault = |extra: Value| {
        let mut body = json!({"method": "POST", "path": "/shipments"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    refused(
        fault(json!({"status": 404})),
        "invalid_field",
        Some("status"),
    )
    .await;
    refused(
        fault(json!({"status": 503, "times": 0})),
        "invalid_field",
        Some("times"),
    )
    .await;
    refused(
        fault(json!({"status": 503, "times": 1001})),
        "invalid_field",
        Some("times"),
    )
    .await;
    refused(
        fault(json!({"status": 503, "delay_ms": 100})),
        "invalid_field",
        Some("delay_ms"),
    )
    .await;
    refused(
        fault(json!({"status": 503, "drop_connection": true})),
        "invalid_field",
        Some("drop_connection"),
    )
    .await;
    refused(fault(json!({})), "missing_field", Some("status")).await;
    refused(
        fault(json!({"status": 503, "colour": "red"})),
        "unknown_field",
        Some("colour"),
    )
    .await;
    refused(
        fault(json!({"delay_ms": 100, "retry_after": 1})),
        "invalid_field",
        Some("retry_after"),
    )
    .await;
    refused(
        fault(json!({"delay_ms": 60001})),
        "invalid_field",
        Some("delay_ms"),
    )
    .await;
    refused(
        json!({"method": "POST", "path": "/testing/faults", "status": 503}),
        "invalid_field",
        Some("path"),
    )
    .await;
    refused(
        json!({"method": "POST", "path": "/api/v1/shipments", "status": 503}),
        "invalid_field",
        Some("path"),
    )
    .await;
    refused(
        json!({"method": "POST", "status": 503}),
        "missing_field",
        Some("path"),
    )
    .await;
    // Nothing was armed by any of them.
    let (status, _) = send(
        app.req(Method::POST, "/shipments", &f.key)
            .json(&json!({"courier_company_id": f.courier_id})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
}
