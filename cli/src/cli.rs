//! The command tree, as typed on the command line: raw options, before the
//! configuration file and the environment are taken into account.
//!
//! The two large groups have a module each (`shipments`, `webhooks`, as in
//! [`crate::commands`]); the small ones stay here.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use shipment_sdk::keys::KeyEnvironment;
use shipment_sdk::model::{ApiKeyId, ShipmentCode, Status, WebhookUrl, WebhookUrlError};

use crate::output::Format;

mod shipments;
mod webhooks;

pub use shipments::{
    CreateArgs, DeliveriesArgs, ImportArgs, ImportFormat, ListArgs, ShipmentsCommand, WatchArgs,
};
pub use webhooks::{BodyArg, SigningKeyArg, WebhooksCommand};

/// What each exit code means; printed by every `--help`.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  failure (including a signature or key that is not valid)
  2  usage: a wrong flag, argument or setting
  3  authentication or permission (HTTP 401, 403): not signed in, key refused
  4  not found (HTTP 404)
  5  conflict or invalid state (HTTP 409)
  6  the service or the network is unavailable (5xx, 429, time-out, no connection)";

/// Create and follow shipments, manage API keys and webhooks, and check
/// webhook signatures, from the command line.
///
/// Settings come from flags, then SHIPCTL_* environment variables, then the
/// active profile of the configuration file (`shipctl config show`).
#[derive(Debug, Parser)]
#[command(name = "shipctl", version, propagate_version = true)]
pub struct Cli {
    /// The settings every command shares.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Options accepted by every command.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// The profile of the configuration file to use [default: the file's
    /// `default_profile`, else "default"].
    #[arg(long, short = 'p', env = "SHIPCTL_PROFILE", global = true)]
    pub profile: Option<String>,
    /// Merchant API key (sk_test_... or sk_live_...). Prefer the variable or
    /// `shipctl config set api-key`, which keep it out of shell history.
    #[arg(long, env = "SHIPCTL_API_KEY", hide_env_values = true, global = true)]
    pub api_key: Option<String>,
    /// API base address, including /api/v1 [default for staging:
    /// http://127.0.0.1:8080/api/v1; production has none].
    #[arg(long, env = "SHIPCTL_BASE_URL", global = true)]
    pub base_url: Option<String>,
    /// Staging takes sk_test_ keys, production sk_live_ keys; a key of the
    /// other environment is refused before anything is sent [default:
    /// staging].
    #[arg(long, env = "SHIPCTL_ENVIRONMENT", value_enum, global = true)]
    pub environment: Option<EnvironmentName>,
    /// How to print results: a table for people, or JSON for programs.
    #[arg(long, short = 'o', value_enum, default_value_t = Format::Table, global = true)]
    pub output: Format,
    /// When to use colour (NO_COLOR is respected under `auto`).
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto, global = true)]
    pub color: ColorWhen,
}

/// `--environment`: the SDK's [`KeyEnvironment`] as a flag. A type of its
/// own because clap's `ValueEnum` can only be derived here, and its
/// variants' comments are the flag's help; it converts to and from the
/// SDK's, which holds the names and what a key's prefix says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EnvironmentName {
    /// Test keys (sk_test_); the local reference server unless an address is
    /// given.
    Staging,
    /// Live keys (sk_live_); needs the address the operator gave you.
    Production,
}

impl EnvironmentName {
    /// The lower-case name, as written in the configuration file.
    pub fn as_str(self) -> &'static str {
        KeyEnvironment::from(self).name()
    }
}

impl From<EnvironmentName> for KeyEnvironment {
    fn from(name: EnvironmentName) -> KeyEnvironment {
        match name {
            EnvironmentName::Staging => KeyEnvironment::Staging,
            EnvironmentName::Production => KeyEnvironment::Production,
        }
    }
}

impl From<KeyEnvironment> for EnvironmentName {
    fn from(environment: KeyEnvironment) -> EnvironmentName {
        match environment {
            KeyEnvironment::Staging => EnvironmentName::Staging,
            KeyEnvironment::Production => EnvironmentName::Production,
        }
    }
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    /// Colour when writing to a terminal and NO_COLOR is not set.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, list, follow, cancel and rate shipments.
    #[command(subcommand)]
    Shipments(ShipmentsCommand),
    /// The courier companies linked to your account.
    #[command(subcommand)]
    Couriers(CouriersCommand),
    /// Sign in to the dashboard (for `keys` and `webhooks`), asking for the
    /// password without echo, or reading it from stdin.
    Login(LoginArgs),
    /// Sign out: end the dashboard session and forget its token.
    Logout,
    /// Show the active profile, its address and credentials, and whether the
    /// service accepts them.
    Whoami,
    /// Check the whole set-up: one line per check, with the command that
    /// fixes each failure.
    ///
    /// The settings and where each comes from; the address (its answer
    /// time, and for https its TLS certificate, failing within 14 days of
    /// its end); the clock against the service's (failing beyond 5 s); the
    /// API key; the dashboard session and when it ends; each webhook's last
    /// 20 deliveries (failure rate, last error); the listener key. A check
    /// whose prerequisite failed is not run. Without a saved session (a
    /// merchant who uses only an API key), the checks that need one are
    /// shown as not checked, with the hint to sign in, and do not fail
    /// (--require-session makes them fail). `-o json` prints {"ok",
    /// "checks": [{"name", "ok", "skipped", "detail", "fix"}]}.
    #[command(after_help = DOCTOR_EXIT_CODES)]
    Doctor(DoctorArgs),
    /// Forward every change of your shipments, signed like a webhook
    /// delivery, to a local app while this runs: no public URL, no
    /// certificate; or print them only, wait for a status, and record
    /// them (for scripts and CI). Uses the API key, or the dashboard
    /// session if the profile has no key.
    Listen(ListenArgs),
    /// POST the deliveries a `listen --record FILE` kept to a local app
    /// again, byte for byte with their signature and delivery id: no
    /// service, no configuration needed.
    Replay(ReplayArgs),
    /// Create, list, delete and check API keys (needs `shipctl login`).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Manage webhooks (needs `shipctl login`), and sign or verify
    /// deliveries offline.
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
    /// Show and change the configuration file and its profiles.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print a shell completion script, e.g. `shipctl completions bash >
    /// ~/.local/share/bash-completion/completions/shipctl`.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
}

/// `shipctl listen`.
#[derive(Debug, Args)]
#[command(after_help = LISTEN_EXIT_CODES, after_long_help = LISTEN_HELP)]
// `--max-wait` bounds a wait, so it needs something to wait for.
#[command(group(clap::ArgGroup::new("waiting").args(["until_status", "count"]).multiple(true)))]
pub struct ListenArgs {
    /// Where to POST each delivery, e.g. http://localhost:3000/webhooks
    /// (http or https); without it, each change is only printed.
    #[arg(long, value_name = "URL")]
    pub forward_to: Option<String>,
    /// Accept any certificate from the local app (a self-signed one).
    #[arg(long)]
    pub skip_verify: bool,
    /// Longest the local app may take to answer a delivery.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Forward and print only changes to this status (repeatable: any of
    /// them).
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Vec<String>,
    /// Forward and print only changes of this shipment (repeatable: any of
    /// them).
    #[arg(long, value_name = "CODE")]
    pub code: Vec<ShipmentCode>,
    /// End with exit 0 once a change (that --status and --code let through)
    /// brings this status: with --code, that shipment's; without, any
    /// shipment's. Repeatable: any of them.
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub until_status: Vec<String>,
    /// End with exit 0 once this many changes (that --status and --code let
    /// through) were forwarded or printed.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub count: Option<u64>,
    /// End with exit 1 if --until-status or --count is not met within this
    /// time from the start (e.g. 90s, 2m; at most 24h).
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = parse_max_wait,
        requires = "waiting"
    )]
    pub max_wait: Option<Duration>,
    /// Write this file (the process id and a line end) once the stream is
    /// connected, so a script can start once `listen` is ready; a file
    /// left from before is removed at the start.
    #[arg(long, value_name = "PATH")]
    pub ready_file: Option<PathBuf>,
    /// Append every received delivery (before --status and --code) to this
    /// file, one JSON object per line: what `shipctl replay` sends again.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Print the listener signing key (made now if you have none) and exit.
    #[arg(long, conflicts_with_all = [
        "forward_to", "rotate_secret", "status", "code", "until_status", "count", "max_wait",
        "ready_file", "record",
    ])]
    pub print_secret: bool,
    /// Replace the listener signing key and print the new one (connected
    /// listeners are disconnected); with --forward-to (or another listening
    /// flag), then listen.
    #[arg(long)]
    pub rotate_secret: bool,
}

impl ListenArgs {
    /// Whether a condition ends the command: --until-status or --count.
    pub fn waits(&self) -> bool {
        !self.until_status.is_empty() || self.count.is_some()
    }

    /// Whether a flag other than --rotate-secret asks to listen.
    pub fn listens(&self) -> bool {
        self.forward_to.is_some()
            || self.waits()
            || !self.status.is_empty()
            || !self.code.is_empty()
            || self.ready_file.is_some()
            || self.record.is_some()
    }
}

/// The exit codes of `shipctl listen` (a macro, so the long help can
/// include them with `concat!`).
macro_rules! listen_exit_codes {
    () => {
        "\
Exit codes:
  0  success: --until-status or --count met, stopped with Ctrl-C, or the key
     printed or replaced
  1  --max-wait ran out before --until-status or --count was met; or the
     --ready-file or --record file could not be written
  2  usage: a wrong flag, address, status, code or file
  3  the API key or the session was refused
  4  the service has no listener stream (an older server)
  6  the service is unavailable: with --print-secret or --rotate-secret; with
     --until-status or --count, at the first connection or still when
     --max-wait runs out (otherwise listening waits and reconnects)"
    };
}

/// The exit codes of `shipctl listen`, for `-h`.
const LISTEN_EXIT_CODES: &str = listen_exit_codes!();

/// The long help of `shipctl listen`, for `--help`.
const LISTEN_HELP: &str = concat!(
    "\
Each change is POSTed to the URL exactly as a webhook delivery: the same body
bytes, Content-Type: application/json, X-Service-Signature (signed with your
listener signing key, which stays the same across runs) and
X-Service-Delivery-Id. One line per delivery on stdout (-o ndjson or json: one
object per line). A local app that is down or answers 400 or more is shown,
not fatal. The stream reconnects by itself, resuming after the last change
received; Ctrl-C ends it.

For scripts: --ready-file PATH appears once the stream is connected;
--until-status delivered --code SHP-... --max-wait 2m ends with 0 once that
shipment is delivered, 1 if not within 2 minutes. --record FILE keeps every
delivery for `shipctl replay FILE --forward-to URL`.

",
    listen_exit_codes!()
);

/// `shipctl replay`.
#[derive(Debug, Args)]
#[command(after_help = REPLAY_EXIT_CODES)]
pub struct ReplayArgs {
    /// The file `shipctl listen --record FILE` wrote (one JSON object per
    /// line, each at most 1 MiB), or a pipe such as /dev/stdin.
    pub file: PathBuf,
    /// Where to POST each delivery, e.g. http://localhost:3000/webhooks.
    #[arg(long, value_name = "URL")]
    pub forward_to: String,
    /// Only the deliveries of this shipment (repeatable: any of them).
    #[arg(long, value_name = "CODE")]
    pub code: Vec<ShipmentCode>,
    /// Only the deliveries that bring this status (repeatable: any of them).
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Vec<String>,
    /// Accept any certificate from the local app (a self-signed one).
    #[arg(long)]
    pub skip_verify: bool,
    /// Longest the local app may take to answer a delivery.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
}

/// The exit codes of `shipctl replay`.
const REPLAY_EXIT_CODES: &str = "\
Exit codes:
  0  success: every delivery sent was answered below 400 (or none matched)
  1  at least one was not: a status of 400 or more, no answer, no connection
  2  usage: a wrong flag or address, a file that cannot be read or has a line
     that is not a recorded delivery or is longer than 1 MiB (from a file,
     nothing is sent then; from a pipe, what came before it was sent)";

/// `shipctl doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Fail when the profile has no dashboard session, instead of showing
    /// the checks that need one as not checked.
    #[arg(long)]
    pub require_session: bool,
}

/// The exit codes of `shipctl doctor`.
const DOCTOR_EXIT_CODES: &str = "\
Exit codes:
  0  success: every check that could be made passed (without a session, those
     that need one are not checked, unless --require-session)
  1  at least one check failed
  2  usage: a wrong flag";

/// `shipctl couriers ...`.
#[derive(Debug, Subcommand)]
pub enum CouriersCommand {
    /// List the linked courier companies and their prices.
    List,
}

/// `shipctl login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The dashboard e-mail [default: the profile's `email`; asked for on a
    /// terminal].
    #[arg(long, env = "SHIPCTL_EMAIL")]
    pub email: Option<String>,
    /// Read the password from stdin (for scripts) instead of asking.
    #[arg(long)]
    pub password_stdin: bool,
}

/// `shipctl keys ...`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create an API key. The key is shown once: store it at once.
    Create {
        /// A name to recognise the key by.
        #[arg(long)]
        name: Option<String>,
        /// Also store the new key in the active profile (`api_key`).
        #[arg(long)]
        save: bool,
    },
    /// List the API keys (their prefix and last four characters only).
    List,
    /// Delete an API key: requests with it fail at once.
    Delete {
        /// The key's id (see `shipctl keys list`).
        id: ApiKeyId,
    },
    /// Check whether a key string is a valid key of this account (exit 0) or
    /// not (exit 1).
    Verify {
        /// The key; without it, read from stdin (keeps it out of history).
        key: Option<String>,
    },
}

/// `shipctl config ...`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Show the file's location, every profile (keys masked), and the
    /// settings in effect with where each comes from.
    Show,
    /// Set a setting of a profile (the active one unless --profile). Without
    /// a value, `api-key` is read from stdin or asked for without echo.
    Set {
        /// The setting.
        key: ConfigKey,
        /// Its value.
        value: Option<String>,
    },
    /// Remove a setting from a profile.
    Unset {
        /// The setting.
        key: ConfigKey,
    },
    /// Make a profile the default one.
    Use {
        /// The profile name.
        profile: String,
    },
}

/// The settings a profile holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConfigKey {
    /// The API base address (with /api/v1).
    BaseUrl,
    /// The merchant API key.
    ApiKey,
    /// staging or production.
    Environment,
    /// The dashboard e-mail for `shipctl login`.
    Email,
}

/// Parses RFC 3339, or a date alone as midnight UTC.
fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        .map_err(|_| "expected RFC 3339 (2026-11-21T09:30:00Z) or a date (2026-11-21)".to_owned())
}

/// Checks a webhook address as the service will, so a bad one is refused
/// before anything is sent; gives its normalised form.
fn parse_webhook_url(s: &str) -> Result<String, WebhookUrlError> {
    WebhookUrl::parse(s).map(WebhookUrl::into_string)
}

/// Parses `500ms`, `2s`, `1m`, or a number of seconds, from 10ms to 1h.
fn parse_duration(s: &str) -> Result<Duration, String> {
    duration_within(s, 0.01, 3600.0, "from 10ms to 1h")
}

/// Parses `--max-wait`: `90s`, `2m`, `1h`, from 1s to 24h (a CI job's
/// longest wait, and a typo such as `2000h` refused).
fn parse_max_wait(s: &str) -> Result<Duration, String> {
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

/// `--count`: a whole number from 1 (0 would be met before anything is
/// received).
fn parse_count(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{s}` is not a count: a whole number from 1")),
    }
}

/// A status the service knows (a typo would never match, and a script
/// waiting for it would wait until --max-wait).
fn parse_status(s: &str) -> Result<String, String> {
    match Status::parse_known(s) {
        Some(status) => Ok(status.as_str().to_owned()),
        None => Err(format!(
            "`{s}` is not a status: one of {}",
            Status::KNOWN.map(|k| k.as_str().to_owned()).join(", ")
        )),
    }
}

/// The command tree with the exit codes in every `--help`.
pub fn command() -> clap::Command {
    fn with_exit_codes(cmd: clap::Command) -> clap::Command {
        let cmd = cmd.mut_subcommands(with_exit_codes);
        if cmd.get_after_help().is_none() {
            cmd.after_help(EXIT_CODES)
        } else {
            cmd
        }
    }
    with_exit_codes(Cli::command())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_tree_is_consistent() {
        command().debug_assert();
    }

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
    fn statuses_are_the_known_ones() {
        assert_eq!(parse_status("delivered").as_deref(), Ok("delivered"));
        let e = parse_status("deliverd").unwrap_err();
        assert!(e.contains("in_transit"), "{e}");
    }
}
