//! Timestamps are written as RFC 3339 in UTC with exactly six fractional
//! digits (`2026-11-21T09:30:12.123456Z`), and read in any RFC 3339 form.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serializer;

/// Formats a timestamp the way the service writes it.
pub fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// `serialize_with` for `DateTime<Utc>`.
pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(t))
}

/// `serialize_with` for `Option<DateTime<Utc>>` (null when absent).
pub fn serialize_option<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&format(t)),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_written_with_six_fraction_digits() {
        let t: DateTime<Utc> = "2026-11-21T09:30:12Z".parse().unwrap();
        assert_eq!(format(&t), "2026-11-21T09:30:12.000000Z");
    }
}
