//! Dashboard sign-in (`/auth/login`, `/auth/logout`) and the [`Session`]
//! extractor that guards every Bearer route.

use std::sync::OnceLock;

use argon2::{Argon2, PasswordHash, PasswordVerifier};
use axum::extract::{FromRef, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::routing::post;
use axum::{Json, Router};
use chrono::{DateTime, Duration, Utc};
use shipment_sdk::model::{Login, Secret, Session as SessionModel};

use super::extract::{API_KEY_HEADER, ApiJson};
use super::openapi::Problems;
use super::{ApiError, AppState};
use crate::domain::{email, keys};
use crate::store::now;

/// How long a session token works.
pub const SESSION_TTL: Duration = Duration::hours(12);
/// Sign-in attempts for one e-mail that may fail within [`LOGIN_WINDOW`];
/// the next one is 429 until the window ends.
pub const MAX_LOGIN_FAILURES: i64 = 5;
/// The window over which sign-in attempts are counted, from the first.
pub const LOGIN_WINDOW: Duration = Duration::minutes(15);
/// Longest e-mail or password looked at (argon2 of a huge password is a DoS).
pub const MAX_CREDENTIAL_LEN: usize = 256;

pub(super) fn router() -> axum::Router<AppState> {
    Router::new()
        .route("/auth/login", post(login))
        .route("/auth/logout", post(logout))
}

#[utoipa::path(
    post,
    path = "/auth/login",
    tag = "dashboard",
    summary = "Sign in: a Bearer token for 12 h",
    security(),
    request_body = Login,
    responses(
        (status = 200, description = "Signed in", body = SessionModel),
        Problems
    )
)]
async fn login(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<Login>,
) -> Result<(StatusCode, Json<SessionModel>), ApiError> {
    let (token, expires_at) = sign_in(&state, &request.email, request.password.expose()).await?;
    Ok((
        StatusCode::OK,
        Json(SessionModel {
            token: Secret::new(token.expose()),
            token_type: "Bearer".to_owned(),
            expires_at,
        }),
    ))
}

/// Checks an e-mail and password and opens a session: the one sign-in of
/// the JSON API and the dashboard pages, with the same limits, the same
/// throttle (429 after [`MAX_LOGIN_FAILURES`] failures in [`LOGIN_WINDOW`])
/// and the same errors. Returns the session token (shown once; only its
/// digest is stored) and when it expires.
pub(crate) async fn sign_in(
    state: &AppState,
    email: &str,
    password: &str,
) -> Result<(keys::Secret, DateTime<Utc>), ApiError> {
    let email = email::normalize(email);
    // NUL: PostgreSQL text cannot hold it (attempts are counted by e-mail).
    if email.is_empty() || email.chars().count() > MAX_CREDENTIAL_LEN || email.contains('\0') {
        return Err(ApiError::invalid_field(
            "email",
            format!("`email` must be 1 to {MAX_CREDENTIAL_LEN} characters, without NUL"),
        ));
    }
    if password.chars().count() > MAX_CREDENTIAL_LEN {
        return Err(ApiError::invalid_field(
            "password",
            format!("`password` must be at most {MAX_CREDENTIAL_LEN} characters"),
        ));
    }
    let at = now();
    // The attempt is counted before the password is looked at, in one
    // atomic step: of any burst, only the first MAX_LOGIN_FAILURES reach
    // argon2, and the rest wait for the window to end.
    let (attempts, window_start) = state
        .store
        .reserve_login_attempt(&email, at, LOGIN_WINDOW)
        .await?;
    if attempts > MAX_LOGIN_FAILURES {
        let until = window_start + LOGIN_WINDOW;
        let secs = u64::try_from((until - at).num_seconds() + 1).unwrap_or(1);
        return Err(ApiError::rate_limited(
            format!(
                "too many failed sign-ins for this e-mail; try again in {} minutes",
                secs.div_ceil(60)
            ),
            secs,
        ));
    }
    let account = state.store.login(&email).await?;
    // An unknown e-mail costs the same argon2 run as a known one, so timing
    // does not tell which addresses have accounts.
    let hash = account
        .as_ref()
        .map_or_else(|| dummy_hash().to_owned(), |a| a.password_hash.clone());
    let matches = check_password(state, hash, password.to_owned()).await?;
    match account {
        Some(account) if matches => {
            state
                .store
                .clear_login_attempts(&email, at - LOGIN_WINDOW)
                .await?;
            Ok(state
                .store
                .create_session(account.merchant_id, SESSION_TTL)
                .await?)
        }
        // The reserved attempt stays counted as a failure.
        _ => Err(ApiError::unauthenticated("wrong e-mail or password")),
    }
}

/// Runs argon2 off the async threads, at most one per core at a time.
async fn check_password(
    state: &AppState,
    hash: String,
    password: String,
) -> Result<bool, ApiError> {
    let _permit = state
        .password_checks
        .acquire()
        .await
        .map_err(|e| ApiError::internal(&e))?;
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&hash)
            .map(|parsed| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await
    .map_err(|e| ApiError::internal(&e))
}

/// A valid argon2id hash of a random password, for unknown e-mails.
fn dummy_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        use argon2::PasswordHasher;
        let password = keys::random_token("");
        PasswordHasher::<PasswordHash>::hash_password(
            &Argon2::default(),
            password.expose().as_bytes(),
        )
        .map(|h| h.to_string())
        .unwrap_or_default()
    })
}

#[utoipa::path(
    post,
    path = "/auth/logout",
    tag = "dashboard",
    summary = "Sign out: the token stops working",
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Signed out"),
        Problems
    )
)]
async fn logout(State(state): State<AppState>, session: Session) -> Result<StatusCode, ApiError> {
    state.store.delete_session(session.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A signed-in dashboard session (`Authorization: Bearer <token>`).
#[derive(Debug, Clone, Copy)]
pub struct Session {
    /// The session's id.
    pub id: i64,
    /// The merchant it belongs to.
    pub merchant_id: i64,
}

impl<S: Send + Sync> FromRequestParts<S> for Session
where
    AppState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = AppState::from_ref(state);
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            let detail = if parts.headers.contains_key(API_KEY_HEADER) {
                "this dashboard route takes a session token (Authorization: Bearer ...) from POST /auth/login, not an API key"
            } else {
                "missing Authorization: Bearer header; sign in with POST /auth/login"
            };
            return Err(ApiError::unauthenticated(detail));
        };
        let token = value.to_str().ok().and_then(bearer_token).ok_or_else(|| {
            ApiError::unauthenticated("the Authorization header must be `Bearer <token>`")
        })?;
        if keys::shape(token).is_some() {
            return Err(ApiError::unauthenticated(
                "this dashboard route takes a session token, not an API key",
            ));
        }
        session_for_token(&state, token).await?.ok_or_else(|| {
            ApiError::unauthenticated("the session has expired or was signed out; sign in again")
        })
    }
}

/// The token of an `Authorization: Bearer <token>` value. The scheme is
/// case-insensitive (RFC 9110 §11.1), so `bearer` and `BEARER` work too.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The live session a token opens, if any: the one lookup behind the
/// Bearer header and the dashboard's session cookie.
pub(crate) async fn session_for_token(
    state: &AppState,
    token: &str,
) -> Result<Option<Session>, ApiError> {
    Ok(state
        .store
        .session(&keys::digest(token))
        .await?
        .map(|session| Session {
            id: session.id,
            merchant_id: session.merchant_id,
        }))
}

#[cfg(test)]
mod tests {
    use super::bearer_token;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for value in ["Bearer abc", "bearer abc", "BEARER abc", "  Bearer   abc "] {
            assert_eq!(bearer_token(value), Some("abc"), "{value:?}");
        }
        for value in ["Basic abc", "Bearer", "Bearer ", "Bearerabc", "abc"] {
            assert_eq!(bearer_token(value), None, "{value:?}");
        }
    }
}
