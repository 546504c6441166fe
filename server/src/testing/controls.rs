//! The test controls' use-cases (`--test-controls`): what a merchant's CI
//! uses to make the server misbehave on purpose and to move shipments along
//! without a courier. Faults on the merchant's next requests, advancing a
//! shipment through the real lifecycle, and duplicated webhook deliveries.
//!
//! Faults and duplicates live in this process's memory ([`TestControls`],
//! hung on [`AppState`] only when the flag is on): several processes on one
//! database each keep their own, so a merchant arms the process its
//! requests reach. Advancing is a series of real changes through the same
//! use-cases as the courier's and merchant's routes, so every step bumps the
//! version and fires its webhooks.

use serde::{Deserialize, Serialize};
use shipment_sdk::model::{
    ApiKey, ApiKeyId, CourierId, DriverId, MerchantId, Shipment, ShipmentCode, Status,
};

use super::{Result, TestingError};
use crate::app::{AppState, Error, api_keys, couriers, shipments};
use crate::domain::FieldError;
use crate::domain::lifecycle::{self, Operation};
use crate::test_controls::{Fault, TestControls, TooManyFaults};

/// Most requests one fault may catch.
pub(crate) const MAX_TIMES: u32 = 1000;
/// Longest delay of a fault, in milliseconds.
pub(crate) const MAX_DELAY_MS: u32 = 60_000;
/// Largest `retry_after` of a fault, in seconds.
pub(crate) const MAX_RETRY_AFTER: u32 = 86_400;
/// Longest `path` of a fault, in bytes.
pub(crate) const MAX_PATH: usize = 2048;
/// The statuses a fault may answer with.
pub(crate) const FAULT_STATUSES: [u16; 5] = [429, 500, 502, 503, 504];
/// The name of the driver made for a courier company that has none when a
/// shipment is advanced past `assigned_to_courier`.
pub(crate) const TEST_DRIVER: &str = "Test driver";
/// The reason a shipment advanced to `failed` carries.
pub(crate) const FAILURE_REASON: &str = "test";

/// Body of `POST /testing/faults`: which of the merchant's next requests
/// to catch, and what to do to them. Exactly one of `status`, `delay_ms`
/// and `drop_connection: true`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArmFault {
    /// The HTTP method of the requests to catch (case-insensitive).
    #[schema(
        example = "POST",
        min_length = 1,
        max_length = 16,
        pattern = "^[A-Za-z]+$"
    )]
    pub method: String,
    /// The path under `/api/v1`, as the route template
    /// (`/shipments/{code}`) or a concrete path (`/shipments/SHP-7K3M-Q9ZX`);
    /// no query, nothing under `/testing`.
    #[schema(
        example = "/shipments",
        min_length = 1,
        max_length = 2048,
        pattern = "^/"
    )]
    pub path: String,
    /// Answer with this status (and the problem body) instead of running the
    /// request: 429, 500, 502, 503 or 504.
    #[schema(schema_with = fault_status)]
    pub status: Option<u16>,
    /// With `status`: the `Retry-After` header, in seconds (0 to 86400).
    #[schema(nullable = false, example = 1, minimum = 0, maximum = 86400)]
    pub retry_after: Option<u32>,
    /// Wait this many milliseconds (1 to 60000), then run the request.
    #[schema(nullable = false, example = 1500, minimum = 1, maximum = 60000)]
    pub delay_ms: Option<u32>,
    /// `true`: close the connection without an answer.
    #[schema(nullable = false)]
    pub drop_connection: Option<bool>,
    /// How many matching requests to catch, 1 to 1000 (default 1).
    #[schema(nullable = false, example = 2, minimum = 1, maximum = 1000)]
    pub times: Option<u32>,
}

/// The schema of [`ArmFault::status`]: one of [`FAULT_STATUSES`].
fn fault_status() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Integer)
        .enum_values(Some(FAULT_STATUSES))
        .description(Some(
            "Answer with this status (and the problem body) instead of running the request",
        ))
        .examples([503])
        .build()
}

/// Body and answer of `POST /testing/webhooks/duplicates`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DuplicateDeliveries {
    /// How many of the merchant's next deliveries to send twice, 0 (none)
    /// to 1000; replaces the count still pending.
    #[schema(example = 1, minimum = 0, maximum = 1000)]
    pub times: u32,
}

/// Body of `POST /testing/shipments/{code}/advance`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AdvanceShipment {
    /// The state to move the shipment to.
    #[schema(example = "delivered")]
    pub to: Status,
}

/// The test controls, or [`TestingError::Disabled`] when the server runs
/// without them.
pub(super) fn controls(state: &AppState) -> Result<&TestControls> {
    state.test_controls.as_deref().ok_or(TestingError::Disabled)
}

/// Checks a fault's body and arms it for the merchant.
pub(crate) async fn arm_fault(
    state: &AppState,
    merchant_id: MerchantId,
    request: ArmFault,
) -> Result<Fault> {
    let controls = controls(state)?;
    let fault = parse_fault(request)?;
    controls
        .arm(merchant_id, fault)
        .map_err(|TooManyFaults| TestingError::TooManyFaults)
}

/// Disarms every fault of the merchant.
pub(crate) async fn disarm_faults(state: &AppState, merchant_id: MerchantId) -> Result<()> {
    controls(state)?.disarm(merchant_id);
    Ok(())
}

/// Makes the merchant's key `id` expire now: refused with `api_key_expired`
/// at once, by every process ([`api_keys::expire_api_key`]).
pub(crate) async fn expire_api_key(
    state: &AppState,
    merchant_id: MerchantId,
    id: ApiKeyId,
) -> Result<ApiKey> {
    controls(state)?;
    Ok(api_keys::expire_api_key(state, merchant_id, id).await?)
}

/// Sends each of the merchant's next `times` deliveries twice.
pub(crate) async fn duplicate_deliveries(
    state: &AppState,
    merchant_id: MerchantId,
    request: DuplicateDeliveries,
) -> Result<DuplicateDeliveries> {
    let controls = controls(state)?;
    if request.times > MAX_TIMES {
        return Err(
            FieldError::invalid("times", format!("`times` must be 0 to {MAX_TIMES}")).into(),
        );
    }
    controls.set_duplicates(merchant_id, request.times);
    Ok(request)
}

/// The fault a body asks for, or the first thing wrong with it.
fn parse_fault(r: ArmFault) -> Result<Fault, FieldError> {
    let method = r.method.trim().to_ascii_uppercase();
    if method.is_empty() || method.len() > 16 || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(FieldError::invalid(
            "method",
            "`method` is an HTTP method such as GET or POST",
        ));
    }
    let path = r.path;
    let path_error = |detail: &str| FieldError::invalid("path", detail);
    if !path.starts_with('/') || path.len() > MAX_PATH {
        return Err(path_error(
            "`path` is a path under /api/v1 starting with `/`, such as /shipments or \
             /shipments/{code}, at most 2048 bytes",
        ));
    }
    if path.contains(crate::domain::validation::is_refused_control)
        || path.contains(['\t', '\n', ' ', '?', '#'])
    {
        return Err(path_error(
            "`path` is a path without spaces, control characters, query or fragment",
        ));
    }
    if path == "/api/v1" || path.starts_with("/api/v1/") {
        return Err(path_error(
            "`path` is relative to /api/v1: write /shipments, not /api/v1/shipments",
        ));
    }
    if path == "/testing" || path.starts_with("/testing/") {
        return Err(path_error(
            "faults cannot catch the test controls' own routes",
        ));
    }
    let times = r.times.unwrap_or(1);
    if !(1..=MAX_TIMES).contains(&times) {
        return Err(FieldError::invalid(
            "times",
            format!("`times` must be 1 to {MAX_TIMES}"),
        ));
    }
    let drop_connection = r.drop_connection.unwrap_or(false);
    let kinds = [
        ("status", r.status.is_some()),
        ("delay_ms", r.delay_ms.is_some()),
        ("drop_connection", drop_connection),
    ];
    let mut given = kinds
        .iter()
        .filter(|(_, given)| *given)
        .map(|(name, _)| *name);
    let one_kind = "a fault takes exactly one of `status`, `delay_ms` and `drop_connection: true`";
    match (given.next(), given.next()) {
        (None, _) => {
            return Err(FieldError {
                kind: crate::domain::FieldErrorKind::Missing,
                field: "status".into(),
                detail: one_kind.into(),
            });
        }
        (Some(_), Some(second)) => return Err(FieldError::invalid(second, one_kind)),
        (Some(_), None) => {}
    }
    if let Some(status) = r.status
        && !FAULT_STATUSES.contains(&status)
    {
        return Err(FieldError::invalid(
            "status",
            "`status` must be 429, 500, 502, 503 or 504",
        ));
    }
    if let Some(secs) = r.retry_after {
        if r.status.is_none() {
            return Err(FieldError::invalid(
                "retry_after",
                "`retry_after` goes with `status`",
            ));
        }
        if secs > MAX_RETRY_AFTER {
            return Err(FieldError::invalid(
                "retry_after",
                format!("`retry_after` must be 0 to {MAX_RETRY_AFTER} seconds"),
            ));
        }
    }
    if let Some(ms) = r.delay_ms
        && !(1..=MAX_DELAY_MS).contains(&ms)
    {
        return Err(FieldError::invalid(
            "delay_ms",
            format!("`delay_ms` must be 1 to {MAX_DELAY_MS}"),
        ));
    }
    Ok(Fault {
        id: 0,
        method,
        path,
        status: r.status,
        retry_after: r.retry_after,
        delay_ms: r.delay_ms,
        drop_connection,
        times,
    })
}

/// Moves the merchant's shipment to `to` through the real lifecycle: the
/// shortest path of [`lifecycle::path`], each step a change made by the
/// same use-case as the courier's or the merchant's route (so each bumps
/// the version and is delivered). The courier company's first driver is
/// assigned (one named [`TEST_DRIVER`] is made if it has none), delivery
/// skips the confirmation code, and a failure's reason is
/// [`FAILURE_REASON`]. Already there: the shipment, unchanged.
pub(crate) async fn advance_shipment(
    state: &AppState,
    merchant_id: MerchantId,
    code: &ShipmentCode,
    to: &Status,
) -> Result<Shipment> {
    controls(state)?;
    if !Status::KNOWN.contains(to) {
        return Err(FieldError::invalid(
            "to",
            format!(
                "`to` must be one of {}",
                Status::KNOWN.map(|s| s.as_str().to_owned()).join(", ")
            ),
        )
        .into());
    }
    let mut shipment = shipments::get_shipment(state, merchant_id, code).await?;
    let from = shipment.status.clone();
    let Some(steps) = lifecycle::path(&from, to) else {
        let reachable: Vec<&str> = Status::KNOWN
            .iter()
            .filter(|s| **s != from && lifecycle::path(&from, s).is_some())
            .map(Status::as_str)
            .collect();
        let reachable = if reachable.is_empty() {
            "no other state".to_owned()
        } else {
            reachable.join(", ")
        };
        return Err(TestingError::Unreachable {
            from,
            to: to.clone(),
            reachable,
        });
    };
    let courier_id = shipment.courier_company_id;
    for op in steps {
        shipment = match op {
            Operation::AssignDriver => {
                let driver = first_driver(state, courier_id).await?;
                shipments::assign_driver(state, courier_id, code, driver).await?
            }
            Operation::Fail => {
                shipments::fail_shipment(state, courier_id, code, FAILURE_REASON).await?
            }
            Operation::Cancel => shipments::cancel_shipment(state, merchant_id, code).await?,
            // Deliver goes the courier's way without the confirmation code.
            Operation::UnassignDriver
            | Operation::Pickup
            | Operation::Deliver
            | Operation::Return => {
                shipments::courier_operation(state, courier_id, code, op).await?
            }
            Operation::Rate | Operation::GenerateConfirmationCode => {
                return Err(Error::Internal(format!(
                    "the lifecycle path holds {}, which moves nothing",
                    op.name()
                ))
                .into());
            }
        };
    }
    Ok(shipment)
}

/// The courier company's first driver, made if it has none.
async fn first_driver(state: &AppState, courier_id: CourierId) -> Result<DriverId> {
    let drivers = couriers::list_drivers(state, courier_id).await?;
    let driver = match drivers.into_iter().next() {
        Some(driver) => driver,
        None => couriers::create_driver(state, courier_id, TEST_DRIVER).await?,
    };
    Ok(driver.id)
}

#[cfg(test)]
mod tests;
