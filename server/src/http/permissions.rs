//! What each operation of the merchant's API-key routes needs of a
//! restricted key, in one table beside the routes, and the headers that
//! tell a key's holder what it may do (`X-Accepted-Permissions`,
//! `X-Key-Expires-At`, `X-Key-Expiry-Warning`).
//!
//! The key check (`extract::authenticate_key`) looks the request's route up
//! here after the key is known and unexpired, and refuses an operation the
//! table does not name (fail closed), so a new route cannot be served to a
//! merchant key without saying what it needs: its first request would be a
//! 500, and `every_key_operation_says_what_it_needs` (below) fails on it
//! first. The authorization matrix (`server/tests/api/authz.rs`) derives
//! its restricted and expired callers' answers from [`OPERATIONS`] through
//! `harness::key_permissions`.

use std::sync::{Arc, OnceLock};

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use chrono::{DateTime, Utc};
use shipment_sdk::model::{Access, Resource};

use crate::domain::keys::{self, Need};

/// Header naming what the operation needs (`shipments: write`), on every
/// answer to a merchant key (as GitHub's `X-Accepted-GitHub-Permissions`).
pub(crate) const ACCEPTED_PERMISSIONS: HeaderName =
    HeaderName::from_static("x-accepted-permissions");
/// Header with the key's expiry (RFC 3339), when it has one.
pub(crate) const KEY_EXPIRES_AT: HeaderName = HeaderName::from_static("x-key-expires-at");
/// Header warning that the key expires within a week.
pub(crate) const KEY_EXPIRY_WARNING: HeaderName = HeaderName::from_static("x-key-expiry-warning");

/// One operation a merchant key may call: its method, its route under
/// `/api/v1` as the router writes it, and what it needs (`None`: nothing,
/// any working key may call it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Operation {
    /// `GET`, `POST`, ...
    pub method: &'static str,
    /// The route, e.g. `/shipments/{code}`.
    pub path: &'static str,
    /// What a restricted key needs to call it.
    pub need: Option<Need>,
}

const fn op(method: &'static str, path: &'static str, need: Option<Need>) -> Operation {
    Operation { method, path, need }
}

const fn needs(resource: Resource, access: Access) -> Option<Need> {
    Some(Need { resource, access })
}

const SHIPMENTS_READ: Option<Need> = needs(Resource::Shipments, Access::Read);
const SHIPMENTS_WRITE: Option<Need> = needs(Resource::Shipments, Access::Write);
const TESTING: Option<Need> = needs(Resource::Testing, Access::Write);

/// Every operation of the routes that take a merchant's API key, and what
/// it needs. The test controls' routes exist only with `--test-controls`.
pub(crate) const OPERATIONS: &[Operation] = &[
    op("GET", "/shipments", SHIPMENTS_READ),
    op("POST", "/shipments", SHIPMENTS_WRITE),
    op("GET", "/shipments/{code}", SHIPMENTS_READ),
    op("POST", "/shipments/{code}/cancel", SHIPMENTS_WRITE),
    op(
        "POST",
        "/shipments/{code}/generate-confirmation-code",
        SHIPMENTS_WRITE,
    ),
    op("POST", "/shipments/{code}/rate", SHIPMENTS_WRITE),
    op(
        "GET",
        "/merchant-couriers",
        needs(Resource::Couriers, Access::Read),
    ),
    op(
        "GET",
        "/webhooks/listen",
        needs(Resource::Listen, Access::Read),
    ),
    op(
        "GET",
        "/webhooks/listener-signing-key",
        needs(Resource::Listen, Access::Read),
    ),
    op(
        "POST",
        "/webhooks/listener-signing-key",
        needs(Resource::Listen, Access::Write),
    ),
    // Introspection: a key may always tell what it is.
    op("GET", "/api-keys/current", None),
    op("POST", "/testing/faults", TESTING),
    op("DELETE", "/testing/faults", TESTING),
    op("POST", "/testing/shipments/{code}/advance", TESTING),
    op("POST", "/testing/webhooks/duplicates", TESTING),
    op("POST", "/testing/merchants", TESTING),
    op("DELETE", "/testing/merchants/{id}", TESTING),
    op("POST", "/testing/api-keys/{id}/expire", TESTING),
];

/// Where the API is mounted: the table's paths are relative to it.
const API_BASE: &str = "/api/v1";

/// The operation of `method` on the route `route` (as matched, with or
/// without the API's base path), if a merchant key may call it.
pub(crate) fn operation(method: &str, route: &str) -> Option<&'static Operation> {
    let route = route
        .strip_prefix(API_BASE)
        .filter(|rest| rest.starts_with('/'))
        .unwrap_or(route);
    OPERATIONS
        .iter()
        .find(|op| op.method == method && op.path == route)
}

/// What the answer to a request tells of its key, once the key is known.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHeaders {
    /// What the operation needs (no header when it needs nothing).
    pub need: Option<Need>,
    /// The key's expiry, if it has one.
    pub expires_at: Option<DateTime<Utc>>,
}

/// Where the key check leaves [`KeyHeaders`] for [`key_headers`] to write
/// on the answer, whichever it is (the handler's, or the check's refusal).
#[derive(Debug, Clone, Default)]
pub(crate) struct KeySlot(Arc<OnceLock<KeyHeaders>>);

impl KeySlot {
    /// Notes what the answer should tell (the first note stands: a
    /// request's key is checked once per extractor, always the same way).
    pub(crate) fn fill(&self, headers: KeyHeaders) {
        let _ = self.0.set(headers);
    }
}

/// Middleware of the API: gives each request a [`KeySlot`] and writes what
/// the key check left in it on the answer.
pub(crate) async fn key_headers(mut req: Request, next: Next) -> Response {
    let slot = KeySlot::default();
    req.extensions_mut().insert(slot.clone());
    let mut response = next.run(req).await;
    if let Some(known) = slot.0.get() {
        let headers = response.headers_mut();
        if let Some(need) = known.need
            && let Ok(value) = HeaderValue::from_str(&need.to_string())
        {
            headers.insert(ACCEPTED_PERMISSIONS, value);
        }
        if let Some(at) = known.expires_at {
            if let Ok(value) = HeaderValue::from_str(&keys::rfc3339(at)) {
                headers.insert(KEY_EXPIRES_AT, value);
            }
            if let Some(warning) = keys::expiry_warning(at, Utc::now())
                && let Ok(value) = HeaderValue::from_str(&warning)
            {
                headers.insert(KEY_EXPIRY_WARNING, value);
            }
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule of the module: every operation of the OpenAPI document
    /// that takes an API key is in the table, and every row of the table is
    /// an operation of the document (the test controls' included), so a new
    /// route cannot be served without saying what it needs. Courier routes
    /// take courier keys, which have no permissions.
    #[test]
    fn every_key_operation_says_what_it_needs() {
        let document: serde_json::Value =
            serde_json::from_str(&crate::http::openapi::document_json()).unwrap();
        let mut keyed = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let takes_key = operation["security"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|r| r.get("api_key").is_some()));
                if takes_key && !path.starts_with("/courier/") {
                    keyed.push((method.to_uppercase(), path.clone()));
                }
            }
        }
        for (method, path) in &keyed {
            assert!(
                operation(method, path).is_some(),
                "{method} {path} takes a merchant's API key but says nothing of what it needs: \
                 add its row to OPERATIONS"
            );
        }
        for op in OPERATIONS {
            assert!(
                keyed.contains(&(op.method.to_owned(), op.path.to_owned())),
                "{} {} is in OPERATIONS but not an API-key operation of the document",
                op.method,
                op.path
            );
        }
    }

    #[test]
    fn the_table_is_found_with_or_without_the_base_path() {
        let get = operation("GET", "/api/v1/shipments/{code}").unwrap();
        assert_eq!(get.need.unwrap().to_string(), "shipments: read");
        assert!(operation("GET", "/shipments/{code}").is_some());
        assert!(operation("PATCH", "/shipments/{code}").is_none());
        assert!(operation("GET", "/api/v1x/shipments").is_none());
    }
}
