//! Sign-in and sign-out pages.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::layout::{self, Section, Tone};
use super::page::{Page, PageResult, see_other, status_of};
use super::session::{self, CSRF_FIELD, LoginForm, NEXT_FIELD, Signed, SignedForm, safe_next};
use crate::app::AppState;
use crate::app::auth;

/// What the sign-in form shows around its fields.
struct LoginView<'a> {
    csrf: &'a str,
    email: &'a str,
    /// The page to return to after sign-in (a `safe_next` path).
    next: Option<&'a str>,
    error: Option<&'a str>,
    info: Option<&'a str>,
}

fn login_form(v: &LoginView<'_>) -> Markup {
    layout::bare_page(
        "Sign in",
        &html! {
            @if let Some(info) = v.info { (layout::notice(Tone::Success, info)) }
            @if let Some(error) = v.error { (layout::notice(Tone::Error, error)) }
            form.stack method="post" action="/login" {
                input type="hidden" name=(CSRF_FIELD) value=(v.csrf);
                @if let Some(next) = v.next { input type="hidden" name=(NEXT_FIELD) value=(next); }
                label for="email" { "E-mail" }
                input #email type="email" name="email" value=(v.email) autocomplete="username" required autofocus;
                label for="password" { "Password" }
                input #password type="password" name="password" autocomplete="current-password" required;
                button.button.button-primary type="submit" { "Sign in" }
            }
        },
    )
}

/// `GET /login?next=…`: the form (or, when already signed in, the page
/// `next` names, else the overview). `?signed-out` says so above it.
pub(crate) async fn login_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> PageResult<Response> {
    let query = query.unwrap_or_default();
    let mut next = None;
    let mut signed_out = false;
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match name.as_ref() {
            NEXT_FIELD => next = safe_next(&value).map(str::to_owned),
            "signed-out" => signed_out = true,
            _ => {}
        }
    }
    if session::signed_in(&headers, &state).await?.is_some() {
        return Ok(see_other(next.as_deref().unwrap_or("/")));
    }
    let (csrf, set_cookie) = session::login_token(&headers, &state);
    let info = signed_out.then_some("You have signed out.");
    let mut response = Page::ok(login_form(&LoginView {
        csrf: &csrf,
        email: "",
        next: next.as_deref(),
        error: None,
        info,
    }))
    .into_response();
    if let Some(cookie) = set_cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

/// `POST /login`: the shared sign-in; a session cookie on success and the
/// page the form's `next` names (a path of this dashboard, else the
/// overview), the form with the reason on failure (wrong password,
/// throttled).
pub(crate) async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    login: LoginForm,
) -> PageResult<Response> {
    let email = login.form.get("email").unwrap_or("");
    let password = login.form.get("password").unwrap_or("");
    let next = login.form.get(NEXT_FIELD).and_then(safe_next);
    match auth::sign_in(&state, email, password).await {
        Ok((token, _expires_at)) => {
            let mut response = see_other(next.unwrap_or("/"));
            let secure = session::over_https(&headers, &state);
            response
                .headers_mut()
                .append(header::SET_COOKIE, session::session_cookie(&token, secure));
            Ok(response)
        }
        Err(e) if e.is_callers() => {
            let error = layout::sentence(&e.to_string());
            let mut response = Page(
                status_of(&e),
                login_form(&LoginView {
                    csrf: &login.csrf,
                    email: email.trim(),
                    next,
                    error: Some(&error),
                    info: None,
                }),
            )
            .into_response();
            if let crate::app::Error::Throttled {
                retry_after_secs: secs,
            } = e
            {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            Ok(response)
        }
        Err(e) => Err(e.into()),
    }
}

/// `GET /logout`: a button to sign out (signing out changes state, so it
/// is a form post).
pub(crate) async fn logout_page(signed: Signed) -> Page {
    Page::ok(layout::page(
        &signed,
        Section::Overview,
        "Sign out",
        &html! {
            p { "Sign out of the dashboard on this browser?" }
            form method="post" action="/logout" {
                (layout::csrf(&signed))
                button.button.button-primary type="submit" { "Sign out" }
            }
        },
    ))
}

/// `POST /logout`: ends the session (the same one a Bearer sign-out
/// ends) and removes the cookie.
pub(crate) async fn sign_out(
    State(state): State<AppState>,
    headers: HeaderMap,
    SignedForm { signed, .. }: SignedForm,
) -> PageResult<Response> {
    auth::sign_out(&state, signed.session).await?;
    let mut response = see_other("/login?signed-out");
    let secure = session::over_https(&headers, &state);
    response
        .headers_mut()
        .append(header::SET_COOKIE, session::clear_session_cookie(secure));
    Ok(response)
}
