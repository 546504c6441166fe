//! `shipctl login`, `logout` and `whoami`: the dashboard session, and what
//! the active profile would use.

use std::io::{self, Write};

use clap::Args;
use serde::Serialize;

use shipment_sdk::model::Permissions;

use super::key_access;
use crate::config::{self, Session};
use crate::error::{AUTH, Failure, Surface};
use crate::output::{self, Cell, Format};
use crate::{Ctx, note, stdin_is_terminal};

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

/// Signs in and saves the session token for the active profile.
pub async fn login(ctx: &Ctx, args: LoginArgs) -> Result<(), Failure> {
    let email = match args.email.or_else(|| ctx.settings.email.clone()) {
        Some(email) => email,
        None if stdin_is_terminal() && !args.password_stdin => ask("E-mail: ")?,
        None => {
            return Err(Failure::usage("no e-mail to sign in with")
                .hint("pass --email, set SHIPCTL_EMAIL, or `shipctl config set email`"));
        }
    };
    let password = if args.password_stdin {
        super::read_stdin_line("password")?
    } else if stdin_is_terminal() {
        rpassword::prompt_password(format!("Password for {email}: ")).map_err(|e| {
            Failure::new(
                crate::error::FAILURE,
                format!("cannot read the password: {e}"),
            )
        })?
    } else {
        return Err(
            Failure::usage("cannot ask for the password: stdin is not a terminal")
                .hint("pipe the password with --password-stdin"),
        );
    };
    if password.is_empty() {
        return Err(Failure::usage("the password is empty"));
    }
    let dashboard = ctx
        .dashboard_builder()?
        .login(&email, &password)
        .await
        .map_err(|e| Failure::sdk(e, Surface::Login))?;
    let session = Session {
        base_url: ctx.settings.effective_base_url(),
        email: email.clone(),
        token: dashboard.token().expose().to_owned(),
        expires_at: dashboard
            .expires_at()
            .unwrap_or_else(|| chrono::Utc::now() + chrono::Duration::hours(12)),
    };
    let profile = &ctx.settings.profile.value;
    session.save(&ctx.paths, profile)?;
    note(format!(
        "signed in to {} as {email} (profile {profile}) until {}",
        session.base_url,
        output::short_time(&session.expires_at)
    ));
    Ok(())
}

fn ask(prompt: &str) -> Result<String, Failure> {
    eprint!("{prompt}");
    let mut line = String::new();
    io::stdin()
        .read_line(&mut line)
        .map_err(|e| Failure::new(crate::error::FAILURE, format!("cannot read stdin: {e}")))?;
    let line = line.trim().to_owned();
    if line.is_empty() {
        return Err(Failure::usage("no e-mail given"));
    }
    Ok(line)
}

/// Ends the session at the service and forgets its token.
pub async fn logout(ctx: &Ctx) -> Result<(), Failure> {
    let profile = &ctx.settings.profile.value;
    let Some(session) = Session::load(&ctx.paths, profile)? else {
        note(format!("not signed in (profile {profile})"));
        return Ok(());
    };
    // An expired or revoked session is already over at the service: forget
    // it here all the same.
    match ctx.dashboard() {
        Ok(dashboard) => match dashboard.logout().await {
            Ok(()) => {}
            Err(e) if e.is_unauthenticated() => {}
            Err(e) => return Err(Failure::sdk(e, Surface::Login)),
        },
        Err(f) if f.code == AUTH => {}
        Err(f) => return Err(f),
    }
    Session::remove(&ctx.paths, profile)?;
    note(format!(
        "signed out {} from {} (profile {profile})",
        session.email, session.base_url
    ));
    Ok(())
}

/// What `whoami` reports, also as JSON.
#[derive(Debug, Serialize)]
struct Identity {
    profile: String,
    environment: &'static str,
    base_url: String,
    api_key: Option<String>,
    api_key_source: Option<String>,
    /// `true` accepted, `false` refused, `None` not checked (no key).
    api_key_accepted: Option<bool>,
    /// Whether the accepted key is a restricted one (`rk_`).
    api_key_restricted: Option<bool>,
    /// What the accepted key may do, every resource named (a full key's
    /// are each resource at its highest level).
    api_key_permissions: Option<Permissions>,
    /// When the key stops working; `None` when it never does, or when it
    /// was not accepted and the service did not say.
    api_key_expires_at: Option<String>,
    dashboard_email: Option<String>,
    dashboard_expires_at: Option<String>,
    dashboard_session_valid: Option<bool>,
}

/// Shows the active profile and credentials, checking each with the
/// service. Exit 3 when nothing is configured or a credential is refused.
pub async fn whoami(ctx: &Ctx, out: &mut dyn Write) -> Result<(), Failure> {
    let settings = &ctx.settings;
    let mut id = Identity {
        profile: settings.profile.value.clone(),
        environment: settings.environment.value.as_str(),
        base_url: settings.effective_base_url(),
        api_key: settings.api_key.as_ref().map(|k| config::mask(&k.value)),
        api_key_source: settings.api_key.as_ref().map(|k| k.source.to_string()),
        api_key_accepted: None,
        api_key_restricted: None,
        api_key_permissions: None,
        api_key_expires_at: None,
        dashboard_email: None,
        dashboard_expires_at: None,
        dashboard_session_valid: None,
    };
    let mut problems = Vec::new();
    if settings.api_key.is_some() {
        // The key's view of itself: any key the service accepts may ask,
        // whatever its permissions.
        match ctx.client()?.current_key().await {
            Ok(key) => {
                id.api_key_accepted = Some(true);
                id.api_key_restricted = Some(key.restricted);
                id.api_key_permissions = Some(key.permissions);
                id.api_key_expires_at = key.expires_at.as_ref().map(output::short_time);
            }
            Err(shipment_sdk::Error::ApiKeyExpired { expired_at, .. }) => {
                id.api_key_accepted = Some(false);
                id.api_key_expires_at = expired_at.as_ref().map(output::short_time);
                problems.push("the API key has expired");
            }
            Err(e) if e.is_unauthenticated() || e.is_forbidden() => {
                id.api_key_accepted = Some(false);
                problems.push("the API key was refused");
            }
            Err(e) => return Err(Failure::sdk(e, Surface::Couriers)),
        }
    }
    if let Some(session) = Session::load(&ctx.paths, &settings.profile.value)? {
        id.dashboard_email = Some(session.email.clone());
        id.dashboard_expires_at = Some(output::short_time(&session.expires_at));
        let valid = match ctx.dashboard() {
            Ok(dashboard) => match dashboard.api_keys().list().await {
                Ok(_) => true,
                Err(e) if e.is_unauthenticated() => false,
                Err(e) => return Err(Failure::sdk(e, Surface::Keys)),
            },
            Err(f) if f.code == AUTH => false,
            Err(f) => return Err(f),
        };
        id.dashboard_session_valid = Some(valid);
        if !valid {
            problems.push("the dashboard session has ended");
        }
    }
    match ctx.format() {
        Format::Table => {
            let yes_no = |v: Option<bool>, yes: &str, no: &str| match v {
                Some(true) => Cell::plain(yes),
                Some(false) => Cell::plain(no),
                None => Cell::opt(None::<String>),
            };
            let key = match (&id.api_key, &id.api_key_source) {
                (Some(k), Some(src)) => Cell::plain(format!("{k} ({src})")),
                _ => Cell::opt(None::<String>),
            };
            let permissions = match (id.api_key_restricted, &id.api_key_permissions) {
                (Some(restricted), Some(p)) => Cell::plain(key_access::describe(restricted, p)),
                _ => Cell::opt(None::<String>),
            };
            let expires = match (id.api_key_accepted, &id.api_key_expires_at) {
                (Some(false), Some(t)) => Cell::plain(format!("expired {t}")),
                (_, Some(t)) => Cell::plain(t),
                (Some(true), None) => Cell::plain("never"),
                _ => Cell::opt(None::<String>),
            };
            let dashboard = match (&id.dashboard_email, &id.dashboard_expires_at) {
                (Some(e), Some(t)) => Cell::plain(format!("{e} (until {t})")),
                _ => Cell::plain("not signed in"),
            };
            output::detail(
                out,
                &[
                    (
                        "profile",
                        Cell::plain(format!("{} ({})", id.profile, settings.profile.source)),
                    ),
                    (
                        "environment",
                        Cell::plain(format!(
                            "{} ({})",
                            id.environment, settings.environment.source
                        )),
                    ),
                    ("base_url", Cell::plain(&id.base_url)),
                    ("api_key", key),
                    (
                        "api_key_ok",
                        yes_no(id.api_key_accepted, "accepted", "refused"),
                    ),
                    ("permissions", permissions),
                    ("expires", expires),
                    ("dashboard", dashboard),
                    (
                        "session_ok",
                        yes_no(id.dashboard_session_valid, "valid", "ended"),
                    ),
                ],
            )?;
        }
        Format::Json => output::json(out, &id)?,
        Format::Ndjson => output::json_line(out, &id)?,
    }
    if id.api_key.is_none() && id.dashboard_email.is_none() {
        return Err(Failure::new(AUTH, "not signed in and no API key")
            .hint("run `shipctl login`, or `shipctl config set api-key`"));
    }
    if let Some(first) = problems.first() {
        let fix = if id.api_key_accepted == Some(false) {
            "check the key with `shipctl config set api-key`, or `shipctl keys create --save`"
        } else {
            "run `shipctl login`"
        };
        return Err(Failure::new(AUTH, *first).hint(fix));
    }
    Ok(())
}
