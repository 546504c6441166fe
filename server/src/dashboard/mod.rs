//! The merchant dashboard: server-rendered pages (maud templates) at the
//! server's root, beside the API under `/api/v1`.
//!
//! The pages are a second face of the dashboard endpoints: they call the
//! same use-cases ([`crate::app`]) as the JSON API, and add what a browser
//! needs: a session cookie, a CSRF token on every form that changes anything, and
//! strict security headers. They work without JavaScript; one small
//! script only adds copy buttons.

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

pub(crate) use self::page::status_of;
use self::page::{Page, PageError};
use crate::app::AppState;

mod api_keys;
mod auth;
mod deliveries;
mod health;
mod layout;
mod overview;
mod page;
mod redelivery;
mod session;
mod shipments;
mod webhooks;

/// The stylesheet, embedded in the binary.
const STYLE_CSS: &str = include_str!("static/style.css");
/// The only script: copy buttons (the pages work without it).
const COPY_JS: &str = include_str!("static/copy.js");
/// The icon browsers ask for (`/favicon.ico`): 16 and 32 pixels, as PNG
/// inside an ICO.
const FAVICON_ICO: &[u8] = include_bytes!("static/favicon.ico");

/// `Content-Security-Policy` of every dashboard response: nothing inline,
/// nothing from elsewhere, no framing, forms post only here.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self'; frame-ancestors 'none'; form-action 'self'; \
     base-uri 'none'; object-src 'none'";

/// The dashboard's pages and static assets, to be merged at the root.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(overview::overview))
        .route("/login", get(auth::login_page).post(auth::sign_in))
        .route("/logout", get(auth::logout_page).post(auth::sign_out))
        .route("/keys", get(api_keys::list_keys).post(api_keys::create_key))
        .route("/keys/verify", post(api_keys::verify_key))
        .route(
            "/keys/{id}/delete",
            get(api_keys::confirm_delete_key).post(api_keys::delete_key),
        )
        .route(
            "/webhooks",
            get(webhooks::list_webhooks).post(webhooks::register_webhook),
        )
        .route(
            "/webhooks/signing-key",
            get(webhooks::confirm_rotate_signing_key).post(webhooks::rotate_signing_key),
        )
        .route("/webhooks/{id}", get(webhooks::show_webhook))
        .route("/webhooks/{id}/enable", post(webhooks::enable_webhook))
        .route("/webhooks/{id}/disable", post(webhooks::disable_webhook))
        .route(
            "/webhooks/{id}/redeliver",
            post(redelivery::redeliver_failures),
        )
        .route(
            "/webhooks/{id}/deliveries/{delivery_id}/redeliver",
            post(redelivery::redeliver_delivery),
        )
        .route(
            "/webhooks/{id}/delete",
            get(webhooks::confirm_delete_webhook).post(webhooks::delete_webhook),
        )
        .route("/shipments", get(shipments::list_shipments))
        .route("/shipments/{code}", get(shipments::show_shipment))
        .route("/static/style.css", get(style_css))
        .route("/static/copy.js", get(copy_js))
        .route("/favicon.ico", get(favicon))
        // Before the headers' layer, so these pages get them too; a form's
        // URL opened in the browser, or a mistyped one, is a page of the
        // dashboard, not an answer of the API.
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .layer(middleware::from_fn(security_headers))
}

/// What no dashboard route takes (outside `/api/v1`, whose own 404 stays
/// a problem): a page that says so, with a way back.
async fn not_found() -> Page {
    Page(
        StatusCode::NOT_FOUND,
        layout::error_page(
            "Not found",
            "There is no page at this address. Check it for a typo, or start again from the dashboard.",
        ),
    )
}

/// A route of the dashboard with another method: most often a form's
/// address opened in the browser (a reload after posting it, a shared
/// link). axum adds the `Allow` header.
async fn method_not_allowed() -> Page {
    Page(
        StatusCode::METHOD_NOT_ALLOWED,
        layout::error_page(
            "Method Not Allowed",
            "This address is where a form of the dashboard is sent, not a page to open. \
             Go back to the page the form is on and send it from there.",
        ),
    )
}

/// Adds the security headers to every dashboard response; pages are not
/// cached (they may show a secret once), static assets may be.
async fn security_headers(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Not `no-referrer`: under it browsers send `Origin: null` with the
    // dashboard's own forms, and the origin check could not tell them
    // from a sandboxed page elsewhere. Other sites still get no referrer.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn style_css() -> Response {
    asset("text/css; charset=utf-8", STYLE_CSS)
}

async fn copy_js() -> Response {
    asset("text/javascript; charset=utf-8", COPY_JS)
}

async fn favicon() -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/x-icon"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        FAVICON_ICO,
    )
        .into_response()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// Drawn here rather than in `page`, because drawing takes the layout,
/// whose forms take the session, whose extractors reject with a
/// `PageError`: kept here, `page` stays at the bottom.
impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        match self {
            PageError::SignIn(next) => session::to_sign_in(next.as_deref()),
            PageError::CrossOrigin => Page(
                StatusCode::FORBIDDEN,
                layout::error_page(
                    "This form cannot be accepted",
                    "It was sent from another site, not from this dashboard. \
                     Open the dashboard's own page and send the form from there.",
                ),
            )
            .into_response(),
            PageError::Csrf => Page(
                StatusCode::FORBIDDEN,
                layout::error_page(
                    "This form cannot be accepted",
                    "It was not sent from this dashboard, or it has expired. \
                     Go back, reload the page and try again.",
                ),
            )
            .into_response(),
            PageError::NotFound(what) => {
                Page(StatusCode::NOT_FOUND, layout::error_page("Not found", what)).into_response()
            }
            PageError::BadForm => Page(
                StatusCode::BAD_REQUEST,
                layout::error_page("Bad Request", "The form could not be read."),
            )
            .into_response(),
            PageError::TooLarge => Page(
                StatusCode::PAYLOAD_TOO_LARGE,
                layout::error_page(
                    "Payload Too Large",
                    &format!(
                        "Forms are limited to {} bytes.",
                        crate::config::MAX_BODY_BYTES
                    ),
                ),
            )
            .into_response(),
            PageError::App(e) => {
                let status = status_of(&e);
                let title = status.canonical_reason().unwrap_or("Something went wrong");
                let detail = if e.is_callers() {
                    layout::sentence(&e.to_string())
                } else {
                    tracing::error!(error = %e, "a dashboard page failed");
                    if e.is_temporary() {
                        "The database is busy or unreachable; try again shortly.".to_owned()
                    } else {
                        "The server failed to show this page; it has been logged.".to_owned()
                    }
                };
                let mut response = Page(status, layout::error_page(title, &detail)).into_response();
                if status == StatusCode::SERVICE_UNAVAILABLE {
                    // As the JSON API's 503: worth trying again in a second.
                    response
                        .headers_mut()
                        .insert(header::RETRY_AFTER, HeaderValue::from(1u64));
                }
                response
            }
        }
    }
}
