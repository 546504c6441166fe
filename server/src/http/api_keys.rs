//! The dashboard's API key management (Bearer): list, create, delete, and
//! verify a pasted key; and a key's view of itself (`X-API-KEY`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use shipment_sdk::model::{
    ApiKey, CreateApiKey, CurrentKey, KeyVerdict, List, NewApiKey, VerifyApiKey,
};

use super::ApiError;
use super::extract::{ApiJson, MaybeJson, Merchant};
use super::params::{IdParam, Problems};
use crate::app::api_keys::{
    create_requested_key, current_key, delete_api_key, find_own_key, list_api_keys,
};
use crate::app::auth::Session;
use crate::app::{AppState, numeric_id};

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api-keys", get(list_keys).post(create_key))
        .route("/api-keys/verify", post(verify_key))
        // A static segment: matched before `/api-keys/{id}`.
        .route("/api-keys/current", get(get_current_key))
        .route("/api-keys/{id}", delete(delete_key))
}

#[utoipa::path(
    get,
    path = "/api-keys",
    tag = "dashboard",
    summary = "List API keys (no secrets)",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Keys", body = List<ApiKey>),
        Problems
    )
)]
async fn list_keys(
    State(state): State<AppState>,
    session: Session,
) -> Result<Json<List<ApiKey>>, ApiError> {
    let data = list_api_keys(&state, session.merchant_id).await?;
    Ok(Json(List::new(data)))
}

#[utoipa::path(
    post,
    path = "/api-keys",
    tag = "dashboard",
    summary = "Create an API key (the only time it is shown)",
    security(("bearer" = [])),
    description = "Without `permissions`, a full key (`sk_test_`/`sk_live_`): everything the \
                   merchant may do, as before. With them, a restricted key (`rk_test_`/`rk_live_`) \
                   that may do only what they grant, per resource of the API-key routes (the \
                   OpenAPI tags): `shipments` none/read/write, `couriers` none/read, `listen` \
                   none/read/write, `testing` none/write; resources left out are `none`, and a key \
                   with no permission at all may still call `GET /api-keys/current`. \
                   `expires_at` (either kind): in the future and at most 366 days ahead; from \
                   then on the key is refused with 401 `api_key_expired`. A level a resource does \
                   not have, or a name that is not a resource, is 400 `invalid_field` naming \
                   `permissions.<resource>`.",
    request_body(
        content = Option<CreateApiKey>,
        description = "Optional: without it (or without `name`) the server names the key",
        example = json!({"name": "support", "permissions": {"shipments": "read", "couriers": "read", "listen": "none", "testing": "none"}, "expires_at": "2027-01-01T00:00:00Z"})
    ),
    responses(
        (status = 201, description = "Created", body = NewApiKey),
        Problems
    )
)]
async fn create_key(
    State(state): State<AppState>,
    session: Session,
    MaybeJson(body): MaybeJson<CreateApiKey>,
) -> Result<(StatusCode, Json<NewApiKey>), ApiError> {
    let request = body.unwrap_or_default();
    let (api_key, key) = create_requested_key(&state, session.merchant_id, &request).await?;
    Ok((StatusCode::CREATED, Json(NewApiKey::new(api_key, key))))
}

#[utoipa::path(
    delete,
    path = "/api-keys/{id}",
    tag = "dashboard",
    summary = "Delete an API key: it fails with 401 at once",
    description = "The server that deletes the key refuses it from the next request on, and so \
                   do other server processes sharing a PostgreSQL database (the deletion is \
                   announced to them as it commits); another process on the same SQLite file \
                   (which remembers a verified key for 0.5 s) refuses it within half a second.",
    security(("bearer" = [])),
    params(IdParam),
    responses(
        (status = 204, description = "Deleted"),
        Problems
    )
)]
async fn delete_key(
    State(state): State<AppState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    delete_api_key(&state, session.merchant_id, numeric_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Whether a pasted string is one of this merchant's working keys. Any
/// string is a fair question, so a malformed one is `valid: false`, not 400;
/// an expired key of the merchant is `valid: false` with `expired: true`.
#[utoipa::path(
    post,
    path = "/api-keys/verify",
    tag = "dashboard",
    summary = "Check whether a key string is a live key of this merchant",
    description = "Full (`sk_`) and restricted (`rk_`) keys alike. For a key of the merchant the \
                   answer also says whether it is `restricted`, its `permissions` and \
                   `expires_at` (when it has them), and whether it has `expired`: an expired key \
                   is `valid: false, expired: true`.",
    security(("bearer" = [])),
    request_body = VerifyApiKey,
    responses(
        (status = 200, description = "The verdict", body = KeyVerdict),
        Problems
    )
)]
async fn verify_key(
    State(state): State<AppState>,
    session: Session,
    ApiJson(body): ApiJson<VerifyApiKey>,
) -> Result<Json<KeyVerdict>, ApiError> {
    Ok(Json(
        match find_own_key(&state, session.merchant_id, body.key.expose()).await? {
            Some(k) => KeyVerdict::of_key(&k),
            None => KeyVerdict::invalid(),
        },
    ))
}

/// What the calling key is: any known, unexpired key may ask, whatever its
/// permissions.
#[utoipa::path(
    get,
    path = "/api-keys/current",
    tag = "keys",
    summary = "The calling API key: its merchant, id, name, permissions and expiry",
    description = "Any working merchant key may call it, full or restricted, whatever its \
                   permissions (so it carries no `X-Accepted-Permissions`); it counts as a use. \
                   A full key's `permissions` are every resource at its highest level. An \
                   expired key is 401 `api_key_expired`; a Bearer token is 401, as on every \
                   API-key route.",
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The key", body = CurrentKey,
         example = json!({"id": 12, "name": "support", "merchant_id": 3, "prefix": "rk_test_",
                          "last4": "Ab3Z", "environment": "staging", "restricted": true,
                          "permissions": {"shipments": "read", "couriers": "read",
                                          "listen": "none", "testing": "none"},
                          "expires_at": null, "created_at": "2026-11-21T09:30:12.123456Z"})),
        Problems
    )
)]
async fn get_current_key(
    State(state): State<AppState>,
    merchant: Merchant,
) -> Result<Json<CurrentKey>, ApiError> {
    Ok(Json(current_key(&state, merchant.key).await?))
}
