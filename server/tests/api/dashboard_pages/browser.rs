//! A browser without a browser: plain HTTP that keeps cookies and follows
//! no redirects, and what the pages' answers are checked with.

use std::collections::HashMap;
use std::sync::Mutex;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, LOCATION, SET_COOKIE};
use shipment_testkit::{Fixture, TestApp};

/// An answer: status, headers, body text.
pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn location(&self) -> &str {
        self.headers
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    pub fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }

    /// The `Set-Cookie` for `name`.
    pub fn set_cookie(&self, name: &str) -> String {
        self.set_cookies()
            .into_iter()
            .find(|c| c.starts_with(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no Set-Cookie {name}: {:?}", self.headers))
    }

    /// The first CSRF field of the page.
    pub fn csrf(&self) -> String {
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
pub struct Browser {
    pub root: String,
    pub client: reqwest::Client,
    pub cookies: Mutex<HashMap<String, String>>,
}

impl Browser {
    pub fn new(app: &TestApp) -> Browser {
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

    pub fn cookie_header(&self) -> String {
        let jar = self.cookies.lock().unwrap();
        jar.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub fn session_token(&self) -> Option<String> {
        self.cookies
            .lock()
            .unwrap()
            .get("shipments_session")
            .cloned()
    }

    pub async fn send(&self, r: reqwest::RequestBuilder) -> Answer {
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

    pub async fn get(&self, path: &str) -> Answer {
        self.send(self.client.get(format!("{}{path}", self.root)))
            .await
    }

    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Answer {
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
    pub async fn submit(&self, from: &str, path: &str, fields: &[(&str, &str)]) -> Answer {
        let csrf = self.get(from).await.csrf();
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(path, &all).await
    }

    pub async fn sign_in(&self, email: &str, password: &str) -> Answer {
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

pub async fn signed_in(app: &TestApp) -> (Browser, Fixture) {
    let f = app.fixture_with_login().await;
    let (email, password) = f.credentials();
    let browser = Browser::new(app);
    let answer = browser.sign_in(&email, &password).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    (browser, f)
}

/// The value of the read-only field `id` showing a secret.
pub fn hidden_or_field(html: &str, id: &str) -> String {
    let marker = format!("id=\"{id}\" type=\"text\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no field {id}: {html}"))
        + marker.len();
    let end = html[start..].find('"').unwrap() + start;
    html[start..end].to_owned()
}
