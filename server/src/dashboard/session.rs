//! The browser side of a dashboard session: the session cookie, the
//! [`Signed`] and [`SignedForm`] extractors, CSRF tokens, the check that a
//! form was posted from the dashboard's own origin, and the page to return
//! to after sign-in.
//!
//! The cookie holds the same session token as a Bearer sign-in (the
//! database keeps only its digest). The CSRF token of a session is
//! HMAC-SHA256 of a fixed label under that token: only a browser holding
//! the cookie's value can know it, it is the same on every server process
//! sharing the database, and it reveals nothing about the token. The
//! sign-in form, before any session exists, has a random value in a
//! `SameSite=Strict` cookie of its own, and its token is an HMAC of that
//! value under a key derived from the server's data key: a value a page
//! elsewhere plants in the cookie (from a sibling host, or another port of
//! this one: cookies do not keep ports apart) is no token by itself.
//!
//! Tokens alone cannot stop a page that fetches a genuine pair from this
//! server and plants it, so every form is also refused when the browser
//! says it was posted from another origin ([`same_origin`]).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use shipment_sdk::model::MerchantId;
use subtle::ConstantTimeEq;

use super::page::{PageError, see_other};
use crate::app::AppState;
use crate::app::auth::{SESSION_TTL, Session, session_for_token};
use crate::domain::keys;

/// Name of the session cookie.
pub(super) const SESSION_COOKIE: &str = "shipments_session";
/// Name of the sign-in form's CSRF cookie.
const LOGIN_COOKIE: &str = "shipments_login";
/// Name of the hidden CSRF field of every form.
pub(crate) const CSRF_FIELD: &str = "csrf";
/// What a session's CSRF token is the HMAC of.
const CSRF_LABEL: &[u8] = b"shipments dashboard csrf v1";
/// What the key of the sign-in form's tokens is the HMAC of, under the
/// server's data key (so every process sharing the database agrees).
const LOGIN_CSRF_LABEL: &[u8] = b"shipments dashboard sign-in csrf v1";
/// Name of the sign-in form's field that says where to go after it.
pub(crate) const NEXT_FIELD: &str = "next";
/// Longest return path followed after sign-in, in bytes; a longer one is
/// dropped (the overview is shown instead). Dashboard paths are short.
pub(crate) const MAX_NEXT_LEN: usize = 1024;
/// Longest cookie value looked at (tokens are 32 characters).
const MAX_TOKEN_LEN: usize = 64;

/// A signed-in merchant, from the session cookie; a page that takes it
/// sends everyone else to the sign-in page.
#[derive(Debug, Clone)]
pub(crate) struct Signed {
    /// The session (id and merchant).
    pub session: Session,
    /// This session's CSRF token, for the forms of the page.
    pub csrf: String,
}

impl Signed {
    /// The merchant signed in.
    pub(crate) fn merchant_id(&self) -> MerchantId {
        self.session.merchant_id
    }
}

/// The session of a request's cookie, if it names a live one.
pub(crate) async fn signed_in(
    headers: &HeaderMap,
    state: &AppState,
) -> Result<Option<Signed>, PageError> {
    let Some(token) = cookie(headers, SESSION_COOKIE).filter(|t| well_formed(t)) else {
        return Ok(None);
    };
    Ok(session_for_token(state, token)
        .await?
        .map(|session| Signed {
            session,
            csrf: csrf_token(token),
        }))
}

impl FromRequestParts<AppState> for Signed {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        signed_in(&parts.headers, state).await?.ok_or_else(|| {
            // A page opened (not a form posted) comes back after sign-in.
            let asked = matches!(parts.method, Method::GET | Method::HEAD)
                .then(|| parts.uri.path_and_query().map(|p| p.as_str()))
                .flatten()
                .and_then(safe_next)
                .filter(|p| *p != "/");
            PageError::SignIn(asked.map(str::to_owned))
        })
    }
}

/// A form posted by a signed-in merchant with the session's CSRF token;
/// anything else is refused (403) before the handler runs.
#[derive(Debug)]
pub(crate) struct SignedForm {
    /// Who posted it.
    pub signed: Signed,
    /// Its fields.
    pub form: Form,
}

impl FromRequest<AppState> for SignedForm {
    type Rejection = PageError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, PageError> {
        same_origin(req.headers(), state)?;
        let (mut parts, body) = req.into_parts();
        let signed = Signed::from_request_parts(&mut parts, state).await?;
        let form = Form::from_request(Request::from_parts(parts, body), state).await?;
        checked(form, Some(&signed.csrf)).map(|form| SignedForm { signed, form })
    }
}

/// The sign-in form, posted from this dashboard: from its own origin, its
/// CSRF field the token of the sign-in cookie set when the form was shown.
#[derive(Debug)]
pub(crate) struct LoginForm {
    /// Its fields.
    pub form: Form,
    /// The token, to render the form again after a failure.
    pub csrf: String,
}

impl FromRequest<AppState> for LoginForm {
    type Rejection = PageError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, PageError> {
        same_origin(req.headers(), state)?;
        let expected = cookie(req.headers(), LOGIN_COOKIE)
            .filter(|t| well_formed(t))
            .map(|value| login_csrf_token(state, value));
        let form = Form::from_request(req, state).await?;
        let csrf = expected.clone().unwrap_or_default();
        checked(form, expected.as_deref()).map(|form| LoginForm { form, csrf })
    }
}

/// Refuses (403) a form the browser says was posted from another origin:
/// an `Origin` other than this dashboard's own (the scheme, as
/// [`over_https`] tells it, and the host, as `X-Forwarded-Host` or `Host`
/// names it); an opaque `Origin: null` (a sandboxed page, or a page whose
/// referrer policy hides its origin) unless `Sec-Fetch-Site` says
/// `same-origin`; without `Origin`, a `Sec-Fetch-Site` other than
/// `same-origin` or `none`. A request with neither header is let through
/// to the CSRF check: browsers send `Origin` with every form they post,
/// and programs such as curl send neither.
///
/// The forwarded headers are trusted as [`over_https`] trusts
/// `X-Forwarded-Proto`: a page elsewhere cannot make a browser send them
/// with a form.
pub(crate) fn same_origin(headers: &HeaderMap, state: &AppState) -> Result<(), PageError> {
    let fetch_site = headers
        .get("sec-fetch-site")
        .map(|v| v.to_str().unwrap_or(""));
    let allowed = match headers.get(header::ORIGIN).map(|v| v.to_str()) {
        Some(Ok("null")) => fetch_site == Some("same-origin"),
        Some(Ok(origin)) => {
            let host = headers
                .get("x-forwarded-host")
                .or_else(|| headers.get(header::HOST))
                .and_then(|v| v.to_str().ok())
                .map_or("", |v| v.split(',').next().unwrap_or("").trim());
            let scheme = if over_https(headers, state) {
                "https"
            } else {
                "http"
            };
            is_origin_of(origin, scheme, host)
        }
        Some(Err(_)) => false,
        None => matches!(fetch_site, None | Some("same-origin" | "none")),
    };
    if allowed {
        Ok(())
    } else {
        tracing::warn!("a dashboard form posted from another origin was refused");
        Err(PageError::CrossOrigin)
    }
}

/// Whether `origin` (as a browser sends it) is `scheme://host`, cases
/// aside, and a default port (`:80` for http, `:443` for https) written on
/// one side only (browsers leave it out; a proxy may write it into `Host`).
fn is_origin_of(origin: &str, scheme: &str, host: &str) -> bool {
    let default_port = if scheme == "https" { ":443" } else { ":80" };
    let bare = |h: &str| -> String {
        let h = h.to_ascii_lowercase();
        match h.strip_suffix(default_port) {
            Some(b) => b.to_owned(),
            None => h,
        }
    };
    let Some((origin_scheme, origin_host)) = origin.split_once("://") else {
        return false;
    };
    !host.is_empty()
        && origin_scheme.eq_ignore_ascii_case(scheme)
        && bare(origin_host) == bare(host)
}

/// `raw` if it is a path of this dashboard to return to after sign-in:
/// it starts with one `/` (not `//` nor `/\`, which browsers read as
/// another host), holds visible ASCII only and no `\`, is at most
/// [`MAX_NEXT_LEN`] bytes, and is not the sign-in page itself.
pub(crate) fn safe_next(raw: &str) -> Option<&str> {
    let bytes = raw.as_bytes();
    let path = raw.split(['?', '#']).next().unwrap_or("");
    let ok = raw.len() <= MAX_NEXT_LEN
        && bytes.first() == Some(&b'/')
        && !matches!(bytes.get(1), Some(b'/' | b'\\'))
        && bytes.iter().all(|b| b.is_ascii_graphic() && *b != b'\\')
        && path != "/login";
    ok.then_some(raw)
}

/// `form` if its CSRF field is `expected` (compared in constant time);
/// 403 otherwise, and when nothing is expected (no cookie).
fn checked(form: Form, expected: Option<&str>) -> Result<Form, PageError> {
    match expected {
        Some(expected) if same(form.get(CSRF_FIELD).unwrap_or(""), expected) => Ok(form),
        _ => {
            tracing::warn!("a dashboard form without a valid CSRF token was refused");
            Err(PageError::Csrf)
        }
    }
}

/// The fields of an `application/x-www-form-urlencoded` body.
#[derive(Debug, Default)]
pub(crate) struct Form(Vec<(String, String)>);

impl Form {
    /// The first value of field `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl FromRequest<AppState> for Form {
    type Rejection = PageError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, PageError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                PageError::TooLarge
            } else {
                PageError::BadForm
            }
        })?;
        Ok(Form(
            url::form_urlencoded::parse(&bytes)
                .map(|(n, v)| (n.into_owned(), v.into_owned()))
                .collect(),
        ))
    }
}

/// The CSRF token of the session whose token is `session_token`.
fn csrf_token(session_token: &str) -> String {
    webhook_verify::sign(session_token, CSRF_LABEL)
        .trim_start_matches("sha256=")
        .to_owned()
}

/// The sign-in form's CSRF token for the value of its cookie: an HMAC of
/// that value under a key only the server (every process sharing its data
/// key) can make.
fn login_csrf_token(state: &AppState, cookie_value: &str) -> String {
    let key = webhook_verify::sign(state.data_key.to_hex(), LOGIN_CSRF_LABEL);
    webhook_verify::sign(key.trim_start_matches("sha256="), cookie_value.as_bytes())
        .trim_start_matches("sha256=")
        .to_owned()
}

/// Constant-time string equality.
fn same(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

fn well_formed(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= MAX_TOKEN_LEN
        && token.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The value of cookie `name` in the request, if sent.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.trim_matches('"'))
}

/// Whether the browser reached us over HTTPS: the flag says so, or the
/// TLS-terminating proxy does (`X-Forwarded-Proto`). At worst a wrong
/// header only makes a cookie stricter.
pub(crate) fn over_https(headers: &HeaderMap, state: &AppState) -> bool {
    state.dashboard_secure_cookies
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    max_age: Option<i64>,
    secure: bool,
) -> HeaderValue {
    let mut cookie = format!("{name}={value}; Path={path}; HttpOnly; SameSite=Strict");
    if let Some(secs) = max_age {
        cookie.push_str(&format!("; Max-Age={secs}"));
    }
    if secure {
        cookie.push_str("; Secure");
    }
    HeaderValue::from_str(&cookie).expect("cookie values are alphanumeric")
}

/// The `Set-Cookie` that stores a new session token, expiring with it.
pub(crate) fn session_cookie(token: &keys::Secret, secure: bool) -> HeaderValue {
    set_cookie(
        SESSION_COOKIE,
        token.expose(),
        "/",
        Some(SESSION_TTL.num_seconds()),
        secure,
    )
}

/// The `Set-Cookie` that removes the session cookie.
pub(crate) fn clear_session_cookie(secure: bool) -> HeaderValue {
    set_cookie(SESSION_COOKIE, "", "/", Some(0), secure)
}

/// The sign-in form's CSRF token: the one for the cookie the browser
/// already has, or for a new cookie, with the `Set-Cookie` that gives it.
pub(crate) fn login_token(headers: &HeaderMap, state: &AppState) -> (String, Option<HeaderValue>) {
    if let Some(value) = cookie(headers, LOGIN_COOKIE).filter(|t| well_formed(t)) {
        return (login_csrf_token(state, value), None);
    }
    let value = keys::random_token("");
    let secure = over_https(headers, state);
    let header = set_cookie(LOGIN_COOKIE, value.expose(), "/login", None, secure);
    (login_csrf_token(state, value.expose()), Some(header))
}

/// Where an unauthenticated page request goes: the sign-in page, which
/// returns to `next` (a [`safe_next`] path) after it.
pub(crate) fn to_sign_in(next: Option<&str>) -> Response {
    match next {
        Some(next) => {
            let next: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
            see_other(&format!("/login?{NEXT_FIELD}={next}"))
        }
        None => see_other("/login"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; shipments_session=abc; b=2"),
        );
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("abc"));
        assert_eq!(cookie(&headers, "shipments"), None);
    }

    #[test]
    fn csrf_tokens_depend_on_the_session_and_do_not_reveal_it() {
        let a = csrf_token("tokenA");
        assert_eq!(a, csrf_token("tokenA"));
        assert_ne!(a, csrf_token("tokenB"));
        assert_eq!(a.len(), 64);
        assert!(!a.contains("tokenA"));
    }

    #[test]
    fn an_origin_is_the_dashboards_by_scheme_and_host() {
        assert!(is_origin_of(
            "http://127.0.0.1:8080",
            "http",
            "127.0.0.1:8080"
        ));
        assert!(is_origin_of(
            "HTTPS://Shop.Example",
            "https",
            "shop.example"
        ));
        assert!(is_origin_of(
            "https://shop.example",
            "https",
            "shop.example:443"
        ));
        assert!(is_origin_of(
            "http://shop.example:80",
            "http",
            "shop.example"
        ));
        for (origin, scheme, host) in [
            ("http://127.0.0.1:8081", "http", "127.0.0.1:8080"),
            ("http://evil.shop.example", "http", "shop.example"),
            ("https://shop.example", "http", "shop.example"),
            ("http://shop.example", "https", "shop.example"),
            ("https://shop.example:80", "https", "shop.example"),
            ("http://shop.example/", "http", "shop.example"),
            ("shop.example", "http", "shop.example"),
            ("http://", "http", ""),
        ] {
            assert!(
                !is_origin_of(origin, scheme, host),
                "{origin} for {scheme}://{host}"
            );
        }
    }

    #[test]
    fn return_paths_are_paths_of_this_dashboard_only() {
        for kept in [
            "/",
            "/keys",
            "/shipments?status=failed&page=2",
            "/webhooks/3#log",
        ] {
            assert_eq!(safe_next(kept), Some(kept));
        }
        for dropped in [
            "",
            "keys",
            "//evil.example",
            "/\\evil.example",
            "/x\\y",
            "https://evil.example/",
            "javascript:alert(1)",
            "/a b",
            "/a\r\nb",
            "/caf\u{e9}",
            "/login",
            "/login?next=/keys",
        ] {
            assert_eq!(safe_next(dropped), None, "{dropped:?}");
        }
        let longest = format!("/{}", "a".repeat(MAX_NEXT_LEN - 1));
        assert_eq!(safe_next(&longest), Some(longest.as_str()));
        assert_eq!(safe_next(&format!("{longest}a")), None);
    }

    #[test]
    fn the_sign_in_page_returns_to_the_page_asked_for() {
        let to = to_sign_in(Some("/shipments?status=failed"));
        assert_eq!(
            to.headers()[header::LOCATION],
            "/login?next=%2Fshipments%3Fstatus%3Dfailed"
        );
        assert_eq!(to_sign_in(None).headers()[header::LOCATION], "/login");
    }

    #[test]
    fn the_session_cookie_is_http_only_strict_and_expires_with_the_session() {
        let token = keys::random_token("");
        let plain = session_cookie(&token, false);
        let plain = plain.to_str().unwrap();
        assert!(plain.contains("HttpOnly"));
        assert!(plain.contains("SameSite=Strict"));
        assert!(plain.contains("Path=/;"));
        assert!(plain.contains("Max-Age=43200"));
        assert!(!plain.contains("Secure"));
        let secure = session_cookie(&token, true);
        assert!(secure.to_str().unwrap().ends_with("; Secure"));
    }
}
