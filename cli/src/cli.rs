//! The command tree, as typed on the command line: raw options, before the
//! configuration file and the environment are taken into account.
//!
//! Here are the top-level [`Command`]s and the options every command
//! shares; each command's own arguments live beside its code, in its module
//! of [`crate::commands`].

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use shipment_sdk::keys::KeyEnvironment;

use crate::commands::auth::LoginArgs;
use crate::commands::completions::CompletionsArgs;
use crate::commands::config::ConfigCommand;
use crate::commands::couriers::CouriersCommand;
use crate::commands::doctor::{DOCTOR_EXIT_CODES, DoctorArgs};
use crate::commands::keys::KeysCommand;
use crate::commands::listen::ListenArgs;
use crate::commands::replay::ReplayArgs;
use crate::commands::shipments::ShipmentsCommand;
use crate::commands::webhooks::WebhooksCommand;
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
    /// Merchant API key (sk_test_... or sk_live_..., or a restricted key
    /// rk_test_... or rk_live_...). Prefer the variable or
    /// `shipctl config set api-key`, which keep it out of shell history.
    #[arg(long, env = "SHIPCTL_API_KEY", hide_env_values = true, global = true)]
    pub api_key: Option<String>,
    /// API base address, including /api/v1 [default for staging:
    /// http://127.0.0.1:8080/api/v1; production has none].
    #[arg(long, env = "SHIPCTL_BASE_URL", global = true)]
    pub base_url: Option<String>,
    /// Staging takes sk_test_ and rk_test_ keys, production sk_live_ and
    /// rk_live_ keys; a key of the
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
    /// again, byte for byte with their delivery id and webhook-id; with
    /// the listener signing key, signed anew at the time of the POST: no
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
    Completions(CompletionsArgs),
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
}
