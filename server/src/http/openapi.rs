//! The OpenAPI 3.1 document of the API, generated from the handlers'
//! `#[utoipa::path]` attributes and the wire model's `ToSchema` derives, so
//! it changes when they do. Served at `GET /api/v1/openapi.json`; the
//! committed `openapi.json` at the repository root is checked against it
//! by a test, and rewritten by `shipment-server openapi > openapi.json`.

use std::collections::BTreeMap;

use axum::Json;
use axum::response::IntoResponse;
use shipment_sdk::model::Problem;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, RefOr, ResponseBuilder, response::Response};
use utoipa::{IntoResponses, Modify, OpenApi, PartialSchema};

/// The error codes of the problem body, documented with it.
const PROBLEM_CODES: &str = "RFC 9457 problem details. `code` is one of: \
    invalid_json, missing_field, unknown_field, invalid_field, invalid_identifier, \
    invalid_confirmation_code (400); unauthenticated (401); forbidden (403); \
    not_found (404); method_not_allowed (405); invalid_state, already_rated, \
    webhook_url_taken, idempotency_conflict (409); payload_too_large (413); \
    rate_limited (429, with Retry-After); internal (500); unavailable (503, with \
    Retry-After). Clients must accept codes not listed here.";

/// The problem responses any operation may give.
pub struct Problems;

impl IntoResponses for Problems {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        [
            ("400", "The request is malformed or a field is invalid"),
            (
                "401",
                "No credentials, or credentials that are not valid here",
            ),
            (
                "403",
                "Credentials of another kind, or another account's resource",
            ),
            ("404", "No such resource"),
            ("409", "The resource is not in a state that allows this"),
            ("413", "The body is larger than 1 MiB"),
            (
                "429",
                "Too many failed sign-ins for this e-mail; see Retry-After",
            ),
            (
                "500",
                "The server failed; the cause is logged under the request id",
            ),
            (
                "503",
                "The request took too long or the database is unavailable",
            ),
        ]
        .into_iter()
        .map(|(status, description)| {
            let response = ResponseBuilder::new()
                .description(description)
                .content(
                    "application/problem+json",
                    ContentBuilder::new()
                        .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                            "Problem",
                        ))))
                        .build(),
                )
                .build();
            (status.to_owned(), RefOr::T(response))
        })
        .collect()
    }
}

/// Adds the two security schemes and the problem schema's description.
struct Additions;

impl Modify for Additions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-KEY",
                "A merchant key (sk_test_/sk_live_ + 32 base62) or, under /courier, a courier \
                 key (ck_test_/ck_live_)",
            ))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The token of POST /auth/login (12 h)"))
                    .build(),
            ),
        );
        let mut problem = Problem::schema();
        if let RefOr::T(utoipa::openapi::Schema::Object(object)) = &mut problem {
            object.description = Some(PROBLEM_CODES.to_owned());
        }
        components.schemas.insert("Problem".to_owned(), problem);
    }
}

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Merchant shipment service",
        description = "Create and follow shipments (X-API-KEY), manage API keys and webhooks \
                       (Bearer, from POST /auth/login), and, on the reference server, act as \
                       the courier company. Webhook deliveries are signed with \
                       `X-Service-Signature: sha256=<hex HMAC-SHA256 of the raw body>`."
    ),
    servers((url = "/api/v1")),
    paths(
        super::shipments::create_shipment,
        super::shipments::list_shipments,
        super::shipments::get_shipment,
        super::shipments::cancel_shipment,
        super::shipments::rate_shipment,
        super::shipments::generate_confirmation_code,
        super::couriers::list_couriers,
        super::courier::list_courier_shipments,
        super::courier::list_drivers,
        super::courier::create_driver,
        super::courier::assign_driver,
        super::courier::unassign_driver,
        super::courier::pickup_shipment,
        super::courier::return_shipment,
        super::courier::fail_shipment,
        super::courier::deliver_shipment,
        super::auth::login,
        super::auth::logout,
        super::api_keys::list_keys,
        super::api_keys::create_key,
        super::api_keys::delete_key,
        super::api_keys::verify_key,
        super::webhooks::list_webhooks,
        super::webhooks::register_webhook,
        super::webhooks::set_active,
        super::webhooks::delete_webhook,
        super::webhooks::deliveries,
        super::webhooks::rotate_shipment_signing_key,
    ),
    modifiers(&Additions),
    tags(
        (name = "shipments", description = "The merchant's shipments (X-API-KEY)"),
        (name = "courier", description = "The courier side (reference server only; courier keys)"),
        (name = "dashboard", description = "Sign-in, API keys and webhooks (Bearer)"),
    )
)]
pub struct ApiDoc;

/// The document as JSON, pretty-printed the way `openapi.json` is committed.
pub fn document_json() -> String {
    let mut json = ApiDoc::openapi()
        .to_pretty_json()
        .expect("the document serializes");
    json.push('\n');
    json
}

/// `GET /api/v1/openapi.json`.
pub async fn serve() -> impl IntoResponse {
    Json(ApiDoc::openapi())
}
