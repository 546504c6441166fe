//! Signing in and out of the pages: redirects for signed-out visitors, the
//! session cookie (shared with the API), wrong passwords and their
//! throttle, and CSRF refusals.

use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, StatusCode};
use shipment_sdk::model::MerchantId;
use shipment_testkit::{TestApp, db_tests, send};

use super::browser::{Browser, signed_in};

db_tests!(
    pages_send_signed_out_visitors_to_sign_in,
    sign_in_sets_a_strict_session_cookie_shared_with_the_api,
    wrong_passwords_are_explained_and_then_throttled,
    forms_without_the_session_csrf_token_are_refused,
);

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
        // With the page to come back to (the overview needs none).
        let back: String = url::form_urlencoded::byte_serialize(path.as_bytes()).collect();
        let expected = match path {
            "/" => "/login".to_owned(),
            _ => format!("/login?next={back}"),
        };
        assert_eq!(got.location(), expected, "{path}");
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
    assert_eq!(got.location(), "/login?next=%2Fkeys");
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
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
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
    assert_eq!(browser.get("/keys").await.location(), "/login?next=%2Fkeys");
    let (status, _) = send(app.bearer(Method::GET, "/api-keys", &token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let _ = f;
}

async fn wrong_passwords_are_explained_and_then_throttled(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
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
    let keys_before = app
        .store
        .api_keys(MerchantId::new(f.merchant_id))
        .await
        .unwrap()
        .len();
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
        app.store
            .api_keys(MerchantId::new(f.merchant_id))
            .await
            .unwrap()
            .len(),
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
