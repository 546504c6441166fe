//! `shipctl`: the merchant shipment service from the command line.
//!
//! The binary is a thin [`main`]; the work happens here so the command tree,
//! the configuration and the output layer can be tested as a library.
//!
//! - [`cli`]: the command tree as typed (clap), with the exit codes in
//!   every `--help`.
//! - [`config`]: named profiles in `config.toml`, dashboard sessions, and
//!   the settings in effect (flag, then `SHIPCTL_*` variable, then profile).
//! - [`output`]: tables and detail views for people, `json` and `ndjson`
//!   for programs; data on stdout, everything else on stderr.
//! - [`error`]: what went wrong, the command that fixes it, the exit code.
//! - [`commands`]: one file per resource, each calling the SDK.
#![warn(missing_docs)]

use std::io::{self, IsTerminal as _, Write as _};
use std::process::ExitCode;

use anstyle::{AnsiColor, Style};
use clap::FromArgMatches as _;
use shipment_sdk::{Client, DashboardClient};

pub mod cli;
pub mod commands;
pub mod config;
pub mod error;
pub mod output;

use cli::{Cli, ColorWhen, Command, GlobalArgs};
use config::{ConfigFile, GlobalSources, Paths, Session, Settings};
use error::{AUTH, Failure};
use output::Format;

/// The `User-Agent` of every request.
pub const USER_AGENT: &str = concat!("shipctl/", env!("CARGO_PKG_VERSION"));

/// Parses the command line, runs the command, prints any error on stderr,
/// and returns the exit code (see [`cli::EXIT_CODES`]).
pub fn main() -> ExitCode {
    let matches = cli::command().get_matches();
    let parsed = match Cli::from_arg_matches(&matches) {
        Ok(parsed) => parsed,
        Err(e) => e.exit(),
    };
    let sources = GlobalSources::from_matches(&matches);
    match parsed.global.color {
        ColorWhen::Auto => {}
        ColorWhen::Always => anstream::ColorChoice::Always.write_global(),
        ColorWhen::Never => anstream::ColorChoice::Never.write_global(),
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            report(&Failure::new(error::FAILURE, format!("cannot start: {e}")));
            return ExitCode::from(error::FAILURE);
        }
    };
    match runtime.block_on(run(parsed, sources)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            report(&failure);
            ExitCode::from(failure.code)
        }
    }
}

/// Prints a failure on stderr: `error: ...`, then `hint: ...`, both
/// [escaped](output::escape) (a message may quote the service).
fn report(failure: &Failure) {
    if failure.message.is_empty() {
        return;
    }
    let red = Style::new().bold().fg_color(Some(AnsiColor::Red.into()));
    let cyan = Style::new().bold().fg_color(Some(AnsiColor::Cyan.into()));
    let mut err = anstream::stderr().lock();
    // Nothing useful is left to do if stderr itself is gone.
    let _ = writeln!(
        err,
        "{red}error:{red:#} {}",
        output::escape(&failure.message)
    );
    if let Some(hint) = &failure.hint {
        let _ = writeln!(err, "{cyan}hint:{cyan:#} {}", output::escape(hint));
    }
}

/// Runs one parsed command line.
pub async fn run(cli: Cli, sources: GlobalSources) -> Result<(), Failure> {
    let mut stdout = anstream::stdout().lock();
    let out: &mut dyn io::Write = &mut stdout;
    let result = match cli.command {
        // Offline commands need no configuration at all.
        Command::Completions(args) => commands::completions::exec(out, args),
        Command::Webhooks(command) if commands::webhooks::is_offline(&command) => {
            commands::webhooks::exec_offline(out, command)
        }
        // Reads the configuration itself: a file that cannot be read is one
        // of the things it reports.
        Command::Doctor(args) => commands::doctor::exec(cli.global, sources, out, args).await,
        // Replays a file to a local app: no service, no configuration.
        Command::Replay(args) => commands::replay::exec(out, cli.global.output, args).await,
        command => {
            let creating = matches!(command, Command::Config(_));
            let ctx = Ctx::new(cli.global, sources, creating)?;
            match command {
                Command::Shipments(c) => commands::shipments::exec(&ctx, out, c).await,
                Command::Couriers(c) => commands::couriers::exec(&ctx, out, c).await,
                Command::Login(args) => commands::auth::login(&ctx, args).await,
                Command::Logout => commands::auth::logout(&ctx).await,
                Command::Whoami => commands::auth::whoami(&ctx, out).await,
                Command::Keys(c) => commands::keys::exec(&ctx, out, c).await,
                Command::Webhooks(c) => commands::webhooks::exec(&ctx, out, c).await,
                Command::Listen(args) => commands::listen::exec(&ctx, out, args).await,
                Command::Config(c) => commands::config::exec(&ctx, out, c),
                Command::Completions(_) | Command::Doctor(_) | Command::Replay(_) => {
                    unreachable!("handled above")
                }
            }
        }
    };
    result?;
    out.flush().map_err(Failure::from)
}

/// What every online command needs: the settings in effect, where the files
/// are, and how to print.
#[derive(Debug)]
pub struct Ctx {
    /// The flags as given.
    pub global: GlobalArgs,
    /// The settings in effect.
    pub settings: Settings,
    /// The configuration file as read.
    pub file: ConfigFile,
    /// Where the files are.
    pub paths: Paths,
}

impl Ctx {
    /// Reads the configuration and resolves the settings; `creating` allows
    /// a profile that is not in the file yet.
    pub fn new(global: GlobalArgs, sources: GlobalSources, creating: bool) -> Result<Ctx, Failure> {
        let paths = Paths::locate()?;
        let file = ConfigFile::load(&paths)?;
        let settings = Settings::resolve(&global, sources, &file, creating)?;
        Ok(Ctx {
            global,
            settings,
            file,
            paths,
        })
    }

    /// `--output`.
    pub fn format(&self) -> Format {
        self.global.output
    }

    /// An API-key client for the settings in effect.
    pub fn client(&self) -> Result<Client, Failure> {
        let key = self.settings.api_key.as_ref().ok_or_else(|| {
            Failure::new(
                AUTH,
                format!("no API key for profile `{}`", self.settings.profile.value),
            )
            .hint(
                "pass --api-key, set SHIPCTL_API_KEY, run `shipctl config set api-key`, or \
                 `shipctl login` then `shipctl keys create --save`",
            )
        })?;
        let mut builder = Client::builder()
            .api_key(&key.value)
            .environment(self.settings.sdk_environment()?)
            .user_agent(USER_AGENT)
            .on_key_expiry_warning(warn_key_expiry);
        if let Some(url) = &self.settings.base_url {
            builder = builder.base_url(&url.value);
        }
        builder
            .build()
            .map_err(|e| Failure::sdk(e, error::Surface::Shipments))
    }

    /// A dashboard client resumed from the saved session.
    pub fn dashboard(&self) -> Result<DashboardClient, Failure> {
        let profile = &self.settings.profile.value;
        let base_url = self.settings.effective_base_url();
        let not_signed_in = |why: String| {
            Failure::new(AUTH, why).hint(if profile == config::DEFAULT_PROFILE {
                "run `shipctl login`".to_owned()
            } else {
                format!("run `shipctl login --profile {profile}`")
            })
        };
        let session = Session::load(&self.paths, profile)?
            .ok_or_else(|| not_signed_in("not signed in".into()))?;
        if session.base_url != base_url {
            return Err(not_signed_in(format!(
                "signed in at {}, not at {base_url}",
                session.base_url
            )));
        }
        if session.expires_at <= chrono::Utc::now() {
            return Err(not_signed_in(format!(
                "the session of {} ended at {}",
                session.email,
                output::short_time(&session.expires_at)
            )));
        }
        self.dashboard_builder()?
            .token(session.token)
            .map_err(|e| Failure::sdk(e, error::Surface::Login))
    }

    /// A dashboard builder for the settings in effect.
    pub fn dashboard_builder(&self) -> Result<shipment_sdk::DashboardBuilder, Failure> {
        let mut builder = DashboardClient::builder()
            .environment(self.settings.sdk_environment()?)
            .user_agent(USER_AGENT);
        if let Some(url) = &self.settings.base_url {
            builder = builder.base_url(&url.value);
        }
        Ok(builder)
    }
}

/// Whether a person is reading stdin (to ask for a password or e-mail).
pub fn stdin_is_terminal() -> bool {
    io::stdin().is_terminal()
}

/// Prints the service's `X-Key-Expiry-Warning` on stderr, the first time
/// only: every answer in a key's last 7 days carries it, and a command that
/// sends a hundred requests should still say it once. Escaped, as every
/// text from the service.
pub fn warn_key_expiry(warning: &str) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        let yellow = Style::new().bold().fg_color(Some(AnsiColor::Yellow.into()));
        let _ = writeln!(
            anstream::stderr(),
            "{yellow}warning:{yellow:#} {}",
            output::escape(warning)
        );
    });
}

/// A note for the person at the terminal, on stderr (never on stdout),
/// [escaped](output::escape) (a note may quote the service).
pub fn note(message: impl std::fmt::Display) {
    let dim = Style::new().dimmed();
    let message = message.to_string();
    let message = output::escape(&message);
    let _ = writeln!(anstream::stderr(), "{dim}{message}{dim:#}");
}
