//! `shipctl webhooks sign` and `verify` with Standard Webhooks, offline:
//! the repository's vectors, the default scheme of each command, replays,
//! and the usage errors of the new flags.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use crate::helpers::{Shipctl, standard_vectors_path};
use crate::snapshot;

const KEY: &str = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
const BODY: &[u8] = br#"{"code":"SHP-7K3M-Q9ZX","version":4}"#;

#[derive(Deserialize)]
struct Vectors {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    keys: Vec<String>,
    id: String,
    timestamp: String,
    signature: String,
    body_base64: String,
    now: i64,
    tolerance_secs: Option<u64>,
    expected: String,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(standard_vectors_path()).expect("read the vectors");
    let vectors: Vectors = serde_json::from_str(&text).expect("parse the vectors");
    assert!(
        vectors.cases.len() >= 40,
        "too few vectors to mean anything"
    );
    vectors.cases
}

#[test]
fn verify_decides_every_standard_vector_as_documented() {
    let shipctl = Shipctl::new();
    let dir = tempfile::tempdir().unwrap();
    let mut summary = String::new();
    let mut checked = 0;
    for case in cases().into_iter().filter(|c| c.keys.len() == 1) {
        let file = dir.path().join(format!("{}.body", case.name));
        std::fs::write(&file, STANDARD.decode(&case.body_base64).unwrap()).unwrap();
        let now = case.now.to_string();
        let tolerance = format!("{}s", case.tolerance_secs.unwrap_or(300));
        let run = shipctl.run(&[
            "webhooks",
            "verify",
            "--signing-key",
            &case.keys[0],
            "--signature",
            &case.signature,
            "--id",
            &case.id,
            "--timestamp",
            &case.timestamp,
            "--tolerance",
            &tolerance,
            "--received-at",
            &now,
            "--body-file",
            file.to_str().unwrap(),
        ]);
        let valid = case.expected == "valid";
        assert_eq!(run.code, if valid { 0 } else { 1 }, "{}:\n{run}", case.name);
        assert_eq!(
            run.stdout,
            if valid { "valid\n" } else { "" },
            "{}",
            case.name
        );
        summary.push_str(&format!(
            "{} ({}): exit {} {}",
            case.name, case.expected, run.code, run.stderr
        ));
        if run.stderr.is_empty() {
            summary.push('\n');
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} cases");
    snapshot!("verify_standard_vectors", summary);
}

#[test]
fn sign_reproduces_the_single_signature_vectors() {
    let mut checked = 0;
    for case in cases() {
        if case.expected != "valid" || case.keys.len() != 1 || case.signature.contains(' ') {
            continue;
        }
        let body = STANDARD.decode(&case.body_base64).unwrap();
        let run = Shipctl::new()
            .env("SHIPCTL_SIGNING_KEY", &case.keys[0])
            .run_with_stdin(
                &[
                    "webhooks",
                    "sign",
                    "--scheme",
                    "standard",
                    "--id",
                    &case.id,
                    "--timestamp",
                    &case.timestamp,
                ],
                &body,
            )
            .ok();
        assert_eq!(
            run.stdout,
            format!(
                "webhook-id: {}\nwebhook-timestamp: {}\nwebhook-signature: {}\n",
                case.id, case.timestamp, case.signature
            ),
            "{}",
            case.name
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} cases");
}

/// The value of `name: value` in the output of `sign --scheme standard`.
fn header<'a>(output: &'a str, name: &str) -> &'a str {
    output
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(": "))
        .unwrap_or_else(|| panic!("no {name} in {output}"))
}

#[test]
fn what_sign_signs_now_verify_accepts_and_six_minutes_later_refuses() {
    let shipctl = Shipctl::new().env("SHIPCTL_SIGNING_KEY", KEY);
    let before = chrono::Utc::now().timestamp();
    let signed = shipctl
        .run_with_stdin(
            &[
                "webhooks",
                "sign",
                "--scheme",
                "standard",
                "--id",
                "msg_41_w7",
            ],
            BODY,
        )
        .ok();
    let after = chrono::Utc::now().timestamp();
    let timestamp = header(&signed.stdout, "webhook-timestamp");
    let at: i64 = timestamp.parse().unwrap();
    assert!(
        (before..=after).contains(&at),
        "{at} not in {before}..={after}"
    );
    let signature = header(&signed.stdout, "webhook-signature");

    // The scheme follows from the signature: no --scheme needed.
    let args = [
        "webhooks",
        "verify",
        "--signature",
        signature,
        "--id",
        "msg_41_w7",
        "--timestamp",
        timestamp,
    ];
    let run = shipctl.run_with_stdin(&args, BODY).ok();
    assert_eq!(run.stdout, "valid\n");

    let later = (at + 360).to_string();
    let mut replayed = args.to_vec();
    replayed.extend(["--received-at", later.as_str()]);
    let run = shipctl.run_with_stdin(&replayed, BODY).expect_code(1);
    assert_eq!(run.stdout, "");
    snapshot!("verify_standard_replayed", run.stderr);

    // The recorded delivery, checked as of when it arrived.
    let arrived = (at + 2).to_string();
    let mut recorded = args.to_vec();
    recorded.extend(["--received-at", arrived.as_str()]);
    assert_eq!(
        shipctl.run_with_stdin(&recorded, BODY).ok().stdout,
        "valid\n"
    );
}

#[test]
fn sign_keeps_the_service_scheme_by_default_byte_for_byte() {
    let shipctl = Shipctl::new().env("SHIPCTL_SIGNING_KEY", KEY);
    let default = shipctl.run_with_stdin(&["webhooks", "sign"], BODY).ok();
    let service = shipctl
        .run_with_stdin(&["webhooks", "sign", "--scheme", "service"], BODY)
        .ok();
    assert_eq!(
        default.stdout,
        format!("{}\n", webhook_verify::sign(KEY, BODY))
    );
    assert_eq!(service.stdout, default.stdout);
}

#[test]
fn verify_picks_the_scheme_from_what_it_is_given() {
    let shipctl = Shipctl::new().env("SHIPCTL_SIGNING_KEY", KEY);
    let service = webhook_verify::sign(KEY, BODY);
    // The service's signature, as before.
    shipctl
        .run_with_stdin(&["webhooks", "verify", "--signature", &service], BODY)
        .ok();
    // The same signature forced into the other scheme is malformed there.
    let run = shipctl
        .run_with_stdin(
            &[
                "webhooks",
                "verify",
                "--scheme",
                "standard",
                "--signature",
                &service,
                "--id",
                "msg_1",
                "--timestamp",
                "1",
            ],
            BODY,
        )
        .expect_code(1);
    assert!(
        run.stderr
            .starts_with("error: invalid signature: malformed webhook-signature header"),
        "{run}"
    );
    // A v1 signature without its id and timestamp is a usage error that
    // says what is missing, not a malformed X-Service-Signature.
    let run = shipctl
        .run_with_stdin(&["webhooks", "verify", "--signature", "v1,abc"], BODY)
        .expect_code(2);
    assert!(run.stderr.contains("needs --id and --timestamp"), "{run}");
}

#[test]
fn standard_usage_errors_exit_2_and_say_what_is_wrong() {
    let shipctl = Shipctl::new().env("SHIPCTL_SIGNING_KEY", KEY);
    let sha = webhook_verify::sign(KEY, BODY);
    let mut all = String::new();
    for args in [
        &["webhooks", "sign", "--scheme", "standard"][..],
        &["webhooks", "sign", "--id", "msg_1"],
        &["webhooks", "sign", "--timestamp", "1764324120"],
        &[
            "webhooks",
            "sign",
            "--scheme",
            "standard",
            "--id",
            "msg_1",
            "--timestamp",
            "-5",
        ],
        &["webhooks", "sign", "--scheme", "jwt"],
        &[
            "webhooks",
            "verify",
            "--signature",
            "v1,abc",
            "--id",
            "msg_1",
        ],
        &[
            "webhooks",
            "verify",
            "--signature",
            &sha,
            "--tolerance",
            "1m",
        ],
        &[
            "webhooks",
            "verify",
            "--scheme",
            "service",
            "--signature",
            &sha,
            "--id",
            "msg_1",
        ],
        &[
            "webhooks",
            "verify",
            "--signature",
            "v1,abc",
            "--id",
            "msg_1",
            "--timestamp",
            "1",
            "--tolerance",
            "2d",
        ],
        &[
            "webhooks",
            "verify",
            "--signature",
            "v1,abc",
            "--id",
            "msg_1",
            "--timestamp",
            "1",
            "--tolerance",
            "25h",
        ],
    ] {
        let run = shipctl.run_with_stdin(args, BODY).expect_code(2);
        assert_eq!(run.stdout, "", "{run}");
        all.push_str(&format!("$ shipctl {}\n{}\n", args.join(" "), run.stderr));
    }
    snapshot!("standard_usage_errors", all);
}

#[test]
fn a_key_that_cannot_sign_standard_webhooks_says_so() {
    let run = Shipctl::new()
        .env("SHIPCTL_SIGNING_KEY", "whsec_not base64!")
        .run_with_stdin(
            &["webhooks", "sign", "--scheme", "standard", "--id", "msg_1"],
            BODY,
        )
        .expect_code(1);
    assert!(!run.stderr.contains("not base64!"), "shows the key: {run}");
    snapshot!("sign_standard_bad_key", run.stderr);
}

#[test]
fn sign_help_reads_well() {
    let shipctl = Shipctl::new();
    snapshot!(
        "help_webhooks_sign",
        shipctl.run(&["webhooks", "sign", "-h"]).ok().stdout
    );
    snapshot!(
        "help_webhooks_sign_long",
        shipctl.run(&["webhooks", "sign", "--help"]).ok().stdout
    );
    snapshot!(
        "help_webhooks_verify_long",
        shipctl.run(&["webhooks", "verify", "--help"]).ok().stdout
    );
}
