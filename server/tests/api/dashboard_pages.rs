//! The dashboard's web pages over plain HTTP, cookies handled by hand:
//! sign-in and its throttle, the session cookie, CSRF refusals, security
//! headers, secrets shown once, and labels on every input.

use std::collections::HashMap;
use std::sync::Mutex;

use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION, SET_COOKIE};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::db_tests;
use crate::helpers::{Fixture, TestApp, send};

db_tests!(
    pages_send_signed_out_visitors_to_sign_in,
    sign_in_sets_a_strict_session_cookie_shared_with_the_api,
    wrong_passwords_are_explained_and_then_throttled,
    forms_without_the_session_csrf_token_are_refused,
    a_new_key_is_shown_once_verified_and_deleted,
    webhooks_are_registered_toggled_and_deleted_from_the_pages,
    shipments_are_listed_filtered_and_shown_with_their_timeline,
    pages_carry_the_security_headers_and_label_every_input,
);

/// An answer: status, headers, body text.
struct Answer {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Answer {
    fn location(&self) -> &str {
        self.headers
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }

    /// The `Set-Cookie` for `name`.
    fn set_cookie(&self, name: &str) -> String {
        self.set_cookies()
            .into_iter()
            .find(|c| c.starts_with(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no Set-Cookie {name}: {:?}", self.headers))
    }

    /// The first CSRF field of the page.
    fn csrf(&self) -> String {
        hidden_value(&self.body, "csrf").unwrap_or_else(|| panic!("no csrf field: {}", self.body))
    }
}

fn hidden_value(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    let end = html[start..].find('"')? + start;
    Some(html[start..end].to_owned())
}

/// A browser without a browser: keeps cookies, follows no redirects.
struct Browser {
    root: String,
    client: reqwest::Client,
    cookies: Mutex<HashMap<String, String>>,
}

impl Browser {
    fn new(app: &TestApp) -> Browser {
        Browser {
            root: app.root.clone(),
            client: reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: Mutex::new(HashMap::new()),
        }
    }

    fn cookie_header(&self) -> String {
        let jar = self.cookies.lock().unwrap();
        jar.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn session_token(&self) -> Option<String> {
        self.cookies
            .lock()
            .unwrap()
            .get("shipments_session")
            .cloned()
    }

    async fn send(&self, r: reqwest::RequestBuilder) -> Answer {
        let r = match self.cookie_header() {
            c if c.is_empty() => r,
            c => r.header("cookie", c),
        };
        let response = r.send().await.expect("the server answers");
        let status = response.status();
        let headers = response.headers().clone();
        let answer = Answer {
            status,
            headers,
            body: response.text().await.unwrap(),
        };
        let mut jar = self.cookies.lock().unwrap();
        for c in answer.set_cookies() {
            let pair = c.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() || c.contains("Max-Age=0") {
                jar.remove(name);
            } else {
                jar.insert(name.to_owned(), value.to_owned());
            }
        }
        answer
    }

    async fn get(&self, path: &str) -> Answer {
        self.send(self.client.get(format!("{}{path}", self.root)))
            .await
    }

    async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Answer {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        self.send(
            self.client
                .post(format!("{}{path}", self.root))
                .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(body),
        )
        .await
    }

    /// Posts a form with the CSRF token of the page at `from`.
    async fn submit(&self, from: &str, path: &str, fields: &[(&str, &str)]) -> Answer {
        let csrf = self.get(from).await.csrf();
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(path, &all).await
    }

    async fn sign_in(&self, email: &str, password: &str) -> Answer {
        let form = self.get("/login").await;
        assert_eq!(form.status, StatusCode::OK, "{}", form.body);
        let csrf = form.csrf();
        self.post(
            "/login",
            &[("csrf", &csrf), ("email", email), ("password", password)],
        )
        .await
    }
}

async fn signed_in(app: &TestApp) -> (Browser, Fixture) {
    let (f, email, password) = app.fixture_with_login().await;
    let browser = Browser::new(app);
    let answer = browser.sign_in(&email, &password).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    (browser, f)
}

async fn pages_send_signed_out_visitors_to_sign_in(app: &TestApp) {
    let browser = Browser::new(app);
    for path in [
        "/",
        "/keys",
        "/webhooks",
        "/webhooks/1",
        "/webhooks/signing-key",
        "/shipments",
        "/shipments/SHP-AAAA-AAAA",
        "/logout",
    ] {
        let got = browser.get(path).await;
        assert_eq!(got.status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(got.location(), "/login", "{path}");
    }
    // Posting without a session changes nothing and also goes to sign-in.
    let got = browser
        .post("/keys", &[("csrf", "x"), ("name", "sneaky")])
        .await;
    assert_eq!(
        (got.status, got.location()),
        (StatusCode::SEE_OTHER, "/login")
    );
    // A made-up or stale cookie is no session.
    browser
        .cookies
        .lock()
        .unwrap()
        .insert("shipments_session".into(), "madeUpToken123".into());
    let got = browser.get("/keys").await;
    assert_eq!(got.location(), "/login");
    // The sign-in page and the stylesheet are open to all.
    assert_eq!(browser.get("/login").await.status, StatusCode::OK);
    let css = browser.get("/static/style.css").await;
    assert_eq!(css.status, StatusCode::OK);
    assert!(
        css.headers[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    let js = browser.get("/static/copy.js").await;
    assert!(
        js.headers[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
}

async fn sign_in_sets_a_strict_session_cookie_shared_with_the_api(app: &TestApp) {
    let (f, email, password) = app.fixture_with_login().await;
    let browser = Browser::new(app);
    let form = browser.get("/login").await;
    let login_cookie = form.set_cookie("shipments_login");
    assert!(login_cookie.contains("HttpOnly") && login_cookie.contains("SameSite=Strict"));

    let answer = browser.sign_in(&email, &password).await;
    assert_eq!(
        (answer.status, answer.location()),
        (StatusCode::SEE_OTHER, "/")
    );
    let cookie = answer.set_cookie("shipments_session");
    for part in ["HttpOnly", "SameSite=Strict", "Path=/;", "Max-Age=43200"] {
        assert!(cookie.contains(part), "{part} missing: {cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    let token = browser.session_token().unwrap();
    assert!(
        !answer.location().contains(&token),
        "the token is never in a URL"
    );

    // The cookie is the same kind of session as a Bearer sign-in.
    let (status, keys) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    assert_eq!(status, StatusCode::OK, "{keys}");
    let overview = browser.get("/").await;
    assert_eq!(overview.status, StatusCode::OK);
    assert!(overview.body.contains("Overview"), "{}", overview.body);
    // Signed in, the sign-in page sends you on.
    assert_eq!(browser.get("/login").await.location(), "/");

    // Behind a TLS-terminating proxy the cookie is Secure.
    let proxied = Browser::new(app);
    let form = proxied
        .send(
            proxied
                .client
                .get(format!("{}/login", app.root))
                .header("x-forwarded-proto", "https"),
        )
        .await;
    assert!(form.set_cookie("shipments_login").ends_with("; Secure"));
    let csrf = form.csrf();
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("csrf", csrf.as_str()),
            ("email", email.as_str()),
            ("password", password.as_str()),
        ])
        .finish();
    let answer = proxied
        .send(
            proxied
                .client
                .post(format!("{}/login", app.root))
                .header("x-forwarded-proto", "https")
                .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(body),
        )
        .await;
    let secure = answer.set_cookie("shipments_session");
    assert!(secure.contains("Secure"), "{secure}");

    // Sign-out ends the session for the pages and the API alike.
    let out = browser.submit("/", "/logout", &[]).await;
    assert_eq!(
        (out.status, out.location()),
        (StatusCode::SEE_OTHER, "/login?signed-out")
    );
    assert!(out.set_cookie("shipments_session").contains("Max-Age=0"));
    assert_eq!(browser.get("/keys").await.location(), "/login");
    let (status, _) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let _ = f;
}

async fn wrong_passwords_are_explained_and_then_throttled(app: &TestApp) {
    let (_, email, password) = app.fixture_with_login().await;
    let browser = Browser::new(app);
    for _ in 0..5 {
        let got = browser.sign_in(&email, "not the password").await;
        assert_eq!(got.status, StatusCode::UNAUTHORIZED);
        assert!(
            got.body.contains("Wrong e-mail or password."),
            "{}",
            got.body
        );
        assert!(
            got.body.contains(&format!("value=\"{email}\"")),
            "e-mail kept"
        );
        assert!(
            !got.body.contains("not the password"),
            "password not echoed"
        );
        assert!(browser.session_token().is_none());
    }
    // Now even the right password waits, and the page says for how long.
    let got = browser.sign_in(&email, &password).await;
    assert_eq!(got.status, StatusCode::TOO_MANY_REQUESTS, "{}", got.body);
    assert!(got.body.contains("try again in 15 minutes"), "{}", got.body);
    let retry: u64 = got.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=15 * 60 + 1).contains(&retry), "{retry}");
    assert!(browser.session_token().is_none());
}

async fn forms_without_the_session_csrf_token_are_refused(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let keys_before = app.store.api_keys(f.merchant_id).await.unwrap().len();
    let missing = browser.post("/keys", &[("name", "forged")]).await;
    assert_eq!(missing.status, StatusCode::FORBIDDEN);
    assert!(missing.body.contains("This form cannot be accepted"));
    let wrong = browser
        .post("/keys", &[("csrf", "0123456789abcdef"), ("name", "forged")])
        .await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    // Another session's token is no good here either.
    let (other, _) = signed_in(app).await;
    let theirs = other.get("/keys").await.csrf();
    let crossed = browser
        .post("/keys", &[("csrf", &theirs), ("name", "forged")])
        .await;
    assert_eq!(crossed.status, StatusCode::FORBIDDEN);
    assert_eq!(
        app.store.api_keys(f.merchant_id).await.unwrap().len(),
        keys_before,
        "nothing was created"
    );
    // Signing out needs the token too.
    let out = browser.post("/logout", &[]).await;
    assert_eq!(out.status, StatusCode::FORBIDDEN);
    assert_eq!(browser.get("/keys").await.status, StatusCode::OK);
    // So does signing in: a form posted from elsewhere has no sign-in cookie.
    let stranger = Browser::new(app);
    let got = stranger
        .post(
            "/login",
            &[
                ("csrf", "abc"),
                ("email", "a@example.com"),
                ("password", "x"),
            ],
        )
        .await;
    assert_eq!(got.status, StatusCode::FORBIDDEN);
}

async fn a_new_key_is_shown_once_verified_and_deleted(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let created = browser
        .submit("/keys", "/keys", &[("name", "checkout server")])
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.headers[CACHE_CONTROL], "no-store");
    let key = hidden_or_field(&created.body, "new-key");
    assert!(key.starts_with("sk_test_") && key.len() == 40, "{key}");
    assert!(created.body.contains("will not be shown again"));

    let listed = browser.get("/keys").await;
    assert!(listed.body.contains("checkout server"));
    assert!(!listed.body.contains(&key), "the key is shown only once");
    assert!(listed.body.contains(&format!("sk_test_…{}", &key[36..])));

    let verdict = browser
        .submit("/keys", "/keys/verify", &[("key", &key)])
        .await;
    assert_eq!(verdict.status, StatusCode::OK);
    assert!(
        verdict
            .body
            .contains("Valid: this is your key “checkout server”")
    );
    assert!(!verdict.body.contains(&key), "the pasted key is not echoed");
    let bogus = browser
        .submit("/keys", "/keys/verify", &[("key", "sk_test_nope")])
        .await;
    assert!(bogus.body.contains("Not valid"));

    let id = app
        .store
        .api_keys(f.merchant_id)
        .await
        .unwrap()
        .into_iter()
        .find(|k| k.name == "checkout server")
        .unwrap()
        .id;
    let confirm = browser.get(&format!("/keys/{id}/delete")).await;
    assert_eq!(confirm.status, StatusCode::OK);
    assert!(confirm.body.contains("Delete the key"));
    let (status, _) = send(app.req(Method::GET, "/merchant-couriers", &key)).await;
    assert_eq!(status, StatusCode::OK);
    let deleted = browser
        .submit(
            &format!("/keys/{id}/delete"),
            &format!("/keys/{id}/delete"),
            &[],
        )
        .await;
    assert_eq!(
        (deleted.status, deleted.location()),
        (StatusCode::SEE_OTHER, "/keys?deleted")
    );
    let (status, _) = send(app.req(Method::GET, "/merchant-couriers", &key)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let again = browser.get(&format!("/keys/{id}/delete")).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    // Another merchant's key id is not found either.
    let other = app.fixture().await;
    let theirs = app.store.api_keys(other.merchant_id).await.unwrap()[0].id;
    assert_eq!(
        browser.get(&format!("/keys/{theirs}/delete")).await.status,
        StatusCode::NOT_FOUND
    );
}

/// The value of the read-only field `id` showing a secret.
fn hidden_or_field(html: &str, id: &str) -> String {
    let marker = format!("id=\"{id}\" type=\"text\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no field {id}: {html}"))
        + marker.len();
    let end = html[start..].find('"').unwrap() + start;
    html[start..end].to_owned()
}

async fn webhooks_are_registered_toggled_and_deleted_from_the_pages(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let url = "https://127.0.0.1:9/hooks";
    let created = browser
        .submit("/webhooks", "/webhooks", &[("url", url)])
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let signing_key = hidden_or_field(&created.body, "new-signing-key");
    assert!(signing_key.starts_with("whsec_"), "{signing_key}");
    let listed = browser.get("/webhooks").await;
    assert!(listed.body.contains(url) && listed.body.contains("Active"));
    assert!(!listed.body.contains(&signing_key));

    let taken = browser
        .submit("/webhooks", "/webhooks", &[("url", url)])
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT);
    assert!(taken.body.contains("You have already registered this URL."));
    let plain = browser
        .submit(
            "/webhooks",
            "/webhooks",
            &[("url", "http://shop.example.com/h")],
        )
        .await;
    assert_eq!(plain.status, StatusCode::BAD_REQUEST);
    assert!(plain.body.contains("https"), "{}", plain.body);

    let id = app.store.webhooks(f.merchant_id).await.unwrap()[0].id;
    let off = browser
        .submit("/webhooks", &format!("/webhooks/{id}/disable"), &[])
        .await;
    assert_eq!(off.location(), "/webhooks?disabled");
    assert!(
        !app.store
            .webhook(f.merchant_id, id)
            .await
            .unwrap()
            .unwrap()
            .active
    );
    let on = browser
        .submit(
            "/webhooks",
            &format!("/webhooks/{id}/enable"),
            &[("back", "detail")],
        )
        .await;
    assert_eq!(on.location(), format!("/webhooks/{id}"));
    let detail = browser.get(&format!("/webhooks/{id}")).await;
    assert_eq!(detail.status, StatusCode::OK);
    assert!(detail.body.contains("Delivery log"));
    assert!(detail.body.contains("Active"));
    assert_eq!(
        browser.get(&format!("/webhooks/{id}?page=0")).await.status,
        StatusCode::BAD_REQUEST
    );

    let rotated = browser
        .submit("/webhooks/signing-key", "/webhooks/signing-key", &[])
        .await;
    assert_eq!(rotated.status, StatusCode::CREATED);
    assert!(hidden_or_field(&rotated.body, "new-shipment-signing-key").starts_with("whsec_"));
    assert!(
        app.store
            .shipment_signing_key(f.merchant_id)
            .await
            .unwrap()
            .is_some()
    );

    let gone = browser
        .submit(
            &format!("/webhooks/{id}/delete"),
            &format!("/webhooks/{id}/delete"),
            &[],
        )
        .await;
    assert_eq!(gone.location(), "/webhooks?deleted");
    assert!(app.store.webhooks(f.merchant_id).await.unwrap().is_empty());
    assert_eq!(
        browser.get(&format!("/webhooks/{id}")).await.status,
        StatusCode::NOT_FOUND
    );
}

async fn shipments_are_listed_filtered_and_shown_with_their_timeline(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let first = app.create_default(&f).await;
    let code = first["code"].as_str().unwrap().to_owned();
    app.courier_op(
        &f,
        &code,
        "assign-driver",
        Some(json!({"driver_id": f.driver_id})),
    )
    .await;
    app.courier_op(&f, &code, "pickup", None).await;
    app.courier_op(&f, &code, "deliver", None).await;
    let second = app.create_default(&f).await;
    let other_code = second["code"].as_str().unwrap().to_owned();

    let all = browser.get("/shipments").await;
    assert_eq!(all.status, StatusCode::OK);
    assert!(all.body.contains(&code) && all.body.contains(&other_code));
    let delivered = browser.get("/shipments?status=delivered").await;
    assert!(delivered.body.contains(&code) && !delivered.body.contains(&other_code));
    // The filter form's "all statuses" sends an empty value.
    let empty = browser.get("/shipments?status=&page=1").await;
    assert_eq!(empty.status, StatusCode::OK);
    let paged = browser.get("/shipments?page_size=1&page=2").await;
    assert!(paged.body.contains("Page 2 of 2"), "{}", paged.body);
    assert!(paged.body.contains(&code), "oldest on the last page");
    let bad = browser.get("/shipments?status=lost").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.body.contains("must be one of"));

    let shown = browser.get(&format!("/shipments/{code}")).await;
    assert_eq!(shown.status, StatusCode::OK);
    let timeline = &shown.body[shown.body.find("Timeline").expect("a timeline")..];
    let order = [
        "Created and handed to the courier company",
        "Driver assigned",
        "Picked up: in transit",
        "Delivered",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|label| {
            timeline
                .find(label)
                .unwrap_or_else(|| panic!("{label}: {timeline}"))
        })
        .collect();
    assert!(positions.is_sorted(), "timeline in order: {positions:?}");

    let stranger = app.fixture().await;
    let theirs = app.create_default(&stranger).await;
    let got = browser
        .get(&format!("/shipments/{}", theirs["code"].as_str().unwrap()))
        .await;
    assert_eq!(got.status, StatusCode::NOT_FOUND);
    assert_eq!(
        browser.get("/shipments/not-a-code").await.status,
        StatusCode::NOT_FOUND
    );
}

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
    let id = app.store.webhooks(f.merchant_id).await.unwrap()[0].id;
    let key_id = app.store.api_keys(f.merchant_id).await.unwrap()[0].id;
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
    let app = TestApp::spawn_with(crate::helpers::Db::Sqlite, |c| {
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
