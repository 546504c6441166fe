//! The merchant's shipment endpoints.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::{CourierId, MerchantId};
use shipment_server::Config;

use shipment_testkit::{TestApp, assert_problem, db_tests, send};

use crate::OtherProcess;

db_tests!(
    create_answers_201_with_every_documented_field,
    create_computes_the_fee_from_coordinates,
    get_returns_the_shipment_as_created,
    get_of_another_merchants_shipment_is_403,
    get_of_an_unknown_code_is_404,
    list_is_newest_first_in_the_envelope,
    list_filters_by_status_courier_and_dates,
    list_page_size_is_bounded,
    list_totals_stay_exact_through_every_change,
    merchant_couriers_lists_linked_companies,
    fifty_concurrent_creates_make_fifty_shipments,
    the_same_idempotency_key_twice_makes_one_shipment,
    an_idempotency_key_reused_with_another_body_is_409,
    a_webhook_url_is_kept_normalised,
    a_new_link_counts_at_once_and_a_price_edited_by_hand_within_a_second,
    a_list_shows_a_change_at_once_in_every_process,
);

/// Lists take the shipments they showed before from memory, by version: a
/// change made through either of two processes on one database shows in
/// both processes' next list, and a listed shipment is written exactly as
/// `GET /shipments/{code}` writes it.
async fn a_list_shows_a_change_at_once_in_every_process(app: &TestApp) {
    let f = app.fixture().await;
    let mut made = Vec::new();
    for _ in 0..3 {
        made.push(app.create_default(&f).await);
    }
    let second = OtherProcess::start(&Config::local(&app.database_url)).await;
    let second_base = second.base.clone();
    let list = |base: &str| {
        app.client
            .get(format!("{base}/shipments?page_size=100"))
            .header("X-API-KEY", &f.key)
    };
    for base in [&app.base, &second_base] {
        let (status, page) = send(list(base)).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert_eq!(page["data"].as_array().unwrap().len(), 3, "{page}");
    }

    // Cancelled through the first process, then through the second.
    for (base, shipment) in [(&app.base, &made[1]), (&second_base, &made[2])] {
        let code = shipment["code"].as_str().unwrap();
        let cancel = app
            .client
            .post(format!("{base}/shipments/{code}/cancel"))
            .header("X-API-KEY", &f.key);
        let (status, body) = send(cancel).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for seen_by in [&app.base, &second_base] {
            let (_, page) = send(list(seen_by)).await;
            let listed = page["data"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["code"] == shipment["code"])
                .expect("the shipment is listed");
            assert_eq!(listed["status"], "cancelled", "seen by {seen_by}");
            assert_eq!(listed["version"], 2, "seen by {seen_by}");
            let (_, got) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
            assert_eq!(
                listed, &got,
                "a list writes a shipment as a read by code does"
            );
        }
    }
    second.stop().await;
}

/// Creates take a linked courier company's prices from memory for
/// `PRICING_MEMORY_TTL` (the server never changes them). A link made after a
/// refused create counts at once (refusals are not remembered), and a price
/// edited by hand in the database reaches creates within the TTL.
async fn a_new_link_counts_at_once_and_a_price_edited_by_hand_within_a_second(app: &TestApp) {
    let f = app.fixture().await;
    let later = app.store.create_courier("Later", 100, 0, 0).await.unwrap();
    let create = || {
        app.req(Method::POST, "/shipments", &f.key)
            .json(&json!({"courier_company_id": later}))
    };
    let refused = send(create()).await;
    assert_problem(&refused, 400, "invalid_field");

    app.store
        .link_courier(MerchantId::new(f.merchant_id), later)
        .await
        .unwrap();
    let (status, s) = send(create()).await;
    assert_eq!(status, StatusCode::CREATED, "{s}");
    assert_eq!(s["total_fee"], 1.0);

    let sql = "UPDATE courier_companies SET base_fee_minor = 250 WHERE id = $1";
    crate::execute(&app.store, sql, later.get()).await;
    tokio::time::sleep(shipment_server::PRICING_MEMORY_TTL + std::time::Duration::from_millis(50))
        .await;
    let (status, s) = send(create()).await;
    assert_eq!(status, StatusCode::CREATED, "{s}");
    assert_eq!(s["total_fee"], 2.5);
}

/// Any URL a browser would open is accepted, and kept as normalised.
async fn a_webhook_url_is_kept_normalised(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    let (status, _) =
        send(app.bearer(Method::POST, "/webhooks/shipment-signing-key", &token)).await;
    assert_eq!(status, StatusCode::CREATED);
    for (sent, kept) in [
        (
            "HTTPS://Hooks.EU-West-1.Prod.Example.co.uk/shipments/%7Eme?v=1",
            "https://hooks.eu-west-1.prod.example.co.uk/shipments/%7Eme?v=1",
        ),
        ("https://bücher.example", "https://xn--bcher-kva.example/"),
        (
            "https://[2606:4700::1111]:8443/h",
            "https://[2606:4700::1111]:8443/h",
        ),
    ] {
        let s = app
            .create(
                &f,
                json!({"courier_company_id": f.courier_id, "webhook_url": sent}),
            )
            .await;
        assert_eq!(s["webhook_url"], kept, "{sent}");
        let code = s["code"].as_str().unwrap();
        let (_, again) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
        assert_eq!(again["webhook_url"], kept, "{sent}");
    }
    let got = send(app.req(Method::POST, "/shipments", &f.key).json(
        &json!({"courier_company_id": f.courier_id, "webhook_url": "https://x.example/#top"}),
    ))
    .await;
    let problem = assert_problem(&got, 400, "invalid_field");
    assert_eq!(problem["field"], "webhook_url");
    assert!(
        problem["detail"].as_str().unwrap().contains("fragment"),
        "{problem}"
    );
}

fn is_timestamp(v: &Value) -> bool {
    let s = v.as_str().unwrap_or("");
    // 2026-11-21T09:30:12.123456Z
    s.len() == 27
        && s.ends_with('Z')
        && s.as_bytes()[19] == b'.'
        && chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

async fn create_answers_201_with_every_documented_field(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    // A shipment's own webhook_url needs the shipment signing key.
    let token = app.login(&email, &password).await;
    let (status, _) = send(app.bearer(
        reqwest::Method::POST,
        "/webhooks/shipment-signing-key",
        &token,
    ))
    .await;
    assert_eq!(status, reqwest::StatusCode::CREATED);
    let s = app
        .create(
            &f,
            json!({"courier_company_id": f.courier_id, "description": "Two boxes", "weight_kg": 4.5,
                   "dimensions": "30x20x10 cm", "items": ["book", "lamp"],
                   "start_address": "Main St 1", "end_address": "High St 2",
                   "webhook_url": "https://localhost:9/hook"}),
        )
        .await;
    let code = s["code"].as_str().unwrap();
    assert!(
        shipment_server::harness::ShipmentCode::parse(code).is_ok(),
        "{code}"
    );
    assert_eq!(s["status"], "assigned_to_courier");
    assert_eq!(s["merchant_id"], f.merchant_id);
    assert_eq!(s["courier_company_id"], f.courier_id);
    assert_eq!(s["assigned_driver_id"], Value::Null);
    assert_eq!(s["weight_kg"], 4.5);
    assert_eq!(s["items"], json!(["book", "lamp"]));
    // 5.00 + 1.50 × 4.5; street addresses give no distance term.
    assert_eq!(s["total_fee"], 11.75);
    assert_eq!(s["version"], 1);
    assert_eq!(s["rating"], Value::Null);
    assert!(is_timestamp(&s["created_at"]), "{}", s["created_at"]);
    assert_eq!(s["assigned_to_courier_at"], s["created_at"]);
    assert_eq!(s["updated_at"], s["created_at"]);
    for key in [
        "assigned_to_driver_at",
        "picked_up_at",
        "delivered_at",
        "failed_at",
        "returned_at",
        "cancelled_at",
        "rated_at",
        "failure_reason",
    ] {
        assert_eq!(s[key], Value::Null, "{key} must be present and null");
    }
}

async fn create_computes_the_fee_from_coordinates(app: &TestApp) {
    let f = app.fixture().await;
    let s = app
        .create(
            &f,
            json!({"courier_company_id": f.courier_id, "weight_kg": 2,
                           "start_address": "52.5200,13.4050", "end_address": "52.3759,4.8975"}),
        )
        .await;
    // 5.00 + 1.50 × 2 + 0.10 × ~576.9 km
    let fee = s["total_fee"].as_f64().unwrap();
    assert!((65.6..65.8).contains(&fee), "{fee}");
}

async fn get_returns_the_shipment_as_created(app: &TestApp) {
    let f = app.fixture().await;
    let created = app.create_default(&f).await;
    let code = created["code"].as_str().unwrap();
    let got = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
    assert_eq!(got.0, StatusCode::OK);
    assert_eq!(got.1, created);
}

async fn get_of_another_merchants_shipment_is_403(app: &TestApp) {
    let owner = app.fixture().await;
    let other = app.fixture().await;
    let code = app.create_default(&owner).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    for (method, path) in [
        (Method::GET, format!("/shipments/{code}")),
        (Method::POST, format!("/shipments/{code}/cancel")),
        (
            Method::POST,
            format!("/shipments/{code}/generate-confirmation-code"),
        ),
    ] {
        assert_problem(
            &send(app.req(method, &path, &other.key)).await,
            403,
            "forbidden",
        );
    }
    let rate = app
        .req(Method::POST, &format!("/shipments/{code}/rate"), &other.key)
        .json(&json!({"rating": 5}));
    assert_problem(&send(rate).await, 403, "forbidden");
    let listed = send(app.req(Method::GET, "/shipments", &other.key)).await;
    assert_eq!(
        listed.1["total"], 0,
        "another merchant's list must not show it"
    );
}

async fn get_of_an_unknown_code_is_404(app: &TestApp) {
    let f = app.fixture().await;
    for (method, path) in [
        (Method::GET, "/shipments/SHP-0000-0000"),
        (Method::POST, "/shipments/SHP-0000-0000/cancel"),
        (
            Method::POST,
            "/shipments/SHP-0000-0000/generate-confirmation-code",
        ),
    ] {
        assert_problem(&send(app.req(method, path, &f.key)).await, 404, "not_found");
    }
    let rate = app
        .req(Method::POST, "/shipments/SHP-0000-0000/rate", &f.key)
        .json(&json!({"rating": 5}));
    assert_problem(&send(rate).await, 404, "not_found");
}

async fn list_is_newest_first_in_the_envelope(app: &TestApp) {
    let f = app.fixture().await;
    let mut codes = Vec::new();
    for _ in 0..5 {
        codes.push(
            app.create_default(&f).await["code"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    codes.reverse();
    let (status, page) = send(app.req(Method::GET, "/shipments?page_size=2", &f.key)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (page["page"].clone(), page["page_size"].clone()),
        (json!(1), json!(2))
    );
    assert_eq!(
        (page["total"].clone(), page["total_pages"].clone()),
        (json!(5), json!(3))
    );
    let mut seen = Vec::new();
    for n in 1..=4 {
        let (_, page) = send(app.req(
            Method::GET,
            &format!("/shipments?page_size=2&page={n}"),
            &f.key,
        ))
        .await;
        seen.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["code"].as_str().unwrap().to_owned()),
        );
    }
    assert_eq!(
        seen, codes,
        "pages walk every shipment once, newest first; past the end is empty"
    );
    let (_, defaults) = send(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_eq!(defaults["page_size"], 20);
}

async fn list_filters_by_status_courier_and_dates(app: &TestApp) {
    let f = app.fixture().await;
    let first = app.create_default(&f).await;
    let second = app.create_default(&f).await;
    let code2 = second["code"].as_str().unwrap();
    let (s, _) = send(app.req(Method::POST, &format!("/shipments/{code2}/cancel"), &f.key)).await;
    assert_eq!(s, StatusCode::OK);
    let other_courier = app.store.create_courier("Other", 100, 0, 0).await.unwrap();
    app.store
        .link_courier(MerchantId::new(f.merchant_id), other_courier)
        .await
        .unwrap();
    let third = app
        .create(&f, json!({"courier_company_id": other_courier}))
        .await;

    let codes = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["code"].as_str().unwrap().to_owned())
            .collect()
    };
    let list = |q: String| send(app.req(Method::GET, &format!("/shipments?{q}"), &f.key));
    let (_, p) = list("status=cancelled".into()).await;
    assert_eq!(codes(&p), vec![code2.to_owned()]);
    let (_, p) = list(format!("courier_company_id={other_courier}")).await;
    assert_eq!(codes(&p), vec![third["code"].as_str().unwrap().to_owned()]);
    let enc = |v: &Value| v.as_str().unwrap().replace('+', "%2B");
    let (_, p) = list(format!("created_after={}", enc(&second["created_at"]))).await;
    assert_eq!(p["total"], 2, "created_after is inclusive");
    let (_, p) = list(format!("created_before={}", enc(&second["created_at"]))).await;
    assert_eq!(codes(&p), vec![first["code"].as_str().unwrap().to_owned()]);
    let (_, p) = list(format!("updated_after={}", enc(&third["created_at"]))).await;
    assert_eq!(p["total"], 1);
    let (_, p) = list("created_after=2000-01-01&created_before=2000-01-02".into()).await;
    assert_eq!(
        (p["total"].clone(), p["total_pages"].clone()),
        (json!(0), json!(0))
    );
}

async fn list_page_size_is_bounded(app: &TestApp) {
    let f = app.fixture().await;
    for ok in ["page_size=1", "page_size=100"] {
        assert_eq!(
            send(app.req(Method::GET, &format!("/shipments?{ok}"), &f.key))
                .await
                .0,
            StatusCode::OK
        );
    }
    for bad in [
        "page_size=0",
        "page_size=101",
        "page=0",
        "page=x",
        "status=lost",
        "created_after=soon",
        "colour=red",
    ] {
        let got = send(app.req(Method::GET, &format!("/shipments?{bad}"), &f.key)).await;
        assert_eq!(got.0, StatusCode::BAD_REQUEST, "{bad}: {}", got.1);
        assert_eq!(got.1["field"], bad.split('=').next().unwrap(), "{bad}");
    }
}

async fn merchant_couriers_lists_linked_companies(app: &TestApp) {
    let f = app.fixture().await;
    let _unlinked = app.store.create_courier("Unlinked", 1, 1, 1).await.unwrap();
    let (status, body) = send(app.req(Method::GET, "/merchant-couriers", &f.key)).await;
    assert_eq!(status, StatusCode::OK);
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    let c = &data[0];
    assert_eq!(c["id"], f.courier_id);
    assert_eq!(c["name"], "Swift Couriers");
    assert_eq!(c["active"], true);
    assert_eq!(
        (
            c["base_fee"].clone(),
            c["per_kg"].clone(),
            c["per_km"].clone()
        ),
        (json!(5.0), json!(1.5), json!(0.1))
    );
    assert!(is_timestamp(&c["linked_at"]));
}

async fn fifty_concurrent_creates_make_fifty_shipments(app: &TestApp) {
    let f = app.fixture().await;
    let mut tasks = Vec::new();
    for i in 0..50 {
        let r = app
            .req(Method::POST, "/shipments", &f.key)
            .json(&json!({"courier_company_id": f.courier_id, "description": format!("n{i}")}));
        tasks.push(tokio::spawn(send(r)));
    }
    let mut codes = std::collections::HashSet::new();
    for t in tasks {
        let (status, body) = t.await.unwrap();
        assert_eq!(status, StatusCode::CREATED, "{body}");
        codes.insert(body["code"].as_str().unwrap().to_owned());
    }
    assert_eq!(codes.len(), 50);
    let (_, page) = send(app.req(Method::GET, "/shipments?page_size=100", &f.key)).await;
    assert_eq!(page["total"], 50);
    let listed: std::collections::HashSet<String> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["code"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, codes);
}

async fn the_same_idempotency_key_twice_makes_one_shipment(app: &TestApp) {
    let f = app.fixture().await;
    let body = json!({"courier_company_id": f.courier_id, "items": ["a"]});
    let post = || {
        app.req(Method::POST, "/shipments", &f.key)
            .header("Idempotency-Key", "order-1001")
            .json(&body)
    };
    let first = post().send().await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    // The same body written differently is still the same request.
    let second = app
        .req(Method::POST, "/shipments", &f.key)
        .header("Idempotency-Key", "order-1001")
        .header("Content-Type", "application/json")
        .body(format!(
            "{{ \"items\": [\"a\"], \"courier_company_id\": {} }}",
            f.courier_id
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), StatusCode::CREATED);
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    assert_eq!(second.json::<Value>().await.unwrap(), first);
    // Concurrent retries with the same key still make one shipment.
    let racers: Vec<_> = (0..8).map(|_| tokio::spawn(send(post()))).collect();
    for r in racers {
        let (status, got) = r.await.unwrap();
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(got["code"], first["code"]);
    }
    let (_, page) = send(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_eq!(page["total"], 1);
    // Keys are per merchant: another merchant's same key is its own.
    let other = app.fixture().await;
    let theirs = send(
        app.req(Method::POST, "/shipments", &other.key)
            .header("Idempotency-Key", "order-1001")
            .json(&json!({"courier_company_id": other.courier_id})),
    )
    .await;
    assert_eq!(theirs.0, StatusCode::CREATED);
    assert_ne!(theirs.1["code"], first["code"]);
}

async fn an_idempotency_key_reused_with_another_body_is_409(app: &TestApp) {
    let f = app.fixture().await;
    let post = |items: Value| {
        app.req(Method::POST, "/shipments", &f.key)
            .header("Idempotency-Key", "k-42")
            .json(&json!({"courier_company_id": f.courier_id, "items": items}))
    };
    assert_eq!(send(post(json!(["a"]))).await.0, StatusCode::CREATED);
    let got = send(post(json!(["b"]))).await;
    let body = assert_problem(&got, 409, "idempotency_conflict");
    assert_eq!(body["field"], "Idempotency-Key");
    let bad_key = send(
        app.req(Method::POST, "/shipments", &f.key)
            .header("Idempotency-Key", "x".repeat(256))
            .json(&json!({"courier_company_id": f.courier_id})),
    )
    .await;
    assert_problem(&bad_key, 400, "invalid_field");
}

/// The totals of lists filtered by nothing, status or courier company come
/// from counts kept beside the rows; they must equal a real count after
/// every kind of change, for the merchant and for the courier company.
async fn list_totals_stay_exact_through_every_change(app: &TestApp) {
    let f = app.fixture().await;
    let other = app.fixture().await;
    app.create_default(&other).await;
    // A second courier company of the merchant, which `other` uses too.
    app.store
        .link_courier(
            MerchantId::new(f.merchant_id),
            CourierId::new(other.courier_id),
        )
        .await
        .unwrap();
    for _ in 0..2 {
        let second = json!({"courier_company_id": other.courier_id});
        app.create(&f, second).await;
    }
    let mut codes = Vec::new();
    for _ in 0..6 {
        codes.push(
            app.create_default(&f).await["code"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let (status, _) = send(app.req(
        Method::POST,
        &format!("/shipments/{}/cancel", codes[0]),
        &f.key,
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    // Cancelling again changes nothing and must not count twice.
    send(app.req(
        Method::POST,
        &format!("/shipments/{}/cancel", codes[0]),
        &f.key,
    ))
    .await;
    for code in &codes[1..4] {
        let (status, _) = app
            .courier_op(
                &f,
                code,
                "assign-driver",
                Some(json!({"driver_id": f.driver_id})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    app.courier_op(&f, &codes[1], "pickup", None).await;
    app.courier_op(&f, &codes[1], "deliver", None).await;
    app.courier_op(&f, &codes[2], "unassign-driver", None).await;
    send(
        app.req(
            Method::POST,
            &format!("/shipments/{}/rate", codes[1]),
            &f.key,
        )
        .json(&json!({"rating": 7})),
    )
    .await;

    let total_at = |path: &str, key: &str, query: String| {
        let req = app.req(Method::GET, &format!("{path}?{query}"), key);
        async move {
            let (status, page) = send(req).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            page["total"].as_u64().unwrap()
        }
    };
    let total = |query: String| total_at("/shipments", &f.key, query);
    let total_for = |key: &str, query: String| total_at("/courier/shipments", key, query);
    // `created_after` far in the past matches every row but forces a real count.
    let all = "created_after=2000-01-01";
    assert_eq!(total(String::new()).await, 8);
    assert_eq!(total(all.into()).await, 8);
    let mine = format!("courier_company_id={}", f.courier_id);
    let theirs = format!("courier_company_id={}", other.courier_id);
    for courier in [&mine, &theirs] {
        let expected = if courier == &mine { 6 } else { 2 };
        assert_eq!(total(courier.clone()).await, expected, "{courier}");
        assert_eq!(total(format!("{courier}&{all}")).await, expected);
    }
    assert_eq!(total(format!("status=delivered&{mine}")).await, 1);
    assert_eq!(total(format!("status=delivered&{theirs}")).await, 0);
    assert_eq!(
        total(format!("status=assigned_to_courier&{theirs}")).await,
        2
    );
    // The courier companies' own lists, across their merchants.
    assert_eq!(total_for(&f.courier_key, String::new()).await, 6);
    let cancelled = "status=cancelled".to_owned();
    assert_eq!(total_for(&f.courier_key, cancelled).await, 1);
    assert_eq!(total_for(&other.courier_key, String::new()).await, 3);
    assert_eq!(total_for(&other.courier_key, all.into()).await, 3);
    // Another courier company's filter on a courier's own list: nothing.
    assert_eq!(total_for(&other.courier_key, mine.clone()).await, 0);
    for (status, expected) in [
        ("assigned_to_courier", 5),
        ("assigned_to_driver", 1),
        ("delivered", 1),
        ("cancelled", 1),
        ("in_transit", 0),
    ] {
        assert_eq!(
            total(format!("status={status}")).await,
            expected,
            "{status}"
        );
        assert_eq!(
            total(format!("status={status}&{all}")).await,
            expected,
            "{status}"
        );
    }
}
