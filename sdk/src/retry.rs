//! When to try again and how long to wait: exponential back-off with full
//! jitter, and the service's `Retry-After`.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// Retry settings of a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt (0 turns retrying off).
    pub max_retries: u32,
    /// The back-off ceiling of the first retry; doubled for each further one.
    pub initial_backoff: Duration,
    /// The largest back-off ceiling.
    pub max_backoff: Duration,
    /// The longest `Retry-After` the client waits; a longer one ends the
    /// retries and the caller gets the 429 or 503 at once.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1 for the first retry), or
    /// `None` when the service asked for a longer pause than we accept.
    ///
    /// Without `Retry-After` the wait is drawn uniformly from zero to
    /// `min(max_backoff, initial_backoff * 2^(retry-1))` ("full jitter"), so
    /// many clients failing at once do not come back in lockstep. With it,
    /// the wait is what the service asked for.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(wait) = retry_after {
            return (wait <= self.max_retry_after).then_some(wait);
        }
        let ceiling = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)))
            .min(self.max_backoff);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Some(Duration::from_nanos(fastrand::u64(0..=nanos)))
    }
}

/// Reads a `Retry-After` value: delay-seconds, or an HTTP date (a date in
/// the past means "now").
pub(crate) fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = DateTime::parse_from_rfc2822(value)
        .ok()?
        .with_timezone(&Utc);
    Some((at - now).to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jittered_wait_stays_under_a_doubling_ceiling() {
        let policy = RetryPolicy {
            max_retries: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(700),
            max_retry_after: Duration::from_secs(5),
        };
        for _ in 0..200 {
            assert!(policy.delay(1, None).unwrap() <= Duration::from_millis(100));
            assert!(policy.delay(2, None).unwrap() <= Duration::from_millis(200));
            assert!(policy.delay(3, None).unwrap() <= Duration::from_millis(400));
            assert!(policy.delay(4, None).unwrap() <= Duration::from_millis(700));
            assert!(policy.delay(40, None).unwrap() <= Duration::from_millis(700));
        }
    }

    #[test]
    fn the_jitter_actually_varies() {
        let policy = RetryPolicy::default();
        let waits: std::collections::HashSet<_> =
            (0..50).map(|_| policy.delay(3, None).unwrap()).collect();
        assert!(waits.len() > 1);
    }

    #[test]
    fn retry_after_is_obeyed_up_to_the_limit() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(7))),
            Some(Duration::from_secs(7))
        );
        assert_eq!(policy.delay(1, Some(Duration::from_secs(3600))), None);
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now: DateTime<Utc> = "2026-11-21T09:30:00Z".parse().unwrap();
        assert_eq!(parse_retry_after("12", now), Some(Duration::from_secs(12)));
        assert_eq!(
            parse_retry_after("Sat, 21 Nov 2026 09:30:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Sat, 21 Nov 2026 09:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }
}
