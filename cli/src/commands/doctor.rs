//! `shipctl doctor`: checks every part of a merchant's set-up in turn and
//! says, for each that is wrong, the command that fixes it.
//!
//! The checks, in order, each needing the ones before it:
//!
//! 1. **profile**, **environment**, **base URL**: the settings in effect
//!    and where each comes from (flag, variable, profile, default). A
//!    configuration file that cannot be read is a failed check here, not an
//!    error before any check, since finding it is what `doctor` is for.
//! 2. **reachable**: one plain request to the base URL, timed; for https,
//!    **TLS certificate**: its end date (a failure within 14 days); and
//!    **clock**: the local clock against the answer's `Date` header (a
//!    failure beyond 5 s).
//! 3. **API key**: present, of the environment in effect, and accepted;
//!    **key access**: what it may do (`full`, or a restricted key's
//!    permissions and the commands it cannot run) and when it expires (a
//!    failure within 7 days).
//! 4. **session**: the dashboard session saved by `shipctl login`, valid
//!    at this address and at the service, and when it ends.
//! 5. **webhook N**: each webhook's last [`RECENT`] deliveries (failure
//!    rate, last error); they need the session.
//! 6. **listener key**: the key `shipctl listen` signs with exists.
//!
//! A check whose prerequisite failed is not run, and is listed as such.
//! A profile without a saved session (a merchant who uses only an API
//! key) has the checks that need one (4, 5) listed as not checked, with
//! the command that signs in, and they do not fail `doctor` unless
//! `--require-session`.
//! Every request goes out once (no retries) with a 10 s limit: `doctor`
//! reports what it sees, and retries would hide the flaky network it is
//! asked about.

mod account;
use account::{SessionState, api_key, session, webhooks};
mod cert;
mod probe;

use std::io::{self, Write};

use anstyle::{AnsiColor, Style};
use chrono::Utc;
use clap::Args;
use reqwest::Url;
use serde::Serialize;
use shipment_sdk::model::{Access, Delivery, Resource, Webhook};
use shipment_sdk::{Client, DashboardClient, Listener};

use crate::cli::{EnvironmentName, GlobalArgs};
use crate::config::{self, ConfigFile, GlobalSources, Paths, Session, Settings, Source};
use crate::error::{FAILURE, Failure, Surface};
use crate::output::{self, Format};
use crate::{Ctx, USER_AGENT};

/// `shipctl doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Fail when the profile has no dashboard session, instead of showing
    /// the checks that need one as not checked.
    #[arg(long)]
    pub require_session: bool,
}

/// The exit codes of `shipctl doctor`.
pub(crate) const DOCTOR_EXIT_CODES: &str = "\
Exit codes:
  0  success: every check that could be made passed (without a session, those
     that need one are not checked, unless --require-session)
  1  at least one check failed
  2  usage: a wrong flag";

/// How many of a webhook's latest deliveries the webhook check looks at.
pub const RECENT: u32 = 20;

/// The fix of a failure on the service's side.
const TRY_AGAIN: &str = "try again in a minute; if it lasts, tell the service's operator";

/// The outcome of one check, as printed and as `-o json` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked ("API key", "webhook 3").
    pub name: String,
    /// Whether it passed (`false` as well when it was not run).
    pub ok: bool,
    /// Not run, because a check it needs failed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
    /// What was found.
    pub detail: String,
    /// The command that fixes it, for a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    fn pass(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: true,
            skipped: false,
            detail: detail.into(),
            fix: None,
        }
    }

    fn fail(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: false,
            skipped: false,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn skip(name: impl Into<String>, why: &str) -> Check {
        Check {
            name: name.into(),
            ok: false,
            skipped: true,
            detail: format!("not checked: {why}"),
            fix: None,
        }
    }

    /// Not run because something optional is missing (a session), with
    /// what would let it run.
    fn not_checked(name: impl Into<String>, why: &str, hint: impl Into<String>) -> Check {
        Check {
            fix: Some(hint.into()),
            ..Check::skip(name, why)
        }
    }
}

/// The whole answer of `-o json`: `ok` as the exit code says (no check
/// failed; checks not run do not count).
#[derive(Debug, Serialize)]
struct Report<'a> {
    ok: bool,
    checks: &'a [Check],
}

/// Runs every check, prints them, and fails (exit 1) when one failed. A
/// check not run fails nothing by itself: one whose prerequisite failed
/// comes with that failure, and one that needs a session the profile does
/// not have is optional (unless `--require-session`, which makes it a
/// failure).
pub async fn exec(
    global: GlobalArgs,
    sources: GlobalSources,
    out: &mut dyn Write,
    args: DoctorArgs,
) -> Result<(), Failure> {
    let format = global.output;
    let checks = diagnose(global, sources, args.require_session).await;
    print(out, format, &checks)?;
    let failed = checks.iter().filter(|c| !c.ok && !c.skipped).count();
    let skipped = checks.iter().filter(|c| c.skipped).count();
    if failed == 0 {
        return Ok(());
    }
    let mut message = format!("{failed} of {} checks failed", checks.len());
    if skipped > 0 {
        message.push_str(&format!(", {skipped} not run"));
    }
    Err(Failure::new(FAILURE, message))
}

/// Every check, in order.
async fn diagnose(global: GlobalArgs, sources: GlobalSources, require_session: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    let ctx = match settings(global, sources) {
        Ok(ctx) => ctx,
        Err(check) => {
            checks.push(check);
            return checks;
        }
    };
    let s = &ctx.settings;
    checks.push(Check::pass(
        "profile",
        format!(
            "{} ({}); configuration file {}",
            s.profile.value,
            origin(&s.profile.source),
            describe_file(&ctx.paths),
        ),
    ));
    checks.push(Check::pass(
        "environment",
        format!(
            "{} ({})",
            s.environment.value.as_str(),
            origin(&s.environment.source)
        ),
    ));
    let url = match base_url(&ctx) {
        Ok(url) => {
            let from = s.base_url.as_ref().map_or_else(
                || "built-in default for staging".to_owned(),
                |u| origin(&u.source),
            );
            checks.push(Check::pass("base URL", format!("{url} ({from})")));
            Some(url)
        }
        Err(check) => {
            checks.push(check);
            None
        }
    };
    let reachable = match &url {
        Some(url) => reach(&ctx, url, &mut checks).await,
        None => {
            checks.push(Check::skip("reachable", "the base URL is not usable"));
            false
        }
    };
    let online = match (&url, reachable) {
        (_, true) => Ok(()),
        (None, false) => Err("the base URL is not usable"),
        (Some(_), false) => Err("the service did not answer"),
    };
    let client = api_key(&ctx, online, &mut checks).await;
    let dashboard = session(&ctx, online, require_session, &mut checks).await;
    match (&dashboard, online) {
        (_, Err(why)) => checks.push(Check::skip("webhooks", why)),
        (SessionState::Missing, Ok(())) => checks.push(Check::not_checked(
            "webhooks",
            "their delivery logs need a dashboard session",
            login(&ctx),
        )),
        (SessionState::Unusable, Ok(())) => checks.push(Check::fail(
            "webhooks",
            "their delivery logs need a dashboard session",
            login(&ctx),
        )),
        (SessionState::Accepted(dashboard, hooks), Ok(())) => {
            webhooks(dashboard, hooks, &mut checks).await;
        }
    }
    // A restricted key without `listen: read` cannot see the listener key;
    // the session can, else the check is not for this key.
    let client = client.filter(|(_, key)| key.permissions.allows(Resource::Listen, Access::Read));
    let listener = match (&client, &dashboard) {
        (Some((client, _)), _) => Some(client.listener()),
        (None, SessionState::Accepted(dashboard, _)) => Some(dashboard.listener()),
        (None, _) => None,
    };
    checks.push(match (online, listener) {
        (Err(why), _) => Check::skip(LISTENER, why),
        (Ok(()), None) => Check::skip(
            LISTENER,
            "it needs an accepted API key with listen: read, or a session",
        ),
        (Ok(()), Some(listener)) => listener_key(listener).await,
    });
    checks
}

const LISTENER: &str = "listener key";

/// The key `shipctl listen` signs with: one per merchant, made by the first
/// `listen`, so a local app can be configured with it before that.
async fn listener_key(listener: Listener<'_>) -> Check {
    match listener.signing_key().await {
        Ok(Some(key)) => Check::pass(
            LISTENER,
            format!(
                "{}, made {}",
                config::mask(key.signing_key.expose()),
                output::short_time(&key.created_at)
            ),
        ),
        Ok(None) => Check::fail(
            LISTENER,
            "none yet: `shipctl listen` makes it on its first run",
            "`shipctl listen --print-secret` makes it now and prints it for your local app",
        ),
        Err(e) => Check::fail(
            LISTENER,
            format!(
                "cannot read it: {}",
                Failure::sdk(e, Surface::Webhooks).message
            ),
            TRY_AGAIN,
        ),
    }
}

/// Reads the configuration as every command does, but turns what goes
/// wrong into a failed `profile` check.
fn settings(global: GlobalArgs, sources: GlobalSources) -> Result<Ctx, Check> {
    let failed = |f: Failure, fallback: &str| {
        Check::fail(
            "profile",
            f.message,
            f.hint.unwrap_or_else(|| fallback.to_owned()),
        )
    };
    let paths = Paths::locate().map_err(|f| failed(f, "set SHIPCTL_CONFIG_DIR"))?;
    let file =
        ConfigFile::load(&paths).map_err(|f| failed(f, "fix the file by hand, or move it away"))?;
    let settings = Settings::resolve(&global, sources, &file, false)
        .map_err(|f| failed(f, "`shipctl config show` lists the profiles"))?;
    Ok(Ctx {
        global,
        settings,
        file,
        paths,
    })
}

/// Where a setting comes from, for people.
fn origin(source: &Source) -> String {
    match source {
        Source::Flag(flag) => format!("from flag {flag}"),
        Source::Env(var) => format!("from env {var}"),
        Source::Profile(name) => format!("from profile {name} in config.toml"),
        Source::FileDefault => "from default_profile in config.toml".to_owned(),
        Source::Default => "built-in default".to_owned(),
    }
}

fn describe_file(paths: &Paths) -> String {
    let file = paths.config_file();
    if file.exists() {
        file.display().to_string()
    } else {
        format!("{} (none yet)", file.display())
    }
}

/// ` --profile NAME` when the profile was chosen by flag, so a fix run as
/// printed acts on the same profile.
fn profile_arg(settings: &Settings) -> String {
    match settings.profile.source {
        Source::Flag(_) => format!(" --profile {}", settings.profile.value),
        _ => String::new(),
    }
}

/// How to change a setting where it comes from: a flag is given again, a
/// variable exported again, anything else set in the profile.
fn change(settings: &Settings, source: Option<&Source>, config_key: &str, value: &str) -> String {
    match source {
        Some(Source::Flag(flag)) => format!("pass `{flag} {value}`"),
        Some(Source::Env(var)) => format!("`export {var}={value}`"),
        _ => format!(
            "`shipctl config set {config_key} {value}{}`",
            profile_arg(settings)
        ),
    }
}

/// `shipctl login`, for the profile in effect.
fn login(ctx: &Ctx) -> String {
    format!("`shipctl login{}`", profile_arg(&ctx.settings))
}

/// The base URL in effect, if it can be used: an http(s) address, https
/// for production unless it is this machine (the SDK's rules, checked here
/// to say which setting to change).
fn base_url(ctx: &Ctx) -> Result<Url, Check> {
    let s = &ctx.settings;
    let source = s.base_url.as_ref().map(|u| &u.source);
    let fix = || change(s, source, "base-url", "https://.../api/v1");
    if let Err(f) = s.sdk_environment() {
        return Err(Check::fail("base URL", f.message, fix()));
    }
    let text = s.effective_base_url();
    let url = match Url::parse(&text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => url,
        _ => {
            return Err(Check::fail(
                "base URL",
                format!("`{text}` is not an http:// or https:// address"),
                fix(),
            ));
        }
    };
    if url.query().is_some() || url.fragment().is_some() {
        return Err(Check::fail(
            "base URL",
            format!("`{text}` carries a query or fragment"),
            fix(),
        ));
    }
    if s.environment.value == EnvironmentName::Production
        && url.scheme() != "https"
        && !is_local(&url)
    {
        return Err(Check::fail(
            "base URL",
            format!("production needs an https:// address, not `{text}`"),
            fix(),
        ));
    }
    Ok(url)
}

/// The probe, and what its answer says about TLS and the clock. True when
/// the service answered.
async fn reach(ctx: &Ctx, url: &Url, checks: &mut Vec<Check>) -> bool {
    let s = &ctx.settings;
    let fix_address = || {
        let change = change(s, s.base_url.as_ref().map(|u| &u.source), "base-url", "URL");
        if is_local(url) {
            format!("start the service (`shipment-server demo`), or point at another: {change}")
        } else {
            format!("check the address with your operator, then {change}")
        }
    };
    let probe = match probe::probe(url).await {
        Ok(probe) => probe,
        Err(why) => {
            // rustls's words for a certificate it refused ("invalid peer
            // certificate: Expired", "... UnknownIssuer"): the address may
            // well be right.
            let fix = if why.contains("certificate") {
                "the service's certificate was refused: if the address is right, its operator \
                 must fix the certificate (for a private CA, point SSL_CERT_FILE at its \
                 certificate)"
                    .to_owned()
            } else {
                fix_address()
            };
            checks.push(Check::fail("reachable", why, fix));
            if url.scheme() == "https" {
                checks.push(Check::skip("TLS certificate", "the service did not answer"));
            }
            checks.push(Check::skip("clock", "the service did not answer"));
            return false;
        }
    };
    let took = format!("answered in {} ms", probe.elapsed.as_millis());
    match probe.status {
        300..=399 => {
            // The SDK follows no redirect (every call would be an
            // `Error::Redirect`): the fix is to use where it points, when it
            // says.
            let target = probe
                .location
                .as_deref()
                .and_then(|l| url.join(l).ok())
                .map(|u| u.as_str().trim_end_matches('/').to_owned());
            checks.push(Check::fail(
                "reachable",
                format!(
                    "{took} with a redirect (HTTP {}) to {}",
                    probe.status,
                    target.as_deref().unwrap_or("nowhere")
                ),
                change(
                    s,
                    s.base_url.as_ref().map(|u| &u.source),
                    "base-url",
                    target.as_deref().unwrap_or("URL"),
                ),
            ));
        }
        502..=504 => checks.push(Check::fail(
            "reachable",
            format!(
                "{took} HTTP {}: a proxy answered, the service behind it did not",
                probe.status
            ),
            TRY_AGAIN,
        )),
        _ => checks.push(Check::pass("reachable", took)),
    }
    if let Some(validity) = probe.certificate {
        checks.push(match validity {
            None => Check::pass("TLS certificate", "trusted (its dates could not be read)"),
            Some(validity) => match probe::judge_validity(&validity, Utc::now()) {
                Ok(detail) => Check::pass("TLS certificate", detail),
                Err(detail) => Check::fail(
                    "TLS certificate",
                    detail,
                    "the service's operator must renew its certificate (shipctl cannot)",
                ),
            },
        });
    }
    checks.push(match probe.date {
        None => Check::pass("clock", "not compared: the answer had no Date header"),
        Some(date) => {
            let skew = probe::Skew::measure(probe.sent, probe.received, date);
            let detail = format!("local clock {}", skew.describe());
            if skew.within(probe::CLOCK_TOLERANCE) {
                Check::pass("clock", detail)
            } else {
                Check::fail(
                    "clock",
                    format!(
                        "{detail}: more than {} s off",
                        probe::CLOCK_TOLERANCE.num_seconds()
                    ),
                    CLOCK_FIX,
                )
            }
        }
    });
    true
}

/// How to set the clock right on this platform.
const CLOCK_FIX: &str = if cfg!(target_os = "macos") {
    "turn on network time: `sudo sntp -sS time.apple.com`, or System Settings > General > Date & Time"
} else if cfg!(windows) {
    "turn on network time: `w32tm /resync` (as administrator)"
} else {
    "turn on network time: `sudo timedatectl set-ntp true`"
};

/// Whether the address is this machine's (where the fix is to start the
/// service, and plain http is fine even for production).
fn is_local(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Prints the checks: one line each, with the fix under a failure; or one
/// JSON document; or one JSON object per check.
fn print(out: &mut dyn Write, format: Format, checks: &[Check]) -> io::Result<()> {
    match format {
        Format::Json => output::json(
            out,
            &Report {
                ok: checks.iter().all(|c| c.ok || c.skipped),
                checks,
            },
        ),
        Format::Ndjson => checks.iter().try_for_each(|c| output::json_line(out, c)),
        Format::Table => {
            let width = checks
                .iter()
                .map(|c| c.name.chars().count())
                .max()
                .unwrap_or(0);
            let green = Style::new().fg_color(Some(AnsiColor::Green.into()));
            let red = Style::new().bold().fg_color(Some(AnsiColor::Red.into()));
            let dim = Style::new().dimmed();
            let cyan = Style::new().fg_color(Some(AnsiColor::Cyan.into()));
            for check in checks {
                let (mark, style) = match (check.ok, check.skipped) {
                    (true, _) => ("✓", green),
                    (false, false) => ("✗", red),
                    (false, true) => ("-", dim),
                };
                // Details quote the service (its refusals, webhook URLs and
                // their last errors).
                writeln!(
                    out,
                    "{style}{mark}{style:#} {:<width$}  {}",
                    output::escape(&check.name),
                    output::escape(&check.detail)
                )?;
                if let Some(fix) = &check.fix {
                    writeln!(out, "  {cyan}→ fix:{cyan:#} {}", output::escape(fix))?;
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
