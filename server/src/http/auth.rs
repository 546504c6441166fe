//! Dashboard sign-in (`/auth/login`, `/auth/logout`), and the extractor
//! of [`Session`] that guards every Bearer route.

use axum::extract::{FromRef, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::routing::post;
use axum::{Json, Router};
use shipment_sdk::model::{self, Login};

use super::ApiError;
use super::extract::{API_KEY_HEADER, ApiJson};
use super::params::Problems;
use crate::app::AppState;
use crate::app::auth::{Session, session_for_token, sign_in, sign_out};
use crate::domain::keys;

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
        (status = 200, description = "Signed in", body = model::Session),
        Problems
    )
)]
async fn login(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<Login>,
) -> Result<(StatusCode, Json<model::Session>), ApiError> {
    let (token, expires_at) = sign_in(&state, &request.email, request.password.expose()).await?;
    Ok((
        StatusCode::OK,
        Json(model::Session::bearer(token, expires_at)),
    ))
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
    sign_out(&state, session).await?;
    Ok(StatusCode::NO_CONTENT)
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
