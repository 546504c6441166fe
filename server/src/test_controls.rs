//! The test controls' state, in this process's memory: armed faults and
//! duplicate counts per merchant, and how many test merchants may exist.
//!
//! Why apart from the test controls' use-cases (`testing`): the state every
//! use-case runs with holds it (`app::Shared::test_controls`), the API's
//! fault middleware asks it on each request, and the webhook dispatcher per
//! delivery, so it sits below `app`, knowing nothing of the use-cases that
//! arm it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;
use shipment_sdk::model::MerchantId;

use crate::store::merchants::TestMerchantLimits;

/// Most faults one merchant may have armed at once.
pub(crate) const MAX_FAULTS: usize = 100;

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

/// A merchant has [`MAX_FAULTS`] faults armed already: the one asked for
/// was not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooManyFaults;

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

    /// Arms `fault` for the merchant, numbered in this process; refused
    /// when the merchant has [`MAX_FAULTS`] armed already.
    pub(crate) fn arm(
        &self,
        merchant_id: MerchantId,
        mut fault: Fault,
    ) -> Result<Fault, TooManyFaults> {
        let mut armed = self.armed();
        let faults = armed.faults.entry(merchant_id).or_default();
        if faults.len() >= MAX_FAULTS {
            return Err(TooManyFaults);
        }
        fault.id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        faults.push(fault.clone());
        self.faults_armed.fetch_add(1, Ordering::AcqRel);
        Ok(fault)
    }

    /// Disarms every fault of the merchant.
    pub(crate) fn disarm(&self, merchant_id: MerchantId) {
        if let Some(faults) = self.armed().faults.remove(&merchant_id) {
            self.faults_armed.fetch_sub(faults.len(), Ordering::AcqRel);
        }
    }

    /// Drops everything this process keeps for a deleted merchant: its
    /// faults and its pending duplicate deliveries; how many of each.
    pub(crate) fn forget_merchant(&self, merchant_id: MerchantId) -> (u64, u64) {
        let mut armed = self.armed();
        let faults = armed.faults.remove(&merchant_id).map_or(0, |f| f.len());
        let duplicates = armed.duplicates.remove(&merchant_id).unwrap_or(0);
        self.faults_armed.fetch_sub(faults, Ordering::AcqRel);
        self.duplicates_armed
            .fetch_sub(duplicates as usize, Ordering::AcqRel);
        (faults as u64, u64::from(duplicates))
    }

    /// Sends each of the merchant's next `times` deliveries twice (0:
    /// none), replacing the count still pending.
    pub(crate) fn set_duplicates(&self, merchant_id: MerchantId, times: u32) {
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
