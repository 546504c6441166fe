//! Delivery health at a glance: the time a webhook's charts cover (the last
//! 24 hours by hour, the last 7 days by day, both in UTC), the delivery
//! log's hourly counts folded into their bars, and the success rate.
//!
//! The store counts the log once, by hour, over the whole [`Span`]; both
//! charts are drawn from that one answer, so they cannot disagree, and the
//! store reads at most [`MAX_SPAN_HOURS`] groups however busy the webhook.

use chrono::{DateTime, Duration, DurationRound, Utc};

/// Hourly bars in the short chart: the hour now running and the 23 before.
pub(crate) const HOURS_SHOWN: usize = 24;

/// Daily bars in the long chart: today (UTC) and the 6 days before.
pub(crate) const DAYS_SHOWN: usize = 7;

/// The most hours a [`Span`] has: the days shown, whole.
pub(crate) const MAX_SPAN_HOURS: usize = DAYS_SHOWN * 24;

/// What the store counts: from midnight (UTC) at the start of the first
/// day shown to the end of the hour now running. Both ends are whole
/// hours, so the store's hour `n` is `[since + n h, since + (n + 1) h)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// Midnight, [`DAYS_SHOWN`] − 1 days before today's.
    pub since: DateTime<Utc>,
    /// The end of the hour now running (excluded).
    pub until: DateTime<Utc>,
}

impl Span {
    /// The span of charts drawn at `now`.
    pub(crate) fn at(now: DateTime<Utc>) -> Span {
        // Truncating fails only for instants hundreds of thousands of years
        // away, which no clock reads: then the bars are merely unaligned.
        let hour = now.duration_trunc(Duration::hours(1)).unwrap_or(now);
        let day = now.duration_trunc(Duration::days(1)).unwrap_or(now);
        Span {
            since: day - Duration::days(DAYS_SHOWN as i64 - 1),
            until: hour + Duration::hours(1),
        }
    }

    /// How many hours it has: between [`MAX_SPAN_HOURS`] − 23 (just after
    /// midnight) and [`MAX_SPAN_HOURS`] (a span made by [`Span::at`] never
    /// has more; one made by hand is cut there).
    pub(crate) fn hours(&self) -> usize {
        usize::try_from((self.until - self.since).num_hours())
            .unwrap_or(0)
            .min(MAX_SPAN_HOURS)
    }
}

/// One hour of a [`Span`] as the store counts it: `hour` from the span's
/// start, and its attempts that succeeded and failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HourCount {
    pub hour: i64,
    pub succeeded: u64,
    pub failed: u64,
}

/// One bar: the attempts logged in `[from, to)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bucket {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub succeeded: u64,
    pub failed: u64,
}

impl Bucket {
    /// Every attempt of the bar.
    pub(crate) fn total(&self) -> u64 {
        self.succeeded + self.failed
    }
}

/// The bars of one chart, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chart {
    pub buckets: Vec<Bucket>,
}

impl Chart {
    /// Attempts that succeeded, in all.
    pub(crate) fn succeeded(&self) -> u64 {
        self.buckets.iter().map(|b| b.succeeded).sum()
    }

    /// Attempts that failed, in all.
    pub(crate) fn failed(&self) -> u64 {
        self.buckets.iter().map(|b| b.failed).sum()
    }

    /// The most attempts in one bar (0 with none).
    pub(crate) fn tallest(&self) -> u64 {
        self.buckets.iter().map(Bucket::total).max().unwrap_or(0)
    }
}

/// Both charts of a webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Charts {
    /// [`HOURS_SHOWN`] bars of an hour, the last one the hour now running.
    pub hours: Chart,
    /// [`DAYS_SHOWN`] bars of a day (UTC), the last one today.
    pub days: Chart,
}

/// The charts of `span` from the store's hourly `counts`. An hour outside
/// the span (a row logged by a process whose clock is ahead) is left out,
/// as the store's bounds leave it out.
pub(crate) fn charts(span: Span, counts: &[HourCount]) -> Charts {
    let span_hours = span.hours();
    let bucket = |from: DateTime<Utc>, length: Duration| Bucket {
        from,
        to: from + length,
        succeeded: 0,
        failed: 0,
    };
    let mut hours: Vec<Bucket> = (0..HOURS_SHOWN)
        .map(|i| {
            bucket(
                span.until - Duration::hours((HOURS_SHOWN - i) as i64),
                Duration::hours(1),
            )
        })
        .collect();
    let mut days: Vec<Bucket> = (0..DAYS_SHOWN)
        .map(|d| bucket(span.since + Duration::days(d as i64), Duration::days(1)))
        .collect();
    // The span's hour of the first hourly bar.
    let first_hour = span_hours.saturating_sub(HOURS_SHOWN);
    for c in counts {
        let Some(hour) = usize::try_from(c.hour).ok().filter(|h| *h < span_hours) else {
            continue;
        };
        if let Some(bar) = hour.checked_sub(first_hour).and_then(|i| hours.get_mut(i)) {
            bar.succeeded += c.succeeded;
            bar.failed += c.failed;
        }
        if let Some(bar) = days.get_mut(hour / 24) {
            bar.succeeded += c.succeeded;
            bar.failed += c.failed;
        }
    }
    Charts {
        hours: Chart { buckets: hours },
        days: Chart { buckets: days },
    }
}

/// The share of attempts that succeeded, in tenths of a percent, rounded
/// down (so a single failure among thousands never shows as 100 %);
/// `None` without attempts.
pub(crate) fn success_permille(succeeded: u64, failed: u64) -> Option<u64> {
    // In u128: neither the sum nor a count times 1000 overflows it.
    let total = u128::from(succeeded) + u128::from(failed);
    if total == 0 {
        return None;
    }
    let permille = u128::from(succeeded) * 1000 / total;
    Some(u64::try_from(permille).unwrap_or(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    fn count(hour: i64, succeeded: u64, failed: u64) -> HourCount {
        HourCount {
            hour,
            succeeded,
            failed,
        }
    }

    #[test]
    fn the_span_runs_from_midnight_six_days_back_to_the_end_of_this_hour() {
        let span = Span::at(at("2026-11-28T20:52:39.123456Z"));
        assert_eq!(span.since, at("2026-11-22T00:00:00Z"));
        assert_eq!(span.until, at("2026-11-28T21:00:00Z"));
        assert_eq!(span.hours(), 6 * 24 + 21);
    }

    #[test]
    fn the_span_has_between_six_and_seven_whole_days() {
        let first = Span::at(at("2026-11-28T00:00:00Z"));
        assert_eq!(first.hours(), MAX_SPAN_HOURS - 23);
        let last = Span::at(at("2026-11-28T23:59:59.999999Z"));
        assert_eq!(last.hours(), MAX_SPAN_HOURS);
        assert_eq!(last.until, at("2026-11-29T00:00:00Z"));
    }

    #[test]
    fn the_bars_are_whole_hours_and_days_ending_with_now() {
        let span = Span::at(at("2026-11-28T20:52:39Z"));
        let charts = charts(span, &[]);
        let hours = &charts.hours.buckets;
        assert_eq!(hours.len(), HOURS_SHOWN);
        assert_eq!(hours[0].from, at("2026-11-27T21:00:00Z"));
        assert_eq!(hours[23].from, at("2026-11-28T20:00:00Z"));
        assert_eq!(hours[23].to, span.until);
        assert!(hours.windows(2).all(|w| w[0].to == w[1].from));
        let days = &charts.days.buckets;
        assert_eq!(days.len(), DAYS_SHOWN);
        assert_eq!(days[0].from, span.since);
        assert_eq!(days[6].from, at("2026-11-28T00:00:00Z"));
        assert_eq!(days[6].to, at("2026-11-29T00:00:00Z"));
        assert!(days.windows(2).all(|w| w[0].to == w[1].from));
        assert_eq!(charts.hours.tallest(), 0);
    }

    #[test]
    fn each_hour_counts_in_its_hourly_bar_and_its_day() {
        // 20:52 on the 28th: the span's hour 164 is 20:00, hour 141 is
        // 21:00 the day before (the first hourly bar), hour 140 is 20:00
        // the day before (only in its day's bar), hour 0 the 22nd's first.
        let span = Span::at(at("2026-11-28T20:52:39Z"));
        let counts = [
            count(0, 1, 0),
            count(140, 2, 1),
            count(141, 3, 0),
            count(164, 5, 4),
        ];
        let charts = charts(span, &counts);
        let hours = &charts.hours.buckets;
        assert_eq!((hours[0].succeeded, hours[0].failed), (3, 0));
        assert_eq!((hours[23].succeeded, hours[23].failed), (5, 4));
        assert_eq!(charts.hours.succeeded(), 8);
        assert_eq!(charts.hours.failed(), 4);
        let days = &charts.days.buckets;
        assert_eq!((days[0].succeeded, days[0].failed), (1, 0));
        // 140 and 141 are the 27th (hours 120 to 143).
        assert_eq!((days[5].succeeded, days[5].failed), (5, 1));
        assert_eq!((days[6].succeeded, days[6].failed), (5, 4));
        assert_eq!(charts.days.succeeded(), 11);
        assert_eq!(charts.days.failed(), 5);
        assert_eq!(charts.days.tallest(), 9);
    }

    #[test]
    fn hours_outside_the_span_are_left_out() {
        let span = Span::at(at("2026-11-28T20:52:39Z"));
        let hours = span.hours() as i64;
        let charts = charts(
            span,
            &[count(-1, 7, 7), count(hours, 7, 7), count(i64::MAX, 7, 7)],
        );
        assert_eq!(charts.hours.succeeded() + charts.hours.failed(), 0);
        assert_eq!(charts.days.succeeded() + charts.days.failed(), 0);
    }

    #[test]
    fn the_success_rate_is_rounded_down_and_absent_without_attempts() {
        assert_eq!(success_permille(0, 0), None);
        assert_eq!(success_permille(1, 0), Some(1000));
        assert_eq!(success_permille(0, 3), Some(0));
        assert_eq!(success_permille(39, 1), Some(975));
        assert_eq!(success_permille(2, 1), Some(666));
        assert_eq!(success_permille(99_999, 1), Some(999));
        assert_eq!(success_permille(u64::MAX, 0), Some(1000));
        assert_eq!(success_permille(u64::MAX, 1), Some(999));
    }
}
