//! Delivery health at a glance: a webhook's attempts per hour over the
//! last 24 hours and per day over the last 7 days, drawn here as SVG inside
//! the page (so the page needs no script, and keeps its CSP: the drawing
//! has presentation attributes and classes of the stylesheet, never a
//! `style`), with its success rate and its last failure; and the
//! overview's list of webhooks failing now.
//!
//! Every figure a chart draws is also text: the caption and the drawing's
//! title sum it up, and a table under each chart (folded, one click away)
//! has every bar's numbers, for a screen reader and for anyone who would
//! rather read than look.

use chrono::Timelike;
use maud::{Markup, html};
use shipment_sdk::model::{Delivery, timestamp};

use super::layout;
use crate::app::webhooks::DeliveryHealth;
use crate::domain::delivery_health::{Bucket, Chart, success_permille};

/// The drawing's own units (its `viewBox`): the stylesheet scales it to the
/// width of its column, so a unit is about a CSS pixel on a phone (390 px)
/// and about two in a desktop's column. Its text is 10 units high.
const WIDTH: f64 = 320.0;
const HEIGHT: f64 = 150.0;
/// Room for the counts on the left, and the times under the bars.
const LEFT: f64 = 30.0;
const RIGHT: f64 = 4.0;
const TOP: f64 = 8.0;
const BOTTOM: f64 = 20.0;
/// The share of a bar's slot it fills: the rest is the gap to the next.
const BAR_FILL: f64 = 0.7;

/// What a chart is of: its bars' length, for its words and labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Per {
    Hour,
    Day,
}

impl Per {
    /// The element id's stem, unique on the page.
    fn id(self) -> &'static str {
        match self {
            Per::Hour => "chart-hours",
            Per::Day => "chart-days",
        }
    }

    fn window(self) -> &'static str {
        match self {
            Per::Hour => "the last 24 hours",
            Per::Day => "the last 7 days",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Per::Hour => "hour",
            Per::Day => "day",
        }
    }

    /// A bar's time in words: `14:00–15:00`, `Sat 28 Nov`.
    fn bar(self, b: &Bucket) -> String {
        match self {
            Per::Hour => format!("{}–{}", b.from.format("%H:%M"), b.to.format("%H:%M")),
            Per::Day => b.from.format("%a %-d %b").to_string(),
        }
    }

    /// The label under a bar, for the bars that get one: every sixth hour
    /// (on the hour, UTC), every day.
    fn label(self, b: &Bucket) -> Option<String> {
        match self {
            Per::Hour => b
                .from
                .hour()
                .is_multiple_of(6)
                .then(|| b.from.format("%H:%M").to_string()),
            Per::Day => Some(b.from.format("%a %-d").to_string()),
        }
    }
}

/// The top of the scale for a tallest bar of `tallest`: the next of 1, 2,
/// 5, 10, 20, 50, … at or above it, so the grid's numbers are round.
fn scale_top(tallest: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            let top = step.saturating_mul(m);
            if top >= tallest || top == u64::MAX {
                return top;
            }
        }
        step = step.saturating_mul(10);
    }
}

/// `permille` as a percentage with one decimal: `97.5 %`.
fn percent(permille: u64) -> String {
    format!("{}.{} %", permille / 10, permille % 10)
}

/// The success rate of `succeeded` and `failed` attempts in words.
pub(crate) fn success_rate(succeeded: u64, failed: u64) -> String {
    let total = succeeded.saturating_add(failed);
    match success_permille(succeeded, failed) {
        None => "no deliveries".to_owned(),
        // Rounded down, a success among thousands of failures would be 0 %.
        Some(0) if succeeded > 0 => format!("under 0.1 % ({succeeded} of {total} delivered)"),
        Some(p) => format!("{} ({succeeded} of {total} delivered)", percent(p)),
    }
}

/// A number of attempts in words.
fn deliveries(n: u64) -> String {
    match n {
        1 => "1 delivery".to_owned(),
        n => format!("{n} deliveries"),
    }
}

/// A coordinate or length, short: two decimals at most.
fn unit(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// One chart: a figure with its caption, the drawing, a legend and the
/// table of its numbers.
fn chart(per: Per, chart: &Chart) -> Markup {
    let id = per.id();
    let (succeeded, failed) = (chart.succeeded(), chart.failed());
    let summary = if succeeded + failed == 0 {
        format!("No deliveries in {}.", per.window())
    } else {
        format!(
            "{} in {}: {succeeded} delivered, {failed} failed.",
            deliveries(succeeded + failed),
            per.window()
        )
    };
    let top = scale_top(chart.tallest().max(1));
    let plot_width = WIDTH - LEFT - RIGHT;
    let plot_height = HEIGHT - TOP - BOTTOM;
    let base = TOP + plot_height;
    let slot = plot_width / chart.buckets.len().max(1) as f64;
    let height = |n: u64| n as f64 / top as f64 * plot_height;
    let mut ticks = vec![0, top];
    if top.is_multiple_of(2) {
        ticks.insert(1, top / 2);
    }
    html! {
        figure.chart id=(id) {
            figcaption {
                strong { "Per " (per.noun()) ", " (per.window()) } " (UTC). " (summary)
            }
            svg.chart-drawing viewBox={ "0 0 " (unit(WIDTH)) " " (unit(HEIGHT)) } role="img"
                aria-labelledby={ (id) "-title" } {
                title id={ (id) "-title" } {
                    "Deliveries per " (per.noun()) " in " (per.window()) ": " (succeeded) " delivered, "
                    (failed) " failed. The table below has each " (per.noun()) "'s numbers."
                }
                defs {
                    // Failures are hatched as well as red, so they stand
                    // apart without colour too.
                    pattern id={ (id) "-hatch" } patternUnits="userSpaceOnUse" width="4" height="4"
                        patternTransform="rotate(45)" {
                        rect.hatch-ground width="4" height="4" {}
                        rect.hatch-line width="2" height="4" {}
                    }
                }
                g.grid {
                    @for tick in &ticks {
                        @let y = base - height(*tick);
                        line x1=(unit(LEFT)) x2=(unit(WIDTH - RIGHT)) y1=(unit(y)) y2=(unit(y)) {}
                        text.tick x=(unit(LEFT - 4.0)) y=(unit(y + 3.5)) text-anchor="end" { (tick) }
                    }
                }
                g.bars {
                    @for (i, b) in chart.buckets.iter().enumerate() {
                        @let x = LEFT + slot * (i as f64 + (1.0 - BAR_FILL) / 2.0);
                        @let ok = height(b.succeeded);
                        @let bad = height(b.failed);
                        g.bar data-from=(timestamp::format(&b.from)) data-to=(timestamp::format(&b.to))
                            data-succeeded=(b.succeeded) data-failed=(b.failed) {
                            title { (per.bar(b)) ": " (b.succeeded) " delivered, " (b.failed) " failed" }
                            @if b.succeeded > 0 {
                                rect.bar-ok x=(unit(x)) y=(unit(base - ok)) width=(unit(slot * BAR_FILL))
                                    height=(unit(ok)) {}
                            }
                            @if b.failed > 0 {
                                rect.bar-failed x=(unit(x)) y=(unit(base - ok - bad)) width=(unit(slot * BAR_FILL))
                                    height=(unit(bad)) fill={ "url(#" (id) "-hatch)" } {}
                            }
                        }
                    }
                }
                g.axis {
                    line x1=(unit(LEFT)) x2=(unit(WIDTH - RIGHT)) y1=(unit(base)) y2=(unit(base)) {}
                    @for (i, b) in chart.buckets.iter().enumerate() {
                        @if let Some(label) = per.label(b) {
                            @let x = LEFT + slot * (i as f64 + 0.5);
                            text.tick x=(unit(x)) y=(unit(HEIGHT - 6.0)) text-anchor="middle" { (label) }
                        }
                    }
                }
            }
            ul.legend {
                li { span.swatch.swatch-ok {} "Delivered" }
                li { span.swatch.swatch-failed {} "Failed" }
            }
            details {
                summary { "Each " (per.noun()) "'s numbers" }
                div.table-wrap {
                    table {
                        thead {
                            tr {
                                th { @match per { Per::Hour => "Hour (UTC)", Per::Day => "Day (UTC)" } }
                                th.num { "Delivered" }
                                th.num { "Failed" }
                            }
                        }
                        tbody {
                            @for b in &chart.buckets {
                                tr {
                                    td data-label=(match per { Per::Hour => "Hour", Per::Day => "Day" }) {
                                        time datetime=(timestamp::format(&b.from)) { (per.bar(b)) }
                                    }
                                    td.num data-label="Delivered" { (b.succeeded) }
                                    td.num data-label="Failed" { (b.failed) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What went wrong with a failed attempt, in words.
pub(crate) fn failure(d: &Delivery) -> String {
    match (&d.error, d.status_code) {
        (Some(error), _) => layout::sentence(error),
        (None, Some(code)) => format!("HTTP {code}."),
        (None, None) => "It failed.".to_owned(),
    }
}

/// The webhook page's section: failing now (when the latest attempt
/// failed), the success rates, the last failure, and both charts.
pub(crate) fn section(health: &DeliveryHealth) -> Markup {
    let (hours, days) = (&health.charts.hours, &health.charts.days);
    let failing = health.latest.as_ref().filter(|d| !d.success);
    html! {
        section.health aria-labelledby="delivery-health" {
            h2 #delivery-health { "Delivery health" }
            @if let Some(d) = failing {
                div.notice.notice-error {
                    strong { "Failing now." } " Its latest delivery, at " (layout::when(&d.delivered_at))
                    ", failed: " (failure(d))
                }
            }
            div.card {
                dl.facts {
                    dt { "Delivered, last 24 hours" }
                    dd #rate-hours { (success_rate(hours.succeeded(), hours.failed())) }
                    dt { "Delivered, last 7 days" }
                    dd #rate-days { (success_rate(days.succeeded(), days.failed())) }
                    dt { "Last failure" }
                    dd #last-failure {
                        @if let Some(d) = &health.last_failure {
                            (layout::when(&d.delivered_at)) ", attempt #" (d.id) " of "
                            a href={ "/shipments/" (d.shipment_code) } { code { (d.shipment_code) } }
                            ": " (failure(d))
                        } @else {
                            span.muted { "never" }
                        }
                    }
                }
            }
            div.charts {
                (chart(Per::Hour, hours))
                (chart(Per::Day, days))
            }
        }
    }
}

/// The overview's webhooks failing now: each with its latest attempt, and
/// a note when there are more than were listed (`more`).
pub(crate) fn failing_list(failing: &[Delivery], more: bool) -> Markup {
    html! {
        ul.failing {
            @for d in failing {
                li {
                    @if let Some(id) = d.webhook_id {
                        a.url href={ "/webhooks/" (id) } { (d.url) }
                    } @else {
                        span.url { (d.url) }
                    }
                    div.small.muted {
                        "Latest delivery " (layout::when(&d.delivered_at)) ": " (failure(d))
                    }
                }
            }
        }
        @if more {
            p.muted {
                "More webhooks are failing than are listed here (" (failing.len()) "): "
                a href="/webhooks" { "see them all" } "."
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;

    use super::*;
    use crate::domain::delivery_health::{HourCount, Span, charts};

    #[test]
    fn the_scale_ends_on_a_round_number_at_or_above_the_tallest_bar() {
        let tops: Vec<u64> = [1, 2, 3, 5, 6, 10, 11, 20, 21, 50, 51, 99, 100, 101, 999_999]
            .into_iter()
            .map(scale_top)
            .collect();
        assert_eq!(
            tops,
            [
                1, 2, 5, 5, 10, 10, 20, 20, 50, 50, 100, 100, 100, 200, 1_000_000
            ]
        );
        assert_eq!(scale_top(u64::MAX), u64::MAX);
    }

    #[test]
    fn the_rate_never_rounds_a_failure_away() {
        assert_eq!(success_rate(0, 0), "no deliveries");
        assert_eq!(success_rate(39, 1), "97.5 % (39 of 40 delivered)");
        assert_eq!(success_rate(9_999, 1), "99.9 % (9999 of 10000 delivered)");
        assert_eq!(success_rate(3, 0), "100.0 % (3 of 3 delivered)");
        assert_eq!(success_rate(0, 2), "0.0 % (0 of 2 delivered)");
        assert_eq!(success_rate(1, 9_999), "under 0.1 % (1 of 10000 delivered)");
    }

    fn drawn(counts: &[HourCount]) -> String {
        let now = DateTime::parse_from_rfc3339("2026-11-28T20:52:39Z")
            .unwrap()
            .to_utc();
        chart(Per::Hour, &charts(Span::at(now), counts).hours).into_string()
    }

    /// The `height` of each `<rect class="…">` of the drawing.
    fn heights(svg: &str, class: &str) -> Vec<f64> {
        let marker = format!("<rect class=\"{class}\"");
        svg.match_indices(&marker)
            .map(|(at, _)| {
                let rest = &svg[at..];
                let h = &rest[rest.find(" height=\"").unwrap() + 9..];
                h[..h.find('"').unwrap()].parse().unwrap()
            })
            .collect()
    }

    #[test]
    fn bars_are_as_tall_as_their_numbers_on_a_round_scale() {
        // The last hour (the span's 164th): 3 delivered, 1 failed; the
        // hour before: 2 delivered. The scale's top is 5.
        let svg = drawn(&[
            HourCount {
                hour: 163,
                succeeded: 2,
                failed: 0,
            },
            HourCount {
                hour: 164,
                succeeded: 3,
                failed: 1,
            },
        ]);
        let per_delivery = (HEIGHT - TOP - BOTTOM) / 5.0;
        let ok = heights(&svg, "bar-ok");
        let bad = heights(&svg, "bar-failed");
        assert_eq!(ok.len(), 2, "{svg}");
        assert!((ok[0] - 2.0 * per_delivery).abs() < 0.01, "{ok:?}");
        assert!((ok[1] - 3.0 * per_delivery).abs() < 0.01, "{ok:?}");
        assert_eq!(bad.len(), 1);
        assert!((bad[0] - per_delivery).abs() < 0.01, "{bad:?}");
        assert!(
            svg.contains("data-succeeded=\"3\" data-failed=\"1\""),
            "{svg}"
        );
        assert!(svg.contains("<title>20:00–21:00: 3 delivered, 1 failed</title>"));
        assert!(svg.contains("6 deliveries in the last 24 hours: 5 delivered, 1 failed."));
        // SVG elements are closed: HTML reads `<rect>` alone as an open
        // element, which would swallow the next bar.
        assert_eq!(svg.matches("<rect").count(), svg.matches("</rect>").count());
        assert!(!svg.contains("style="), "the CSP allows no inline style");
    }

    #[test]
    fn an_empty_chart_says_so_and_draws_no_bar() {
        let svg = drawn(&[]);
        assert!(svg.contains("No deliveries in the last 24 hours."), "{svg}");
        assert!(heights(&svg, "bar-ok").is_empty());
        assert!(heights(&svg, "bar-failed").is_empty());
        assert_eq!(svg.matches("<g class=\"bar\"").count(), 24);
    }
}
