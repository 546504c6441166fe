//! How every page is served: security headers, labelled inputs, and a
//! listener of its own with `--dashboard-addr`.

use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use shipment_sdk::model::MerchantId;
use shipment_testkit::{Db, TestApp, db_tests, send};

use super::browser::{Browser, signed_in};

db_tests!(
    pages_carry_the_security_headers_and_label_every_input,
    mistyped_urls_and_form_urls_are_dashboard_pages,
    the_favicon_is_served_and_cached,
);

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
        assert_eq!(h["referrer-policy"], "same-origin", "{path}");
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

/// The headers every dashboard page carries, on `answer` (of `what`).
fn assert_dashboard_page(what: &str, answer: &super::browser::Answer) {
    let h = &answer.headers;
    assert!(
        h[CONTENT_TYPE].to_str().unwrap().starts_with("text/html"),
        "{what}: {h:?}"
    );
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'self'"), "{what}: {csp}");
    assert_eq!(h["x-content-type-options"], "nosniff", "{what}");
    assert_eq!(h["x-frame-options"], "DENY", "{what}");
    assert_eq!(h[CACHE_CONTROL], "no-store", "{what}");
    assert!(
        answer.body.starts_with("<!DOCTYPE html>"),
        "{what}: {}",
        answer.body
    );
    assert!(answer.body.contains("Back to the dashboard"), "{what}");
}

async fn mistyped_urls_and_form_urls_are_dashboard_pages(app: &TestApp) {
    let (browser, _f) = signed_in(app).await;
    let stranger = Browser::new(app);
    for visitor in [&browser, &stranger] {
        for path in [
            "/keyz",
            "/shipments/SHP-AAAA-AAAA/extra",
            "/static/nope.css",
            "/api",
        ] {
            let got = visitor.get(path).await;
            assert_eq!(got.status, StatusCode::NOT_FOUND, "{path}: {}", got.body);
            assert_dashboard_page(path, &got);
            assert!(got.body.contains("Not found"), "{path}");
        }
        // A form's URL opened (a reload after a post, a shared link).
        for path in [
            "/keys/verify",
            "/webhooks/1/enable",
            "/webhooks/1/disable",
            "/webhooks/1/redeliver",
            "/webhooks/1/deliveries/2/redeliver",
        ] {
            let got = visitor.get(path).await;
            assert_eq!(
                got.status,
                StatusCode::METHOD_NOT_ALLOWED,
                "{path}: {}",
                got.body
            );
            assert_dashboard_page(path, &got);
            assert_eq!(got.headers["allow"], "POST", "{path}");
        }
        // A post to a page that only shows.
        let got = visitor.post("/shipments", &[]).await;
        assert_eq!(got.status, StatusCode::METHOD_NOT_ALLOWED, "{}", got.body);
        assert_dashboard_page("POST /shipments", &got);
        let got = visitor.post("/nowhere", &[]).await;
        assert_eq!(got.status, StatusCode::NOT_FOUND, "{}", got.body);
        assert_dashboard_page("POST /nowhere", &got);
    }
    // The API's own answers stay problems.
    for path in ["/api/v1/nope", "/api/v1"] {
        let got = browser.get(path).await;
        assert_eq!(got.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            got.headers[CONTENT_TYPE], "application/problem+json",
            "{path}"
        );
    }
    let got = browser
        .send(
            browser
                .client
                .delete(format!("{}/api/v1/shipments", app.root)),
        )
        .await;
    assert_eq!(got.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(got.headers[CONTENT_TYPE], "application/problem+json");
}

async fn the_favicon_is_served_and_cached(app: &TestApp) {
    let browser = Browser::new(app);
    let page = browser.get("/login").await;
    assert!(
        page.body
            .contains("<link rel=\"icon\" href=\"/favicon.ico\""),
        "{}",
        page.body
    );
    let response = reqwest::Client::new()
        .get(format!("{}/favicon.ico", app.root))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let h = response.headers().clone();
    assert_eq!(h[CONTENT_TYPE], "image/x-icon");
    assert!(
        h[CACHE_CONTROL].to_str().unwrap().contains("max-age="),
        "{h:?}"
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    let icon = response.bytes().await.unwrap();
    // An ICO file: reserved 0, type 1 (icon), at least one image.
    assert_eq!(&icon[..4], &[0, 0, 1, 0]);
    assert!(u16::from_le_bytes([icon[4], icon[5]]) >= 1);
    assert!(icon.len() < 4096, "small: {} bytes", icon.len());
}
