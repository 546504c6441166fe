//! The delivery confirmation code's policy: six digits, valid for
//! [`CODE_TTL`], void after [`MAX_ATTEMPTS`] wrong tries, compared in
//! constant time. The store keeps the code's digest; this decides.

use chrono::{DateTime, Duration, Utc};
use subtle::ConstantTimeEq;

use super::keys;

/// How long a confirmation code works.
pub(crate) const CODE_TTL: Duration = Duration::hours(72);
/// Wrong confirmation codes tolerated before the code is void.
pub(crate) const MAX_ATTEMPTS: i64 = 5;

/// A generated code as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredCode {
    /// SHA-256 of the six digits ([`keys::digest`]).
    pub digest: String,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
    /// Wrong tries so far.
    pub failed_attempts: i64,
}

/// Why a delivery's code was refused, and whether the try counts against
/// [`MAX_ATTEMPTS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodeRefusal {
    /// A sentence for the courier.
    pub reason: &'static str,
    /// A wrong code counts; a void or expired one, or none at all, does not.
    pub counts: bool,
}

/// Whether the code a courier `provided` at `at` lets the delivery go on.
pub(crate) fn check(
    stored: &StoredCode,
    provided: Option<&str>,
    at: DateTime<Utc>,
) -> Result<(), CodeRefusal> {
    let refuse = |reason, counts| Err(CodeRefusal { reason, counts });
    if stored.failed_attempts >= MAX_ATTEMPTS {
        return refuse(
            "the confirmation code is void after too many wrong attempts; the merchant must generate a new one",
            false,
        );
    }
    if stored.expires_at <= at {
        return refuse(
            "the confirmation code has expired; the merchant must generate a new one",
            false,
        );
    }
    let Some(provided) = provided else {
        return refuse(
            "this shipment needs its confirmation code to be delivered",
            false,
        );
    };
    let matches: bool = keys::digest(provided)
        .as_bytes()
        .ct_eq(stored.digest.as_bytes())
        .into();
    if matches {
        Ok(())
    } else {
        refuse("the confirmation code is wrong", true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(failed_attempts: i64, expires_in: Duration) -> (StoredCode, DateTime<Utc>) {
        let at = Utc::now();
        let stored = StoredCode {
            digest: keys::digest("482913"),
            expires_at: at + expires_in,
            failed_attempts,
        };
        (stored, at)
    }

    #[test]
    fn the_right_code_in_time_is_accepted() {
        let (stored, at) = code(4, Duration::hours(1));
        assert_eq!(check(&stored, Some("482913"), at), Ok(()));
    }

    #[test]
    fn a_wrong_code_is_refused_and_counts() {
        let (stored, at) = code(0, Duration::hours(1));
        let refusal = check(&stored, Some("482914"), at).unwrap_err();
        assert!(refusal.counts && refusal.reason.contains("wrong"));
    }

    #[test]
    fn after_five_wrong_tries_even_the_right_code_is_void() {
        let (stored, at) = code(MAX_ATTEMPTS, Duration::hours(1));
        let refusal = check(&stored, Some("482913"), at).unwrap_err();
        assert!(!refusal.counts && refusal.reason.contains("void"));
    }

    #[test]
    fn an_expired_or_missing_code_is_refused_without_counting() {
        let (stored, at) = code(0, Duration::zero());
        let refusal = check(&stored, Some("482913"), at).unwrap_err();
        assert!(!refusal.counts && refusal.reason.contains("expired"));
        let (stored, at) = code(0, Duration::hours(1));
        let refusal = check(&stored, None, at).unwrap_err();
        assert!(!refusal.counts && refusal.reason.contains("needs"));
    }
}
