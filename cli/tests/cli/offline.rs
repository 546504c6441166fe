//! What `shipctl` does without a service: signing and verifying deliveries
//! against the shared vectors, usage errors, help, completions, exit codes,
//! colour and closed pipes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use crate::helpers::{Shipctl, vectors_path};
use crate::snapshot;

#[derive(Deserialize)]
struct Vectors {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    signing_key: String,
    body_base64: String,
    header: String,
    valid: bool,
}

fn vectors() -> Vec<Case> {
    let text = std::fs::read_to_string(vectors_path()).expect("read the vectors");
    let vectors: Vectors = serde_json::from_str(&text).expect("parse the vectors");
    assert!(
        vectors.cases.len() >= 10,
        "too few vectors to mean anything"
    );
    vectors.cases
}

#[test]
fn verify_accepts_exactly_the_valid_shared_vectors() {
    let shipctl = Shipctl::new();
    let dir = tempfile::tempdir().unwrap();
    let mut summary = String::new();
    for case in vectors() {
        let body = STANDARD.decode(&case.body_base64).expect("base64 body");
        let file = dir.path().join(format!("{}.body", case.name));
        std::fs::write(&file, &body).unwrap();
        let run = shipctl.run(&[
            "webhooks",
            "verify",
            "--signing-key",
            &case.signing_key,
            "--signature",
            &case.header,
            "--body-file",
            file.to_str().unwrap(),
        ]);
        let expected = if case.valid { 0 } else { 1 };
        assert_eq!(run.code, expected, "{}:\n{run}", case.name);
        if case.valid {
            assert_eq!(run.stdout, "valid\n", "{}", case.name);
            assert_eq!(run.stderr, "", "{}", case.name);
        } else {
            assert_eq!(run.stdout, "", "{}", case.name);
            assert_eq!(
                run.stderr.lines().count(),
                1,
                "{}: one line on stderr:\n{run}",
                case.name
            );
        }
        summary.push_str(&format!("{}: exit {} {}", case.name, run.code, run.stderr));
        if run.stderr.is_empty() {
            summary.push('\n');
        }
    }
    snapshot!("verify_vectors", summary);
}

#[test]
fn sign_reproduces_every_valid_vector_from_stdin_and_the_environment() {
    for case in vectors().into_iter().filter(|c| c.valid) {
        let body = STANDARD.decode(&case.body_base64).expect("base64 body");
        let shipctl = Shipctl::new().env("SHIPCTL_SIGNING_KEY", &case.signing_key);
        let run = shipctl.run_with_stdin(&["webhooks", "sign"], &body).ok();
        assert_eq!(run.stdout, format!("{}\n", case.header), "{}", case.name);
        // And verify reads the body from stdin just the same.
        shipctl
            .run_with_stdin(&["webhooks", "verify", "--signature", &case.header], &body)
            .ok();
    }
}

#[test]
fn verify_without_a_key_is_a_usage_error() {
    let run = Shipctl::new()
        .run_with_stdin(&["webhooks", "verify", "--signature", "sha256=00"], b"{}")
        .expect_code(2);
    snapshot!("verify_without_a_key", run);
}

#[test]
fn the_signing_key_from_the_environment_is_never_shown() {
    let key = "whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA";
    let shipctl = Shipctl::new().env("SHIPCTL_SIGNING_KEY", key);
    let run = shipctl.run(&["webhooks", "verify", "--help"]).ok();
    assert!(!run.stdout.contains(key), "{run}");
    let run = shipctl.run_with_stdin(&["webhooks", "verify", "--signature", "sha256=00"], b"");
    assert!(!run.stderr.contains(key), "{run}");
}

#[test]
fn usage_errors_exit_2_and_say_what_is_wrong() {
    let shipctl = Shipctl::new();
    let mut all = String::new();
    for args in [
        &["shipments", "frobnicate"][..],
        &["shipments", "rate", "SHP-7K3M-Q9ZX", "11"],
        &["shipments", "list", "--page-size", "500"],
        &["shipments", "list", "--page", "2", "--all"],
        &["shipments", "list", "--created-after", "21/11/2026"],
        &["shipments", "create", "--weight", "4.5"],
        &["shipments", "watch", "SHP-7K3M-Q9ZX", "--interval", "2h"],
        &["webhooks", "verify", "--signing-key", "whsec_x"],
        &["--output", "yaml", "couriers", "list"],
    ] {
        let run = shipctl.run(args).expect_code(2);
        assert_eq!(run.stdout, "", "{run}");
        all.push_str(&format!("$ shipctl {}\n{}\n", args.join(" "), run.stderr));
    }
    snapshot!("usage_errors", all);
}

#[test]
fn every_help_documents_the_exit_codes() {
    let shipctl = Shipctl::new();
    let mut commands = vec![vec![]];
    let mut i = 0;
    while i < commands.len() {
        let mut args: Vec<&str> = commands[i].iter().map(String::as_str).collect();
        args.push("--help");
        let run = shipctl.run(&args).ok();
        assert!(
            run.stdout.contains("Exit codes:\n  0  success"),
            "`shipctl {}` does not document the exit codes",
            args.join(" ")
        );
        // Queue the subcommands listed in this help.
        let mut in_commands = false;
        for line in run.stdout.lines() {
            if line == "Commands:" {
                in_commands = true;
            } else if in_commands && line.starts_with("  ") {
                let name = line.split_whitespace().next().unwrap();
                if name != "help" {
                    let mut sub = commands[i].clone();
                    sub.push(name.to_owned());
                    commands.push(sub);
                }
            } else if in_commands {
                in_commands = false;
            }
        }
        i += 1;
    }
    // Every command of the issue is there.
    let names: Vec<String> = commands.iter().map(|c| c.join(" ")).collect();
    for expected in [
        "shipments create",
        "shipments list",
        "shipments get",
        "shipments cancel",
        "shipments rate",
        "shipments confirmation-code",
        "shipments watch",
        "couriers list",
        "login",
        "logout",
        "whoami",
        "keys create",
        "keys list",
        "keys delete",
        "keys verify",
        "webhooks register",
        "webhooks list",
        "webhooks enable",
        "webhooks disable",
        "webhooks delete",
        "webhooks deliveries",
        "webhooks rotate-shipment-key",
        "webhooks sign",
        "webhooks verify",
        "config show",
        "config set",
        "completions",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "no `{expected}` in {names:?}"
        );
    }
}

#[test]
fn help_texts_read_well() {
    let shipctl = Shipctl::new();
    snapshot!("help_root", shipctl.run(&["--help"]).ok().stdout);
    snapshot!(
        "help_shipments",
        shipctl.run(&["shipments", "--help"]).ok().stdout
    );
    snapshot!(
        "help_shipments_create",
        shipctl.run(&["shipments", "create", "-h"]).ok().stdout
    );
    snapshot!(
        "help_webhooks_verify",
        shipctl.run(&["webhooks", "verify", "-h"]).ok().stdout
    );
    // What each says of the Standard Webhooks headers and their timestamps.
    snapshot!(
        "help_listen",
        shipctl.run(&["listen", "--help"]).ok().stdout
    );
    snapshot!(
        "help_replay",
        shipctl.run(&["replay", "--help"]).ok().stdout
    );
}

#[test]
fn completions_cover_the_commands() {
    let shipctl = Shipctl::new();
    for shell in ["bash", "zsh", "fish"] {
        let run = shipctl.run(&["completions", shell]).ok();
        // fish spells a long option `-l output`.
        let output_flag = if shell == "fish" {
            "-l output"
        } else {
            "--output"
        };
        for word in [
            "shipments",
            "confirmation-code",
            "rotate-shipment-key",
            output_flag,
        ] {
            assert!(run.stdout.contains(word), "{shell} completion lacks {word}");
        }
    }
    shipctl.run(&["completions", "tcsh"]).expect_code(2);
}

#[test]
fn a_closed_pipe_ends_quietly_with_0() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(crate::helpers::SHIPCTL)
        .args(["completions", "bash"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn no_api_key_is_an_authentication_error_that_says_how_to_fix_it() {
    let run = Shipctl::new().run(&["couriers", "list"]).expect_code(3);
    snapshot!("no_api_key", run);
}

#[test]
fn a_key_of_the_other_environment_is_refused_before_sending() {
    let live = "sk_live_0123456789abcdefghijABCDEFGHIJ";
    let run = Shipctl::new()
        .env("SHIPCTL_API_KEY", live)
        .run(&["shipments", "list"])
        .expect_code(2);
    assert!(!run.stderr.contains(live), "{run}");
    snapshot!("wrong_environment", run);

    // Production without its address.
    let run = Shipctl::new()
        .env("SHIPCTL_API_KEY", live)
        .run(&["--environment", "production", "shipments", "list"])
        .expect_code(2);
    snapshot!("production_without_address", run);
}

#[test]
fn no_service_at_the_address_exits_6() {
    let run = Shipctl::new()
        .env("SHIPCTL_API_KEY", "sk_test_0123456789abcdefghijABCDEFGHIJ")
        .env("SHIPCTL_BASE_URL", "http://127.0.0.1:9/api/v1")
        .run(&["couriers", "list"])
        .expect_code(6);
    assert!(run.stderr.starts_with("error: cannot connect"), "{run}");
    assert!(
        run.stderr.contains("hint: is the service running there?"),
        "{run}"
    );
}

#[test]
fn online_commands_without_a_session_say_to_log_in() {
    let shipctl = Shipctl::new();
    for args in [
        &["keys", "list"][..],
        &["webhooks", "list"],
        &["keys", "create"],
    ] {
        let run = shipctl.run(args).expect_code(3);
        assert_eq!(
            run.stderr, "error: not signed in\nhint: run `shipctl login`\n",
            "{args:?}"
        );
    }
    // Logging out without a session is harmless.
    let run = shipctl.run(&["logout"]).ok();
    assert_eq!(run.stderr, "not signed in (profile default)\n");
    // And a password cannot be asked for without a terminal.
    let run = shipctl
        .run(&["login", "--email", "me@example.com"])
        .expect_code(2);
    snapshot!("login_without_terminal", run);
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let shipctl = Shipctl::new().env("SHIPCTL_API_KEY", "sk_test_0123456789abcdefghijABCDEFGHIJ");
    let plain = shipctl.run(&["config", "show"]).ok();
    assert!(!plain.stdout.contains('\x1b'), "{plain}");
    let forced = shipctl.run(&["--color", "always", "config", "show"]).ok();
    assert!(forced.stdout.contains("\x1b["), "{forced}");
    // NO_COLOR does not override an explicit --color always, and changes
    // nothing off a terminal.
    let shipctl = shipctl.env("NO_COLOR", "1");
    assert!(
        shipctl
            .run(&["--color", "always", "config", "show"])
            .ok()
            .stdout
            .contains("\x1b[")
    );
    assert_eq!(shipctl.run(&["config", "show"]).ok().stdout, plain.stdout);
    let errors = shipctl.run(&["--color", "never", "shipments", "get", "nope"]);
    assert!(!errors.stderr.contains('\x1b'), "{errors}");
}

#[test]
fn bad_webhook_urls_are_refused_before_anything_is_sent() {
    // No base URL, key or session: had it tried to send, the error would
    // be another one.
    let shipctl = Shipctl::new();
    let run = shipctl
        .run(&["webhooks", "register", "http://shop.example.com/hooks"])
        .expect_code(2);
    assert!(
        run.stderr
            .contains("the scheme is `http`; webhooks are delivered over `https` only"),
        "{run}"
    );
    let run = shipctl
        .run(&[
            "shipments",
            "create",
            "--courier",
            "1",
            "--webhook-url",
            "https://shop.example.com/hooks#top",
        ])
        .expect_code(2);
    assert!(run.stderr.contains("fragment"), "{run}");
    // A request file is read before sending; nothing listens on port 9.
    let run = shipctl
        .clone()
        .env("SHIPCTL_BASE_URL", "http://127.0.0.1:9/api/v1")
        .env("SHIPCTL_API_KEY", "sk_test_0123456789abcdefghijABCDEFGHIJ")
        .run_with_stdin(
            &["shipments", "create", "--file", "-"],
            br#"{"courier_company_id": 1, "webhook_url": "https://u:pw@shop.example.com/"}"#,
        )
        .expect_code(2);
    assert!(run.stderr.contains("credentials"), "{run}");
}
