//! Typed deliveries and de-duplication (feature `shipment`).
//!
//! Every delivery is the whole shipment as it was at one change, with a
//! `version` that grows by one on every change. Deliveries can arrive twice
//! or out of order, so a receiver keeps the highest `version` it has seen per
//! `code` and drops anything older or equal: [`Deduplicator`] does that in
//! memory.
//!
//! ```
//! use webhook_verify::shipment::Deduplicator;
//!
//! let seen = Deduplicator::new();
//! assert!(seen.accept("SHP-7K3M-Q9ZX", 2));
//! assert!(!seen.accept("SHP-7K3M-Q9ZX", 2)); // a duplicate
//! assert!(!seen.accept("SHP-7K3M-Q9ZX", 1)); // arrived late
//! assert!(seen.accept("SHP-7K3M-Q9ZX", 3));
//! ```

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

pub use shipment_sdk::model::{Shipment, Status};

use crate::signature::parse_header;
use crate::{Verifier, VerifyError};

/// Why [`Verifier::verify_shipment`] refused a delivery.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShipmentError {
    /// The signature is missing, malformed or does not match.
    #[error(transparent)]
    Signature(#[from] VerifyError),
    /// The signature matched but the body is not a shipment.
    #[error("the body is not a shipment: {0}")]
    Json(#[from] serde_json::Error),
}

impl Verifier {
    /// Verifies a delivery, then parses the same bytes into a [`Shipment`].
    ///
    /// ```
    /// use webhook_verify::{Verifier, VerifyError, shipment::ShipmentError};
    ///
    /// let verifier = Verifier::new("whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA");
    /// let refused = verifier.verify_shipment(b"{}", "sha256=bad");
    /// assert!(matches!(refused, Err(ShipmentError::Signature(VerifyError::MalformedHeader))));
    /// ```
    pub fn verify_shipment(
        &self,
        body: &[u8],
        header: impl AsRef<[u8]>,
    ) -> Result<Shipment, ShipmentError> {
        let expected = parse_header(header.as_ref())?;
        self.verify_tag(body, &expected)?;
        Ok(serde_json::from_slice(body)?)
    }
}

/// Remembers the highest `version` seen per shipment `code`, so duplicate and
/// late deliveries can be dropped.
///
/// It is safe to share between threads (wrap it in an `Arc` to put it in an
/// axum state). It lives in process memory: it forgets on restart, is not
/// shared between instances, and grows by one small entry per shipment code.
/// A receiver with a database does the same with a conditional upsert
/// (`... WHERE stored.version < new.version`).
#[derive(Debug, Default)]
pub struct Deduplicator {
    highest: Mutex<HashMap<String, i64>>,
}

impl Deduplicator {
    /// An empty de-duplicator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `version` for `code` and returns `true` when it is newer than
    /// any version seen before for that code; returns `false` (and records
    /// nothing) for a duplicate or an older version.
    pub fn accept(&self, code: &str, version: i64) -> bool {
        // A panic elsewhere while holding the lock cannot leave the map
        // half-updated (every update is one insert), so poisoning is ignored.
        let mut highest = self.highest.lock().unwrap_or_else(PoisonError::into_inner);
        match highest.get_mut(code) {
            Some(seen) if *seen >= version => false,
            Some(seen) => {
                *seen = version;
                true
            }
            None => {
                highest.insert(code.to_owned(), version);
                true
            }
        }
    }

    /// [`accept`](Self::accept) for a shipment's `code` and `version`.
    pub fn accept_shipment(&self, shipment: &Shipment) -> bool {
        self.accept(shipment.code.as_str(), shipment.version)
    }

    /// The highest version accepted for `code`, if any.
    pub fn highest_version(&self, code: &str) -> Option<i64> {
        let highest = self.highest.lock().unwrap_or_else(PoisonError::into_inner);
        highest.get(code).copied()
    }

    /// How many shipment codes it remembers.
    pub fn len(&self) -> usize {
        self.highest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether it remembers no code at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_tracked_independently() {
        let seen = Deduplicator::new();
        assert!(seen.accept("SHP-AAAA-AAAA", 5));
        assert!(seen.accept("SHP-BBBB-BBBB", 1));
        assert_eq!(seen.highest_version("SHP-AAAA-AAAA"), Some(5));
        assert_eq!(seen.highest_version("SHP-BBBB-BBBB"), Some(1));
        assert_eq!(seen.len(), 2);
    }

    #[test]
    fn a_refused_version_leaves_the_highest_unchanged() {
        let seen = Deduplicator::new();
        assert!(seen.accept("SHP-AAAA-AAAA", 5));
        assert!(!seen.accept("SHP-AAAA-AAAA", 4));
        assert_eq!(seen.highest_version("SHP-AAAA-AAAA"), Some(5));
    }

    #[test]
    fn concurrent_duplicates_are_accepted_once() {
        let seen = std::sync::Arc::new(Deduplicator::new());
        let accepted: usize = (0..8)
            .map(|_| {
                let seen = seen.clone();
                std::thread::spawn(move || usize::from(seen.accept("SHP-AAAA-AAAA", 7)))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .sum();
        assert_eq!(accepted, 1);
    }
}
