//! Values of the commands' arguments that clap checks as it parses (times,
//! durations, counts, statuses, webhook addresses): a bad one is a usage
//! error, exit 2, before anything is sent. Shared by the commands whose
//! arguments take them.

use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use shipment_sdk::model::{Status, WebhookUrl, WebhookUrlError};

/// Parses RFC 3339, or a date alone as midnight UTC.
pub(crate) fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        .map_err(|_| "expected RFC 3339 (2026-11-21T09:30:00Z) or a date (2026-11-21)".to_owned())
}

/// Checks a webhook address as the service will, so a bad one is refused
/// before anything is sent; gives its normalised form.
pub(crate) fn parse_webhook_url(s: &str) -> Result<String, WebhookUrlError> {
    WebhookUrl::parse(s).map(WebhookUrl::into_string)
}

/// Parses `500ms`, `2s`, `1m`, or a number of seconds, from 10ms to 1h.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    duration_within(s, 0.01, 3600.0, "from 10ms to 1h")
}

/// Parses `webhooks verify --tolerance`: `90s`, `5m`, from 0s (the same
/// second only) to 24h (a receiver that waits longer accepts replays for
/// that long).
pub(crate) fn parse_tolerance(s: &str) -> Result<Duration, String> {
    duration_within(s, 0.0, 86_400.0, "from 0s to 24h")
}

/// Parses `--max-wait`: `90s`, `2m`, `1h`, from 1s to 24h (a CI job's
/// longest wait, and a typo such as `2000h` refused).
pub(crate) fn parse_max_wait(s: &str) -> Result<Duration, String> {
    duration_within(s, 1.0, 86_400.0, "from 1s to 24h")
}

/// A number with `ms`, `s`, `m` or `h` (seconds without a unit), within
/// `min..=max` seconds. A few lines, so no crate for it.
fn duration_within(s: &str, min: f64, max: f64, range: &str) -> Result<Duration, String> {
    let bad = || format!("`{s}` is not a duration: write e.g. 500ms, 90s or 2m");
    let (number, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    if !(min..=max).contains(&seconds) {
        return Err(format!("`{s}` is out of range: {range}"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The longest life a key may be given, as the service allows it
/// (`expires_at` at most 366 days ahead).
pub(crate) const MAX_KEY_LIFETIME_DAYS: i64 = 366;

/// Parses `keys create --expires-in`: a whole number with `m`, `h`, `d` or
/// `w` (`90m`, `12h`, `30d`, `4w`), from 1 minute to 366 days, the
/// longest the service allows. A unit is required: a bare `30` could mean
/// days as well as seconds.
pub(crate) fn parse_key_lifetime(s: &str) -> Result<chrono::TimeDelta, String> {
    let bad = || format!("`{s}` is not a key lifetime: write e.g. 90m, 12h, 30d or 4w");
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = s.split_at(split);
    let n: i64 = number.parse().map_err(|_| bad())?;
    let minutes_per_unit = match unit {
        "m" => 1,
        "h" => 60,
        "d" => 24 * 60,
        "w" => 7 * 24 * 60,
        _ => return Err(bad()),
    };
    let max_minutes = MAX_KEY_LIFETIME_DAYS * 24 * 60;
    match n.checked_mul(minutes_per_unit) {
        Some(minutes) if (1..=max_minutes).contains(&minutes) => {
            Ok(chrono::TimeDelta::minutes(minutes))
        }
        _ => Err(format!(
            "`{s}` is out of range: a key lives from 1m to {MAX_KEY_LIFETIME_DAYS}d"
        )),
    }
}

/// `--count`: a whole number from 1 (0 would be met before anything is
/// received).
pub(crate) fn parse_count(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{s}` is not a count: a whole number from 1")),
    }
}

/// A status the service knows (a typo would never match, and a script
/// waiting for it would wait until --max-wait).
pub(crate) fn parse_status(s: &str) -> Result<String, String> {
    match Status::parse_known(s) {
        Some(status) => Ok(status.as_str().to_owned()),
        None => Err(format!(
            "`{s}` is not a status: one of {}",
            Status::KNOWN.map(|k| k.as_str().to_owned()).join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_alone_mean_midnight_utc() {
        assert_eq!(
            parse_time("2026-11-21").unwrap().to_rfc3339(),
            "2026-11-21T00:00:00+00:00"
        );
        assert_eq!(
            parse_time("2026-11-21T10:00:00+01:00")
                .unwrap()
                .to_rfc3339(),
            "2026-11-21T09:00:00+00:00"
        );
        assert!(parse_time("21/11/2026").is_err());
    }

    #[test]
    fn durations_take_a_unit_or_mean_seconds() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("2h").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("fast").is_err());
    }

    #[test]
    fn a_max_wait_is_from_one_second_to_a_day() {
        assert_eq!(parse_max_wait("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_max_wait("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_max_wait("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_max_wait("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_max_wait("45"), Ok(Duration::from_secs(45)));
        for bad in ["500ms", "25h", "2d", "m", "", "-5s", "2 m"] {
            assert!(parse_max_wait(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_key_lifetime_is_from_one_minute_to_366_days() {
        let minutes = |n| Ok(chrono::TimeDelta::minutes(n));
        assert_eq!(parse_key_lifetime("1m"), minutes(1));
        assert_eq!(parse_key_lifetime("90m"), minutes(90));
        assert_eq!(parse_key_lifetime("12h"), minutes(12 * 60));
        assert_eq!(parse_key_lifetime("30d"), minutes(30 * 24 * 60));
        assert_eq!(parse_key_lifetime("4w"), minutes(4 * 7 * 24 * 60));
        assert_eq!(parse_key_lifetime("366d"), minutes(366 * 24 * 60));
        assert_eq!(parse_key_lifetime("52w"), minutes(52 * 7 * 24 * 60));
        for too_long in ["367d", "53w", "8785h", "99999999999999999w"] {
            let e = parse_key_lifetime(too_long).unwrap_err();
            assert!(e.contains("out of range"), "{too_long}: {e}");
        }
        for bad in [
            "0d", "30", "", "d", "30s", "1.5d", "-1d", "30 d", "30D", "1y", "+1d",
        ] {
            assert!(parse_key_lifetime(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_key_lifetime("30").unwrap_err(),
            "`30` is not a key lifetime: write e.g. 90m, 12h, 30d or 4w"
        );
    }

    #[test]
    fn statuses_are_the_known_ones() {
        assert_eq!(parse_status("delivered").as_deref(), Ok("delivered"));
        let e = parse_status("deliverd").unwrap_err();
        assert!(e.contains("in_transit"), "{e}");
    }
}
