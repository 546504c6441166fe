//! The authorization matrix: every operation of the served OpenAPI document,
//! and every dashboard page, against objects owned by merchant A, for every
//! kind of caller, with the status each must get. The operations are read
//! from the document and the pages from the dashboard's router, so a new
//! route without its row fails here, naming it, and so does a row whose
//! route is gone.
//!
//! Restricted and expired keys of A's are callers too, on every operation:
//! their answers are not written out but derived from what the server's
//! permission table (`harness::key_permissions`) says each operation needs
//! and from A's full key's answer, so the matrix checks that the key check
//! holds keys to the table, and the table's own test that every key route
//! has its row.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, COOKIE};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::{Access, Permissions, Resource};
use shipment_testkit::{Fixture, TestApp, db_tests, send};

use crate::dashboard_pages::browser::{Answer, Browser};
use crate::receiver::Receiver;

db_tests!(
    config = |c| c.test_controls = true;
    every_operation_answers_every_caller_as_the_matrix_says,
    every_page_answers_every_session_as_the_matrix_says,
);

/// A kind of caller of the API: the columns of [`API`], in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Caller {
    /// No credentials at all.
    Nobody,
    /// Merchant A's API key.
    KeyA,
    /// Merchant B's API key.
    KeyB,
    /// A key of A's that A deleted.
    DeletedKey,
    /// The courier key of A's linked courier company.
    CourierA,
    /// The courier key of a company A is not linked to (B's).
    CourierX,
    /// The key of a test merchant A made with `POST /testing/merchants`.
    TestKey,
    /// That test merchant's courier key.
    TestCourier,
    /// A's dashboard session, as a Bearer token.
    SessionA,
    /// B's dashboard session, as a Bearer token.
    SessionB,
    /// A session of A's that was signed out.
    Ended,
    /// A's live session, sent as the dashboard's cookie: the API takes
    /// Bearer tokens only, so a cross-site request that carries the
    /// browser's cookie can do nothing there.
    CookieA,
    /// A restricted key of A's that reads shipments and courier companies
    /// ([`Permissions::read_only`]); derived, not a column of [`API`].
    ReadOnlyKey,
    /// A restricted key of A's that may only listen (and replace the
    /// listener key) and use the test controls; derived.
    ListenTestingKey,
    /// A full key of A's that the test controls made expire; derived.
    ExpiredKey,
}

use Caller::*;

const CALLERS: [Caller; 12] = [
    Nobody,
    KeyA,
    KeyB,
    DeletedKey,
    CourierA,
    CourierX,
    TestKey,
    TestCourier,
    SessionA,
    SessionB,
    Ended,
    CookieA,
];

/// The callers whose answers are derived ([`derived`]) rather than written.
const DERIVED: [Caller; 3] = [ReadOnlyKey, ListenTestingKey, ExpiredKey];

/// The permissions of a derived caller's key (`None`: a full key).
fn permissions_of(caller: Caller) -> Option<Permissions> {
    match caller {
        ReadOnlyKey => Some(Permissions::read_only()),
        ListenTestingKey => Some(
            Permissions::none()
                .with(Resource::Listen, Access::Write)
                .with(Resource::Testing, Access::Write),
        ),
        _ => None,
    }
}

/// What a derived caller must get on `operation`, from A's full key's
/// answer there (`key_a`, and its problem code): an operation a merchant
/// key cannot call at all is refused as it is for A's full key (a courier
/// route, a dashboard route); on one it can, an expired key is 401
/// `api_key_expired`, a restricted key without what the table says the
/// operation needs is 403 `insufficient_permission`, and one with it gets
/// exactly A's full key's answer.
fn derived(
    caller: Caller,
    operation: &str,
    key_a: u16,
    table: &HashMap<String, Option<(Resource, Access)>>,
) -> (u16, Option<&'static str>) {
    let Some(need) = table.get(operation) else {
        return (key_a, refusal_code(key_a));
    };
    if caller == ExpiredKey {
        return (401, Some("api_key_expired"));
    }
    let permissions = permissions_of(caller).expect("a restricted key");
    match need {
        Some((resource, access)) if !permissions.allows(*resource, *access) => {
            (403, Some("insufficient_permission"))
        }
        _ => (key_a, refusal_code(key_a)),
    }
}

/// Every operation of the OpenAPI document × every [`Caller`], in the order
/// of [`CALLERS`]: the status it must answer. Path parameters name A's
/// objects (a shipment in the state the operation needs, A's webhook and a
/// delivery of it, a key or webhook of A's made for the cell, A's merchant
/// id); bodies are valid, so a refusal is the caller's, not the body's.
/// Merchants are A, B and the test merchant (`tm`); `ck` columns are
/// courier keys.
#[rustfmt::skip]
const API: &[(&str, [u16; 12])] = &[
    //                                                     none keyA keyB del  ckA  ckX  tmK  tmC  sesA sesB ended cookie
    ("GET /api-keys",                                     [401, 401, 401, 401, 401, 401, 401, 401, 200, 200, 401, 401]),
    ("POST /api-keys",                                    [401, 401, 401, 401, 401, 401, 401, 401, 201, 201, 401, 401]),
    ("POST /api-keys/verify",                             [401, 401, 401, 401, 401, 401, 401, 401, 200, 200, 401, 401]),
    ("DELETE /api-keys/{id}",                             [401, 401, 401, 401, 401, 401, 401, 401, 204, 404, 401, 401]),
    // Each key tells what it is; a session is not a key.
    ("GET /api-keys/current",                             [401, 200, 200, 401, 403, 403, 200, 403, 401, 401, 401, 401]),
    // Anyone may sign in with A's e-mail and password; a credential sent
    // beside them changes nothing.
    ("POST /auth/login",                                  [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
    ("POST /auth/logout",                                 [401, 401, 401, 401, 401, 401, 401, 401, 204, 204, 401, 401]),
    // Each courier company sees its own drivers.
    ("GET /courier/drivers",                              [401, 403, 403, 403, 200, 200, 403, 200, 401, 401, 401, 401]),
    ("POST /courier/drivers",                             [401, 403, 403, 403, 201, 201, 403, 201, 401, 401, 401, 401]),
    ("GET /courier/shipments",                            [401, 403, 403, 403, 200, 200, 403, 200, 401, 401, 401, 401]),
    // Another company's key (the test merchant's company is a copy of A's,
    // not A's) is refused as any other account's is; each names its own
    // driver.
    ("POST /courier/shipments/{code}/assign-driver",      [401, 403, 403, 403, 200, 403, 403, 403, 401, 401, 401, 401]),
    ("POST /courier/shipments/{code}/deliver",            [401, 403, 403, 403, 200, 403, 403, 403, 401, 401, 401, 401]),
    ("POST /courier/shipments/{code}/fail",               [401, 403, 403, 403, 200, 403, 403, 403, 401, 401, 401, 401]),
    ("POST /courier/shipments/{code}/pickup",             [401, 403, 403, 403, 200, 403, 403, 403, 401, 401, 401, 401]),
    ("POST /courier/shipments/{code}/return",             [401, 403, 403, 403, 200, 403, 403, 403, 401, 401, 401, 401]),
    ("POST /courier/shipments/{code}/unassign-driver",    [401, 403, 403, 403, 200, 403, 403, 403, 401, 401, 401, 401]),
    // Each merchant lists its own.
    ("GET /merchant-couriers",                            [401, 200, 200, 401, 403, 403, 200, 403, 401, 401, 401, 401]),
    ("GET /shipments",                                    [401, 200, 200, 401, 403, 403, 200, 403, 401, 401, 401, 401]),
    // With A's courier company: linked to A only.
    ("POST /shipments",                                   [401, 201, 400, 401, 403, 403, 400, 403, 401, 401, 401, 401]),
    ("GET /shipments/{code}",                             [401, 200, 403, 401, 403, 403, 403, 403, 401, 401, 401, 401]),
    ("POST /shipments/{code}/cancel",                     [401, 200, 403, 401, 403, 403, 403, 403, 401, 401, 401, 401]),
    ("POST /shipments/{code}/generate-confirmation-code", [401, 201, 403, 401, 403, 403, 403, 403, 401, 401, 401, 401]),
    ("POST /shipments/{code}/rate",                       [401, 200, 403, 401, 403, 403, 403, 403, 401, 401, 401, 401]),
    // Faults and duplicates are each merchant's own.
    ("POST /testing/faults",                              [401, 201, 201, 401, 403, 403, 201, 403, 401, 401, 401, 401]),
    ("DELETE /testing/faults",                            [401, 204, 204, 401, 403, 403, 204, 403, 401, 401, 401, 401]),
    // Naming A's courier company: only A is linked to it.
    ("POST /testing/merchants",                           [401, 201, 400, 401, 403, 403, 400, 403, 401, 401, 401, 401]),
    // A's id: A was not made by this route, so it may not delete itself.
    ("DELETE /testing/merchants/{id}",                    [401, 403, 404, 401, 403, 403, 404, 403, 401, 401, 401, 401]),
    ("POST /testing/shipments/{code}/advance",            [401, 200, 403, 401, 403, 403, 403, 403, 401, 401, 401, 401]),
    // A key of A's: not another merchant's.
    ("POST /testing/api-keys/{id}/expire",                [401, 200, 404, 401, 403, 403, 404, 403, 401, 401, 401, 401]),
    ("POST /testing/webhooks/duplicates",                 [401, 200, 200, 401, 403, 403, 200, 403, 401, 401, 401, 401]),
    ("GET /webhooks",                                     [401, 401, 401, 401, 401, 401, 401, 401, 200, 200, 401, 401]),
    ("POST /webhooks",                                    [401, 401, 401, 401, 401, 401, 401, 401, 201, 201, 401, 401]),
    ("GET /webhooks/deliveries",                          [401, 401, 401, 401, 401, 401, 401, 401, 200, 404, 401, 401]),
    // Key or session: each merchant its own stream and listener key.
    ("GET /webhooks/listen",                              [401, 200, 200, 401, 403, 403, 200, 403, 200, 200, 401, 401]),
    ("GET /webhooks/listener-signing-key",                [401, 200, 200, 401, 403, 403, 200, 403, 200, 200, 401, 401]),
    ("POST /webhooks/listener-signing-key",               [401, 201, 201, 401, 403, 403, 201, 403, 201, 201, 401, 401]),
    ("POST /webhooks/shipment-signing-key",               [401, 401, 401, 401, 401, 401, 401, 401, 201, 201, 401, 401]),
    ("DELETE /webhooks/{id}",                             [401, 401, 401, 401, 401, 401, 401, 401, 204, 404, 401, 401]),
    ("PATCH /webhooks/{id}",                              [401, 401, 401, 401, 401, 401, 401, 401, 200, 404, 401, 401]),
    ("GET /webhooks/{id}/deliveries",                     [401, 401, 401, 401, 401, 401, 401, 401, 200, 404, 401, 401]),
    ("POST /webhooks/{id}/deliveries/{delivery_id}/redeliver",
                                                          [401, 401, 401, 401, 401, 401, 401, 401, 202, 404, 401, 401]),
    ("POST /webhooks/{id}/redeliver",                     [401, 401, 401, 401, 401, 401, 401, 401, 202, 404, 401, 401]),
];

/// Rows that end what other rows use (A's sessions, A itself), run after
/// all the others, in this order.
const RUN_LAST: [&str; 2] = ["POST /auth/logout", "DELETE /testing/merchants/{id}"];

/// Who may see A's objects: a 2xx (or any) answer to anyone else must not
/// carry them.
fn may_see_a(caller: Caller) -> bool {
    matches!(
        caller,
        KeyA | CourierA | SessionA | ReadOnlyKey | ListenTestingKey
    )
}

/// A request's answer: its status, and its body (`Null` for an event
/// stream, which is not read, and when empty).
struct Got {
    status: StatusCode,
    content_type: String,
    body: Value,
}

async fn call(r: RequestBuilder) -> Got {
    let response = r.send().await.expect("the server answers");
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if content_type.starts_with("text/event-stream") {
        // A live stream: its status is the answer; dropping it hangs up.
        return Got {
            status,
            content_type,
            body: Value::Null,
        };
    }
    let text = response.text().await.expect("a readable body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    Got {
        status,
        content_type,
        body,
    }
}

/// The problem code a refusal with `status` must carry in this matrix.
fn refusal_code(status: u16) -> Option<&'static str> {
    match status {
        400 => Some("invalid_field"),
        401 => Some("unauthenticated"),
        403 => Some("forbidden"),
        404 => Some("not_found"),
        _ => None,
    }
}

/// Everything the cells use: the callers' credentials and A's objects.
struct World {
    a: Fixture,
    b: Fixture,
    /// A's and B's Bearer tokens, and one of A's that was signed out.
    a_token: String,
    b_token: String,
    ended_token: String,
    deleted_key: String,
    /// A's restricted keys and expired key ([`DERIVED`]).
    read_only_key: String,
    listen_testing_key: String,
    expired_key: String,
    /// A's key named with the marker: what verifying it shows is checked.
    named_key: String,
    /// The test merchant A made: its key, courier key and driver.
    tm_key: String,
    tm_courier_key: String,
    tm_driver: i64,
    /// A's webhook, a delivery it logged and the shipment delivered.
    hook: i64,
    delivery: i64,
    code: String,
    receiver: Receiver,
    /// In the description of A's shipments, A's webhook URLs, the name of
    /// an API key of A's and of a driver of A's courier company: text only
    /// those who may see A's objects may be shown.
    marker: String,
    cells: AtomicUsize,
}

impl World {
    async fn new(app: &TestApp) -> World {
        let marker = format!("a-only-{}", uuid::Uuid::new_v4().simple());
        let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
        let a = app.fixture_with_login().await;
        let b = app.fixture_with_login().await;
        let (email, password) = a.credentials();
        let a_token = app.login(&email, &password).await;
        let (email_b, password_b) = b.credentials();
        let b_token = app.login(&email_b, &password_b).await;
        let ended_token = app.login(&email, &password).await;
        let (status, _) = send(app.bearer(Method::POST, "/auth/logout", &ended_token)).await;
        assert_eq!(status, StatusCode::NO_CONTENT);

        // A key named with the marker, listed to A only; and one deleted.
        let named_key = ok(send(
            app.bearer(Method::POST, "/api-keys", &a_token)
                .json(&json!({"name": marker})),
        ))
        .await["key"]
            .as_str()
            .unwrap()
            .to_owned();
        let deleted = ok(send(app.bearer(Method::POST, "/api-keys", &a_token))).await;
        let id = deleted["id"].as_i64().unwrap();
        ok(send(app.bearer(
            Method::DELETE,
            &format!("/api-keys/{id}"),
            &a_token,
        )))
        .await;

        let restricted = |permissions: Permissions| {
            send(
                app.bearer(Method::POST, "/api-keys", &a_token)
                    .json(&json!({ "permissions": permissions })),
            )
        };
        let read_only_key = ok(restricted(permissions_of(ReadOnlyKey).unwrap())).await["key"]
            .as_str()
            .unwrap()
            .to_owned();
        let listen_testing_key =
            ok(restricted(permissions_of(ListenTestingKey).unwrap())).await["key"]
                .as_str()
                .unwrap()
                .to_owned();
        let expired = ok(send(app.bearer(Method::POST, "/api-keys", &a_token))).await;
        let expired_id = expired["id"].as_i64().unwrap();
        ok(send(app.req(
            Method::POST,
            &format!("/testing/api-keys/{expired_id}/expire"),
            &a.key,
        )))
        .await;

        ok(send(
            app.req(Method::POST, "/courier/drivers", &a.courier_key)
                .json(&json!({"name": marker})),
        ))
        .await;
        let tm = ok(send(
            app.req(Method::POST, "/testing/merchants", &a.key)
                .json(&json!({})),
        ))
        .await;

        let hook = ok(send(
            app.bearer(Method::POST, "/webhooks", &a_token)
                .json(&json!({"url": format!("{}?owner={marker}", receiver.url)})),
        ))
        .await["webhook_id"]
            .as_i64()
            .unwrap();
        let code = app
            .create(
                &a,
                json!({"courier_company_id": a.courier_id, "description": marker}),
            )
            .await["code"]
            .as_str()
            .unwrap()
            .to_owned();
        let delivery = logged_delivery(app, &a_token, hook).await;
        World {
            tm_key: tm["api_key"].as_str().unwrap().to_owned(),
            tm_courier_key: tm["courier_key"].as_str().unwrap().to_owned(),
            tm_driver: tm["driver"]["id"].as_i64().unwrap(),
            a,
            b,
            a_token,
            b_token,
            ended_token,
            deleted_key: deleted["key"].as_str().unwrap().to_owned(),
            read_only_key,
            listen_testing_key,
            expired_key: expired["key"].as_str().unwrap().to_owned(),
            named_key,
            hook,
            delivery,
            code,
            receiver,
            marker,
            cells: AtomicUsize::new(0),
        }
    }

    /// A number no other cell has, for names that must be unique.
    fn next(&self) -> usize {
        self.cells.fetch_add(1, Ordering::Relaxed)
    }

    /// A new shipment of A's (described with the marker), moved to `state`.
    async fn shipment(&self, app: &TestApp, state: &str) -> String {
        let made = app
            .create(
                &self.a,
                json!({"courier_company_id": self.a.courier_id, "description": self.marker}),
            )
            .await;
        let code = made["code"].as_str().unwrap().to_owned();
        if state != "assigned_to_courier" {
            let moved = ok(send(
                app.req(
                    Method::POST,
                    &format!("/testing/shipments/{code}/advance"),
                    &self.a.key,
                )
                .json(&json!({"to": state})),
            ))
            .await;
            assert_eq!(moved["status"], state, "{moved}");
        }
        code
    }

    /// A new webhook of A's; its id.
    async fn webhook(&self, app: &TestApp) -> i64 {
        let url = format!(
            "{}?owner={}&n={}",
            self.receiver.url,
            self.marker,
            self.next()
        );
        ok(send(
            app.bearer(Method::POST, "/webhooks", &self.a_token)
                .json(&json!({ "url": url })),
        ))
        .await["webhook_id"]
            .as_i64()
            .unwrap()
    }

    /// The driver `caller` would name: its own company's, or A's.
    fn driver_of(&self, caller: Caller) -> i64 {
        match caller {
            CourierX => self.b.driver_id,
            TestCourier => self.tm_driver,
            _ => self.a.driver_id,
        }
    }

    /// The concrete path and body of `operation` for `caller`'s cell,
    /// making A's objects it needs fresh where the cell may change them.
    async fn cell(
        &self,
        app: &TestApp,
        operation: &str,
        caller: Caller,
    ) -> (String, Option<Value>) {
        let (_, template) = operation.split_once(' ').unwrap();
        let state = match template {
            "/courier/shipments/{code}/assign-driver"
            | "/shipments/{code}/cancel"
            | "/shipments/{code}/generate-confirmation-code"
            | "/testing/shipments/{code}/advance"
            | "/shipments/{code}" => Some("assigned_to_courier"),
            "/courier/shipments/{code}/unassign-driver" | "/courier/shipments/{code}/pickup" => {
                Some("assigned_to_driver")
            }
            "/courier/shipments/{code}/deliver" | "/courier/shipments/{code}/fail" => {
                Some("in_transit")
            }
            "/courier/shipments/{code}/return" => Some("failed"),
            "/shipments/{code}/rate" => Some("delivered"),
            _ => None,
        };
        let mut path = template.to_owned();
        if let Some(state) = state {
            path = path.replace("{code}", &self.shipment(app, state).await);
        }
        let id = match operation {
            "DELETE /api-keys/{id}" | "POST /testing/api-keys/{id}/expire" => {
                let key = ok(send(app.bearer(Method::POST, "/api-keys", &self.a_token))).await;
                key["id"].as_i64().unwrap()
            }
            "DELETE /webhooks/{id}" | "PATCH /webhooks/{id}" => self.webhook(app).await,
            "DELETE /testing/merchants/{id}" => self.a.merchant_id,
            _ => self.hook,
        };
        path = path
            .replace("{id}", &id.to_string())
            .replace("{delivery_id}", &self.delivery.to_string());
        if operation == "GET /webhooks/deliveries" {
            path = format!("{path}?shipment_code={}", self.code);
        }
        let n = self.next();
        let body = match operation {
            "POST /api-keys" => Some(json!({"name": format!("matrix {n}")})),
            "POST /api-keys/verify" => Some(json!({"key": self.named_key})),
            "POST /auth/login" => {
                let (email, password) = self.a.credentials();
                Some(json!({"email": email, "password": password}))
            }
            "POST /courier/drivers" => Some(json!({"name": format!("Matrix driver {n}")})),
            "POST /courier/shipments/{code}/assign-driver" => {
                Some(json!({"driver_id": self.driver_of(caller)}))
            }
            "POST /courier/shipments/{code}/fail" => Some(json!({"reason": "nobody home"})),
            "POST /shipments" => Some(json!({"courier_company_id": self.a.courier_id})),
            "POST /shipments/{code}/rate" => Some(json!({"rating": 8})),
            "POST /testing/faults" => {
                // A path no cell calls, so an armed fault catches nothing.
                Some(json!({"method": "GET", "path": "/nowhere", "status": 503}))
            }
            "POST /testing/merchants" => Some(json!({"courier_company_ids": [self.a.courier_id]})),
            "POST /testing/shipments/{code}/advance" => Some(json!({"to": "in_transit"})),
            "POST /testing/webhooks/duplicates" => Some(json!({"times": 1})),
            "POST /webhooks" => Some(json!({"url": format!("{}?matrix={n}", self.receiver.url)})),
            "PATCH /webhooks/{id}" => Some(json!({"active": false})),
            "POST /webhooks/{id}/redeliver" => {
                Some(json!({"failed_since": "2020-01-01T00:00:00Z"}))
            }
            _ => None,
        };
        (path, body)
    }

    /// What A sees of the object `operation` would change at `path`, for
    /// a refused cell to show that it changed nothing; `None` for an
    /// operation that changes none of A's objects.
    async fn a_view(&self, app: &TestApp, operation: &str, path: &str) -> Option<Value> {
        let (status, view) = match operation {
            _ if path.contains("/SHP-") => {
                let code = path.split('/').find(|s| s.starts_with("SHP-")).unwrap();
                send(app.req(Method::GET, &format!("/shipments/{code}"), &self.a.key)).await
            }
            "DELETE /api-keys/{id}" | "POST /testing/api-keys/{id}/expire" => {
                let (status, keys) =
                    send(app.bearer(Method::GET, "/api-keys", &self.a_token)).await;
                // Ids and expiry only: a key's `last_used_at` moves as the
                // cells use it.
                let ids: Vec<_> = keys["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| json!([k["id"], k["expires_at"]]))
                    .collect();
                (status, json!(ids))
            }
            "DELETE /webhooks/{id}" | "PATCH /webhooks/{id}" => {
                send(app.bearer(Method::GET, "/webhooks", &self.a_token)).await
            }
            // A is still there while its key works (once A is gone, the
            // view stays the 401 it is).
            "DELETE /testing/merchants/{id}" => {
                let (status, _) =
                    send(app.req(Method::GET, "/merchant-couriers", &self.a.key)).await;
                return Some(json!(status.as_u16()));
            }
            _ => return None,
        };
        assert_eq!(status, StatusCode::OK, "{operation}: A's view: {view}");
        Some(view)
    }

    /// A request of `caller` to `path` under `/api/v1`.
    fn request(&self, app: &TestApp, method: Method, path: &str, caller: Caller) -> RequestBuilder {
        let plain = app
            .client
            .request(method.clone(), format!("{}{path}", app.base));
        match caller {
            Nobody => plain,
            KeyA => app.req(method, path, &self.a.key),
            KeyB => app.req(method, path, &self.b.key),
            DeletedKey => app.req(method, path, &self.deleted_key),
            CourierA => app.req(method, path, &self.a.courier_key),
            CourierX => app.req(method, path, &self.b.courier_key),
            TestKey => app.req(method, path, &self.tm_key),
            TestCourier => app.req(method, path, &self.tm_courier_key),
            SessionA => app.bearer(method, path, &self.a_token),
            SessionB => app.bearer(method, path, &self.b_token),
            Ended => app.bearer(method, path, &self.ended_token),
            CookieA => plain.header(COOKIE, format!("shipments_session={}", self.a_token)),
            ReadOnlyKey => app.req(method, path, &self.read_only_key),
            ListenTestingKey => app.req(method, path, &self.listen_testing_key),
            ExpiredKey => app.req(method, path, &self.expired_key),
        }
    }
}

/// The body of a 2xx answer; panics otherwise.
async fn ok(got: impl std::future::Future<Output = (StatusCode, Value)>) -> Value {
    let (status, body) = got.await;
    assert!(status.is_success(), "{status}: {body}");
    body
}

/// The id of the first delivery webhook `hook` of the session's merchant
/// logs, once it has one.
async fn logged_delivery(app: &TestApp, token: &str, hook: i64) -> i64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let log = ok(send(app.bearer(
            Method::GET,
            &format!("/webhooks/{hook}/deliveries"),
            token,
        )))
        .await;
        if let Some(id) = log["data"][0]["id"].as_i64() {
            return id;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no delivery logged: {log}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The path of `operation` naming objects that do not exist.
fn missing(operation: &str) -> String {
    let (_, template) = operation.split_once(' ').unwrap();
    let path = template
        .replace("{id}", "999999999")
        .replace("{delivery_id}", "999999999")
        .replace("{code}", NO_SUCH_CODE);
    match operation {
        "GET /webhooks/deliveries" => format!("{path}?shipment_code={NO_SUCH_CODE}"),
        _ => path,
    }
}

/// A well-formed shipment code no shipment has.
const NO_SUCH_CODE: &str = "SHP-ZZZZ-ZZZZ";

/// A problem's `detail` with each shipment code in it made the same, so two
/// refusals that differ only in the code they echo compare equal.
fn without_codes(detail: &Value) -> String {
    let detail = detail.as_str().unwrap_or_default();
    let mut out = String::new();
    let mut rest = detail;
    while let Some(at) = rest.find("SHP-") {
        out.push_str(&rest[..at]);
        out.push_str("SHP-…");
        rest = rest.get(at + NO_SUCH_CODE.len()..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

/// The operations of the served document, as `METHOD /path`.
async fn served_operations(app: &TestApp) -> BTreeSet<String> {
    let (status, doc) = send(app.client.get(format!("{}/openapi.json", app.base))).await;
    assert_eq!(status, StatusCode::OK);
    let mut all = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            all.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    all
}

/// Both ways: every route has its row, every row its route.
fn same_routes(what: &str, served: &BTreeSet<String>, rows: &BTreeSet<String>) {
    let missing: Vec<_> = served.difference(rows).collect();
    assert!(
        missing.is_empty(),
        "{what} without a row in the authorization matrix (server/tests/api/authz.rs): \
         {missing:?}"
    );
    let gone: Vec<_> = rows.difference(served).collect();
    assert!(
        gone.is_empty(),
        "rows of the authorization matrix (server/tests/api/authz.rs) for {what} that no \
         longer exist: {gone:?}"
    );
}

async fn every_operation_answers_every_caller_as_the_matrix_says(app: &TestApp) {
    let rows: BTreeSet<String> = API.iter().map(|(op, _)| (*op).to_owned()).collect();
    assert_eq!(rows.len(), API.len(), "an operation has two rows");
    same_routes("operations", &served_operations(app).await, &rows);
    let world = World::new(app).await;
    let order = API
        .iter()
        .filter(|(op, _)| !RUN_LAST.contains(op))
        .chain(RUN_LAST.iter().map(|last| {
            API.iter()
                .find(|(op, _)| op == last)
                .expect("a row for each of RUN_LAST")
        }));
    let table: HashMap<String, Option<(Resource, Access)>> =
        shipment_server::harness::key_permissions()
            .into_iter()
            .collect();
    let mut wrong = Vec::new();
    for (operation, statuses) in order {
        let (method, _) = operation.split_once(' ').unwrap();
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let written = CALLERS
            .iter()
            .zip(statuses)
            .map(|(caller, status)| (*caller, *status, refusal_code(*status)));
        let key_a = statuses[1];
        let derived = DERIVED.iter().map(|caller| {
            let (status, code) = derived(*caller, operation, key_a, &table);
            (*caller, status, code)
        });
        // The derived callers first: a row that ends something (RUN_LAST)
        // ends it in A's column.
        let cells: Vec<_> = derived.chain(written).collect();
        for (caller, expected, code) in cells {
            let caller = &caller;
            let (path, body) = world.cell(app, operation, *caller).await;
            let before = match expected {
                400.. => world.a_view(app, operation, &path).await,
                _ => None,
            };
            let mut r = world.request(app, method.clone(), &path, *caller);
            if let Some(body) = &body {
                r = r.json(body);
            }
            let got = call(r).await;
            let cell = format!("{operation} as {caller:?}");
            if let Some(before) = before {
                let after = world.a_view(app, operation, &path).await.unwrap();
                if after != before {
                    wrong.push(format!(
                        "{cell}: refused, yet A's object changed from {before} to {after}"
                    ));
                }
            }
            if got.status.as_u16() != expected {
                wrong.push(format!(
                    "{cell}: expected {expected}, got {}: {}",
                    got.status, got.body
                ));
                continue;
            }
            if let Some(code) = code {
                let problem = got.content_type.starts_with("application/problem+json")
                    && got.body["code"] == code
                    && got.body["status"] == expected;
                if !problem {
                    wrong.push(format!(
                        "{cell}: expected a problem with code {code}, got {}: {}",
                        got.content_type, got.body
                    ));
                }
            }
            if expected == 404 {
                // Refused as missing, and worded as for an object that does
                // not exist: nothing tells A's from none.
                let path = missing(operation);
                let mut r = world.request(app, method.clone(), &path, *caller);
                if let Some(body) = &body {
                    r = r.json(body);
                }
                let none = call(r).await;
                let (said, said_for_none) = (
                    without_codes(&got.body["detail"]),
                    without_codes(&none.body["detail"]),
                );
                if none.status != got.status || said != said_for_none {
                    wrong.push(format!(
                        "{cell}: A's object is told from a missing one: {} {} against {} {}",
                        got.status, got.body, none.status, none.body
                    ));
                }
            }
            if !may_see_a(*caller) && got.body.to_string().contains(&world.marker) {
                wrong.push(format!("{cell}: shown A's objects: {}", got.body));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} cells of the authorization matrix differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// A kind of caller of the dashboard's pages: the columns of [`PAGES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Visitor {
    /// No session cookie.
    Stranger,
    /// A signed in.
    MerchantA,
    /// B signed in.
    MerchantB,
    /// A's cookie (and its form token) after A signed out.
    SignedOut,
}

const VISITORS: [Visitor; 4] = [
    Visitor::Stranger,
    Visitor::MerchantA,
    Visitor::MerchantB,
    Visitor::SignedOut,
];

/// What a page must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// This status (a redirect is [`Want::Go`] or [`Want::SignIn`]).
    Status(u16),
    /// 303 to anywhere but the sign-in page.
    Go,
    /// 303 to the sign-in page (`/login`, with `?next=` naming the page
    /// asked for when it was a page to come back to).
    SignIn,
}

const OK: Want = Want::Status(200);
const MADE: Want = Want::Status(201);
const FORGED: Want = Want::Status(403);
const NF: Want = Want::Status(404);
const GO: Want = Want::Go;
const IN: Want = Want::SignIn;

/// Every page of the dashboard's router × every [`Visitor`]: what it
/// answers. Paths name A's objects; forms carry the visitor's own form
/// token and valid fields.
#[rustfmt::skip]
const PAGES: &[(&str, [Want; 4])] = &[
    //                                                           none  A     B     ended
    ("GET /",                                                   [IN,   OK,   OK,   IN]),
    ("GET /login",                                              [OK,   GO,   GO,   OK]),
    // Signing in as A. Signed in, the sign-in page sends you on and gives
    // no form token, so a sign-in form posted then is refused as forged.
    ("POST /login",                                             [GO,   FORGED, FORGED, GO]),
    ("GET /logout",                                             [IN,   OK,   OK,   IN]),
    ("POST /logout",                                            [IN,   GO,   GO,   IN]),
    ("GET /keys",                                               [IN,   OK,   OK,   IN]),
    ("POST /keys",                                              [IN,   MADE, MADE, IN]),
    ("POST /keys/verify",                                       [IN,   OK,   OK,   IN]),
    ("GET /keys/{id}/delete",                                   [IN,   OK,   NF,   IN]),
    ("POST /keys/{id}/delete",                                  [IN,   GO,   NF,   IN]),
    ("GET /webhooks",                                           [IN,   OK,   OK,   IN]),
    ("POST /webhooks",                                          [IN,   MADE, MADE, IN]),
    ("GET /webhooks/signing-key",                               [IN,   OK,   OK,   IN]),
    ("POST /webhooks/signing-key",                              [IN,   MADE, MADE, IN]),
    ("GET /webhooks/{id}",                                      [IN,   OK,   NF,   IN]),
    ("POST /webhooks/{id}/enable",                              [IN,   GO,   NF,   IN]),
    ("POST /webhooks/{id}/disable",                             [IN,   GO,   NF,   IN]),
    ("POST /webhooks/{id}/redeliver",                           [IN,   GO,   NF,   IN]),
    ("POST /webhooks/{id}/deliveries/{delivery_id}/redeliver",  [IN,   GO,   NF,   IN]),
    ("GET /webhooks/{id}/delete",                               [IN,   OK,   NF,   IN]),
    ("POST /webhooks/{id}/delete",                              [IN,   GO,   NF,   IN]),
    ("GET /shipments",                                          [IN,   OK,   OK,   IN]),
    ("GET /shipments/{code}",                                   [IN,   OK,   NF,   IN]),
    ("GET /static/style.css",                                   [OK,   OK,   OK,   OK]),
    ("GET /static/copy.js",                                     [OK,   OK,   OK,   OK]),
    ("GET /favicon.ico",                                        [OK,   OK,   OK,   OK]),
];

/// The pages of the dashboard's router (`server/src/dashboard/mod.rs`), as
/// `METHOD /path`, read from its source.
fn dashboard_routes() -> BTreeSet<String> {
    let source = include_str!("../../src/dashboard/mod.rs");
    let start = source
        .find("fn router()")
        .expect("the dashboard's router()");
    let router = &source[start..];
    let router = &router[..router.find(".layer(").expect("the router's end")];
    let mut all = BTreeSet::new();
    for route in router.split(".route(").skip(1) {
        let path = route.split('"').nth(1).expect("a route's path");
        for method in ["get", "post", "put", "patch", "delete"] {
            let call = format!("{method}(");
            // `get(` as axum's method router, not the end of a longer name.
            let named = route.match_indices(&call).any(|(i, _)| {
                i == 0
                    || !matches!(route.as_bytes()[i - 1], b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b':')
            });
            if named {
                all.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    all
}

/// What the page cells use: a browser per visitor, with its form token, and
/// A's objects.
struct Visitors {
    browsers: Vec<(Visitor, Browser, String)>,
    a: Fixture,
    /// A's key named with the marker: what verifying it shows is checked.
    named_key: String,
    token: String,
    hook: i64,
    delivery: i64,
    code: String,
    receiver: Receiver,
    marker: String,
    cells: AtomicUsize,
}

impl Visitors {
    async fn new(app: &TestApp) -> Visitors {
        let marker = format!("a-only-{}", uuid::Uuid::new_v4().simple());
        let receiver = Receiver::start(StatusCode::OK, Duration::ZERO).await;
        let a = app.fixture_with_login().await;
        let b = app.fixture_with_login().await;
        let signed = |f: Fixture| async move {
            let (email, password) = f.credentials();
            let browser = Browser::new(app);
            let answer = browser.sign_in(&email, &password).await;
            assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
            let csrf = browser.get("/").await.csrf();
            (browser, csrf)
        };
        let (browser_a, csrf_a) = signed(a.clone()).await;
        let (browser_b, csrf_b) = signed(b).await;
        let (ended, csrf_ended) = signed(a.clone()).await;
        let stale = ended.session_token().unwrap();
        let out = ended.post("/logout", &[("csrf", &csrf_ended)]).await;
        assert_eq!(out.location(), "/login?signed-out");
        // The browser forgot the cookie; a thief kept it.
        ended
            .cookies
            .lock()
            .unwrap()
            .insert("shipments_session".into(), stale);
        // The cookie is a session of the API's kind: A's objects are made
        // with it.
        let token = browser_a.session_token().unwrap();
        let named_key = ok(send(
            app.bearer(Method::POST, "/api-keys", &token)
                .json(&json!({"name": marker})),
        ))
        .await["key"]
            .as_str()
            .unwrap()
            .to_owned();
        let hook = ok(send(
            app.bearer(Method::POST, "/webhooks", &token)
                .json(&json!({"url": format!("{}?owner={marker}", receiver.url)})),
        ))
        .await["webhook_id"]
            .as_i64()
            .unwrap();
        let code = app
            .create(
                &a,
                json!({"courier_company_id": a.courier_id, "description": marker}),
            )
            .await["code"]
            .as_str()
            .unwrap()
            .to_owned();
        let delivery = logged_delivery(app, &token, hook).await;
        Visitors {
            browsers: vec![
                (Visitor::Stranger, Browser::new(app), "none".to_owned()),
                (Visitor::MerchantA, browser_a, csrf_a),
                (Visitor::MerchantB, browser_b, csrf_b),
                (Visitor::SignedOut, ended, csrf_ended),
            ],
            a,
            named_key,
            token,
            hook,
            delivery,
            code,
            receiver,
            marker,
            cells: AtomicUsize::new(0),
        }
    }

    /// A browser of `visitor` with its own copy of the cookies, so what one
    /// cell sets (a new sign-in) is not the next cell's; and its form token.
    fn browser(&self, visitor: Visitor) -> (Browser, String) {
        let (_, browser, csrf) = self
            .browsers
            .iter()
            .find(|(v, _, _)| *v == visitor)
            .unwrap();
        let jar: HashMap<String, String> = browser.cookies.lock().unwrap().clone();
        let copy = Browser {
            root: browser.root.clone(),
            client: browser.client.clone(),
            cookies: Mutex::new(jar),
        };
        (copy, csrf.clone())
    }

    async fn answer(&self, app: &TestApp, page: &str, visitor: Visitor) -> Answer {
        let (method, template) = page.split_once(' ').unwrap();
        let n = self.cells.fetch_add(1, Ordering::Relaxed);
        let id = match template {
            "/keys/{id}/delete" => ok(send(app.bearer(Method::POST, "/api-keys", &self.token)))
                .await["id"]
                .as_i64()
                .unwrap(),
            "/webhooks/{id}/delete" => {
                let url = format!("{}?owner={}&n={n}", self.receiver.url, self.marker);
                ok(send(
                    app.bearer(Method::POST, "/webhooks", &self.token)
                        .json(&json!({ "url": url })),
                ))
                .await["webhook_id"]
                    .as_i64()
                    .unwrap()
            }
            _ => self.hook,
        };
        let path = template
            .replace("{id}", &id.to_string())
            .replace("{delivery_id}", &self.delivery.to_string())
            .replace("{code}", &self.code);
        let (browser, csrf) = self.browser(visitor);
        if method == "GET" {
            return browser.get(&path).await;
        }
        let url = format!("{}?matrix={n}", self.receiver.url);
        let fields: Vec<(&str, &str)> = match template {
            "/login" => {
                let (email, password) = self.a.credentials();
                // The sign-in form's own token, when the page gives one.
                let form = browser.get("/login").await;
                let token = if form.status == StatusCode::OK {
                    form.csrf()
                } else {
                    String::new()
                };
                return browser
                    .post(
                        "/login",
                        &[("csrf", &token), ("email", &email), ("password", &password)],
                    )
                    .await;
            }
            "/keys" => vec![("name", "matrix")],
            "/keys/verify" => vec![("key", self.named_key.as_str())],
            "/webhooks" => vec![("url", url.as_str())],
            "/webhooks/{id}/redeliver" => vec![("failed_since", "2020-01-01T00:00")],
            _ => vec![],
        };
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend(fields);
        browser.post(&path, &all).await
    }
}

/// Whether a redirect goes to the sign-in page, which comes back to a path
/// of the dashboard afterwards (`/login?next=%2F…`) or to its start.
fn is_sign_in(location: &str) -> bool {
    location == "/login" || location.starts_with("/login?next=%2F")
}

async fn every_page_answers_every_session_as_the_matrix_says(app: &TestApp) {
    let rows: BTreeSet<String> = PAGES.iter().map(|(page, _)| (*page).to_owned()).collect();
    assert_eq!(rows.len(), PAGES.len(), "a page has two rows");
    same_routes("dashboard pages", &dashboard_routes(), &rows);
    let visitors = Visitors::new(app).await;
    // Signing out ends the sessions the other rows use: last.
    let order = PAGES
        .iter()
        .filter(|(page, _)| *page != "POST /logout")
        .chain(PAGES.iter().filter(|(page, _)| *page == "POST /logout"));
    let mut wrong = Vec::new();
    for (page, wants) in order {
        for (visitor, want) in VISITORS.iter().zip(wants) {
            let got = visitors.answer(app, page, *visitor).await;
            let status = got.status.as_u16();
            let right = match want {
                Want::Status(s) => status == *s,
                Want::Go => status == 303 && !is_sign_in(got.location()),
                Want::SignIn => status == 303 && is_sign_in(got.location()),
            };
            let cell = format!("{page} as {visitor:?}");
            if !right {
                wrong.push(format!(
                    "{cell}: expected {want:?}, got {status} to {:?}",
                    got.location()
                ));
            }
            if *visitor != Visitor::MerchantA && got.body.contains(&visitors.marker) {
                wrong.push(format!("{cell}: shown A's objects"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} cells of the dashboard's authorization matrix differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
