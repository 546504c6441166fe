//! Back to the page asked for: a signed-out visitor sent to sign in comes
//! back to the dashboard page they opened, and only ever to a path of this
//! dashboard.

use reqwest::StatusCode;
use shipment_testkit::{TestApp, db_tests};

use super::browser::{Answer, Browser};

db_tests!(
    sign_in_returns_to_the_page_asked_for,
    sign_in_returns_only_to_paths_of_this_dashboard,
);

/// Signs in from the sign-in page at `login` (its path and query),
/// posting the `next` field that page's form carries.
async fn sign_in_from(browser: &Browser, login: &str, email: &str, password: &str) -> Answer {
    let form = browser.get(login).await;
    assert_eq!(form.status, StatusCode::OK, "{login}: {}", form.body);
    let csrf = form.csrf();
    let mut fields = vec![
        ("csrf", csrf.as_str()),
        ("email", email),
        ("password", password),
    ];
    let next = hidden(&form.body, "next");
    if let Some(next) = &next {
        fields.push(("next", next.as_str()));
    }
    browser.post("/login", &fields).await
}

/// The value of the hidden field `name`, unescaped as a browser would.
fn hidden(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    let end = html[start..].find('"')? + start;
    Some(
        html[start..end]
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
}

async fn sign_in_returns_to_the_page_asked_for(app: &TestApp) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let code = app.create_default(&f).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    for asked in [
        format!("/shipments/{code}"),
        "/shipments?status=delivered&page=1".to_owned(),
        "/webhooks/signing-key".to_owned(),
    ] {
        let browser = Browser::new(app);
        let sent = browser.get(&asked).await;
        assert_eq!(sent.status, StatusCode::SEE_OTHER, "{asked}");
        let login = sent.location().to_owned();
        assert!(login.starts_with("/login?next="), "{asked}: {login}");
        let answer = sign_in_from(&browser, &login, &email, &password).await;
        assert_eq!(
            (answer.status, answer.location()),
            (StatusCode::SEE_OTHER, asked.as_str()),
            "{}",
            answer.body
        );
        let page = browser.get(&asked).await;
        assert_eq!(page.status, StatusCode::OK, "{asked}");
        // Signed in, the sign-in page with a return path sends you there.
        assert_eq!(browser.get(&login).await.location(), asked);
    }
    // The overview itself needs no return path.
    let browser = Browser::new(app);
    assert_eq!(browser.get("/").await.location(), "/login");
    // A wrong password keeps the return path in the form shown again.
    let browser = Browser::new(app);
    let login = browser.get(&format!("/shipments/{code}")).await;
    let form = browser.get(login.location()).await;
    let got = browser
        .post(
            "/login",
            &[
                ("csrf", &form.csrf()),
                ("email", &email),
                ("password", "not the password"),
                ("next", &format!("/shipments/{code}")),
            ],
        )
        .await;
    assert_eq!(got.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        hidden(&got.body, "next").as_deref(),
        Some(format!("/shipments/{code}").as_str())
    );
}

/// The longest return path kept, in bytes (the dashboard's limit).
const MAX_NEXT: usize = 1024;

async fn sign_in_returns_only_to_paths_of_this_dashboard(app: &TestApp) {
    let (email, password) = app.fixture_with_login().await.credentials();
    let longest = format!("/shipments?status={}", "a".repeat(MAX_NEXT - 18));
    assert_eq!(longest.len(), MAX_NEXT);
    let too_long = format!("{longest}a");
    let mut cases: Vec<(&str, &str)> = vec![
        ("//evil.example/", "/"),
        ("/\\evil.example/", "/"),
        ("\\/evil.example/", "/"),
        ("/\\/evil.example/", "/"),
        ("https://evil.example/", "/"),
        ("http:/evil.example", "/"),
        ("javascript:alert(1)", "/"),
        ("evil.example", "/"),
        ("/ /evil", "/"),
        ("/\t/evil.example", "/"),
        ("/%0d%0aSet-Cookie:x=1", "/%0d%0aSet-Cookie:x=1"),
        ("/\r\nSet-Cookie: x=1", "/"),
        ("/login", "/"),
        ("", "/"),
        ("/keys", "/keys"),
        (&longest, &longest),
        (&too_long, "/"),
    ];
    cases.push(("/webhooks?deleted", "/webhooks?deleted"));
    for (next, expected) in cases {
        let browser = Browser::new(app);
        let csrf = browser.get("/login").await.csrf();
        let answer = browser
            .post(
                "/login",
                &[
                    ("csrf", &csrf),
                    ("email", &email),
                    ("password", &password),
                    ("next", next),
                ],
            )
            .await;
        assert_eq!(
            (answer.status, answer.location()),
            (StatusCode::SEE_OTHER, expected),
            "next={next:?}"
        );
        // The sign-in page never carries one it would not follow.
        let shown = Browser::new(app);
        let query = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("next", next)
            .finish();
        let page = shown.get(&format!("/login?{query}")).await;
        assert_eq!(page.status, StatusCode::OK, "next={next:?}");
        let carried = hidden(&page.body, "next");
        if expected == "/" {
            assert_eq!(carried, None, "next={next:?}");
        } else {
            assert_eq!(carried.as_deref(), Some(next), "next={next:?}");
        }
    }
}
