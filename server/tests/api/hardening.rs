//! Regressions of what an outside attack and other people's clients found
//! (issue 13): the sign-in throttle and confirmation codes under
//! concurrency, e-mail normalisation, strict JSON, the Bearer scheme's case,
//! connection time-outs and limits, and private database files.

use std::time::Duration;

use futures_util::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shipment_sdk::model::{CourierId, MerchantId};
use shipment_server::Environment;
use shipment_server::admin::AdminCommand;
use shipment_server::{Application, Config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use shipment_testkit::{Db, FreshDb, TestApp, assert_problem, db_tests, send};

db_tests!(
    a_burst_of_wrong_passwords_reaches_the_password_check_five_times_at_most,
    two_servers_on_one_database_share_the_sign_in_throttle,
    concurrent_wrong_confirmation_codes_each_count,
    e_mails_are_one_address_whatever_their_case_and_spaces,
    the_bearer_scheme_is_case_insensitive,
    json_bodies_are_read_strictly,
);

/// `n` sign-ins at once for `email` (in the given spellings, round robin),
/// against the servers at `bases` (round robin), with a wrong password.
async fn wrong_sign_ins(
    bases: &[&str],
    spellings: &[String],
    n: usize,
) -> Vec<(StatusCode, Value, Option<u64>)> {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    join_all((0..n).map(|i| {
        let request = client
            .post(format!("{}/auth/login", bases[i % bases.len()]))
            .json(&json!({"email": spellings[i % spellings.len()], "password": "wrong password"}));
        async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            let retry_after = response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
            (status, response.json::<Value>().await.unwrap(), retry_after)
        }
    }))
    .await
}

/// The spellings a person might type for one address.
fn spellings(email: &str) -> Vec<String> {
    vec![
        email.to_owned(),
        email.to_uppercase(),
        format!("  {email}\t"),
        format!(" {} ", email.to_uppercase()),
    ]
}

/// Checks a burst's answers: exactly five reached the password check (401),
/// every other one is 429 with a `Retry-After` inside the window.
fn assert_throttled(answers: &[(StatusCode, Value, Option<u64>)]) {
    let refused = answers
        .iter()
        .filter(|(s, _, _)| *s == StatusCode::UNAUTHORIZED)
        .count();
    let throttled: Vec<_> = answers
        .iter()
        .filter(|(s, _, _)| *s == StatusCode::TOO_MANY_REQUESTS)
        .collect();
    assert_eq!(refused, 5, "{answers:?}");
    assert_eq!(refused + throttled.len(), answers.len(), "{answers:?}");
    for (_, body, retry_after) in throttled {
        assert_eq!(body["code"], "rate_limited");
        let secs = retry_after.expect("429 carries Retry-After");
        assert!((1..=15 * 60 + 1).contains(&secs), "{secs}");
    }
}

async fn a_burst_of_wrong_passwords_reaches_the_password_check_five_times_at_most(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    let answers = wrong_sign_ins(&[&app.base], &spellings(&email), 60).await;
    assert_throttled(&answers);
    // The right password waits for the window too.
    let got = send(
        app.client
            .post(format!("{}/auth/login", app.base))
            .json(&json!({"email": email, "password": password})),
    )
    .await;
    assert_problem(&got, 429, "rate_limited");
}

async fn two_servers_on_one_database_share_the_sign_in_throttle(app: &TestApp) {
    let email = app.fixture_with_login().await.email;
    // A second server process on the same database: its own pool, its own
    // memory; only the database is shared.
    let second = crate::OtherProcess::start(&Config::local(&app.database_url)).await;
    let answers = wrong_sign_ins(&[&app.base, &second.base], &spellings(&email), 40).await;
    assert_throttled(&answers);
    second.stop().await;
}

async fn concurrent_wrong_confirmation_codes_each_count(app: &TestApp) {
    let f = app.fixture().await;
    let shipment = app.create_default(&f).await;
    let code = shipment["code"].as_str().unwrap().to_owned();
    let (status, cc) = send(app.req(
        Method::POST,
        &format!("/shipments/{code}/generate-confirmation-code"),
        &f.key,
    ))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{cc}");
    let digits = cc["confirmation_code"].as_str().unwrap().to_owned();
    let wrong = if digits == "000000" {
        "000001"
    } else {
        "000000"
    };
    let (status, _) = app
        .courier_op(
            &f,
            &code,
            "assign-driver",
            Some(json!({"driver_id": f.driver_id})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.courier_op(&f, &code, "pickup", None).await;
    assert_eq!(status, StatusCode::OK);

    let answers = join_all((0..40).map(|_| {
        app.courier_op(
            &f,
            &code,
            "deliver",
            Some(json!({"confirmation_code": wrong})),
        )
    }))
    .await;
    let mut counted = 0;
    for got in &answers {
        let problem = assert_problem(got, 400, "invalid_confirmation_code");
        if problem["detail"].as_str().unwrap().contains("is wrong") {
            counted += 1;
        } else {
            assert!(
                problem["detail"].as_str().unwrap().contains("void"),
                "{problem}"
            );
        }
    }
    assert_eq!(
        counted, 5,
        "each wrong code counts, and only five are tried"
    );
    // The right code is void now too.
    let got = app
        .courier_op(
            &f,
            &code,
            "deliver",
            Some(json!({"confirmation_code": digits})),
        )
        .await;
    let problem = assert_problem(&got, 400, "invalid_confirmation_code");
    assert!(
        problem["detail"].as_str().unwrap().contains("void"),
        "{problem}"
    );
}

async fn e_mails_are_one_address_whatever_their_case_and_spaces(app: &TestApp) {
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let registered = format!("Zoë.{unique}@Example.com");
    let password = "correct horse battery";
    AdminCommand::CreateMerchant {
        name: "Zoë's".into(),
        email: format!(" {registered} "),
        password: password.into(),
    }
    .run(&app.store, Environment::Staging)
    .await
    .expect("the merchant is created");
    for typed in [
        registered.clone(),
        registered.to_lowercase(),
        format!("  {}  ", registered.to_uppercase()),
    ] {
        let (status, body) = send(
            app.client
                .post(format!("{}/auth/login", app.base))
                .json(&json!({"email": typed, "password": password})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{typed:?}: {body}");
    }
    // The same address in another spelling is taken.
    let again = AdminCommand::CreateMerchant {
        name: "Zoë again".into(),
        email: registered.to_uppercase(),
        password: password.into(),
    }
    .run(&app.store, Environment::Staging)
    .await;
    assert!(again.is_err(), "a second account for one address");
}

async fn the_bearer_scheme_is_case_insensitive(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    let token = app.login(&email, &password).await;
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let (status, body) = send(
            app.client
                .get(format!("{}/api-keys", app.base))
                .header("Authorization", format!("{scheme} {token}")),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{scheme}: {body}");
    }
}

async fn json_bodies_are_read_strictly(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;
    // White space alone is not "no body".
    let got = send(
        app.bearer(Method::POST, "/api-keys", &token)
            .header("Content-Type", "application/json")
            .body(" \n\t "),
    )
    .await;
    assert_problem(&got, 400, "invalid_json");
    let (_, keys) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    assert_eq!(
        keys["data"].as_array().unwrap().len(),
        1,
        "no key was created: {keys}"
    );

    // A key named twice: a proxy may read the first, serde the last.
    let other_courier = app.store.create_courier("Other", 100, 0, 0).await.unwrap();
    app.store
        .link_courier(MerchantId::new(f.merchant_id), other_courier)
        .await
        .unwrap();
    let body = format!(
        r#"{{"courier_company_id": {other_courier}, "courier_company_id": {}}}"#,
        f.courier_id
    );
    let got = send(
        app.req(Method::POST, "/shipments", &f.key)
            .header("Content-Type", "application/json")
            .body(body),
    )
    .await;
    let problem = assert_problem(&got, 400, "invalid_json");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("`courier_company_id`"),
        "{problem}"
    );
    // A number written as a string.
    let got = send(
        app.req(Method::POST, "/shipments", &f.key)
            .json(&json!({"courier_company_id": f.courier_id, "weight_kg": "1"})),
    )
    .await;
    let problem = assert_problem(&got, 400, "invalid_field");
    assert_eq!(problem["field"], "weight_kg");
    let (_, list) = send(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_eq!(list["total"], 0, "nothing was created: {list}");
}

/// A server with short connection limits.
async fn limited(header_read: u64, idle: u64, max: usize) -> TestApp {
    TestApp::spawn_with(Db::Sqlite, |config| {
        config.connections.header_read_timeout_secs = header_read;
        config.connections.idle_timeout_secs = idle;
        config.connections.max_connections = max;
    })
    .await
    .expect("SQLite is always there")
}

fn addr_of(app: &TestApp) -> String {
    app.root.trim_start_matches("http://").to_owned()
}

/// Reads until the server closes the connection; `Err` if it is still
/// open after `limit` (far beyond the time-outs under test).
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Result<Vec<u8>, ()> {
    let mut seen = Vec::new();
    let closed = tokio::time::timeout(limit, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    closed.map(|()| seen).map_err(|_| ())
}

const GET_HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_nothing_is_closed_after_the_header_time_out() {
    let app = limited(1, 30, 100).await;
    let mut silent = TcpStream::connect(addr_of(&app)).await.unwrap();
    let seen = read_until_closed(&mut silent, Duration::from_secs(15)).await;
    assert_eq!(seen, Ok(Vec::new()), "closed without an answer");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_drips_its_headers_is_closed_after_the_header_time_out() {
    let app = limited(1, 30, 100).await;
    let mut dripping = TcpStream::connect(addr_of(&app)).await.unwrap();
    let addr = addr_of(&app);
    let drip = tokio::spawn(async move {
        // One byte every 200 ms: never a complete head within 1 s.
        let mut writer = TcpStream::connect(addr).await.unwrap();
        for byte in b"GET /healthz HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if writer.write_all(&[*byte]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        false
    });
    // The first connection too: a byte, then nothing.
    dripping.write_all(b"G").await.unwrap();
    let seen = read_until_closed(&mut dripping, Duration::from_secs(15)).await;
    assert_eq!(seen, Ok(Vec::new()));
    assert!(drip.await.unwrap(), "the dripping writer was cut off");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_connection_is_closed_after_the_idle_time_out_not_before_it_answers() {
    let app = limited(30, 1, 100).await;
    let mut kept = TcpStream::connect(addr_of(&app)).await.unwrap();
    // Headers sent slowly but within the limit are answered.
    for part in [&GET_HEALTHZ[..10], &GET_HEALTHZ[10..]] {
        kept.write_all(part).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen = read_until_closed(&mut kept, Duration::from_secs(15))
        .await
        .expect("closed once idle");
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_the_connection_limit_new_connections_wait_and_open_ones_are_answered() {
    let app = limited(30, 30, 2).await;
    let addr = addr_of(&app);
    let mut first = TcpStream::connect(&addr).await.unwrap();
    let second = TcpStream::connect(&addr).await.unwrap();
    // Both are accepted: the first is answered.
    first.write_all(GET_HEALTHZ).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(10), first.read(&mut buf))
        .await
        .expect("an open connection is answered")
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // A third waits while two are open...
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("{}/healthz", app.root);
    let third = tokio::spawn(async move { client.get(url).send().await.map(|r| r.status()) });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !third.is_finished(),
        "a third connection was served beside two"
    );
    // ...and is served as soon as one closes.
    drop(second);
    let status = tokio::time::timeout(Duration::from_secs(10), third)
        .await
        .expect("served once a connection closed")
        .unwrap()
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    drop(first);
    app.stop().await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_sqlite_database_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let fresh = FreshDb::create(Db::Sqlite).await.unwrap();
    let path = fresh.url.trim_start_matches("sqlite://").to_owned();
    let app = Application::build(&Config::local(&fresh.url))
        .await
        .unwrap();
    // A write, so the -wal and -shm files exist.
    app.store().create_courier("Swift", 1, 1, 1).await.unwrap();
    for file in [path.clone(), format!("{path}-wal"), format!("{path}-shm")] {
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file}: {mode:o}");
    }
    drop(app);
    fresh.drop_database().await;
}

// Issue 28, item 3: what the server stores, it hands out again, to
// terminals among others; no control character gets in.

db_tests!(
    control_characters_are_refused_in_every_text_a_request_stores,
    admin_commands_refuse_control_characters_in_what_they_store,
);

/// A courier rewriting a merchant's terminal: set its title, clear it.
const TERMINAL_ATTACK: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J";

/// Checks that `got` is 400 `invalid_field` naming `field`, with a detail
/// that shows no control character itself.
#[track_caller]
fn refused_field(got: &(StatusCode, Value), field: &str) -> Value {
    let problem = assert_problem(got, 400, "invalid_field");
    assert_eq!(problem["field"], field, "{problem}");
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains("control characters"), "{problem}");
    assert!(
        !detail
            .chars()
            .any(|c| c.is_control() && c != '\t' && c != '\n'),
        "{problem}"
    );
    problem
}

async fn control_characters_are_refused_in_every_text_a_request_stores(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let token = app.login(&email, &password).await;

    // Every text field of a create, and each kind of control character:
    // C0 (ESC, CR), DEL and C1 (the one-character CSI).
    let mut cases = Vec::new();
    for field in ["description", "dimensions", "start_address", "end_address"] {
        for text in [TERMINAL_ATTACK, "a\rb", "a\u{7f}b", "\u{9b}2J"] {
            cases.push((field, json!({ field: text })));
        }
    }
    cases.push(("items", json!({"items": ["box", TERMINAL_ATTACK]})));
    cases.push(("items", json!({"items": ["\u{85}\u{9d}0;x\u{9c}"]})));
    for (field, mut body) in cases {
        body["courier_company_id"] = json!(f.courier_id);
        let got = send(app.req(Method::POST, "/shipments", &f.key).json(&body)).await;
        let problem = refused_field(&got, field);
        if field == "description" && body[field] == TERMINAL_ATTACK {
            insta::with_settings!({ prepend_module_to_snapshot => false }, {
                insta::assert_json_snapshot!(
                    "control_character_in_description",
                    problem,
                    { ".request_id" => "[request_id]" }
                );
            });
        }
    }
    let (_, list) = send(app.req(Method::GET, "/shipments", &f.key)).await;
    assert_eq!(list["total"], 0, "nothing was created: {list}");

    // Tab and newline are text, stored and shown as sent.
    let text = "line one\n\tline two";
    let created = app
        .create(
            &f,
            json!({"courier_company_id": f.courier_id, "description": text, "items": [text]}),
        )
        .await;
    assert_eq!(created["description"], text, "{created}");
    assert_eq!(created["items"][0], text, "{created}");

    // A courier's failure reason; at its ends too, where trimming would
    // have dropped it (the OpenAPI pattern refuses it anywhere).
    let code = created["code"].as_str().unwrap();
    app.advance(&f, code, "in_transit").await;
    for reason in [
        format!("not home{TERMINAL_ATTACK}"),
        "\u{85}not home\r".into(),
    ] {
        let got = send(
            app.req(
                Method::POST,
                &format!("/courier/shipments/{code}/fail"),
                &f.courier_key,
            )
            .json(&json!({ "reason": reason })),
        )
        .await;
        refused_field(&got, "reason");
    }
    let (_, shipment) = send(app.req(Method::GET, &format!("/shipments/{code}"), &f.key)).await;
    assert_eq!(shipment["status"], "in_transit", "{shipment}");
    assert_eq!(shipment["failure_reason"], Value::Null, "{shipment}");

    // A driver's name.
    for name in [format!("Eve{TERMINAL_ATTACK}"), "Eve\r".into()] {
        let got = send(
            app.req(Method::POST, "/courier/drivers", &f.courier_key)
                .json(&json!({ "name": name })),
        )
        .await;
        refused_field(&got, "name");
    }
    let (_, drivers) = send(app.req(Method::GET, "/courier/drivers", &f.courier_key)).await;
    assert_eq!(drivers["data"].as_array().unwrap().len(), 1, "{drivers}");

    // An API key's name.
    for name in [format!("ci{TERMINAL_ATTACK}"), "\u{b}ci".into()] {
        let got = send(
            app.bearer(Method::POST, "/api-keys", &token)
                .json(&json!({ "name": name })),
        )
        .await;
        refused_field(&got, "name");
    }
    let (_, keys) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    assert_eq!(keys["data"].as_array().unwrap().len(), 1, "{keys}");

    // A sign-in's e-mail (attempts are stored by e-mail).
    for typed in [format!("a\u{1b}[2J{email}"), format!("{email}\r")] {
        let got = send(
            app.client
                .post(format!("{}/auth/login", app.base))
                .json(&json!({"email": typed, "password": password})),
        )
        .await;
        refused_field(&got, "email");
    }
}

async fn admin_commands_refuse_control_characters_in_what_they_store(app: &TestApp) {
    let f = app.fixture().await;
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let commands = [
        (
            "--name",
            AdminCommand::CreateMerchant {
                name: format!("Shop{TERMINAL_ATTACK}"),
                email: format!("{unique}@example.com"),
                password: "correct horse battery".into(),
            },
        ),
        (
            "--email",
            AdminCommand::CreateMerchant {
                name: "Shop".into(),
                email: format!("{unique}\u{9b}@example.com"),
                password: "correct horse battery".into(),
            },
        ),
        (
            "--name",
            AdminCommand::CreateApiKey {
                merchant_id: MerchantId::new(f.merchant_id),
                name: format!("ci{TERMINAL_ATTACK}"),
            },
        ),
        (
            "--name",
            AdminCommand::CreateCourier {
                name: format!("Swift\r{unique}"),
                base_fee: "5".parse().unwrap(),
                per_kg: "1".parse().unwrap(),
                per_km: "0.1".parse().unwrap(),
            },
        ),
        (
            "--name",
            AdminCommand::CreateDriver {
                courier_id: CourierId::new(f.courier_id),
                name: format!("Eve{TERMINAL_ATTACK}"),
            },
        ),
    ];
    for (flag, command) in commands {
        let what = format!("{command:?}");
        let err = command
            .run(&app.store, Environment::Staging)
            .await
            .expect_err(&what)
            .to_string();
        assert!(
            err.starts_with(&format!("{flag} must not contain control characters")),
            "{what}: {err}"
        );
    }
    let (_, drivers) = send(app.req(Method::GET, "/courier/drivers", &f.courier_key)).await;
    assert_eq!(drivers["data"].as_array().unwrap().len(), 1, "{drivers}");
}
