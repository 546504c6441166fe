//! What a dashboard handler answers: a [`Page`] with its status, or a
//! [`PageError`], and the redirect after a form ([`see_other`]). The
//! bottom of the dashboard: every other file of it may use this one, and
//! this one uses none of them (a `PageError` is drawn in `mod.rs`).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::Markup;

use crate::app;
use crate::domain::Refusal;

/// A rendered page with its status.
pub(crate) struct Page(pub StatusCode, pub Markup);

impl Page {
    /// A `200 OK` page.
    pub(crate) fn ok(markup: Markup) -> Page {
        Page(StatusCode::OK, markup)
    }
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        (
            self.0,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            self.1.into_string(),
        )
            .into_response()
    }
}

/// Why a page cannot be shown.
#[derive(Debug)]
pub(crate) enum PageError {
    /// No live session: go to the sign-in page, and from there back to
    /// the page asked for, if any (a path checked by `session::safe_next`).
    SignIn(Option<String>),
    /// A form without the right CSRF token.
    Csrf,
    /// A form the browser says was posted from another origin.
    CrossOrigin,
    /// No such thing (for this merchant).
    NotFound(&'static str),
    /// A form body that cannot be read.
    BadForm,
    /// A form body over the size limit.
    TooLarge,
    /// Anything a use-case refused, or a server fault.
    App(app::Error),
}

impl From<app::Error> for PageError {
    fn from(e: app::Error) -> PageError {
        PageError::App(e)
    }
}

/// The status a page answers a use-case's refusal with (the JSON API
/// answers the same way, with a problem body).
pub(crate) fn status_of(e: &app::Error) -> StatusCode {
    match e {
        app::Error::Field(_) | app::Error::InvalidIdentifier(_) => StatusCode::BAD_REQUEST,
        app::Error::Refused(Refusal::Forbidden) => StatusCode::FORBIDDEN,
        app::Error::Refused(Refusal::Field(_) | Refusal::ConfirmationCode(_)) => {
            StatusCode::BAD_REQUEST
        }
        app::Error::Refused(_)
        | app::Error::IdempotencyKeyReused
        | app::Error::WebhookUrlTaken
        | app::Error::RedeliveryWaiting(_) => StatusCode::CONFLICT,
        app::Error::NotFound(_) => StatusCode::NOT_FOUND,
        app::Error::WrongCredentials => StatusCode::UNAUTHORIZED,
        app::Error::Throttled { .. }
        | app::Error::TooManyListeners(_)
        | app::Error::RedeliveryBudget { .. } => StatusCode::TOO_MANY_REQUESTS,
        app::Error::Unavailable(_) | app::Error::Contended(_) => StatusCode::SERVICE_UNAVAILABLE,
        app::Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The outcome of a dashboard handler.
pub(crate) type PageResult<T = Page> = Result<T, PageError>;

/// A `303 See Other` to `to` (after a form post, so reloading does not
/// post again).
pub(crate) fn see_other(to: &str) -> Response {
    let location = HeaderValue::from_str(to).unwrap_or(HeaderValue::from_static("/"));
    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
}
