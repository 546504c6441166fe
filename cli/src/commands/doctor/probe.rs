//! One plain request to the base URL, and what its answer says beyond the
//! body: how long it took, the TLS certificate the service presented, and
//! its clock (the `Date` header). The SDK hides the connection and the
//! headers on purpose, so this uses reqwest (the SDK's own HTTP stack)
//! directly, once.

use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use reqwest::Url;

use super::cert::{self, Validity};
use crate::error::root_cause;

/// Longest the probe (and every other request of `doctor`) may take.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Longest connecting may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What the service's answer to the probe showed.
#[derive(Debug)]
pub struct Probe {
    /// From sending to the answer's headers (name lookup, connection and
    /// TLS handshake included).
    pub elapsed: Duration,
    /// The HTTP status.
    pub status: u16,
    /// Where a redirect points, for a 3xx answer.
    pub location: Option<String>,
    /// The local clock when the request left.
    pub sent: DateTime<Utc>,
    /// The local clock when the answer's headers arrived.
    pub received: DateTime<Utc>,
    /// The `Date` header, if the answer had a readable one.
    pub date: Option<DateTime<Utc>>,
    /// For https: the certificate's validity, if its bytes could be read
    /// (`None` inside when they could not).
    pub certificate: Option<Option<Validity>>,
}

/// `GET <base URL>` without credentials or redirects: any answer proves
/// that the address, the network and (for https) TLS work; the error says
/// which of them does not.
pub async fn probe(url: &Url) -> Result<Probe, String> {
    let http = reqwest::Client::builder()
        .user_agent(crate::USER_AGENT)
        .timeout(TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        // A redirect is worth reporting: the SDK does not follow one (each
        // call would fail with `Error::Redirect`), so the base URL must be
        // where it points.
        .redirect(reqwest::redirect::Policy::none())
        .tls_info(true)
        .build()
        .map_err(|e| format!("cannot set up HTTP: {}", root_cause(&e)))?;
    let sent = Utc::now();
    let started = Instant::now();
    let response = http
        .get(url.clone())
        .send()
        .await
        .map_err(|e| describe(&e))?;
    let elapsed = started.elapsed();
    let received = Utc::now();
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let date = header(reqwest::header::DATE).and_then(|d| parse_http_date(&d));
    let certificate = (url.scheme() == "https").then(|| {
        response
            .extensions()
            .get::<reqwest::tls::TlsInfo>()
            .and_then(|info| info.peer_certificate())
            .and_then(cert::validity)
    });
    Ok(Probe {
        elapsed,
        status: response.status().as_u16(),
        location: header(reqwest::header::LOCATION),
        sent,
        received,
        date,
        certificate,
    })
}

/// Why a request got no answer, in a few words.
pub fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        format!("no answer within {} s", TIMEOUT.as_secs())
    } else if e.is_connect() {
        format!("cannot connect: {}", root_cause(e))
    } else {
        root_cause(e)
    }
}

/// An HTTP-date (RFC 9110, 5.6.7) in its preferred form, `Sun, 06 Nov 1994
/// 08:49:37 GMT`, which is also RFC 2822's.
pub fn parse_http_date(value: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc2822(value.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The clock check's tolerance: a skew up to this is fine. Five seconds is
/// far below anything that matters to the service's own times (sessions of
/// 12 h, confirmation codes of 72 h) and far above the measurement's own
/// uncertainty (one second plus the round trip).
pub const CLOCK_TOLERANCE: TimeDelta = TimeDelta::seconds(5);

/// How far the local clock is from the service's, as far as one answer
/// can tell: `local - service` lies between `low` and `high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skew {
    /// The least the skew can be.
    pub low: TimeDelta,
    /// The most the skew can be.
    pub high: TimeDelta,
}

impl Skew {
    /// The skew measured by a request sent at `sent` and answered at
    /// `received` (local clock) with `Date: date`.
    ///
    /// The service stamped `Date` somewhere between `sent` and `received`
    /// on our clock, and its clock then read at least `date` and less than
    /// a second more (the header drops the fraction). So `local - service`
    /// is above `sent - (date + 1 s)` and at most `received - date`.
    pub fn measure(sent: DateTime<Utc>, received: DateTime<Utc>, date: DateTime<Utc>) -> Skew {
        Skew {
            low: sent - (date + TimeDelta::seconds(1)),
            high: received - date,
        }
    }

    /// The best guess: the middle of the range.
    pub fn estimate(&self) -> TimeDelta {
        self.low + (self.high - self.low) / 2
    }

    /// How far the estimate may be off.
    pub fn uncertainty(&self) -> TimeDelta {
        (self.high - self.low) / 2
    }

    /// Whether the skew may be within `tolerance` either way: only a skew
    /// certainly beyond it fails, so a slow answer never fails a good clock.
    pub fn within(&self, tolerance: TimeDelta) -> bool {
        self.high >= -tolerance && self.low <= tolerance
    }

    /// "about 0.4 s ahead of the service's (± 0.6 s)".
    pub fn describe(&self) -> String {
        let estimate = self.estimate();
        let direction = if estimate < TimeDelta::zero() {
            "behind"
        } else {
            "ahead of"
        };
        format!(
            "about {} {direction} the service's (± {})",
            seconds(estimate.abs()),
            seconds(self.uncertainty())
        )
    }
}

/// A span for people: tenths of a second below a minute and a half, then
/// minutes, hours, days.
pub fn seconds(span: TimeDelta) -> String {
    let secs = span.num_milliseconds() as f64 / 1000.0;
    if secs < 90.0 {
        format!("{secs:.1} s")
    } else if secs < 90.0 * 60.0 {
        format!("{:.0} min", secs / 60.0)
    } else if secs < 48.0 * 3600.0 {
        format!("{:.1} h", secs / 3600.0)
    } else {
        format!("{:.0} days", secs / 86_400.0)
    }
}

/// The certificate check's warning time: a certificate that ends within
/// this fails the check, leaving two weeks to renew it before every client
/// refuses the service (most renewals are automated at 30 days left, so
/// 14 means the automation has failed).
pub const CERTIFICATE_WARNING: TimeDelta = TimeDelta::days(14);

/// What a certificate's dates mean `now`: `Ok` with a description when it
/// is fine, `Err` with one when it has ended, has not started, or ends
/// within [`CERTIFICATE_WARNING`].
pub fn judge_validity(validity: &Validity, now: DateTime<Utc>) -> Result<String, String> {
    let until = crate::output::short_time(&validity.not_after);
    if now < validity.not_before {
        return Err(format!(
            "not valid before {} (is the local clock right?)",
            crate::output::short_time(&validity.not_before)
        ));
    }
    let left = validity.not_after - now;
    if left <= TimeDelta::zero() {
        return Err(format!("expired at {until}"));
    }
    let text = format!("valid until {until} (in {})", days(left));
    if left < CERTIFICATE_WARNING {
        Err(format!("{text}: renew it now"))
    } else {
        Ok(text)
    }
}

/// "3 days", "1 day", "5 hours" (below a day).
pub fn days(span: TimeDelta) -> String {
    match span.num_days() {
        0 => match span.num_hours() {
            1 => "1 hour".to_owned(),
            h => format!("{h} hours"),
        },
        1 => "1 day".to_owned(),
        d => format!("{d} days"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn http_dates_are_read_in_their_preferred_form() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(at("1994-11-06T08:49:37Z"))
        );
        assert_eq!(parse_http_date("yesterday"), None);
    }

    #[test]
    fn a_clock_in_step_is_within_the_tolerance_with_the_header_truncated() {
        // Sent at .2, answered at .4; the service's clock read 10:00:00.3
        // and its header says 10:00:00.
        let skew = Skew::measure(
            at("2026-01-01T10:00:00.2Z"),
            at("2026-01-01T10:00:00.4Z"),
            at("2026-01-01T10:00:00Z"),
        );
        assert_eq!(skew.low, TimeDelta::milliseconds(-800));
        assert_eq!(skew.high, TimeDelta::milliseconds(400));
        assert!(skew.within(CLOCK_TOLERANCE));
        assert_eq!(skew.estimate(), TimeDelta::milliseconds(-200));
        assert_eq!(
            skew.describe(),
            "about 0.2 s behind the service's (± 0.6 s)"
        );
    }

    #[test]
    fn a_clock_far_ahead_or_behind_fails() {
        let ahead = Skew::measure(
            at("2026-01-01T10:01:00Z"),
            at("2026-01-01T10:01:00.2Z"),
            at("2026-01-01T10:00:00Z"),
        );
        assert!(!ahead.within(CLOCK_TOLERANCE));
        assert_eq!(
            ahead.describe(),
            "about 59.6 s ahead of the service's (± 0.6 s)"
        );
        let behind = Skew::measure(
            at("2026-01-01T09:00:00Z"),
            at("2026-01-01T09:00:00.1Z"),
            at("2026-01-01T10:00:00Z"),
        );
        assert!(!behind.within(CLOCK_TOLERANCE));
        assert!(
            behind.describe().starts_with("about 60 min behind"),
            "{behind:?}"
        );
    }

    #[test]
    fn only_a_skew_certainly_beyond_the_tolerance_fails() {
        // Six seconds ahead by the header, but the answer took three: the
        // service may have stamped it late, so the clock may be right.
        let slow = Skew::measure(
            at("2026-01-01T10:00:03Z"),
            at("2026-01-01T10:00:06Z"),
            at("2026-01-01T10:00:00Z"),
        );
        assert!(slow.within(CLOCK_TOLERANCE));
        // Just beyond: 5.1 s at the least.
        let beyond = Skew::measure(
            at("2026-01-01T10:00:06.1Z"),
            at("2026-01-01T10:00:06.2Z"),
            at("2026-01-01T10:00:00Z"),
        );
        assert_eq!(beyond.low, TimeDelta::milliseconds(5100));
        assert!(!beyond.within(CLOCK_TOLERANCE));
        // And the same behind: the service is at least 5.1 s ahead.
        let behind = Skew::measure(
            at("2026-01-01T09:59:53.8Z"),
            at("2026-01-01T09:59:53.9Z"),
            at("2026-01-01T10:00:00Z"),
        );
        assert_eq!(behind.high, TimeDelta::milliseconds(-6100));
        assert!(!behind.within(CLOCK_TOLERANCE));
    }

    #[test]
    fn a_certificate_ending_within_two_weeks_fails() {
        let validity = Validity {
            not_before: at("2026-01-01T00:00:00Z"),
            not_after: at("2026-04-01T00:00:00Z"),
        };
        assert_eq!(
            judge_validity(&validity, at("2026-02-01T00:00:00Z")),
            Ok("valid until 2026-04-01 00:00:00Z (in 59 days)".to_owned())
        );
        assert_eq!(
            judge_validity(&validity, at("2026-03-18T00:00:01Z")),
            Err("valid until 2026-04-01 00:00:00Z (in 13 days): renew it now".to_owned())
        );
        assert_eq!(
            judge_validity(&validity, at("2026-03-31T20:00:00Z")),
            Err("valid until 2026-04-01 00:00:00Z (in 4 hours): renew it now".to_owned())
        );
        assert_eq!(
            judge_validity(&validity, at("2026-04-01T00:00:00Z")),
            Err("expired at 2026-04-01 00:00:00Z".to_owned())
        );
        assert_eq!(
            judge_validity(&validity, at("2025-12-31T23:00:00Z")),
            Err("not valid before 2026-01-01 00:00:00Z (is the local clock right?)".to_owned())
        );
        // Exactly two weeks left is still fine.
        assert!(judge_validity(&validity, at("2026-03-18T00:00:00Z")).is_ok());
    }

    #[test]
    fn spans_are_written_for_people() {
        assert_eq!(seconds(TimeDelta::milliseconds(400)), "0.4 s");
        assert_eq!(seconds(TimeDelta::seconds(600)), "10 min");
        assert_eq!(seconds(TimeDelta::hours(5)), "5.0 h");
        assert_eq!(seconds(TimeDelta::days(3)), "3 days");
        assert_eq!(days(TimeDelta::hours(1)), "1 hour");
        assert_eq!(days(TimeDelta::hours(25)), "1 day");
    }
}
