//! The OpenAPI document: served, committed, and naming only routes that
//! exist.

use reqwest::Method;
use serde_json::Value;

use crate::helpers::{Db, TestApp, send};

fn committed() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../openapi.json");
    let text = std::fs::read_to_string(path).expect("openapi.json at the repository root");
    serde_json::from_str(&text).expect("openapi.json is JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_document_is_the_committed_one() {
    let app = TestApp::spawn(Db::Sqlite).await.unwrap();
    let (status, served) = send(app.client.get(format!("{}/openapi.json", app.base))).await;
    assert_eq!(status.as_u16(), 200);
    assert_eq!(served["openapi"], "3.1.0");
    assert!(
        served == committed(),
        "openapi.json is stale: run `cargo run -p shipment-server -- openapi > openapi.json`"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_operation_is_a_route_of_the_server() {
    let app = TestApp::spawn(Db::Sqlite).await.unwrap();
    let doc = committed();
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete = path.replace("{code}", "SHP-0000-0000").replace("{id}", "1");
        for method in item.as_object().unwrap().keys() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            // No credentials: a route that exists answers 401, never 404/405.
            let (status, body) = send(
                app.client
                    .request(method.clone(), format!("{}{concrete}", app.base)),
            )
            .await;
            if path == "/auth/login" {
                assert_eq!(status.as_u16(), 400, "{method} {path}: {body}");
            } else {
                assert_eq!(status.as_u16(), 401, "{method} {path}: {body}");
            }
            operations += 1;
        }
    }
    assert_eq!(operations, 28, "every operation of the API is documented");
    app.stop().await;
}

#[test]
fn the_document_describes_both_security_schemes_and_every_problem_code() {
    let doc = committed();
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["api_key"]["name"], "X-API-KEY");
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    let problem = doc["components"]["schemas"]["Problem"]["description"]
        .as_str()
        .unwrap();
    for code in [
        "invalid_json",
        "webhook_url_taken",
        "rate_limited",
        "payload_too_large",
    ] {
        assert!(problem.contains(code), "{code}");
    }
    let status = &doc["components"]["schemas"]["Status"]["enum"];
    assert_eq!(status.as_array().unwrap().len(), 8);
}
