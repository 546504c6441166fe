//! Every status of the interface's error table where it can happen, in the
//! problem shape, with snapshots of the bodies.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::MerchantId;

use shipment_testkit::{TestApp, assert_problem, db_tests, send};

db_tests!(
    missing_wrong_and_unknown_keys_are_401_on_every_endpoint,
    a_key_of_the_other_environment_is_401,
    bad_bodies_are_400_with_the_field_named,
    an_unlinked_courier_is_400,
    a_malformed_code_is_400_invalid_identifier,
    bodies_are_limited_to_one_mebibyte,
    unknown_routes_and_methods_answer_in_the_problem_shape,
    every_response_carries_a_request_id,
);

fn snapshot(name: &str, body: &Value) {
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_json_snapshot!(name, body, { ".request_id" => "[request_id]" });
    });
}

/// Every API-key endpoint, with a body where it takes one.
fn endpoints() -> Vec<(Method, &'static str, Option<Value>)> {
    vec![
        (
            Method::POST,
            "/shipments",
            Some(json!({"courier_company_id": 1})),
        ),
        (Method::GET, "/shipments", None),
        (Method::GET, "/shipments/SHP-0000-0000", None),
        (Method::POST, "/shipments/SHP-0000-0000/cancel", None),
        (
            Method::POST,
            "/shipments/SHP-0000-0000/generate-confirmation-code",
            None,
        ),
        (
            Method::POST,
            "/shipments/SHP-0000-0000/rate",
            Some(json!({"rating": 5})),
        ),
        (Method::GET, "/merchant-couriers", None),
    ]
}

async fn missing_wrong_and_unknown_keys_are_401_on_every_endpoint(app: &TestApp) {
    let unknown_key = format!("sk_test_{}", "A".repeat(32));
    for (method, path, body) in endpoints() {
        let url = format!("{}{path}", app.base);
        let with_body = |r: reqwest::RequestBuilder| match &body {
            Some(b) => r.json(b),
            None => r,
        };
        let missing = send(with_body(app.client.request(method.clone(), &url))).await;
        let b = assert_problem(&missing, 401, "unauthenticated");
        assert_eq!(b["detail"], "missing X-API-KEY header", "{path}");
        let wrong_name = send(with_body(
            app.client
                .request(method.clone(), &url)
                .header("X-API-TOKEN", &unknown_key),
        ))
        .await;
        assert_problem(&wrong_name, 401, "unauthenticated");
        let bearer = send(with_body(
            app.client
                .request(method.clone(), &url)
                .bearer_auth("some-session-token"),
        ))
        .await;
        assert_problem(&bearer, 401, "unauthenticated");
        let invalid = send(with_body(
            app.client
                .request(method.clone(), &url)
                .header("X-API-KEY", "nope"),
        ))
        .await;
        assert_problem(&invalid, 401, "unauthenticated");
        let unknown = send(with_body(
            app.client
                .request(method.clone(), &url)
                .header("X-API-KEY", &unknown_key),
        ))
        .await;
        let b = assert_problem(&unknown, 401, "unauthenticated");
        assert_eq!(b["detail"], "invalid or revoked API key");
    }
    let missing = send(app.client.get(format!("{}/shipments", app.base))).await;
    snapshot("unauthenticated_missing_key", &missing.1);
    let bearer = send(
        app.client
            .get(format!("{}/shipments", app.base))
            .bearer_auth("t"),
    )
    .await;
    snapshot("unauthenticated_bearer_on_api_key_route", &bearer.1);
}

async fn a_key_of_the_other_environment_is_401(app: &TestApp) {
    let f = app.fixture().await;
    let live = app
        .store
        .create_api_key(
            MerchantId::new(f.merchant_id),
            "live",
            shipment_server::Environment::Production,
        )
        .await
        .unwrap();
    let got = send(app.req(Method::GET, "/shipments", live.key.expose())).await;
    let body = assert_problem(&got, 401, "unauthenticated");
    snapshot("unauthenticated_other_environment", &body);
}

async fn bad_bodies_are_400_with_the_field_named(app: &TestApp) {
    let f = app.fixture().await;
    let raw = |body: &str, content_type: Option<&str>| {
        let mut r = app
            .req(Method::POST, "/shipments", &f.key)
            .body(body.to_owned());
        if let Some(ct) = content_type {
            r = r.header("Content-Type", ct);
        }
        send(r)
    };
    let json_ct = Some("application/json");
    // (snapshot name, body, content type, problem code, field)
    type Case<'a> = (&'a str, String, Option<&'a str>, &'a str, Option<&'a str>);
    let cases: Vec<Case> = vec![
        (
            "invalid_json",
            "{\"courier_company_id\": ".into(),
            json_ct,
            "invalid_json",
            None,
        ),
        (
            "not_an_object",
            "[1, 2]".into(),
            json_ct,
            "invalid_json",
            None,
        ),
        (
            "no_content_type",
            format!("{{\"courier_company_id\": {}}}", f.courier_id),
            None,
            "invalid_json",
            None,
        ),
        (
            "wrong_content_type",
            format!("{{\"courier_company_id\": {}}}", f.courier_id),
            Some("text/plain"),
            "invalid_json",
            None,
        ),
        (
            "missing_courier_company_id",
            "{\"description\": \"x\"}".into(),
            json_ct,
            "missing_field",
            Some("courier_company_id"),
        ),
        (
            "wrong_type",
            "{\"courier_company_id\": \"seven\"}".into(),
            json_ct,
            "invalid_field",
            Some("courier_company_id"),
        ),
        (
            "unknown_field",
            format!(
                "{{\"courier_company_id\": {}, \"colour\": \"red\"}}",
                f.courier_id
            ),
            json_ct,
            "unknown_field",
            Some("colour"),
        ),
        (
            "weight_not_positive",
            format!(
                "{{\"courier_company_id\": {}, \"weight_kg\": 0}}",
                f.courier_id
            ),
            json_ct,
            "invalid_field",
            Some("weight_kg"),
        ),
        (
            "webhook_url_not_https",
            format!(
                "{{\"courier_company_id\": {}, \"webhook_url\": \"http://example.com/h\"}}",
                f.courier_id
            ),
            json_ct,
            "invalid_field",
            Some("webhook_url"),
        ),
        (
            "items_not_strings",
            format!(
                "{{\"courier_company_id\": {}, \"items\": [1]}}",
                f.courier_id
            ),
            json_ct,
            "invalid_field",
            Some("items[0]"),
        ),
    ];
    for (name, body, ct, code, field) in cases {
        let got = raw(&body, ct).await;
        let problem = assert_problem(&got, 400, code);
        assert_eq!(problem["field"].as_str(), field, "{name}: {problem}");
        snapshot(&format!("bad_body_{name}"), &problem);
    }
    let (_, page) = send(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_eq!(page["total"], 0, "no bad request may create anything");
}

async fn an_unlinked_courier_is_400(app: &TestApp) {
    let f = app.fixture().await;
    let unlinked = app.store.create_courier("Stranger", 1, 1, 1).await.unwrap();
    let got = send(
        app.req(Method::POST, "/shipments", &f.key)
            .json(&json!({"courier_company_id": unlinked})),
    )
    .await;
    let mut body = assert_problem(&got, 400, "invalid_field");
    assert_eq!(body["field"], "courier_company_id");
    body["detail"] = Value::String(
        body["detail"]
            .as_str()
            .unwrap()
            .replace(&unlinked.to_string(), "[id]"),
    );
    snapshot("unlinked_courier", &body);
}

async fn a_malformed_code_is_400_invalid_identifier(app: &TestApp) {
    let f = app.fixture().await;
    for path in [
        "/shipments/abc",
        "/shipments/shp-0000-0000/cancel",
        "/shipments/SHP-OOOO-0000",
    ] {
        let method = if path.ends_with("cancel") {
            Method::POST
        } else {
            Method::GET
        };
        assert_problem(
            &send(app.req(method, path, &f.key)).await,
            400,
            "invalid_identifier",
        );
    }
    let got = send(app.req(Method::GET, "/shipments/abc", &f.key)).await;
    snapshot("invalid_identifier", &got.1);
}

async fn bodies_are_limited_to_one_mebibyte(app: &TestApp) {
    let f = app.fixture().await;
    const LIMIT: usize = 1024 * 1024;
    let json = format!("{{\"courier_company_id\": {}}}", f.courier_id);
    let padded = |len: usize| format!("{json}{}", " ".repeat(len - json.len()));
    let post = |body: String| {
        app.req(Method::POST, "/shipments", &f.key)
            .header("Content-Type", "application/json")
            .body(body)
    };
    let at_limit = send(post(padded(LIMIT))).await;
    assert_eq!(
        at_limit.0,
        StatusCode::CREATED,
        "exactly 1 MiB is accepted: {}",
        at_limit.1
    );
    let over = send(post(padded(LIMIT + 1))).await;
    let body = assert_problem(&over, 413, "payload_too_large");
    snapshot("payload_too_large", &body);
    // Without a Content-Length (chunked), the limit still holds.
    let status = chunked_post(app, &f.key, padded(LIMIT + 1)).await;
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
}

/// Sends `body` with `Transfer-Encoding: chunked` over a raw connection and
/// returns the status line.
async fn chunked_post(app: &TestApp, key: &str, body: String) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = app.root.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/v1/shipments HTTP/1.1\r\nHost: {addr}\r\nX-API-KEY: {key}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    for chunk in body.as_bytes().chunks(64 * 1024) {
        let sent = async {
            stream
                .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .await?;
            stream.write_all(chunk).await?;
            stream.write_all(b"\r\n").await
        };
        // The server may answer and close as soon as the limit is passed.
        if sent.await.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

async fn unknown_routes_and_methods_answer_in_the_problem_shape(app: &TestApp) {
    let f = app.fixture().await;
    let unknown = send(app.req(Method::GET, "/no-such-thing", &f.key)).await;
    snapshot("unknown_route", &assert_problem(&unknown, 404, "not_found"));
    // Outside /api/v1 the dashboard answers with its own pages where it is
    // served (dashboard_pages::serving), and a listener without it with
    // this problem (the_dashboard_can_have_an_address_of_its_own).
    let wrong_method = send(app.req(Method::DELETE, "/shipments", &f.key)).await;
    snapshot(
        "method_not_allowed",
        &assert_problem(&wrong_method, 405, "method_not_allowed"),
    );
    let response = app
        .client
        .get(format!("{}/nope", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
}

async fn every_response_carries_a_request_id(app: &TestApp) {
    let f = app.fixture().await;
    let ok = app
        .req(Method::GET, "/shipments", &f.key)
        .header("X-Request-Id", "trace-me-123")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.headers()["x-request-id"], "trace-me-123");
    let err = app
        .client
        .get(format!("{}/shipments", app.base))
        .header("X-Request-Id", "trace-me-456")
        .send()
        .await
        .unwrap();
    assert_eq!(err.headers()["x-request-id"], "trace-me-456");
    let body: Value = err.json().await.unwrap();
    assert_eq!(body["request_id"], "trace-me-456");
    let fresh = app
        .client
        .get(format!("{}/healthz", app.root))
        .send()
        .await
        .unwrap();
    let id = fresh.headers()["x-request-id"].to_str().unwrap();
    assert_eq!(id.len(), 36, "a generated UUID: {id}");
    let ready = app
        .client
        .get(format!("{}/readyz", app.root))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
}
