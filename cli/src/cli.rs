//! The command tree, as typed on the command line: raw options, before the
//! configuration file and the environment are taken into account.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use clap::{ArgGroup, Args, CommandFactory, Parser, Subcommand, ValueEnum};
use rust_decimal::Decimal;
use shipment_sdk::model::{
    ApiKeyId, CourierId, DeliveryId, WebhookId, WebhookUrl, WebhookUrlError,
};

use crate::output::Format;

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

/// `--environment`.
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
        match self {
            EnvironmentName::Staging => "staging",
            EnvironmentName::Production => "production",
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
    /// whose prerequisite failed is not run. `-o json` prints {"ok",
    /// "checks": [{"name", "ok", "detail", "fix"}]}.
    #[command(after_help = DOCTOR_EXIT_CODES)]
    Doctor,
    /// Forward every change of your shipments, signed like a webhook
    /// delivery, to a local app while this runs: no public URL, no
    /// certificate. Uses the API key, or the dashboard session if the
    /// profile has no key.
    Listen(ListenArgs),
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
pub struct ListenArgs {
    /// Where to POST each delivery, e.g. http://localhost:3000/webhooks
    /// (http or https).
    #[arg(long, value_name = "URL", required_unless_present_any = ["print_secret", "rotate_secret"])]
    pub forward_to: Option<String>,
    /// Accept any certificate from the local app (a self-signed one).
    #[arg(long)]
    pub skip_verify: bool,
    /// Longest the local app may take to answer a delivery.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Print the listener signing key (made now if you have none) and exit.
    #[arg(long, conflicts_with_all = ["forward_to", "rotate_secret"])]
    pub print_secret: bool,
    /// Replace the listener signing key and print the new one (connected
    /// listeners are disconnected); with --forward-to, then listen.
    #[arg(long)]
    pub rotate_secret: bool,
}

/// The exit codes of `shipctl listen` (a macro, so the long help can
/// include them with `concat!`).
macro_rules! listen_exit_codes {
    () => {
        "\
Exit codes:
  0  success: stopped with Ctrl-C, or the key printed or replaced
  2  usage: a wrong flag or address
  3  the API key or the session was refused
  4  the service has no listener stream (an older server)
  6  the service is unavailable (only with --print-secret or --rotate-secret:
     listening itself waits and reconnects)"
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

",
    listen_exit_codes!()
);

/// The exit codes of `shipctl doctor`.
const DOCTOR_EXIT_CODES: &str = "\
Exit codes:
  0  success: every check passed
  1  at least one check failed (or could not run)
  2  usage: a wrong flag";

/// `shipctl shipments ...`.
#[derive(Debug, Subcommand)]
pub enum ShipmentsCommand {
    /// Create a shipment from flags, or from a JSON file with --file.
    Create(CreateArgs),
    /// List shipments, newest first: one page, or every page with --all.
    List(ListArgs),
    /// Show one shipment.
    Get {
        /// The shipment code, SHP-XXXX-XXXX.
        code: String,
    },
    /// Cancel a shipment (before pickup; cancelling again is harmless).
    Cancel {
        /// The shipment code, SHP-XXXX-XXXX.
        code: String,
    },
    /// Rate a delivered shipment, once, from 1 to 10.
    Rate {
        /// The shipment code, SHP-XXXX-XXXX.
        code: String,
        /// The rating, 1 to 10.
        #[arg(value_parser = clap::value_parser!(u8).range(1..=10))]
        rating: u8,
    },
    /// Generate the code the courier needs to deliver (it replaces any
    /// earlier one and lasts 72 hours).
    ConfirmationCode {
        /// The shipment code, SHP-XXXX-XXXX.
        code: String,
    },
    /// Follow a shipment until it is delivered, returned or cancelled: one
    /// line per change (with `-o ndjson`, one object per change; with `-o
    /// json`, the final shipment).
    Watch(WatchArgs),
    /// The delivery history of a shipment, newest first: every attempt to
    /// each webhook and to its own webhook_url, redeliveries included
    /// (needs `shipctl login`).
    Deliveries(DeliveriesArgs),
    /// Create shipments in bulk from a CSV or NDJSON file.
    ///
    /// Every row is sent with an idempotency key, so running the same file
    /// again creates nothing twice: an interrupted import resumes that way.
    Import(ImportArgs),
}

/// `shipctl shipments create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The courier company id (see `shipctl couriers list`).
    #[arg(long, required_unless_present = "file")]
    pub courier: Option<CourierId>,
    /// Weight in kilograms, e.g. 4.5.
    #[arg(long)]
    pub weight: Option<Decimal>,
    /// Free text, e.g. "30x20x10 cm".
    #[arg(long)]
    pub dimensions: Option<String>,
    /// Pickup address; "lat,lng" makes the fee include the distance.
    #[arg(long)]
    pub from: Option<String>,
    /// Delivery address; "lat,lng" makes the fee include the distance.
    #[arg(long)]
    pub to: Option<String>,
    /// An item label; repeat for several.
    #[arg(long = "item", value_name = "ITEM")]
    pub items: Vec<String>,
    /// What is shipped.
    #[arg(long)]
    pub description: Option<String>,
    /// HTTPS address that receives this shipment's changes.
    #[arg(long, value_parser = parse_webhook_url)]
    pub webhook_url: Option<String>,
    /// The whole request as JSON (the API's create body) instead of flags;
    /// `-` reads stdin.
    #[arg(long, conflicts_with_all = ["courier", "weight", "dimensions", "from", "to", "items", "description", "webhook_url"])]
    pub file: Option<PathBuf>,
    /// Makes a repeated create safe: the same key and body within 24 hours
    /// give the first shipment back instead of a second one.
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

/// `shipctl shipments list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this status (assigned_to_courier, assigned_to_driver,
    /// in_transit, delivered, failed, returned, cancelled, ...).
    #[arg(long)]
    pub status: Option<String>,
    /// Only this courier company id.
    #[arg(long)]
    pub courier: Option<CourierId>,
    /// Created at or after: RFC 3339 or YYYY-MM-DD (midnight UTC).
    #[arg(long, value_parser = parse_time)]
    pub created_after: Option<DateTime<Utc>>,
    /// Created before: RFC 3339 or YYYY-MM-DD (midnight UTC).
    #[arg(long, value_parser = parse_time)]
    pub created_before: Option<DateTime<Utc>>,
    /// Changed at or after: RFC 3339 or YYYY-MM-DD. How a webhook receiver
    /// catches up on deliveries it missed.
    #[arg(long, value_parser = parse_time)]
    pub updated_after: Option<DateTime<Utc>>,
    /// Page number, from 1.
    #[arg(long, conflicts_with = "all", value_parser = clap::value_parser!(u32).range(1..))]
    pub page: Option<u32>,
    /// Shipments per page, 1 to 100 [default: 20; 100 with --all].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub page_size: Option<u32>,
    /// Every page, streamed one shipment at a time (constant memory).
    #[arg(long)]
    pub all: bool,
}

/// `shipctl shipments watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The shipment code, SHP-XXXX-XXXX.
    pub code: String,
    /// Time between two looks, e.g. 2s, 500ms, 1m.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub interval: Duration,
}

/// `shipctl shipments deliveries`.
#[derive(Debug, Args)]
pub struct DeliveriesArgs {
    /// The shipment code, SHP-XXXX-XXXX.
    pub code: String,
    /// Page number, from 1.
    #[arg(long, conflicts_with = "all", value_parser = clap::value_parser!(u32).range(1..))]
    pub page: Option<u32>,
    /// Attempts per page, 1 to 100 [default: 20; 100 with --all].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub page_size: Option<u32>,
    /// Every page, streamed one attempt at a time (constant memory).
    #[arg(long)]
    pub all: bool,
}

/// `shipctl shipments import`.
#[derive(Debug, Args)]
#[command(after_help = IMPORT_EXIT_CODES, after_long_help = IMPORT_HELP)]
pub struct ImportArgs {
    /// The file: CSV with a header row (the create fields as columns), or
    /// NDJSON (one create body per line); `-` reads stdin.
    pub file: PathBuf,
    /// The file's format [default: ndjson for .ndjson and .jsonl files,
    /// else csv].
    #[arg(long, value_enum)]
    pub format: Option<ImportFormat>,
    /// How many creates are in flight at once, 1 to 64.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    /// Check every row and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write one JSON object per input row, in input order, to this file
    /// (`-` for stdout): {"line", "status" (created, exists or failed; valid
    /// in a dry run), "code", "error"}.
    #[arg(long, value_name = "FILE")]
    pub results: Option<PathBuf>,
}

/// `shipctl shipments import --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    /// A header row naming the columns, then one shipment per row.
    Csv,
    /// One JSON create body per line.
    Ndjson,
}

/// The exit codes of `shipctl shipments import` (a macro, so the long help
/// can include them with `concat!`).
macro_rules! import_exit_codes {
    () => {
        "\
Exit codes:
  0  success: every row was created or existed already (with --dry-run: valid)
  1  at least one row failed (the others were still created)
  2  usage: a wrong flag, an unreadable file, an unknown or missing column
  3  the API key was refused: the import stopped
  6  the service or the network is unavailable: the import stopped"
    };
}

/// The exit codes of `shipctl shipments import`, for `-h`.
const IMPORT_EXIT_CODES: &str = import_exit_codes!();

/// The long help of `shipctl shipments import`, for `--help`.
const IMPORT_HELP: &str = concat!(
    "\
CSV columns: courier_company_id (required), description, weight_kg, dimensions,
items (labels separated by `;`), start_address, end_address, webhook_url, and
an optional idempotency_key. An empty cell leaves the field out. An NDJSON
line is the API's create body, with an optional \"idempotency_key\".

Each row is created with its idempotency_key, or else with one derived from
its content and line number: running the same file again (within 24 hours)
reports the rows created before as existing instead of creating them twice,
so an interrupted import resumes by running it again. Correct failed rows in
place; adding or removing lines changes the keys of the lines after them.

",
    import_exit_codes!()
);

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

/// `shipctl webhooks ...`.
#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// Register an HTTPS address for every shipment change. The signing key
    /// is shown once: store it at once.
    Register {
        /// The receiving address (HTTPS).
        #[arg(value_parser = parse_webhook_url)]
        url: String,
    },
    /// List the registered webhooks.
    List,
    /// Resume deliveries to a webhook.
    Enable {
        /// The webhook id (see `shipctl webhooks list`).
        id: WebhookId,
    },
    /// Pause deliveries to a webhook.
    Disable {
        /// The webhook id (see `shipctl webhooks list`).
        id: WebhookId,
    },
    /// Delete a webhook: deliveries stop.
    Delete {
        /// The webhook id (see `shipctl webhooks list`).
        id: WebhookId,
    },
    /// The delivery log of a webhook, newest first.
    Deliveries {
        /// The webhook id (see `shipctl webhooks list`).
        id: WebhookId,
        /// Page number, from 1.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        page: u32,
    },
    /// Send a delivery again, or every failure since a time.
    ///
    /// With DELIVERY_ID (an ID of `shipctl webhooks deliveries` or `shipctl
    /// shipments deliveries`), that delivery, failed or not. With
    /// --failed-since, every change whose delivery to the webhook failed
    /// since then (until --failed-until, default now) and has not been
    /// delivered since, once per change; at most 10000 a run (run it again
    /// for the rest). Either way the receiver gets the same body and
    /// version as the first time, signed with the webhook's current key,
    /// even while the webhook is disabled; the new attempts appear in its
    /// delivery log as redeliveries. Nothing is retried unless asked.
    #[command(
        group(ArgGroup::new("which").required(true).args(["delivery_id", "failed_since"])),
        override_usage = "shipctl webhooks redeliver <ID> <DELIVERY_ID>\n       \
                          shipctl webhooks redeliver <ID> --failed-since <TIME> [--failed-until <TIME>]"
    )]
    Redeliver {
        /// The webhook id (see `shipctl webhooks list`).
        id: WebhookId,
        /// The delivery to send again.
        delivery_id: Option<DeliveryId>,
        /// Every failure at or after this time: RFC 3339 or YYYY-MM-DD
        /// (midnight UTC).
        #[arg(long, value_name = "TIME", value_parser = parse_time)]
        failed_since: Option<DateTime<Utc>>,
        /// ... and at or before this time [default: now].
        // With the group, conflicting with a delivery id means needing
        // --failed-since (clap does not check `requires` here).
        #[arg(long, value_name = "TIME", value_parser = parse_time, conflicts_with = "delivery_id")]
        failed_until: Option<DateTime<Utc>>,
    },
    /// Create or replace the key that signs deliveries to shipments' own
    /// `webhook_url`. Shown once: store it at once.
    RotateShipmentKey,
    /// Print the X-Service-Signature header value for a body (offline).
    Sign {
        /// The signing key (whsec_...).
        #[command(flatten)]
        key: SigningKeyArg,
        /// Where the body comes from.
        #[command(flatten)]
        body: BodyArg,
    },
    /// Check a delivery's signature (offline): exit 0 if valid, exit 1 with
    /// the reason on stderr if not.
    Verify {
        /// The signing key (whsec_...).
        #[command(flatten)]
        key: SigningKeyArg,
        /// The X-Service-Signature header value, exactly as received.
        #[arg(long, allow_hyphen_values = true)]
        signature: String,
        /// Where the body comes from.
        #[command(flatten)]
        body: BodyArg,
    },
}

/// The signing key of `webhooks sign` and `webhooks verify`.
#[derive(Debug, Args)]
pub struct SigningKeyArg {
    /// The webhook's signing key (whsec_...), exactly as shown at
    /// registration. Prefer the variable, which keeps it out of shell
    /// history.
    #[arg(long, env = "SHIPCTL_SIGNING_KEY", hide_env_values = true)]
    pub signing_key: String,
}

/// The body of `webhooks sign` and `webhooks verify`.
#[derive(Debug, Args)]
pub struct BodyArg {
    /// The raw body, byte for byte [default: read stdin].
    #[arg(long)]
    pub body_file: Option<PathBuf>,
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

/// Parses `500ms`, `2s`, `1m`, or a number of seconds.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("`{s}` is not a duration: write e.g. 500ms, 2s or 1m");
    let (number, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(bad()),
    };
    if !(0.01..=3600.0).contains(&seconds) {
        return Err(format!("`{s}` is out of range: from 10ms to 1h"));
    }
    Ok(Duration::from_secs_f64(seconds))
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
}
