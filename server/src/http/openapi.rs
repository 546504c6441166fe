//! The OpenAPI 3.1 document of the API, generated from the handlers'
//! `#[utoipa::path]` attributes and the wire model's `ToSchema` derives, so
//! it changes when they do. Served at `GET /api/v1/openapi.json`; the
//! committed `openapi.json` at the repository root is checked against it
//! by a test, and rewritten by `shipment-server openapi > openapi.json`.
//!
//! This file names the handlers; what the handlers' attributes name (the
//! shared parameters and responses) is in `http/params.rs`, so the
//! handlers need not import this file back.

use axum::Json;
use axum::response::IntoResponse;

use super::permissions;
use shipment_sdk::model::Problem;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::schema::{OneOf, Schema, SchemaType, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{RefOr, Required};
use utoipa::{Modify, OpenApi, PartialSchema};

/// The error codes of the problem body, documented with it.
const PROBLEM_CODES: &str = "RFC 9457 problem details. `code` is one of: \
    invalid_json, missing_field, unknown_field, invalid_field, invalid_identifier, \
    invalid_confirmation_code (400); unauthenticated, api_key_expired (401); forbidden, \
    insufficient_permission (403, with `required_permission`: a restricted key lacks what \
    the operation needs); not_found (404); method_not_allowed (405); invalid_state, already_rated, \
    webhook_url_taken, idempotency_conflict (409); payload_too_large (413); \
    rate_limited (429, with Retry-After); internal (500); unavailable (503, with \
    Retry-After). Clients must accept codes not listed here.";

/// Adds the two security schemes and the problem schema's description.
struct Additions;

impl Modify for Additions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-KEY",
                "A merchant key: full (sk_test_/sk_live_ + 32 base62) or restricted \
                 (rk_test_/rk_live_ + 32 base62, only what its permissions allow); or, under \
                 /courier, a courier key (ck_test_/ck_live_)",
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

/// Writes an optional request body (`request_body = Option<T>`) as plain `T`
/// with `required: false`. utoipa gives it `oneOf: [T, null]`, a body that is
/// always there and may be JSON `null`, with which generated clients
/// (openapi-python-client) crash when called without a body.
struct OptionalBodies;

impl Modify for OptionalBodies {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for operation in operations(item) {
                let Some(RefOr::T(body)) = &mut operation.request_body else {
                    continue;
                };
                let mut optional = false;
                for content in body.content.values_mut() {
                    if let RefOr::T(content) = content
                        && let Some(RefOr::T(Schema::OneOf(one_of))) = &content.schema
                        && let Some(schema) = without_null(one_of)
                    {
                        content.schema = Some(schema);
                        optional = true;
                    }
                }
                if optional {
                    body.required = Some(Required::False);
                }
            }
        }
    }
}

/// Documents, on every operation of [`permissions::OPERATIONS`], what a
/// restricted key needs to call it (in its description), the refusals of
/// restricted and expired keys (examples beside the other 401s and 403s)
/// and the headers the answers to a merchant key carry: written from the
/// table the key check uses, so the document cannot say otherwise. The
/// headers and examples are components, named once and referred to.
struct KeyOperations;

/// The components' names of the key headers and of the refusals' examples.
const KEY_HEADERS: [&str; 3] = [
    "X-Accepted-Permissions",
    "X-Key-Expires-At",
    "X-Key-Expiry-Warning",
];

impl Modify for KeyOperations {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let described = [
            (
                "What the operation needs of a restricted key, as `resource: level` \
                 (`shipments: write`); the operation's description names it. Absent on \
                 `GET /api-keys/current`, which needs nothing.",
                "shipments: write",
            ),
            (
                "When the calling key expires (RFC 3339, UTC), if it has an expiry.",
                "2026-12-01T00:00:00Z",
            ),
            (
                "Only in the last 7 days before the key expires: when, and how long is left \
                 (in days, hours under a day, minutes under an hour).",
                "this API key expires at 2026-12-01T00:00:00Z, in 3 days",
            ),
        ];
        for (name, (description, example)) in KEY_HEADERS.into_iter().zip(described) {
            components
                .headers
                .insert(name.to_owned(), RefOr::T(text_header(description, example)));
        }
        for (code, status, detail, required) in [
            ("unauthenticated", 401, "invalid or revoked API key", None),
            (
                "api_key_expired",
                401,
                "this API key expired at 2026-12-01T00:00:00Z",
                None,
            ),
            (
                "forbidden",
                403,
                "courier keys cannot call merchant routes",
                None,
            ),
            (
                "insufficient_permission",
                403,
                "this API key has shipments: read; this operation needs shipments: write",
                Some("shipments: write"),
            ),
        ] {
            components.examples.insert(
                code.to_owned(),
                RefOr::T(problem_example(status, code, detail, required)),
            );
        }
        for op in permissions::OPERATIONS {
            let Some(item) = openapi.paths.paths.get_mut(op.path) else {
                continue;
            };
            let Some(operation) = operation_of(item, op.method) else {
                continue;
            };
            let needs = match op.need {
                Some(need) => format!(
                    "A restricted key needs `{need}` (answers say so in \
                     `X-Accepted-Permissions`); without it: 403 `insufficient_permission`."
                ),
                None => "Any working key may call it, whatever its permissions.".to_owned(),
            };
            let description = operation.description.take().unwrap_or_default();
            operation.description = Some(if description.is_empty() {
                needs
            } else {
                format!("{description}\n\n{needs}")
            });
            for (status, response) in operation.responses.responses.iter_mut() {
                let RefOr::T(response) = response else {
                    continue;
                };
                let examples: &[&str] = match status.as_str() {
                    "401" => &["unauthenticated", "api_key_expired"],
                    "403" if op.need.is_some() => &["forbidden", "insufficient_permission"],
                    "403" => &[],
                    answered if answered.starts_with('2') => &[],
                    _ => continue,
                };
                for name in KEY_HEADERS {
                    let refused_before_known = status == "401" && name != "X-Key-Expires-At";
                    if (name == "X-Accepted-Permissions" && op.need.is_none())
                        || refused_before_known
                    {
                        continue;
                    }
                    response.headers.insert(
                        name.to_owned(),
                        RefOr::Ref(utoipa::openapi::Ref::new(format!(
                            "#/components/headers/{name}"
                        ))),
                    );
                }
                for content in response.content.values_mut() {
                    if let RefOr::T(content) = content {
                        content.examples.extend(examples.iter().map(|name| {
                            (
                                (*name).to_owned(),
                                RefOr::Ref(utoipa::openapi::Ref::new(format!(
                                    "#/components/examples/{name}"
                                ))),
                            )
                        }));
                    }
                }
            }
        }
    }
}

/// The operation of `method` (`GET`, ...) of a path.
fn operation_of<'i>(item: &'i mut PathItem, method: &str) -> Option<&'i mut Operation> {
    match method {
        "GET" => item.get.as_mut(),
        "POST" => item.post.as_mut(),
        "PUT" => item.put.as_mut(),
        "PATCH" => item.patch.as_mut(),
        "DELETE" => item.delete.as_mut(),
        _ => None,
    }
}

/// A text response header.
fn text_header(description: &str, example: &str) -> utoipa::openapi::header::Header {
    utoipa::openapi::header::HeaderBuilder::new()
        .schema(Some(String::schema()))
        .description(Some(description))
        .example(Some(serde_json::Value::from(example)))
        .build()
}

/// An example of a problem body.
fn problem_example(
    status: u16,
    code: &str,
    detail: &str,
    required_permission: Option<&str>,
) -> utoipa::openapi::example::Example {
    let mut problem = Problem::new(
        status,
        axum::http::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Error"),
        code.parse()
            .unwrap_or(shipment_sdk::model::ProblemCode::Internal),
        detail,
    );
    problem.required_permission = required_permission.map(str::to_owned);
    problem.request_id = Some("4b8f0a51-3c1e-4a5e-9f00-2d1f6a7c9b21".to_owned());
    utoipa::openapi::example::ExampleBuilder::new()
        .summary(code)
        .value(serde_json::to_value(&problem).ok())
        .build()
}

/// Every operation of a path.
fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.options,
        &mut item.head,
        &mut item.patch,
        &mut item.trace,
        &mut item.query,
    ]
    .into_iter()
    .flatten()
    .chain(item.additional_operations.values_mut())
}

/// `T` of a `oneOf: [T, null]` (in either order).
fn without_null(one_of: &OneOf) -> Option<RefOr<Schema>> {
    let is_null = |schema: &RefOr<Schema>| {
        matches!(schema, RefOr::T(Schema::Object(object))
            if object.schema_type == SchemaType::Type(Type::Null))
    };
    match one_of.items.as_slice() {
        [schema, null] | [null, schema] if is_null(null) && !is_null(schema) => {
            Some(schema.clone())
        }
        _ => None,
    }
}

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Merchant shipment service",
        description = "Create and follow shipments (X-API-KEY), manage API keys and webhooks \
                       (Bearer, from POST /auth/login), and, on the reference server, act as \
                       the courier company. Webhook deliveries are signed two ways with the \
                       one `whsec_` key: `X-Service-Signature: sha256=<hex HMAC-SHA256 of the \
                       raw body>` (keyed with the whole key string), with \
                       `X-Service-Delivery-Id`; and Standard Webhooks \
                       (standardwebhooks.com, v1): `webhook-id` (`msg_<change>_w<webhook>`, \
                       or `msg_<change>_s` for a shipment's own `webhook_url`: the same for \
                       every attempt of one change to one target, redeliveries and duplicates \
                       included), `webhook-timestamp` (Unix seconds when the attempt was \
                       signed) and `webhook-signature: v1,<base64 HMAC-SHA256 of \
                       \"id.timestamp.body\">` (keyed with the base64-decoded part after \
                       `whsec_`), which the official libraries verify and which lets a \
                       receiver refuse a delivery replayed more than 5 minutes later."
    ),
    servers((url = "/api/v1")),
    paths(
        super::shipments::create_shipment,
        super::shipments::list_shipments,
        super::shipments::get_shipment,
        super::shipments::cancel_shipment,
        super::shipments::rate_shipment,
        super::shipments::generate_confirmation_code,
        super::merchant_couriers::list_couriers,
        super::courier_side::list_courier_shipments,
        super::courier_side::list_drivers,
        super::courier_side::create_driver,
        super::courier_side::assign_driver,
        super::courier_side::unassign_driver,
        super::courier_side::pickup_shipment,
        super::courier_side::return_shipment,
        super::courier_side::fail_shipment,
        super::courier_side::deliver_shipment,
        super::auth::login,
        super::auth::logout,
        super::api_keys::list_keys,
        super::api_keys::create_key,
        super::api_keys::delete_key,
        super::api_keys::verify_key,
        super::api_keys::get_current_key,
        super::webhooks::list_webhooks,
        super::webhooks::register_webhook,
        super::webhooks::set_active,
        super::webhooks::delete_webhook,
        super::webhooks::deliveries,
        super::webhooks::redeliver_delivery,
        super::webhooks::redeliver_failures,
        super::webhooks::shipment_deliveries,
        super::webhooks::rotate_shipment_signing_key,
        super::listen::listen,
        super::listen::get_listener_signing_key,
        super::listen::rotate_listener_signing_key,
        super::testing::arm_fault,
        super::testing::disarm_faults,
        super::testing::advance_shipment,
        super::testing::duplicate_deliveries,
        super::testing::create_merchant,
        super::testing::delete_merchant,
        super::testing::expire_api_key,
    ),
    modifiers(&Additions, &OptionalBodies, &KeyOperations),
    tags(
        (name = "shipments", description = "The merchant's shipments (X-API-KEY)"),
        (name = "couriers", description = "The courier companies linked to the merchant \
                                           (X-API-KEY)"),
        (name = "keys", description = "The calling API key itself (X-API-KEY)"),
        (name = "courier", description = "The courier side (reference server only; courier keys)"),
        (name = "dashboard", description = "Sign-in, API keys and webhooks (Bearer)"),
        (name = "listen", description = "Listening to the merchant's changes as signed \
                                         deliveries, for `shipctl listen --forward-to` \
                                         (X-API-KEY or Bearer)"),
        (name = "testing", description = "Test controls for a merchant's CI (X-API-KEY): faults \
                                          on its next requests, advancing a shipment, duplicate \
                                          webhook deliveries. These routes exist only on a server \
                                          started with `--test-controls` (never in production); \
                                          elsewhere they answer 404."),
    )
)]
pub(crate) struct ApiDoc;

/// The document as JSON, pretty-printed the way `openapi.json` is committed.
pub fn document_json() -> String {
    let mut json = ApiDoc::openapi()
        .to_pretty_json()
        .expect("the document serializes");
    json.push('\n');
    json
}

/// `GET /api/v1/openapi.json`.
pub(crate) async fn serve() -> impl IntoResponse {
    Json(ApiDoc::openapi())
}
