//! Unit tests of `doctor`'s judgements, fixes and output.

use chrono::{DateTime, TimeDelta};
use shipment_sdk::model::{DeliveryId, ShipmentCode, WebhookId};

use super::account::judge_deliveries;
use super::*;
use crate::config::Setting;

fn hook(active: bool) -> Webhook {
    Webhook::new(
        WebhookId::new(3),
        "https://shop.example.com/hooks",
        active,
        at(0),
    )
}

fn at(minute: i64) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-05-28T08:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
        + TimeDelta::minutes(minute)
}

/// Deliveries newest first, `true` for a success; the newest at minute
/// 100, one a minute before it.
fn log(outcomes: &[bool]) -> Vec<Delivery> {
    outcomes
        .iter()
        .enumerate()
        .map(|(i, &success)| {
            let n = i64::try_from(i).unwrap();
            let mut d = Delivery::new(
                DeliveryId::new(100 - n),
                ShipmentCode::parse("SHP-7K3M-Q9ZX").unwrap(),
                1,
                "https://shop.example.com/hooks",
                12,
                at(100 - n),
            );
            d.success = success;
            if !success {
                d.status_code = Some(502);
            }
            d
        })
        .collect()
}

fn judge(active: bool, outcomes: &[bool]) -> Check {
    judge_deliveries("webhook 3".into(), &hook(active), &log(outcomes))
}

#[test]
fn a_webhook_with_no_failures_passes() {
    let check = judge(true, &[true; 20]);
    assert!(check.ok, "{check:?}");
    assert_eq!(
        check.detail,
        "https://shop.example.com/hooks: the last 20 deliveries succeeded"
    );
    assert!(judge(true, &[]).detail.ends_with("no deliveries yet"));
    assert!(
        judge(true, &[true])
            .detail
            .ends_with("its only delivery succeeded")
    );
}

#[test]
fn a_paused_webhook_fails_with_the_command_that_resumes_it() {
    let check = judge(false, &[true; 3]);
    assert!(!check.ok);
    assert_eq!(
        check.fix.as_deref(),
        Some("`shipctl webhooks enable 3` (or `shipctl webhooks delete 3`)")
    );
}

#[test]
fn a_failed_latest_delivery_fails_however_rare() {
    let mut outcomes = [true; 20];
    outcomes[0] = false;
    let check = judge(true, &outcomes);
    assert!(!check.ok, "{check:?}");
    assert_eq!(
        check.detail,
        "https://shop.example.com/hooks: 1 of the last 20 deliveries failed (5%); last \
         error at 2026-05-28 09:40:00Z: HTTP 502"
    );
    assert_eq!(
        check.fix.as_deref(),
        Some(
            "fix the receiver, then send what it missed again: `shipctl webhooks \
             redeliver 3 --failed-since 2026-05-28T09:40:00Z`"
        )
    );
}

#[test]
fn older_failures_fail_from_one_in_ten() {
    // One in twenty, the latest a success: shown, not failed.
    let mut outcomes = [true; 20];
    outcomes[5] = false;
    let check = judge(true, &outcomes);
    assert!(check.ok, "{check:?}");
    assert!(
        check
            .detail
            .contains("1 of the last 20 deliveries failed (5%)")
    );
    // Two in twenty: failed, redelivering from the oldest failure on.
    outcomes[12] = false;
    let check = judge(true, &outcomes);
    assert!(!check.ok, "{check:?}");
    assert!(
        check.detail.contains("last error at 2026-05-28 09:35:00Z"),
        "{check:?}"
    );
    assert!(
        check
            .fix
            .unwrap()
            .ends_with("--failed-since 2026-05-28T09:28:00Z`")
    );
}

fn settings(profile: Source, environment: Source) -> Settings {
    Settings {
        profile: Setting {
            value: "prod".into(),
            source: profile,
        },
        environment: Setting {
            value: EnvironmentName::Production,
            source: environment,
        },
        base_url: None,
        api_key: None,
        email: None,
    }
}

#[test]
fn a_fix_changes_a_setting_where_it_was_set() {
    let s = settings(Source::Flag("--profile"), Source::Profile("prod".into()));
    assert_eq!(
        change(&s, Some(&s.environment.source), "environment", "staging"),
        "`shipctl config set environment staging --profile prod`"
    );
    assert_eq!(
        change(
            &s,
            Some(&Source::Env("SHIPCTL_BASE_URL")),
            "base-url",
            "URL"
        ),
        "`export SHIPCTL_BASE_URL=URL`"
    );
    assert_eq!(
        change(&s, Some(&Source::Flag("--base-url")), "base-url", "URL"),
        "pass `--base-url URL`"
    );
    // A profile chosen by variable or by the file stays chosen: no flag.
    let s = settings(Source::Env("SHIPCTL_PROFILE"), Source::Default);
    assert_eq!(
        change(&s, None, "base-url", "URL"),
        "`shipctl config set base-url URL`"
    );
}

#[test]
fn only_checks_that_ran_and_failed_have_a_fix_in_json() {
    let checks = [
        Check::pass("a", "fine"),
        Check::fail("b", "broken", "`shipctl login`"),
        Check::skip("c", "b failed"),
    ];
    let mut out = Vec::new();
    print(&mut out, Format::Json, &checks).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"ok": false, "checks": [
            {"name": "a", "ok": true, "detail": "fine"},
            {"name": "b", "ok": false, "detail": "broken", "fix": "`shipctl login`"},
            {"name": "c", "ok": false, "skipped": true, "detail": "not checked: b failed"},
        ]})
    );
}

#[test]
fn the_table_aligns_details_and_puts_each_fix_under_its_failure() {
    let checks = [
        Check::pass("profile", "default"),
        Check::fail("API key", "none", "`shipctl login`"),
        Check::skip("webhook 12", "no session"),
    ];
    let mut out = Vec::new();
    print(&mut out, Format::Table, &checks).unwrap();
    let mut plain = Vec::new();
    anstream::StripStream::new(&mut plain)
        .write_all(&out)
        .unwrap();
    assert_eq!(
        String::from_utf8(plain).unwrap(),
        "✓ profile     default\n\
         ✗ API key     none\n  \
         → fix: `shipctl login`\n\
         - webhook 12  not checked: no session\n"
    );
}
