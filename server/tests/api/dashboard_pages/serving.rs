//! How every page is served: security headers, labelled inputs, and a
//! listener of its own with `--dashboard-addr`.

use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use shipment_sdk::model::MerchantId;
use shipment_testkit::{Db, TestApp, db_tests, send};

use super::browser::{Browser, signed_in};

db_tests!(pages_carry_the_security_headers_and_label_every_input);

async fn pages_carry_the_security_headers_and_label_every_input(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let shipment = app.create_default(&f).await;
    let code = shipment["code"].as_str().unwrap();
    let created = browser
        .submit(
            "/webhooks",
            "/webhooks",
            &[("url", "https://127.0.0.1:9/h")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let id = app
        .store
        .webhooks(MerchantId::new(f.merchant_id))
        .await
        .unwrap()[0]
        .id;
    let key_id = app
        .store
        .api_keys(MerchantId::new(f.merchant_id))
        .await
        .unwrap()[0]
        .id;
    let mut pages = vec![
        ("/login".to_owned(), Browser::new(app).get("/login").await),
        (
            "key created".to_owned(),
            browser.submit("/keys", "/keys", &[]).await,
        ),
        ("webhook registered".to_owned(), created),
    ];
    for path in [
        "/".to_owned(),
        "/keys".to_owned(),
        format!("/keys/{key_id}/delete"),
        "/webhooks".to_owned(),
        format!("/webhooks/{id}"),
        format!("/webhooks/{id}/delete"),
        "/webhooks/signing-key".to_owned(),
        "/shipments".to_owned(),
        format!("/shipments/{code}"),
        "/logout".to_owned(),
    ] {
        let answer = browser.get(&path).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}: {}", answer.body);
        pages.push((path, answer));
    }
    for (path, page) in &pages {
        let h = &page.headers;
        let csp = h["content-security-policy"].to_str().unwrap();
        for directive in [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
        assert_eq!(h[CACHE_CONTROL], "no-store", "{path}");
        assert!(h[CONTENT_TYPE].to_str().unwrap().starts_with("text/html"));
        assert!(!page.body.contains("<script>"), "{path}: no inline script");
        assert!(!page.body.contains("style="), "{path}: no inline style");
        assert_inputs_labelled(path, &page.body);
    }
}

/// Every visible input, select and textarea has an id that a
/// `<label for=...>` names.
fn assert_inputs_labelled(path: &str, html: &str) {
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let tag_end = rest.find('>').unwrap_or(rest.len());
        let tag = &rest[..tag_end];
        let name = tag.split_whitespace().next().unwrap_or("");
        if !matches!(name, "input" | "select" | "textarea") || tag.contains("type=\"hidden\"") {
            continue;
        }
        let id = attribute(tag, "id").unwrap_or_else(|| panic!("{path}: <{tag}> has no id"));
        assert!(
            html.contains(&format!("<label for=\"{id}\"")),
            "{path}: <{tag}> has no label"
        );
    }
}

fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let marker = format!(" {name}=\"");
    let start = tag.find(&marker)? + marker.len();
    let end = tag[start..].find('"')? + start;
    Some(&tag[start..end])
}

/// `--dashboard-addr`: the pages move to their own listener, and the main
/// one serves the API alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_can_have_an_address_of_its_own() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dashboard_addr = free.local_addr().unwrap();
    drop(free);
    let app = TestApp::spawn_with(Db::Sqlite, |c| {
        c.dashboard_addr = Some(dashboard_addr);
    })
    .await
    .expect("SQLite always works");
    let pages = Browser {
        root: format!("http://{dashboard_addr}"),
        ..Browser::new(&app)
    };
    assert_eq!(pages.get("/login").await.status, StatusCode::OK);
    assert_eq!(
        pages.get("/api/v1/shipments").await.status,
        StatusCode::NOT_FOUND
    );
    let main = Browser::new(&app);
    let got = main.get("/login").await;
    assert_eq!(got.status, StatusCode::NOT_FOUND);
    assert_eq!(got.headers[CONTENT_TYPE], "application/problem+json");
    let f = app.fixture().await;
    let (status, _) = send(app.req(Method::GET, "/merchant-couriers", &f.key)).await;
    assert_eq!(status, StatusCode::OK);
    app.stop().await;
}
