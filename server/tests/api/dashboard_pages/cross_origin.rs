//! Forms posted from another origin: every dashboard POST, sign-in
//! included, is refused unless it comes from the dashboard's own origin,
//! and the sign-in form's token is bound to the server, so a cookie
//! planted from a sibling host or another port cannot stand in for it.

use reqwest::StatusCode;
use reqwest::header::CONTENT_TYPE;
use shipment_sdk::model::MerchantId;
use shipment_testkit::{TestApp, db_tests};

use super::browser::{Answer, Browser, signed_in};

db_tests!(
    dashboard_posts_from_another_origin_are_refused,
    sign_in_from_another_origin_is_refused,
    a_planted_sign_in_cookie_is_not_a_sign_in_token,
);

/// Posts `fields` to `path` with the extra `headers`.
async fn post_with(
    browser: &Browser,
    path: &str,
    fields: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> Answer {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    let mut request = browser
        .client
        .post(format!("{}{path}", browser.root))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    browser.send(request).await
}

/// The root's `scheme://host:port`, as a browser's `Origin` says it.
fn own_origin(app: &TestApp) -> String {
    let url = url::Url::parse(&app.root).unwrap();
    url.origin().ascii_serialization()
}

async fn dashboard_posts_from_another_origin_are_refused(app: &TestApp) {
    let (browser, f) = signed_in(app).await;
    let merchant = MerchantId::new(f.merchant_id);
    let keys = || async { app.store.api_keys(merchant).await.unwrap().len() };
    let before = keys().await;
    let url = url::Url::parse(&app.root).unwrap();
    let host = url.host_str().unwrap();
    let port = url.port().unwrap();
    let other_port = format!("http://{host}:{}", if port == 1 { 2 } else { port - 1 });
    let sibling = format!("http://evil.{host}:{port}");
    for refused in [
        vec![("origin", other_port.as_str())],
        vec![("origin", sibling.as_str())],
        vec![("origin", "null")],
        vec![("origin", "null"), ("sec-fetch-site", "cross-site")],
        vec![("origin", "https://attacker.example")],
        // The dashboard's host, but over the other scheme.
        vec![("origin", &*format!("https://{host}:{port}"))],
        // No Origin: the browser's own word on where the form came from.
        vec![("sec-fetch-site", "cross-site")],
        vec![("sec-fetch-site", "same-site")],
        // Origin decides when both are sent.
        vec![
            ("origin", other_port.as_str()),
            ("sec-fetch-site", "same-origin"),
        ],
    ] {
        let csrf = browser.get("/keys").await.csrf();
        let got = post_with(
            &browser,
            "/keys",
            &[("csrf", &csrf), ("name", "forged")],
            &refused,
        )
        .await;
        assert_eq!(
            got.status,
            StatusCode::FORBIDDEN,
            "{refused:?}: {}",
            got.body
        );
        assert!(
            got.body.contains("another site"),
            "{refused:?}: {}",
            got.body
        );
        assert_eq!(got.headers["cache-control"], "no-store", "{refused:?}");
        assert!(got.headers.contains_key("content-security-policy"));
    }
    assert_eq!(keys().await, before, "nothing was created");
    // Signing out from elsewhere is refused too: the session lives on.
    let csrf = browser.get("/").await.csrf();
    let out = post_with(
        &browser,
        "/logout",
        &[("csrf", &csrf)],
        &[("origin", &other_port)],
    )
    .await;
    assert_eq!(out.status, StatusCode::FORBIDDEN);
    assert_eq!(browser.get("/keys").await.status, StatusCode::OK);

    // From the dashboard itself, as a browser says it, or with neither
    // header (a program, not a browser): accepted.
    let own = own_origin(app);
    for accepted in [
        vec![("origin", own.as_str())],
        vec![("origin", own.to_uppercase().as_str())],
        vec![("sec-fetch-site", "same-origin")],
        vec![("sec-fetch-site", "none")],
        // A page of the dashboard whose origin the browser hides.
        vec![("origin", "null"), ("sec-fetch-site", "same-origin")],
        vec![],
    ] {
        let csrf = browser.get("/keys").await.csrf();
        let got = post_with(
            &browser,
            "/keys",
            &[("csrf", &csrf), ("name", "mine")],
            &accepted,
        )
        .await;
        assert_eq!(
            got.status,
            StatusCode::CREATED,
            "{accepted:?}: {}",
            got.body
        );
    }
    assert_eq!(keys().await, before + 6);
}

async fn sign_in_from_another_origin_is_refused(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    let url = url::Url::parse(&app.root).unwrap();
    let attacker = format!(
        "http://{}:{}",
        url.host_str().unwrap(),
        url.port().unwrap() + 1
    );
    let browser = Browser::new(app);
    let csrf = browser.get("/login").await.csrf();
    let fields = [
        ("csrf", csrf.as_str()),
        ("email", email.as_str()),
        ("password", password.as_str()),
    ];
    for refused in [
        vec![("origin", attacker.as_str())],
        vec![("sec-fetch-site", "same-site")],
    ] {
        let got = post_with(&browser, "/login", &fields, &refused).await;
        assert_eq!(
            got.status,
            StatusCode::FORBIDDEN,
            "{refused:?}: {}",
            got.body
        );
        assert!(browser.session_token().is_none(), "{refused:?}");
    }
    let own = own_origin(app);
    let got = post_with(&browser, "/login", &fields, &[("origin", &own)]).await;
    assert_eq!(
        (got.status, got.location()),
        (StatusCode::SEE_OTHER, "/"),
        "{}",
        got.body
    );
    assert!(browser.session_token().is_some());
}

async fn a_planted_sign_in_cookie_is_not_a_sign_in_token(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    // What a page on a sibling host or another port can do: set the
    // sign-in cookie to a value of its choosing, and post the same value.
    let planted = "0123456789abcdefABCDEF0123456789";
    let victim = Browser::new(app);
    victim
        .cookies
        .lock()
        .unwrap()
        .insert("shipments_login".into(), planted.into());
    let got = victim
        .post(
            "/login",
            &[
                ("csrf", planted),
                ("email", email.as_str()),
                ("password", password.as_str()),
            ],
        )
        .await;
    assert_eq!(got.status, StatusCode::FORBIDDEN, "{}", got.body);
    assert!(victim.session_token().is_none());

    // The form's token is not the cookie's value: it is made from it with
    // the server's secret.
    let form = Browser::new(app);
    let page = form.get("/login").await;
    let cookie = form.cookies.lock().unwrap()["shipments_login"].clone();
    assert_ne!(page.csrf(), cookie);
    // The planted cookie's own page shows a token that works with it only.
    let page = victim.get("/login").await;
    assert_ne!(page.csrf(), planted);
    let answer = victim
        .post(
            "/login",
            &[
                ("csrf", page.csrf().as_str()),
                ("email", email.as_str()),
                ("password", password.as_str()),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
}
