//! The OpenAPI document: served, committed, and naming only routes that
//! exist.

use reqwest::Method;
use serde_json::Value;

use shipment_testkit::{Db, TestApp, send};

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
    // With the test controls, whose routes exist only then.
    let app = TestApp::spawn_with(Db::Sqlite, |c| c.test_controls = true)
        .await
        .unwrap();
    let doc = committed();
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete = path
            .replace("{code}", "SHP-0000-0000")
            .replace("{id}", "1")
            .replace("{delivery_id}", "1");
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
    // 35 (3 of them redelivery and a shipment's delivery history, 3 the
    // listener's, 1 a key's view of itself), and the 7 of the test
    // controls (2 of them a merchant per test, 1 a key's expiry).
    assert_eq!(operations, 42, "every operation of the API is documented");
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
        "api_key_expired",
        "insufficient_permission",
    ] {
        assert!(problem.contains(code), "{code}");
    }
    let status = &doc["components"]["schemas"]["Status"]["enum"];
    assert_eq!(status.as_array().unwrap().len(), 8);
}

/// The operations of the document: (method, path, operation).
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            all.push((method.clone(), path.clone(), operation));
        }
    }
    all
}

/// The component a `$ref` names (a schema, or the key headers' and the
/// refusals' examples), or the schema itself.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let (kind, name) = ["schemas", "headers", "examples"]
                .into_iter()
                .find_map(|kind| {
                    let name = reference.strip_prefix(&format!("#/components/{kind}/"))?;
                    Some((kind, name))
                })
                .unwrap_or_else(|| panic!("a reference to a component: {reference}"));
            let component = &doc["components"][kind][name];
            assert!(!component.is_null(), "{reference} is not a component");
            component
        }
        None => schema,
    }
}

/// Whether a schema (not its properties) admits JSON `null`: `type: null`,
/// a type list with `null`, or a `oneOf`/`anyOf` with such a branch.
fn admits_null(doc: &Value, schema: &Value) -> bool {
    let schema = resolve(doc, schema);
    let null_type = match &schema["type"] {
        Value::String(t) => t == "null",
        Value::Array(types) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    null_type
        || ["oneOf", "anyOf"].iter().any(|key| {
            schema[key]
                .as_array()
                .is_some_and(|branches| branches.iter().any(|b| admits_null(doc, b)))
        })
}

#[test]
fn a_replayed_create_is_documented_as_the_201_it_is() {
    let doc = committed();
    let responses = &doc["paths"]["/shipments"]["post"]["responses"];
    assert!(
        responses.get("200").is_none(),
        "the server answers a replay with 201, never 200: {responses}"
    );
    let created = &responses["201"];
    assert_eq!(
        created["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Shipment"
    );
    let header = &created["headers"]["Idempotent-Replayed"];
    assert_eq!(header["schema"]["type"], "string", "{header}");
    assert_eq!(
        header["schema"]["enum"],
        serde_json::json!(["true"]),
        "{header}"
    );
    assert!(header["description"].is_string(), "{header}");

    let parameters = doc["paths"]["/shipments"]["post"]["parameters"]
        .as_array()
        .unwrap();
    let key = parameters
        .iter()
        .find(|p| p["name"] == "Idempotency-Key")
        .expect("the Idempotency-Key parameter");
    assert_eq!(key["in"], "header");
    assert_eq!(key["required"], false);
    assert_eq!(key["schema"]["type"], "string", "{key}");
    assert_eq!(key["schema"]["minLength"], 1);
    assert_eq!(key["schema"]["maxLength"], 255);
}

#[test]
fn no_parameter_and_no_request_body_admits_null() {
    let doc = committed();
    let mut optional_bodies = 0;
    for (method, path, operation) in operations(&doc) {
        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            assert!(
                !admits_null(&doc, &parameter["schema"]),
                "{method} {path}: parameter {parameter}"
            );
        }
        let body = &operation["requestBody"];
        for (media_type, content) in body["content"].as_object().into_iter().flatten() {
            assert!(
                !admits_null(&doc, &content["schema"]),
                "{method} {path}: {media_type} body {content}"
            );
            assert!(
                content["schema"]["$ref"].is_string(),
                "{method} {path}: a body is a component"
            );
        }
        if body.is_object() && body["required"] == false {
            optional_bodies += 1;
        }
    }
    // POST /api-keys and POST /courier/shipments/{code}/deliver.
    assert_eq!(optional_bodies, 2, "optional bodies say `required: false`");
}

#[test]
fn list_and_page_items_reference_their_component() {
    let doc = committed();
    let mut lists = Vec::new();
    for (method, path, operation) in operations(&doc) {
        for (status, response) in operation["responses"].as_object().unwrap() {
            let Some(schema) = response["content"]["application/json"].get("schema") else {
                continue;
            };
            let data = &resolve(&doc, schema)["properties"]["data"];
            if data["type"] != "array" {
                continue;
            }
            let items = &data["items"];
            let reference = items["$ref"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} {status}: inline items {items}"));
            assert!(
                resolve(&doc, items).is_object(),
                "{method} {path}: {reference} exists"
            );
            lists.push(format!("{method} {path}"));
        }
    }
    for list in [
        "get /shipments",
        "get /courier/shipments",
        "get /merchant-couriers",
        "get /courier/drivers",
        "get /webhooks/{id}/deliveries",
        "get /api-keys",
        "get /webhooks",
    ] {
        assert!(lists.iter().any(|l| l == list), "{list} in {lists:?}");
    }
}

#[test]
fn signing_in_needs_no_credentials_and_everything_else_does() {
    let doc = committed();
    for (method, path, operation) in operations(&doc) {
        let security = &operation["security"];
        let expected = if path == "/auth/login" {
            serde_json::json!([])
        } else if path == "/webhooks/listen" || path == "/webhooks/listener-signing-key" {
            // A listener sees what the API key can list: either credential.
            serde_json::json!([{ "api_key": [] }, { "bearer": [] }])
        } else if path.starts_with("/shipments")
            || path.starts_with("/courier/")
            || path.starts_with("/testing/")
            || path == "/merchant-couriers"
            || path == "/api-keys/current"
        {
            serde_json::json!([{ "api_key": [] }])
        } else {
            serde_json::json!([{ "bearer": [] }])
        };
        assert_eq!(security, &expected, "{method} {path}");
    }
}

#[test]
fn every_component_schema_is_used_by_an_operation() {
    let doc = committed();
    fn references(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    found.push(r.clone());
                }
                map.values().for_each(|v| references(v, found));
            }
            Value::Array(values) => values.iter().for_each(|v| references(v, found)),
            _ => {}
        }
    }
    // What the operations reach, directly or through other components.
    let mut pending = Vec::new();
    references(&doc["paths"], &mut pending);
    let mut reached = std::collections::BTreeSet::new();
    while let Some(reference) = pending.pop() {
        if reached.insert(reference.clone()) {
            references(
                resolve(&doc, &serde_json::json!({ "$ref": reference })),
                &mut pending,
            );
        }
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let unused: Vec<_> = schemas
        .keys()
        .filter(|name| !reached.contains(&format!("#/components/schemas/{name}")))
        .collect();
    assert!(
        unused.is_empty(),
        "components no operation uses: {unused:?}"
    );
    for reference in reached
        .iter()
        .filter(|r| r.starts_with("#/components/schemas/"))
    {
        let name = reference.trim_start_matches("#/components/schemas/");
        assert!(schemas.contains_key(name), "{reference} is not a component");
    }
}
