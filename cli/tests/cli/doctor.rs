//! `shipctl doctor` against the real reference server: a set-up where
//! every check passes, and each way one fails (a revoked key, a key of the
//! other environment, no session or one that ended, failing and paused
//! webhooks, an address where nothing listens, an unreadable configuration
//! file; behind a TLS front, a certificate about to end and one from an
//! untrusted CA; against a stand-in, a clock an hour off), each failure
//! with the command that fixes it, some of them run to show they do.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use shipment_testkit::{Fixture, TestApp, WebhookReceiver, db_tests};

use crate::helpers::{Run, Shipctl, signed_in};

db_tests!(
    everything_passes_for_a_signed_in_merchant,
    a_revoked_key_and_no_session_each_name_their_fix,
    a_key_of_the_other_environment_is_caught_before_sending_and_by_the_service,
    failing_and_paused_webhooks_are_reported_with_their_last_error,
    a_merchant_with_only_an_api_key_passes_unless_a_session_is_required,
);

/// Asserts a snapshot with the shared filters and those of `doctor`'s
/// measurements: times, skews, durations, ports of `localhost`.
macro_rules! doctor_snapshot {
    ($name:expr, $value:expr) => {{
        let value = $value.to_string();
        let mut filters = crate::helpers::filters();
        filters.extend(FILTERS.iter().copied());
        insta::with_settings!({
            filters => filters,
            prepend_module_to_snapshot => false,
        }, {
            insta::assert_snapshot!($name, value);
        })
    }};
}

const FILTERS: &[(&str, &str)] = &[
    (r"answered in \d+ ms", "answered in [MS] ms"),
    (
        r"about \d+(\.\d)? (s|min|h|days) (ahead of|behind) the service's \(± \d+\.\d s\)",
        "[SKEW]",
    ),
    (r"\(in \d+(\.\d)? (s|min|h|days);", "(in [DURATION];"),
    (r"localhost:\d+", "localhost:[PORT]"),
    (r"whsec_\.\.\.[0-9A-Za-z]{4}", "whsec_...[LST4]"),
];

/// Creates a shipment with the fixture's key and moves it to delivered:
/// four changes, so four deliveries to each webhook.
async fn four_changes(server: &TestApp, f: &Fixture) {
    let shipment = server.create_default(f).await;
    let code = shipment["code"].as_str().unwrap();
    server.advance(f, code, "delivered").await;
}

/// Waits until webhook `id`'s log holds `n` deliveries.
async fn logged(shipctl: &Shipctl, id: &str, n: usize) -> Value {
    let mut log = Value::Null;
    for _ in 0..200 {
        log = shipctl
            .run_async(&["webhooks", "deliveries", id, "-o", "json"])
            .await
            .ok()
            .json();
        if log.as_array().is_some_and(|rows| rows.len() >= n) {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("webhook {id} logged fewer than {n} deliveries: {log}");
}

fn lines_of<'a>(run: &'a Run, mark: &str) -> Vec<&'a str> {
    run.stdout.lines().filter(|l| l.starts_with(mark)).collect()
}

async fn everything_passes_for_a_signed_in_merchant(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let without_key = signed_in(server, &f).await;
    let shipctl = without_key.clone().env("SHIPCTL_API_KEY", &f.key);
    let receiver = WebhookReceiver::start(reqwest::StatusCode::OK, Duration::ZERO).await;
    let hook = shipctl
        .run_async(&["webhooks", "register", &receiver.url, "-o", "json"])
        .await
        .ok()
        .json();
    let id = hook["webhook_id"].to_string();
    four_changes(server, &f).await;
    logged(&shipctl, &id, 4).await;

    // All but the listener key, which only `shipctl listen` makes: the fix
    // doctor names makes it.
    let run = shipctl.run_async(&["doctor"]).await.expect_code(1);
    assert_eq!(lines_of(&run, "✗").len(), 1, "{run}");
    assert!(run.stdout.contains("✗ listener key"), "{run}");
    let fix = fix_of(&run.stdout, "listener key");
    assert_eq!(fix, ["listen", "--print-secret"], "{run}");
    let made = shipctl.run_async(&args(&fix)).await.ok();
    assert!(made.stdout.starts_with("whsec_"), "{made}");

    let run = shipctl.run_async(&["doctor"]).await.ok();
    assert!(lines_of(&run, "✗").is_empty(), "{run}");
    assert!(run.stderr.is_empty(), "{run}");
    assert!(
        !run.stdout.contains(&f.key),
        "the key is shown masked: {run}"
    );
    doctor_snapshot!("doctor_all_pass", run);

    let run = shipctl.run_async(&["doctor", "-o", "json"]).await.ok();
    let report = run.json();
    assert_eq!(report["ok"], true);
    assert!(
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["ok"] == true && c.get("fix").is_none()),
        "{report}"
    );
    doctor_snapshot!("doctor_all_pass_json", run);

    // One object per check for pipelines.
    let run = shipctl.run_async(&["doctor", "-o", "ndjson"]).await.ok();
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names =
        |checks: &[Value]| -> Vec<Value> { checks.iter().map(|c| c["name"].clone()).collect() };
    assert_eq!(
        names(&lines),
        names(report["checks"].as_array().unwrap()),
        "{run}"
    );

    // Without an API key, the session still reads the listener key.
    let run = without_key.run_async(&["doctor"]).await.expect_code(1);
    assert_eq!(lines_of(&run, "✗").len(), 1, "{run}");
    assert!(
        run.stdout
            .contains("✗ API key       none for profile default"),
        "{run}"
    );
    assert_eq!(lines_of(&run, "✓ listener key").len(), 1, "{run}");
}

async fn a_revoked_key_and_no_session_each_name_their_fix(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let shipctl = signed_in(server, &f).await;
    let created = shipctl
        .run_async(&["keys", "create", "--name", "old", "-o", "json"])
        .await
        .ok()
        .json();
    let key = created["key"].as_str().unwrap().to_owned();
    shipctl
        .run_async(&["keys", "delete", &created["id"].to_string()])
        .await
        .ok();
    shipctl.run_async(&["logout"]).await.ok();

    let shipctl = shipctl.env("SHIPCTL_API_KEY", &key);
    let run = shipctl.run_async(&["doctor"]).await.expect_code(1);
    // Without a session, the checks that need one are not run (and fail
    // nothing): the refused key is the one failure.
    let failed = lines_of(&run, "✗");
    assert_eq!(failed.len(), 1, "API key: {run}");
    assert!(
        run.stdout.contains("invalid or revoked API key"),
        "the service's reason: {run}"
    );
    doctor_snapshot!("doctor_revoked_key_no_session", run);

    let report = shipctl
        .run_async(&["doctor", "-o", "json"])
        .await
        .expect_code(1)
        .json();
    assert_eq!(report["ok"], false);
    for check in report["checks"].as_array().unwrap() {
        if check["ok"] == false && check.get("skipped").is_none() {
            assert!(
                check["fix"].is_string(),
                "every failure names its fix: {check}"
            );
        }
    }
}

/// A merchant who uses only an API key (no dashboard session): the checks
/// that need a session are not checked, with the command that signs in,
/// and doctor passes; `--require-session` makes them fail.
async fn a_merchant_with_only_an_api_key_passes_unless_a_session_is_required(server: &TestApp) {
    let f = server.fixture().await;
    let shipctl = Shipctl::new()
        .env("SHIPCTL_BASE_URL", &server.base)
        .env("SHIPCTL_API_KEY", &f.key);
    // The listener key exists, so every check that can run passes.
    shipctl.run_async(&["listen", "--print-secret"]).await.ok();
    let run = shipctl.run_async(&["doctor"]).await.ok();
    assert!(lines_of(&run, "✗").is_empty(), "{run}");
    assert_eq!(lines_of(&run, "- ").len(), 2, "session, webhooks: {run}");
    assert!(run.stderr.is_empty(), "{run}");
    doctor_snapshot!("doctor_api_key_only", run);

    let report = shipctl
        .run_async(&["doctor", "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(report["ok"], true, "{report}");
    let session = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "session")
        .unwrap_or_else(|| panic!("no session check: {report}"));
    assert_eq!(session["skipped"], true, "{session}");
    assert_eq!(session["fix"], "`shipctl login`", "{session}");

    let run = shipctl
        .run_async(&["doctor", "--require-session"])
        .await
        .expect_code(1);
    let failed = lines_of(&run, "✗");
    assert_eq!(failed.len(), 2, "session, webhooks: {run}");
    assert!(
        run.stdout.contains(
            "✗ session       not signed in (profile default), and --require-session\n  \
             → fix: `shipctl login`"
        ),
        "{run}"
    );
    assert!(run.stderr.contains("error: 2 of 10 checks failed"), "{run}");
}

async fn a_key_of_the_other_environment_is_caught_before_sending_and_by_the_service(
    server: &TestApp,
) {
    let live = "sk_live_0123456789abcdefghijABCDEFGHIJKL";
    // Refused before anything is sent: the environment in effect is staging.
    let shipctl = Shipctl::new()
        .env("SHIPCTL_BASE_URL", &server.base)
        .env("SHIPCTL_API_KEY", live);
    let run = shipctl.run_async(&["doctor"]).await.expect_code(1);
    let key_line = run
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("✗ API key"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    doctor_snapshot!("doctor_live_key_on_staging", key_line);

    // Production chosen, so the key fits, but the address serves staging:
    // the service refuses it and says why.
    let run = shipctl
        .run_async(&["doctor", "--environment", "production"])
        .await
        .expect_code(1);
    let key_line = run
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("✗ API key"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(key_line.contains("other environment"), "{run}");
    doctor_snapshot!("doctor_live_key_at_a_staging_address", key_line);
}

async fn failing_and_paused_webhooks_are_reported_with_their_last_error(server: &TestApp) {
    let f = server.fixture_with_login().await;
    let shipctl = signed_in(server, &f).await.env("SHIPCTL_API_KEY", &f.key);
    let refused = format!("https://127.0.0.1:{}/hook", closed_port().port());
    let failing = shipctl
        .run_async(&["webhooks", "register", &refused, "-o", "json"])
        .await
        .ok()
        .json();
    let failing = failing["webhook_id"].to_string();
    let paused = shipctl
        .run_async(&[
            "webhooks",
            "register",
            "https://127.0.0.1:9/paused",
            "-o",
            "json",
        ])
        .await
        .ok()
        .json();
    let paused = paused["webhook_id"].to_string();
    shipctl
        .run_async(&["webhooks", "disable", &paused])
        .await
        .ok();
    shipctl.run_async(&["listen", "--print-secret"]).await.ok();
    four_changes(server, &f).await;
    logged(&shipctl, &failing, 4).await;

    let run = shipctl.run_async(&["doctor"]).await.expect_code(1);
    let failed = lines_of(&run, "✗");
    assert_eq!(failed.len(), 2, "{run}");
    assert!(
        failed[0].starts_with(&format!("✗ webhook {failing}")),
        "{run}"
    );
    assert!(
        failed[0].contains("4 of the last 4 deliveries failed (100%)"),
        "{run}"
    );
    assert!(
        failed[1].starts_with(&format!("✗ webhook {paused}")),
        "{run}"
    );
    doctor_snapshot!("doctor_failing_webhooks", run);

    // The fixes are commands that run: resume the paused one; send the
    // failed changes again (to a receiver still down, so they fail again).
    let enable = fix_of(&run.stdout, &format!("webhook {paused}"));
    assert_eq!(enable, ["webhooks", "enable", paused.as_str()]);
    shipctl.run_async(&args(&enable)).await.ok();
    let mut redeliver = fix_of(&run.stdout, &format!("webhook {failing}"));
    assert_eq!(redeliver[..3], ["webhooks", "redeliver", failing.as_str()]);
    redeliver.extend(["-o".to_owned(), "json".to_owned()]);
    let queued = shipctl.run_async(&args(&redeliver)).await.ok().json();
    assert_eq!(queued["queued"], 4, "one per failed change: {queued}");

    let run = shipctl.run_async(&["doctor"]).await.expect_code(1);
    let paused_line = run
        .stdout
        .lines()
        .find(|l| l.contains(&format!("webhook {paused} ")))
        .unwrap();
    assert!(paused_line.starts_with('✓'), "{run}");
    assert!(paused_line.ends_with("no deliveries yet"), "{run}");
}

/// The command in a failed check's fix (the first one in backticks),
/// without `shipctl`, as arguments.
fn fix_of(stdout: &str, check: &str) -> Vec<String> {
    let mut lines = stdout.lines();
    lines
        .find(|l| l.starts_with(&format!("✗ {check} ")))
        .unwrap_or_else(|| panic!("no failed check {check}:\n{stdout}"));
    let fix = lines.next().unwrap();
    let command = fix.split('`').nth(1).unwrap_or_else(|| panic!("{fix}"));
    let mut words = command.split_whitespace().map(str::to_owned);
    assert_eq!(words.next().as_deref(), Some("shipctl"), "{fix}");
    words.collect()
}

fn args(words: &[String]) -> Vec<&str> {
    words.iter().map(String::as_str).collect()
}

/// A port where nothing listens (bound, then let go).
fn closed_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

#[test]
fn an_address_where_nothing_listens_is_reported_with_its_fix() {
    let url = format!("http://{}/api/v1", closed_port());
    let shipctl = Shipctl::new().env("SHIPCTL_BASE_URL", &url).env(
        "SHIPCTL_API_KEY",
        "sk_test_0123456789abcdefghijABCDEFGHIJKL",
    );
    let run = shipctl.run(&["doctor"]).expect_code(1);
    doctor_snapshot!("doctor_unreachable", run);
    let run = shipctl.run(&["doctor", "-o", "json"]).expect_code(1);
    doctor_snapshot!("doctor_unreachable_json", run);
}

#[test]
fn a_session_that_ended_or_belongs_to_another_address_says_to_sign_in_again() {
    let url = format!("http://{}/api/v1", closed_port());
    let shipctl = Shipctl::new().env("SHIPCTL_BASE_URL", &url);
    let sessions = shipctl.config_dir().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let session = |base_url: &str, expires_at: &str| {
        let text = format!(
            "base_url = \"{base_url}\"\nemail = \"ops@example.com\"\ntoken = \"t\"\n\
             expires_at = \"{expires_at}\"\n"
        );
        std::fs::write(sessions.join("default.toml"), text).unwrap();
    };

    session(&url, "2020-01-01T00:00:00Z");
    let run = shipctl.run(&["doctor"]).expect_code(1);
    assert!(
        run.stdout.contains(
            "✗ session       ops@example.com's session ended at 2020-01-01 00:00:00Z \
             (sessions/default.toml)\n  → fix: `shipctl login`"
        ),
        "{run}"
    );

    // Signed in elsewhere; the profile chosen by flag, so the fix names it.
    session(
        "https://elsewhere.example.com/api/v1",
        "2999-01-01T00:00:00Z",
    );
    std::fs::write(
        shipctl.config_dir().join("config.toml"),
        "[profiles.default]\nemail = \"ops@example.com\"\n",
    )
    .unwrap();
    let run = shipctl
        .run(&["doctor", "--profile", "default"])
        .expect_code(1);
    assert!(
        run.stdout.contains(&format!(
            "✗ session       ops@example.com signed in at https://elsewhere.example.com/api/v1, \
             not at {url} (sessions/default.toml)\n  → fix: `shipctl login --profile default`"
        )),
        "{run}"
    );
}

/// An HTTP server whose clock is an hour slow: every answer is a 404 with
/// that `Date`. (The reference server's clock is this machine's, so only a
/// stand-in can be off.)
fn an_hour_slow() -> SocketAddr {
    use std::io::{BufRead as _, BufReader, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while request.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let date = (chrono::Utc::now() - chrono::Duration::hours(1))
                .format("%a, %d %b %Y %H:%M:%S GMT");
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nDate: {date}\r\nContent-Length: 0\r\n\
                 Connection: close\r\n\r\n"
            );
        }
    });
    addr
}

#[test]
fn a_clock_an_hour_off_is_reported_with_its_fix() {
    let run = Shipctl::new()
        .env(
            "SHIPCTL_BASE_URL",
            &format!("http://{}/api/v1", an_hour_slow()),
        )
        .run(&["doctor"])
        .expect_code(1);
    let clock = lines_of(&run, "✗ clock");
    assert_eq!(clock.len(), 1, "{run}");
    assert!(
        clock[0].contains("local clock about 60 min ahead of the service's"),
        "{run}"
    );
    assert!(clock[0].ends_with("more than 5 s off"), "{run}");
    assert!(run.stdout.contains("→ fix: turn on network time"), "{run}");
}

#[test]
fn an_unreadable_configuration_file_is_the_first_failed_check() {
    let shipctl = Shipctl::new();
    std::fs::create_dir_all(shipctl.config_dir()).unwrap();
    std::fs::write(shipctl.config_dir().join("config.toml"), "api_key = [").unwrap();
    let run = shipctl.run(&["doctor"]).expect_code(1);
    assert_eq!(lines_of(&run, "✗").len(), 1, "{run}");
    assert!(run.stdout.starts_with("✗ profile"), "{run}");
    assert!(run.stdout.contains("→ fix: "), "{run}");

    // A profile that does not exist is the same kind of failure.
    let run = Shipctl::new()
        .run(&["doctor", "--profile", "nope"])
        .expect_code(1);
    assert!(
        run.stdout
            .starts_with("✗ profile  there is no profile `nope`"),
        "{run}"
    );
}

mod https {
    //! The service behind a TLS front (as in production: a proxy that
    //! holds the certificate), with a local CA that `shipctl` is told to
    //! trust through `SSL_CERT_FILE`.

    use std::sync::Arc;

    use axum_server::accept::Accept as _;
    use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
    use chrono::{Datelike as _, Utc};
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    use shipment_testkit::{Db, TestApp};

    use super::lines_of;
    use crate::helpers::Shipctl;

    /// A new CA, its certificate written to `pem`.
    fn authority(pem: &std::path::Path) -> Issuer<'static, KeyPair> {
        let key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "doctor tests CA");
        std::fs::write(pem, ca.self_signed(&key).unwrap().pem()).unwrap();
        Issuer::new(ca, key)
    }

    /// A CA (`ca.pem` in `dir`) and a `localhost` certificate from it that
    /// ends `days_left` days from now.
    fn certificates(dir: &std::path::Path, days_left: i64) -> (String, String) {
        let issuer = authority(&dir.join("ca.pem"));
        let key = KeyPair::generate().unwrap();
        let mut leaf = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        let end = Utc::now() + chrono::Duration::days(days_left);
        let month = u8::try_from(end.month()).unwrap();
        let day = u8::try_from(end.day()).unwrap();
        leaf.not_after = rcgen::date_time_ymd(end.year(), month, day);
        let cert = leaf.signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A TLS front at `https://localhost:<port>` that passes every
    /// connection's bytes to `backend`.
    async fn tls_front(cert: String, key: String, backend: std::net::SocketAddr) -> u16 {
        let config = RustlsConfig::from_pem(cert.into_bytes(), key.into_bytes())
            .await
            .unwrap();
        let acceptor = Arc::new(RustlsAcceptor::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok((mut tls, ())) = acceptor.accept(stream, ()).await else {
                        return;
                    };
                    if let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await {
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                    }
                });
            }
        });
        port
    }

    /// `shipctl doctor` through a TLS front whose certificate ends in
    /// `days_left` days, trusting its CA or, unless `trusted`, another one.
    async fn doctor_over_https(days_left: i64, trusted: bool) -> crate::helpers::Run {
        let server = TestApp::spawn(Db::Sqlite)
            .await
            .expect("SQLite always starts");
        let f = server.fixture().await;
        let backend: std::net::SocketAddr =
            server.root.trim_start_matches("http://").parse().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = certificates(dir.path(), days_left);
        let port = tls_front(cert, key, backend).await;
        let roots = if trusted {
            dir.path().join("ca.pem")
        } else {
            let other = dir.path().join("other-ca.pem");
            authority(&other);
            other
        };
        let run = Shipctl::new()
            .env(
                "SHIPCTL_BASE_URL",
                &format!("https://localhost:{port}/api/v1"),
            )
            .env("SHIPCTL_API_KEY", &f.key)
            .env("SSL_CERT_FILE", roots.to_str().unwrap())
            .run_async(&["doctor"])
            .await;
        server.stop().await;
        run
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_certificate_and_its_end_are_shown() {
        let run = doctor_over_https(400, true).await.expect_code(1);
        let tls = lines_of(&run, "✓ TLS certificate");
        assert_eq!(tls.len(), 1, "{run}");
        assert!(tls[0].contains("valid until "), "{run}");
        assert!(
            tls[0].contains("(in 399 days)") || tls[0].contains("(in 400 days)"),
            "{run}"
        );
        // The key went through the front and was accepted.
        assert_eq!(lines_of(&run, "✓ API key").len(), 1, "{run}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_certificate_ending_within_two_weeks_fails() {
        let run = doctor_over_https(3, true).await.expect_code(1);
        let tls = lines_of(&run, "✗ TLS certificate");
        assert_eq!(tls.len(), 1, "{run}");
        assert!(tls[0].ends_with("renew it now"), "{run}");
        assert!(
            run.stdout
                .contains("→ fix: the service's operator must renew its certificate"),
            "{run}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_untrusted_certificate_is_named_as_the_problem() {
        let run = doctor_over_https(400, false).await.expect_code(1);
        let reachable = lines_of(&run, "✗ reachable");
        assert_eq!(reachable.len(), 1, "{run}");
        assert!(reachable[0].contains("invalid peer certificate"), "{run}");
        assert!(
            run.stdout
                .contains("→ fix: the service's certificate was refused"),
            "{run}"
        );
        assert_eq!(lines_of(&run, "- TLS certificate").len(), 1, "{run}");
    }
}
