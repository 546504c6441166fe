//! Running the real `shipctl` binary in a clean environment, and turning its
//! output into stable snapshots.

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use shipment_testkit::{Fixture, TestApp};
use tempfile::TempDir;

/// The binary under test.
pub const SHIPCTL: &str = env!("CARGO_BIN_EXE_shipctl");

/// A `shipctl` with its own (empty) configuration directory and home, and
/// none of the caller's `SHIPCTL_*` variables.
#[derive(Clone)]
pub struct Shipctl {
    home: Arc<TempDir>,
    env: Vec<(String, String)>,
}

impl Shipctl {
    /// A fresh configuration.
    pub fn new() -> Shipctl {
        Shipctl {
            home: Arc::new(tempfile::tempdir().expect("a temporary home")),
            env: Vec::new(),
        }
    }

    /// The configuration directory.
    pub fn config_dir(&self) -> PathBuf {
        self.home.path().join("config")
    }

    /// Sets an environment variable for every run.
    pub fn env(mut self, key: &str, value: &str) -> Shipctl {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(SHIPCTL);
        cmd.args(args);
        for (key, _) in std::env::vars() {
            if key.starts_with("SHIPCTL_") || key == "NO_COLOR" || key.starts_with("CLICOLOR") {
                cmd.env_remove(key);
            }
        }
        cmd.env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("xdg"))
            .env("SHIPCTL_CONFIG_DIR", self.config_dir())
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("ALL_PROXY");
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        cmd
    }

    /// Runs `shipctl args...` with an empty stdin.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, b"")
    }

    /// Runs `shipctl args...` with `stdin` as its input.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start shipctl");
        let mut input = child.stdin.take().expect("stdin");
        // The command may exit without reading (a usage error): that is fine.
        let _ = input.write_all(stdin);
        drop(input);
        let output = child.wait_with_output().expect("wait for shipctl");
        Run {
            code: output.status.code().expect("an exit code, not a signal"),
            stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
            stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
        }
    }

    /// Starts `shipctl args...` with stdout piped, for commands that run
    /// until something happens (`watch`).
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start shipctl")
    }

    /// Starts `shipctl args...` with stdin, stdout and stderr piped, for a
    /// test that feeds its input as it runs.
    pub fn spawn_fed(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start shipctl")
    }

    /// Like [`Shipctl::run`], on a blocking thread, for async tests whose
    /// server runs in the same process.
    pub async fn run_async(&self, args: &[&str]) -> Run {
        self.run_with_stdin_async(args, b"").await
    }

    /// Like [`Shipctl::run_with_stdin`], on a blocking thread.
    pub async fn run_with_stdin_async(&self, args: &[&str], stdin: &[u8]) -> Run {
        let me = self.clone();
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let stdin = stdin.to_vec();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            me.run_with_stdin(&args, &stdin)
        })
        .await
        .expect("the shipctl thread")
    }
}

/// What a run printed, and how it exited.
#[derive(Debug)]
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
}

impl Run {
    /// Panics with the whole run unless it exited with `code`.
    #[track_caller]
    pub fn expect_code(self, code: i32) -> Run {
        assert_eq!(self.code, code, "unexpected exit code:\n{self}");
        self
    }

    /// Panics unless the run succeeded.
    #[track_caller]
    pub fn ok(self) -> Run {
        self.expect_code(0)
    }

    /// Stdout parsed as one JSON document.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{self}"))
    }
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "exit: {}", self.code)?;
        writeln!(f, "--- stdout")?;
        f.write_str(&self.stdout)?;
        writeln!(f, "--- stderr")?;
        f.write_str(&self.stderr)
    }
}

/// Snapshot filters for what changes from run to run: codes, times, keys,
/// request ids, ports, temporary paths. Replacements keep the width of what
/// they replace where tables align on it.
pub fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"SHP-[0-9A-Z]{4}-[0-9A-Z]{4}", "SHP-XXXX-XXXX"),
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
            "[TIMESTAMP]",
        ),
        (
            r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z",
            "YYYY-MM-DD hh:mm:ssZ",
        ),
        (r"request id [0-9A-Za-z_.:-]+", "request id [REQUEST-ID]"),
        (r"(sk|rk|ck)_(test|live)_[0-9A-Za-z]{32}", "${1}_${2}_[KEY]"),
        (
            r"(sk|rk|ck)_(test|live)_\.\.\.[0-9A-Za-z]{4}",
            "${1}_${2}_...[LST4]",
        ),
        (r"whsec_[0-9A-Za-z]{32}", "whsec_[SIGNING-KEY]"),
        (r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]"),
        (r#""last4": "[0-9A-Za-z]{4}""#, r#""last4": "[LST4]""#),
        (
            r#""confirmation_code": "\d{6}""#,
            r#""confirmation_code": "[CODE]""#,
        ),
        (r"(CONFIRMATION CODE\s+)\d{6}", "${1}NNNNNN"),
        (r"/[^\s]*/config/", "[CONFIG-DIR]/"),
        // A delivery's duration in milliseconds (the column after the status).
        (r"(failed  +\S+  +)\d+", "${1}[MS]"),
        // The seconds until a budget has room again (`Retry-After`).
        (r"again in \d+ s\b", "again in [N] s"),
        // Fixture accounts get a unique address per test.
        (r"[a-z]+-[0-9a-f]{32}@example\.com", "[EMAIL]"),
    ]
}

/// Asserts a snapshot of `value` with [`filters`] applied.
#[macro_export]
macro_rules! snapshot {
    ($name:expr, $value:expr) => {{
        // Evaluated first: `$value` may `.await`, and the settings scope is a closure.
        let value = $value.to_string();
        insta::with_settings!({
            filters => $crate::helpers::filters(),
            prepend_module_to_snapshot => false,
        }, {
            insta::assert_snapshot!($name, value);
        })
    }};
}

/// The webhook signature vectors: the repository's copy of
/// `shared/test-vectors/webhook-signatures.json` (`.ci/run` checks that it
/// equals the shared original), through `tests/webhook-signatures.json`, a
/// link that `cargo package` replaces with the file so the published
/// crate's tests have it too; or the file `SHIPMENT_TEST_VECTORS` names.
pub fn vectors_path() -> PathBuf {
    if let Some(set) = std::env::var_os("SHIPMENT_TEST_VECTORS") {
        let set = PathBuf::from(set);
        let file = if set.is_dir() {
            set.join("webhook-signatures.json")
        } else {
            set
        };
        assert!(
            file.is_file(),
            "SHIPMENT_TEST_VECTORS: {} is not a file",
            file.display()
        );
        return file;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/webhook-signatures.json")
}

/// The Standard Webhooks vectors, `test-vectors/standard-webhooks.json`,
/// through the link `tests/standard-webhooks.json` (as for the other
/// vectors).
pub fn standard_vectors_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/standard-webhooks.json")
}

/// A `shipctl` at `server`, signed in as the fixture's merchant.
pub async fn signed_in(server: &TestApp, f: &Fixture) -> Shipctl {
    let shipctl = Shipctl::new().env("SHIPCTL_BASE_URL", &server.base);
    let (email, password) = f.credentials();
    shipctl
        .run_with_stdin_async(
            &["login", "--email", &email, "--password-stdin"],
            password.as_bytes(),
        )
        .await
        .ok();
    shipctl
}
