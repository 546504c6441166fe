//! The test controls' routes (`--test-controls` only; without the flag they
//! do not exist): faults on the merchant's next requests, advancing a
//! shipment, duplicate webhook deliveries, a merchant per test, a key made
//! to expire now; and the middleware that applies
//! armed faults to the API's requests.

use axum::extract::{MatchedPath, Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, post};
use axum::{Json, Router};
use shipment_sdk::model::{ApiKey, MerchantId, ProblemCode, Shipment};

use super::ApiError;
use super::extract::{self, API_KEY_HEADER, ApiJson, CodePath, Merchant};
use super::params::{CodeParam, IdParam, Problems};
use crate::app::{AppState, numeric_id};
use crate::serve::ConnectionCloser;
use crate::test_controls::{Fault, FaultAction};
use crate::testing::merchants::{self, DeletedMerchant, NewMerchant, TestMerchant};
use crate::testing::{self, AdvanceShipment, ArmFault, DuplicateDeliveries, TestingError};

/// Where the API is mounted; fault paths are relative to it.
const API_BASE: &str = "/api/v1";

/// `api` with the test controls when the server has them: its routes so
/// far get the fault middleware, and the testing routes (which faults never
/// catch) are added after it. Without them, `api` unchanged.
pub(super) fn mount(api: Router<AppState>, state: &AppState) -> Router<AppState> {
    if state.test_controls.is_none() {
        return api;
    }
    api.route_layer(middleware::from_fn_with_state(state.clone(), inject_faults))
        .route("/testing/faults", post(arm_fault).delete(disarm_faults))
        .route("/testing/shipments/{code}/advance", post(advance_shipment))
        .route("/testing/webhooks/duplicates", post(duplicate_deliveries))
        .route("/testing/merchants", post(create_merchant))
        .route("/testing/merchants/{id}", delete(delete_merchant))
        .route("/testing/api-keys/{id}/expire", post(expire_api_key))
}

impl From<TestingError> for ApiError {
    fn from(e: TestingError) -> ApiError {
        match e {
            TestingError::Disabled => ApiError::not_found(e.to_string()),
            e @ (TestingError::Unreachable { .. }
            | TestingError::TooManyFaults
            | TestingError::DeliveriesInFlight(_)) => {
                ApiError::conflict(ProblemCode::InvalidState, e.to_string())
            }
            e @ TestingError::TooManyTestMerchants { .. } => {
                ApiError::rate_limited(e.to_string(), merchants::LIMIT_RETRY_AFTER_SECS)
            }
            e @ TestingError::NotATestMerchant => ApiError::forbidden(e.to_string()),
            TestingError::App(e) => e.into(),
        }
    }
}

/// The path under `/api/v1` (axum's route templates and paths of a nested
/// router may or may not carry the prefix).
fn relative(path: &str) -> &str {
    match path.strip_prefix(API_BASE) {
        Some(rest) if rest.starts_with('/') => rest,
        _ => path,
    }
}

/// Applies the first armed fault of the request's merchant that matches it.
/// Costs nothing while no merchant has a fault armed; then a request with
/// an `X-API-KEY` is authenticated here (and again by its handler), and
/// one that does not authenticate as a merchant is never caught.
async fn inject_faults(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(controls) = state.test_controls.clone() else {
        return next.run(req).await;
    };
    if !controls.any_faults() || !req.headers().contains_key(API_KEY_HEADER) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let merchant = extract::authenticate::<MerchantId>(&parts, &state).await;
    let req = Request::from_parts(parts, body);
    let Ok(merchant_id) = merchant else {
        return next.run(req).await;
    };
    let closer = req.extensions().get::<ConnectionCloser>().cloned();
    let action = controls.take_fault(
        merchant_id,
        req.method().as_str(),
        req.extensions()
            .get::<MatchedPath>()
            .map(|p| relative(p.as_str())),
        relative(req.uri().path()),
        closer.is_some(),
    );
    match action {
        None => next.run(req).await,
        Some(FaultAction::Delay(delay)) => {
            tokio::time::sleep(delay).await;
            next.run(req).await
        }
        Some(FaultAction::Answer {
            status,
            retry_after,
        }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            let code = match status {
                StatusCode::TOO_MANY_REQUESTS => ProblemCode::RateLimited,
                StatusCode::INTERNAL_SERVER_ERROR => ProblemCode::Internal,
                _ => ProblemCode::Unavailable,
            };
            let mut error = ApiError::new(
                status,
                code,
                "a fault armed with POST /api/v1/testing/faults answered this request; it was \
                 not run",
            );
            if let Some(secs) = retry_after {
                error = error.with_retry_after(u64::from(secs));
            }
            error.into_response()
        }
        Some(FaultAction::DropConnection) => {
            if let Some(closer) = closer {
                closer.close();
            }
            // Never answer: the connection's task drops this request with
            // its connection.
            std::future::pending().await
        }
    }
}

#[utoipa::path(
    post,
    path = "/testing/faults",
    tag = "testing",
    summary = "Arm a fault on this merchant's next requests",
    description = "The next `times` API requests of this merchant (authenticated with its \
                   API key) whose method and path match are answered with `status` (a problem \
                   body, with `Retry-After` when `retry_after` is given) instead of running, or \
                   delayed by `delay_ms` and then run, or see their connection closed without \
                   an answer (`drop_connection`). `path` is under /api/v1, as the route \
                   template (`/shipments/{code}`) or a concrete path. Faults are kept in the \
                   memory of the server process that armed them; the testing routes are never \
                   caught.",
    security(("api_key" = [])),
    request_body = ArmFault,
    responses(
        (status = 201, description = "Armed", body = Fault),
        Problems
    )
)]
async fn arm_fault(
    State(state): State<AppState>,
    merchant: Merchant,
    ApiJson(body): ApiJson<ArmFault>,
) -> Result<(StatusCode, Json<Fault>), ApiError> {
    let fault = testing::arm_fault(&state, merchant.id, body).await?;
    Ok((StatusCode::CREATED, Json(fault)))
}

#[utoipa::path(
    delete,
    path = "/testing/faults",
    tag = "testing",
    summary = "Disarm every fault of this merchant",
    security(("api_key" = [])),
    responses(
        (status = 204, description = "Disarmed"),
        Problems
    )
)]
async fn disarm_faults(
    State(state): State<AppState>,
    merchant: Merchant,
) -> Result<StatusCode, ApiError> {
    testing::disarm_faults(&state, merchant.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post,
    path = "/testing/shipments/{code}/advance",
    tag = "testing",
    summary = "Move a shipment through its lifecycle to a state",
    description = "Each step of the shortest path of the lifecycle is a real change (a new \
                   `version` and its webhook deliveries): the courier company's first driver \
                   is assigned (a driver named \"Test driver\" is added if it has none), \
                   delivery skips the confirmation code, and a failure's reason is \"test\". \
                   Already in that state: the shipment unchanged. A state no path leads to \
                   is 409 `invalid_state`.",
    security(("api_key" = [])),
    params(CodeParam),
    request_body = AdvanceShipment,
    responses(
        (status = 200, description = "The shipment in the state asked for", body = Shipment),
        Problems
    )
)]
async fn advance_shipment(
    State(state): State<AppState>,
    merchant: Merchant,
    CodePath(code): CodePath,
    ApiJson(body): ApiJson<AdvanceShipment>,
) -> Result<Json<Shipment>, ApiError> {
    let shipment = testing::advance_shipment(&state, merchant.id, &code, &body.to).await?;
    Ok(Json(shipment))
}

#[utoipa::path(
    post,
    path = "/testing/webhooks/duplicates",
    tag = "testing",
    summary = "Send this merchant's next webhook deliveries twice",
    description = "Each of the merchant's next `times` deliveries (to its webhooks and to \
                   shipments' own `webhook_url`) is sent twice, byte for byte, with the same \
                   `X-Service-Delivery-Id` and the same Standard Webhooks headers \
                   (`webhook-id`, `webhook-timestamp`, `webhook-signature`); the delivery log \
                   keeps the first. Replaces the count still pending (0 stops it). Kept in \
                   the memory of the server process that was asked.",
    security(("api_key" = [])),
    request_body = DuplicateDeliveries,
    responses(
        (status = 200, description = "How many deliveries will be sent twice", body = DuplicateDeliveries),
        Problems
    )
)]
async fn duplicate_deliveries(
    State(state): State<AppState>,
    merchant: Merchant,
    ApiJson(body): ApiJson<DuplicateDeliveries>,
) -> Result<Json<DuplicateDeliveries>, ApiError> {
    let armed = testing::duplicate_deliveries(&state, merchant.id, body).await?;
    Ok(Json(armed))
}

#[utoipa::path(
    post,
    path = "/testing/merchants",
    tag = "testing",
    summary = "Make a fresh merchant for one test",
    description = "Any API key of the server may ask, so a CI file needs only its one fixed \
                   key. The new merchant gets an API key, a sign-in e-mail and password, \
                   courier companies of its own (a copy, priced the same, of each company \
                   linked to the caller, or of each named in `courier_company_ids`, which must \
                   be linked to the caller: any other id is 400 `invalid_field`, with one \
                   message whether the company exists or not), a courier key and a driver of \
                   the first of them, and a webhook per URL of `webhook_urls` with its signing \
                   key. Everything it owns is invisible to every other merchant, and its \
                   courier key sees and moves only its shipments. Limits: `name` at most 100 \
                   characters, at most 20 courier companies and 10 webhook URLs; at most 100 \
                   test merchants made by one merchant's keys and 1000 in all may exist at \
                   once (the server's `--max-test-merchants-per-caller` and \
                   `--max-test-merchants`), one more is 429 `rate_limited` with `Retry-After`. \
                   The whole body is checked before anything is made.",
    security(("api_key" = [])),
    request_body = NewMerchant,
    responses(
        (status = 201, description = "The merchant, with its secrets shown this once", body = TestMerchant),
        Problems
    )
)]
async fn create_merchant(
    State(state): State<AppState>,
    merchant: Merchant,
    ApiJson(body): ApiJson<NewMerchant>,
) -> Result<(StatusCode, Json<TestMerchant>), ApiError> {
    let made = merchants::create_test_merchant(&state, merchant.id, body).await?;
    Ok((StatusCode::CREATED, Json(made)))
}

#[utoipa::path(
    delete,
    path = "/testing/merchants/{id}",
    tag = "testing",
    summary = "Delete this test merchant and everything it owns",
    description = "Asked with the merchant's own key (another merchant's id is 404 \
                   `not_found`), for a merchant `POST /testing/merchants` made: any other \
                   merchant (of the fixtures file, `admin` or the demo) is 403 `forbidden`, \
                   and stays. Removes its shipments, outbox rows and delivery log, webhooks, \
                   signing keys, API keys and sessions (refused at once, in every process on \
                   PostgreSQL; an open listen stream ends), courier links, its own courier \
                   companies with their courier keys (refused at once likewise) and drivers, \
                   idempotency keys, and the faults and duplicate deliveries armed in this \
                   process. A change being delivered right now holds the deletion back up to \
                   10 s, then it is 409 `invalid_state`; changes not yet sent are dropped \
                   unsent.",
    security(("api_key" = [])),
    params(IdParam),
    responses(
        (status = 200, description = "Deleted: what was removed, per kind", body = DeletedMerchant),
        Problems
    )
)]
async fn delete_merchant(
    State(state): State<AppState>,
    merchant: Merchant,
    Path(id): Path<String>,
) -> Result<Json<DeletedMerchant>, ApiError> {
    let id = numeric_id(&id)?;
    let deleted = merchants::delete_test_merchant(&state, merchant.id, id).await?;
    Ok(Json(deleted))
}

#[utoipa::path(
    post,
    path = "/testing/api-keys/{id}/expire",
    tag = "testing",
    summary = "Make one of this merchant's API keys expire now",
    description = "Sets the key's `expires_at` to now: from the next request on, every server \
                   process refuses it with 401 `api_key_expired` (on PostgreSQL the change is \
                   announced to the others as it commits, as a deletion is; another process on \
                   the same SQLite file refuses it within half a second), and the listener \
                   streams it opened end. Another merchant's key, or no such key: 404.",
    security(("api_key" = [])),
    params(IdParam),
    responses(
        (status = 200, description = "The key, as `GET /api-keys` lists it", body = ApiKey),
        Problems
    )
)]
async fn expire_api_key(
    State(state): State<AppState>,
    merchant: Merchant,
    Path(id): Path<String>,
) -> Result<Json<ApiKey>, ApiError> {
    let key = testing::expire_api_key(&state, merchant.id, numeric_id(&id)?).await?;
    Ok(Json(key))
}
