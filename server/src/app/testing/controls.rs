//! The test controls' state, in this process's memory: armed faults and
//! duplicate counts per merchant, with the limits and request shapes of the
//! routes that set them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use shipment_sdk::model::{MerchantId, Status};

use crate::app::error::Error;
use crate::domain::FieldError;
use crate::store::merchants::TestMerchantLimits;

/// Most requests one fault may catch.
pub(crate) const MAX_TIMES: u32 = 1000;
/// Longest delay of a fault, in milliseconds.
pub(crate) const MAX_DELAY_MS: u32 = 60_000;
/// Largest `retry_after` of a fault, in seconds.
pub(crate) const MAX_RETRY_AFTER: u32 = 86_400;
/// Most faults one merchant may have armed at once.
pub(super) const MAX_FAULTS: usize = 100;
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

/// An armed fault, as `POST /testing/faults` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub(crate) struct Fault {
    /// Its number in this server process.
    #[schema(example = 1)]
    pub id: u64,
    /// The method it catches, upper case.
    #[schema(example = "POST")]
    pub method: String,
    /// The path it catches, under `/api/v1`.
    #[schema(example = "/shipments")]
    pub path: String,
    /// The status it answers with, or null.
    #[schema(example = 503)]
    pub status: Option<u16>,
    /// The `Retry-After` it sends with `status`, or null.
    #[schema(example = 1)]
    pub retry_after: Option<u32>,
    /// The delay in milliseconds, or null.
    pub delay_ms: Option<u32>,
    /// Whether it closes the connection without an answer.
    pub drop_connection: bool,
    /// Requests it still catches.
    #[schema(example = 2)]
    pub times: u32,
}

/// What a caught request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultAction {
    /// This status instead of running the request.
    Answer {
        /// 429, 500, 502, 503 or 504.
        status: u16,
        /// The `Retry-After` seconds, if any.
        retry_after: Option<u32>,
    },
    /// Run the request after this long.
    Delay(Duration),
    /// Close the connection without an answer.
    DropConnection,
}

impl Fault {
    fn action(&self) -> FaultAction {
        match (self.status, self.delay_ms) {
            (Some(status), _) => FaultAction::Answer {
                status,
                retry_after: self.retry_after,
            },
            (None, Some(ms)) => FaultAction::Delay(Duration::from_millis(u64::from(ms))),
            (None, None) => FaultAction::DropConnection,
        }
    }

    fn matches(&self, method: &str, template: Option<&str>, path: &str) -> bool {
        self.method == method && (template == Some(self.path.as_str()) || self.path == path)
    }
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

/// Why a test control did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum TestingError {
    /// The server runs without `--test-controls`.
    #[error("test controls are off: start the server with --test-controls")]
    Disabled,
    /// No series of lifecycle operations leads from the shipment's state to
    /// the one asked for.
    #[error(
        "cannot advance a shipment that is {from} to {to}: no path of the lifecycle leads there \
         (from {from} it reaches {reachable})"
    )]
    Unreachable {
        /// The shipment's state.
        from: Status,
        /// The state asked for.
        to: Status,
        /// The states that can be reached from `from`, for the message.
        reachable: String,
    },
    /// The merchant has [`MAX_FAULTS`] faults armed.
    #[error(
        "{MAX_FAULTS} faults are armed for this merchant already; disarm them with \
         DELETE /testing/faults first"
    )]
    TooManyFaults,
    /// A deletion waited in vain for the merchant's deliveries in flight.
    #[error(
        "{0} of this merchant's changes are being delivered right now; the merchant can be \
         deleted once they are (stop making changes, then try again)"
    )]
    DeliveriesInFlight(u64),
    /// As many test merchants as may exist at once exist already (made by
    /// this caller's merchant when `per_caller`, else by anyone).
    #[error(
        "{limit} test merchants {whose} exist already, the most that may at once; delete one \
         with DELETE /testing/merchants/{{id}} (its own key), then try again"
    )]
    TooManyTestMerchants {
        /// The limit reached.
        limit: u64,
        /// "made by your keys" or "of all callers", for the message.
        whose: &'static str,
    },
    /// The merchant to delete was not made by `POST /testing/merchants`.
    #[error(
        "this merchant was not made by POST /testing/merchants (it comes from the fixtures \
         file, `admin` or the demo), and only those can be deleted here"
    )]
    NotATestMerchant,
    /// A use-case refused or failed (a bad field, no such shipment, ...).
    #[error(transparent)]
    App(#[from] Error),
}

impl From<FieldError> for TestingError {
    fn from(e: FieldError) -> Self {
        TestingError::App(e.into())
    }
}

/// The outcome of a test control.
pub(crate) type Result<T, E = TestingError> = std::result::Result<T, E>;

/// The armed faults and pending duplicate deliveries of every merchant, in
/// this process's memory. One per server, shared by the HTTP layer (which
/// arms faults and asks for them per request) and the webhook dispatcher
/// (which asks per delivery whether to send it twice).
#[derive(Debug, Default)]
pub(crate) struct TestControls {
    /// How many test merchants may exist at once (`--max-test-merchants*`).
    pub(crate) limits: TestMerchantLimits,
    state: Mutex<Armed>,
    /// Faults armed over all merchants, so requests pay nothing (not even
    /// authentication) while there are none.
    faults_armed: AtomicUsize,
    /// Deliveries to duplicate over all merchants.
    duplicates_armed: AtomicUsize,
    next_id: AtomicU64,
}

#[derive(Debug, Default)]
struct Armed {
    faults: HashMap<MerchantId, Vec<Fault>>,
    duplicates: HashMap<MerchantId, u32>,
}

impl TestControls {
    /// No faults or duplicates armed; test merchants bounded by `limits`.
    pub(crate) fn new(limits: TestMerchantLimits) -> TestControls {
        TestControls {
            limits,
            ..TestControls::default()
        }
    }

    fn armed(&self) -> std::sync::MutexGuard<'_, Armed> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether any merchant has a fault armed.
    pub(crate) fn any_faults(&self) -> bool {
        self.faults_armed.load(Ordering::Acquire) > 0
    }

    /// Takes one use of the merchant's first armed fault (in arming order)
    /// that matches the request, atomically: of two requests racing for the
    /// last use, one gets it. A `drop_connection` fault only matches when
    /// the request's connection can be dropped (`can_drop`).
    pub(crate) fn take_fault(
        &self,
        merchant_id: MerchantId,
        method: &str,
        template: Option<&str>,
        path: &str,
        can_drop: bool,
    ) -> Option<FaultAction> {
        let mut armed = self.armed();
        let faults = armed.faults.get_mut(&merchant_id)?;
        let index = faults
            .iter()
            .position(|f| f.matches(method, template, path) && (can_drop || !f.drop_connection))?;
        let fault = &mut faults[index];
        let action = fault.action();
        fault.times -= 1;
        if fault.times == 0 {
            faults.remove(index);
            self.faults_armed.fetch_sub(1, Ordering::AcqRel);
            if faults.is_empty() {
                armed.faults.remove(&merchant_id);
            }
        }
        Some(action)
    }

    pub(super) fn arm(&self, merchant_id: MerchantId, mut fault: Fault) -> Result<Fault> {
        let mut armed = self.armed();
        let faults = armed.faults.entry(merchant_id).or_default();
        if faults.len() >= MAX_FAULTS {
            return Err(TestingError::TooManyFaults);
        }
        fault.id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        faults.push(fault.clone());
        self.faults_armed.fetch_add(1, Ordering::AcqRel);
        Ok(fault)
    }

    pub(super) fn disarm(&self, merchant_id: MerchantId) {
        if let Some(faults) = self.armed().faults.remove(&merchant_id) {
            self.faults_armed.fetch_sub(faults.len(), Ordering::AcqRel);
        }
    }

    /// Drops everything this process keeps for a deleted merchant: its
    /// faults and its pending duplicate deliveries; how many of each.
    pub(super) fn forget_merchant(&self, merchant_id: MerchantId) -> (u64, u64) {
        let mut armed = self.armed();
        let faults = armed.faults.remove(&merchant_id).map_or(0, |f| f.len());
        let duplicates = armed.duplicates.remove(&merchant_id).unwrap_or(0);
        self.faults_armed.fetch_sub(faults, Ordering::AcqRel);
        self.duplicates_armed
            .fetch_sub(duplicates as usize, Ordering::AcqRel);
        (faults as u64, u64::from(duplicates))
    }

    pub(super) fn set_duplicates(&self, merchant_id: MerchantId, times: u32) {
        let mut armed = self.armed();
        let before = if times == 0 {
            armed.duplicates.remove(&merchant_id)
        } else {
            armed.duplicates.insert(merchant_id, times)
        };
        self.duplicates_armed
            .fetch_sub(before.unwrap_or(0) as usize, Ordering::AcqRel);
        self.duplicates_armed
            .fetch_add(times as usize, Ordering::AcqRel);
    }

    /// Whether the next delivery of this merchant is to be sent twice;
    /// takes one from the count if so (asked by the dispatcher, through
    /// [`crate::webhooks::Duplicates`]).
    pub(crate) fn take_duplicate(&self, merchant_id: MerchantId) -> bool {
        if self.duplicates_armed.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut armed = self.armed();
        let Some(left) = armed.duplicates.get_mut(&merchant_id) else {
            return false;
        };
        *left -= 1;
        if *left == 0 {
            armed.duplicates.remove(&merchant_id);
        }
        self.duplicates_armed.fetch_sub(1, Ordering::AcqRel);
        true
    }
}

impl crate::webhooks::Duplicates for TestControls {
    fn take_duplicate(&self, merchant_id: MerchantId) -> bool {
        TestControls::take_duplicate(self, merchant_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_counted_per_merchant() {
        let controls = TestControls::default();
        assert!(!controls.take_duplicate(MerchantId::new(1)));
        controls.set_duplicates(MerchantId::new(1), 2);
        assert!(!controls.take_duplicate(MerchantId::new(2)));
        assert!(controls.take_duplicate(MerchantId::new(1)));
        controls.set_duplicates(MerchantId::new(1), 1);
        assert!(controls.take_duplicate(MerchantId::new(1)));
        assert!(!controls.take_duplicate(MerchantId::new(1)));
        controls.set_duplicates(MerchantId::new(1), 5);
        controls.set_duplicates(MerchantId::new(1), 0);
        assert!(!controls.take_duplicate(MerchantId::new(1)));
        assert_eq!(controls.duplicates_armed.load(Ordering::Relaxed), 0);
    }
}
