//! Profiles in the configuration file, and which setting wins.

use crate::helpers::Shipctl;
use crate::snapshot;

const TEST_KEY: &str = "sk_test_0123456789abcdefghijABCDEFGHIJ";
const LIVE_KEY: &str = "sk_live_9876543210abcdefghijABCDEFGHIJ";

#[test]
fn profiles_are_set_shown_and_chosen() {
    let shipctl = Shipctl::new();
    // A key read from stdin stays out of the shell history, and is masked.
    let run = shipctl
        .run_with_stdin(
            &["config", "set", "api-key"],
            format!("{TEST_KEY}\n").as_bytes(),
        )
        .ok();
    assert_eq!(run.stderr, "profile default: api_key = sk_test_...GHIJ\n");
    shipctl
        .run(&["config", "set", "email", "ops@example.com"])
        .ok();
    let prod = ["--profile", "production"];
    for (key, value) in [
        ("environment", "production"),
        ("base-url", "https://shipments.example.com/api/v1"),
        ("api-key", LIVE_KEY),
    ] {
        let mut args = vec!["config", "set", key, value];
        args.extend(prod);
        shipctl.run(&args).ok();
    }
    let run = shipctl.run(&["config", "show"]).ok();
    assert!(
        !run.stdout.contains(TEST_KEY) && !run.stdout.contains(LIVE_KEY),
        "{run}"
    );
    snapshot!("config_show_default", run);

    let json = shipctl.run(&["config", "show", "-o", "json"]).ok().json();
    assert_eq!(json["active"]["profile"], "default");
    assert_eq!(json["profiles"].as_array().unwrap().len(), 2);

    // The profile flag, then the variable, then the file's default.
    let run = shipctl
        .run(&["config", "show", "-o", "json", "-p", "production"])
        .ok();
    assert_eq!(run.json()["active"]["environment"], "production");
    assert_eq!(run.json()["active"]["api_key"], "sk_live_...GHIJ");
    assert_eq!(
        run.json()["active"]["base_url_source"],
        "profile production"
    );
    let env = shipctl.clone().env("SHIPCTL_PROFILE", "production");
    let run = env.run(&["config", "show", "-o", "json"]).ok();
    assert_eq!(
        run.json()["active"]["profile_source"],
        "env SHIPCTL_PROFILE"
    );
    shipctl.run(&["config", "use", "production"]).ok();
    let run = shipctl.run(&["config", "show", "-o", "json"]).ok();
    assert_eq!(run.json()["active"]["profile"], "production");
    assert_eq!(run.json()["active"]["profile_source"], "default_profile");
    // A flag beats the profile.
    let run = shipctl
        .run(&[
            "config",
            "show",
            "-o",
            "json",
            "--base-url",
            "https://other.example.com/api/v1",
        ])
        .ok();
    assert_eq!(
        run.json()["active"]["base_url"],
        "https://other.example.com/api/v1"
    );
    assert_eq!(run.json()["active"]["base_url_source"], "flag --base-url");

    shipctl.run(&["config", "unset", "api-key"]).ok();
    let run = shipctl.run(&["config", "show", "-o", "json"]).ok();
    assert_eq!(run.json()["active"]["api_key"], serde_json::Value::Null);
}

#[test]
fn an_unknown_profile_or_environment_is_a_usage_error() {
    let shipctl = Shipctl::new();
    let run = shipctl
        .run(&["-p", "nope", "couriers", "list"])
        .expect_code(2);
    snapshot!("unknown_profile", run);
    shipctl
        .run(&["config", "set", "environment", "moon"])
        .expect_code(2);
    shipctl.run(&["config", "use", "../etc"]).expect_code(2);
    shipctl.run(&["config", "set", "base-url"]).expect_code(2);
}

#[test]
fn the_file_is_readable_by_its_owner_only() {
    let shipctl = Shipctl::new();
    shipctl.run(&["config", "set", "api-key", TEST_KEY]).ok();
    let file = shipctl.config_dir().join("config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        format!("[profiles.default]\napi_key = \"{TEST_KEY}\"\n")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        let mode = std::fs::metadata(shipctl.config_dir())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }
}

#[test]
fn a_broken_file_says_where_it_is() {
    let shipctl = Shipctl::new();
    std::fs::create_dir_all(shipctl.config_dir()).unwrap();
    std::fs::write(shipctl.config_dir().join("config.toml"), "profiles = 3\n").unwrap();
    let run = shipctl.run(&["config", "show"]).expect_code(2);
    assert!(run.stderr.contains("config.toml is not valid"), "{run}");
}

/// A key in a file with a mistake on its line: what a message must never
/// show.
const SECRET: &str = "sk_test_LEAKME0123456789abcdefghijABCD";

/// Every way `config.toml` can be broken on the line of a key says the
/// file, the line, the column and the key's name, and never the value:
/// from `config show`, an online command and `doctor`.
#[test]
fn a_broken_configuration_file_names_the_key_but_never_shows_its_value() {
    let cases = [
        // A syntax error after the value, on its line.
        (
            format!("[profiles.default]\napi_key = \"{SECRET}\" trailing\n"),
            "line 2",
            "api_key",
        ),
        // A string not closed.
        (
            format!("[profiles.default]\nemail = \"a@example.com\"\napi_key = \"{SECRET}\n"),
            "line 3",
            "api_key",
        ),
        // The wrong type: the message of the parser quotes the value.
        (
            "[profiles.default]\napi_key = 4242424242424242\n".to_owned(),
            "line 2",
            "api_key",
        ),
        (
            format!("[profiles.default]\napi_key = [\"{SECRET}\"]\n"),
            "line 2",
            "api_key",
        ),
        // A misspelt key.
        (
            format!("[profiles.default]\napi_kye = \"{SECRET}\"\n"),
            "line 2",
            "api_kye",
        ),
    ];
    for (text, line, key) in cases {
        let shipctl = Shipctl::new();
        std::fs::create_dir_all(shipctl.config_dir()).unwrap();
        let file = shipctl.config_dir().join("config.toml");
        std::fs::write(&file, &text).unwrap();
        for args in [&["config", "show"][..], &["couriers", "list"]] {
            let run = shipctl.run(args).expect_code(2);
            for leak in [SECRET, "LEAKME", "4242424242424242"] {
                assert!(!run.stderr.contains(leak), "{text}\n{run}");
            }
            assert!(
                run.stderr.contains(&format!("{}", file.display())),
                "{text}\n{run}"
            );
            assert!(run.stderr.contains(line), "{text}\n{run}");
            assert!(run.stderr.contains("column "), "{text}\n{run}");
            assert!(run.stderr.contains(&format!("`{key}`")), "{text}\n{run}");
        }
        let run = shipctl.run(&["doctor"]).expect_code(1);
        for leak in [SECRET, "LEAKME", "4242424242424242"] {
            assert!(!run.stdout.contains(leak), "{text}\n{run}");
            assert!(!run.stderr.contains(leak), "{text}\n{run}");
        }
        assert!(run.stdout.contains(line), "{text}\n{run}");
    }
}

/// The same for a dashboard session file: its token is never shown.
#[test]
fn a_broken_session_file_never_shows_the_token() {
    const TOKEN: &str = "LEAKMEtoken0123456789abcdefghijAB";
    let cases = [
        format!(
            "base_url = \"http://127.0.0.1:9/api/v1\"\nemail = \"a@example.com\"\n\
             token = \"{TOKEN}\" x\nexpires_at = \"2099-01-01T00:00:00Z\"\n"
        ),
        format!(
            "base_url = \"http://127.0.0.1:9/api/v1\"\nemail = \"a@example.com\"\n\
             token = [\"{TOKEN}\"]\nexpires_at = \"2099-01-01T00:00:00Z\"\n"
        ),
        format!(
            "base_url = \"http://127.0.0.1:9/api/v1\"\nemail = \"a@example.com\"\n\
             token = \"{TOKEN}\"\nexpires_at = \"{TOKEN}\"\n"
        ),
    ];
    for text in cases {
        let shipctl = Shipctl::new().env("SHIPCTL_BASE_URL", "http://127.0.0.1:9/api/v1");
        let sessions = shipctl.config_dir().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        std::fs::write(sessions.join("default.toml"), &text).unwrap();
        let run = shipctl.run(&["keys", "list"]).expect_code(1);
        assert!(!run.stderr.contains("LEAKME"), "{text}\n{run}");
        assert!(run.stderr.contains("default.toml"), "{text}\n{run}");
        assert!(
            run.stderr.contains("line 3") || run.stderr.contains("line 4"),
            "{text}\n{run}"
        );
        assert!(
            run.stderr.contains("`token`") || run.stderr.contains("`expires_at`"),
            "{text}\n{run}"
        );
        let run = shipctl.run(&["doctor"]).expect_code(1);
        assert!(!run.stdout.contains("LEAKME"), "{text}\n{run}");
        assert!(!run.stderr.contains("LEAKME"), "{text}\n{run}");
    }
}
