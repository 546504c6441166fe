//! The browser side of a dashboard session: the session cookie, the
//! [`Signed`] and [`SignedForm`] extractors, and CSRF tokens.
//!
//! The cookie holds the same session token as a Bearer sign-in (the
//! database keeps only its digest). The CSRF token of a session is
//! HMAC-SHA256 of a fixed label under that token: only a browser holding
//! the cookie's value can know it, it is the same on every server process
//! sharing the database, and it reveals nothing about the token. The
//! sign-in form, before any session exists, uses a double-submit token in
//! a `SameSite=Strict` cookie of its own.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
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
        signed_in(&parts.headers, state)
            .await?
            .ok_or(PageError::SignIn)
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
        let (mut parts, body) = req.into_parts();
        let signed = Signed::from_request_parts(&mut parts, state).await?;
        let form = Form::from_request(Request::from_parts(parts, body), state).await?;
        checked(form, Some(&signed.csrf)).map(|form| SignedForm { signed, form })
    }
}

/// The sign-in form, posted from this dashboard: its CSRF field matches
/// the sign-in cookie set when the form was shown.
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
        let expected = cookie(req.headers(), LOGIN_COOKIE)
            .filter(|t| well_formed(t))
            .map(str::to_owned);
        let form = Form::from_request(req, state).await?;
        let csrf = expected.clone().unwrap_or_default();
        checked(form, expected.as_deref()).map(|form| LoginForm { form, csrf })
    }
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

/// The sign-in form's CSRF token: the one the browser already has, or a
/// new one with the `Set-Cookie` that gives it.
pub(crate) fn login_token(headers: &HeaderMap, secure: bool) -> (String, Option<HeaderValue>) {
    if let Some(token) = cookie(headers, LOGIN_COOKIE).filter(|t| well_formed(t)) {
        return (token.to_owned(), None);
    }
    let token = keys::random_token("");
    let header = set_cookie(LOGIN_COOKIE, token.expose(), "/login", None, secure);
    (token.expose().to_owned(), Some(header))
}

/// Where an unauthenticated page request goes: the sign-in page.
pub(crate) fn to_sign_in() -> Response {
    see_other("/login").into_response()
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
