//! The checks of the merchant's account: the API key, the dashboard
//! session, and each webhook's recent deliveries.

use super::*;
use chrono::{DateTime, TimeDelta};
use shipment_sdk::keys::{KeyEnvironment, KeyPrefix};
use shipment_sdk::model::CurrentKey;

use crate::commands::key_access;

/// The API key: present, of the environment in effect, accepted; then
/// what it may do and until when ([`access`]). Returns the client and the
/// key's view of itself when it was accepted.
pub(super) async fn api_key(
    ctx: &Ctx,
    online: Result<(), &str>,
    checks: &mut Vec<Check>,
) -> Option<(Client, CurrentKey)> {
    const NAME: &str = "API key";
    let s = &ctx.settings;
    let profile = profile_arg(s);
    let Some(key) = &s.api_key else {
        checks.push(Check::fail(
            NAME,
            format!("none for profile {}", s.profile.value),
            format!(
                "`shipctl login{profile}` then `shipctl keys create --save{profile}`, or \
                 `shipctl config set api-key{profile}`"
            ),
        ));
        return None;
    };
    let shown = format!("{} ({})", config::mask(&key.value), origin(&key.source));
    // A new key goes where this one came from: a profile's is replaced by
    // `--save`, but a flag or a variable would still win over it.
    let new_key = || match &key.source {
        Source::Flag(flag) => format!(
            "`shipctl login{profile}`, make a key with `shipctl keys create`, and pass it to {flag}"
        ),
        Source::Env(var) => format!(
            "`shipctl login{profile}`, make a key with `shipctl keys create`, and `export {var}=...`"
        ),
        _ => format!("`shipctl login{profile}` then `shipctl keys create --save{profile}`"),
    };
    // The key's own environment, by its prefix, when it is not the one in
    // effect.
    let belongs_to = match KeyPrefix::parse(&key.value) {
        Some((
            KeyPrefix {
                kind,
                environment: KeyEnvironment::Production,
            },
            _,
        )) if kind.is_merchant() => EnvironmentName::Production,
        _ => EnvironmentName::Staging,
    };
    let switch = || {
        let mut fix = change(
            s,
            Some(&s.environment.source),
            "environment",
            belongs_to.as_str(),
        );
        if belongs_to == EnvironmentName::Production && s.base_url.is_none() {
            fix.push_str(&format!(
                " and {}",
                change(s, None, "base-url", "https://.../api/v1")
            ));
        }
        fix
    };
    // Production without an address: the base URL check said so, and the
    // key cannot be judged against an environment that is not complete.
    let Ok(environment) = s.sdk_environment() else {
        checks.push(Check::skip(NAME, "the base URL is not usable"));
        return None;
    };
    let key_prefix = environment.key_prefix();
    let built = Client::builder()
        .api_key(&key.value)
        .environment(environment)
        .base_url(s.effective_base_url())
        .user_agent(USER_AGENT)
        .timeout(probe::TIMEOUT)
        .connect_timeout(probe::CONNECT_TIMEOUT)
        .max_retries(0)
        .on_key_expiry_warning(crate::warn_key_expiry)
        .build();
    let client = match built {
        Ok(client) => client,
        Err(shipment_sdk::Error::WrongEnvironment { .. }) => {
            checks.push(Check::fail(
                NAME,
                format!(
                    "{shown} is a {} key, but the environment is {}",
                    belongs_to.as_str(),
                    s.environment.value.as_str()
                ),
                format!(
                    "{}, or use a {} key ({key_prefix}...)",
                    switch(),
                    s.environment.value.as_str(),
                ),
            ));
            return None;
        }
        Err(e) => {
            checks.push(Check::fail(
                NAME,
                format!("{shown}: {}", Failure::sdk(e, Surface::Couriers).message),
                new_key(),
            ));
            return None;
        }
    };
    if let Err(why) = online {
        checks.push(Check::skip(NAME, why));
        return None;
    }
    // The key's view of itself: any key the service accepts may ask,
    // whatever its permissions.
    match client.current_key().await {
        Ok(current) => {
            checks.push(Check::pass(
                NAME,
                format!(
                    "{shown}, accepted by the {} service",
                    s.environment.value.as_str()
                ),
            ));
            checks.push(access(&current, Utc::now(), &new_key()));
            Some((client, current))
        }
        Err(e) => {
            let fix = if e.is_unauthenticated() && e.to_string().contains("other environment") {
                // The reference server's words for a key that fits the
                // environment in effect while the address serves the other
                // one: the address is what is wrong, or the key is.
                format!(
                    "{} (the {} address), or use a key of the environment this address serves",
                    change(
                        s,
                        s.base_url.as_ref().map(|u| &u.source),
                        "base-url",
                        "https://.../api/v1"
                    ),
                    s.environment.value.as_str()
                )
            } else if e.is_unauthenticated() || e.is_forbidden() {
                new_key()
            } else if e.is_not_found() {
                change(
                    s,
                    s.base_url.as_ref().map(|u| &u.source),
                    "base-url",
                    "https://.../api/v1",
                ) + " (the address ends in /api/v1)"
            } else {
                TRY_AGAIN.to_owned()
            };
            let refused = Failure::sdk(e, Surface::Couriers).message;
            checks.push(Check::fail(
                NAME,
                format!("{shown} refused: {refused}"),
                fix,
            ));
            None
        }
    }
}

/// A key expiring this soon fails `doctor`: the service warns on every
/// answer from then on, and a key about to stop is something to fix.
pub(super) const KEY_EXPIRY_WARNING_DAYS: i64 = 7;

/// What the accepted key may do and until when: `full` or its
/// permissions, when it expires, and the commands it cannot run (named, so
/// a refusal is no surprise). Fails only for a key expiring within
/// [`KEY_EXPIRY_WARNING_DAYS`], with `new_key`, the way to make another.
pub(super) fn access(key: &CurrentKey, now: DateTime<Utc>, new_key: &str) -> Check {
    const NAME: &str = "key access";
    let mut detail = key_access::describe(key.restricted, &key.permissions);
    match key.expires_at {
        None => detail.push_str("; never expires"),
        Some(at) => detail.push_str(&format!(
            "; expires {} (in {})",
            output::short_time(&at),
            probe::days(at - now)
        )),
    }
    let cannot = key_access::cannot_run(&key.permissions);
    if !cannot.is_empty() {
        detail.push_str(&format!("; cannot run: {}", cannot.join("; ")));
    }
    match key.expires_at {
        Some(at) if at - now <= TimeDelta::days(KEY_EXPIRY_WARNING_DAYS) => Check::fail(
            NAME,
            detail,
            format!("the key stops working soon: {new_key}, and delete this one"),
        ),
        _ => Check::pass(NAME, detail),
    }
}

/// What the session check found.
pub(super) enum SessionState {
    /// The profile has none (never signed in, or signed out), and
    /// `--require-session` was not given: the checks needing it are not run.
    Missing,
    /// One that cannot be used: required and missing, saved for another
    /// address, ended, refused, or not checked because the service did not
    /// answer.
    Unusable,
    /// Accepted: the client and the webhooks it listed on the way.
    Accepted(DashboardClient, Vec<Webhook>),
}

/// The dashboard session: saved, for this address, not ended, and
/// accepted.
pub(super) async fn session(
    ctx: &Ctx,
    online: Result<(), &str>,
    require_session: bool,
    checks: &mut Vec<Check>,
) -> SessionState {
    const NAME: &str = "session";
    let profile = &ctx.settings.profile.value;
    let file = format!("sessions/{profile}.toml");
    let saved = match Session::load(&ctx.paths, profile) {
        Ok(Some(saved)) => saved,
        Ok(None) if require_session => {
            checks.push(Check::fail(
                NAME,
                format!("not signed in (profile {profile}), and --require-session"),
                login(ctx),
            ));
            return SessionState::Unusable;
        }
        Ok(None) => {
            checks.push(Check::not_checked(
                NAME,
                &format!("not signed in (profile {profile})"),
                login(ctx),
            ));
            return SessionState::Missing;
        }
        Err(f) => {
            checks.push(Check::fail(NAME, f.message, login(ctx)));
            return SessionState::Unusable;
        }
    };
    let base = ctx.settings.effective_base_url();
    if saved.base_url != base {
        checks.push(Check::fail(
            NAME,
            format!(
                "{} signed in at {}, not at {base} ({file})",
                saved.email, saved.base_url
            ),
            login(ctx),
        ));
        return SessionState::Unusable;
    }
    let now = Utc::now();
    if saved.expires_at <= now {
        checks.push(Check::fail(
            NAME,
            format!(
                "{}'s session ended at {} ({file})",
                saved.email,
                output::short_time(&saved.expires_at)
            ),
            login(ctx),
        ));
        return SessionState::Unusable;
    }
    if let Err(why) = online {
        checks.push(Check::skip(NAME, why));
        return SessionState::Unusable;
    }
    let built = ctx.dashboard_builder().and_then(|b| {
        b.timeout(probe::TIMEOUT)
            .connect_timeout(probe::CONNECT_TIMEOUT)
            .max_retries(0)
            .token(&saved.token)
            .map_err(|e| Failure::sdk(e, Surface::Login))
    });
    let dashboard = match built {
        Ok(dashboard) => dashboard,
        Err(f) => {
            checks.push(Check::fail(NAME, f.message, login(ctx)));
            return SessionState::Unusable;
        }
    };
    match dashboard.webhooks().list().await {
        Ok(hooks) => {
            checks.push(Check::pass(
                NAME,
                format!(
                    "{}, valid until {} (in {}; {file})",
                    saved.email,
                    output::short_time(&saved.expires_at),
                    probe::seconds(saved.expires_at - now)
                ),
            ));
            SessionState::Accepted(dashboard, hooks)
        }
        Err(e) => {
            let fix = if e.is_unauthenticated() {
                login(ctx)
            } else {
                TRY_AGAIN.to_owned()
            };
            let why = Failure::sdk(e, Surface::Webhooks).message;
            checks.push(Check::fail(
                NAME,
                format!("{}'s session was refused: {why}", saved.email),
                fix,
            ));
            SessionState::Unusable
        }
    }
}

/// One check per webhook, from its recent deliveries.
pub(super) async fn webhooks(
    dashboard: &DashboardClient,
    hooks: &[Webhook],
    checks: &mut Vec<Check>,
) {
    if hooks.is_empty() {
        checks.push(Check::pass(
            "webhooks",
            "none registered (`shipctl webhooks register URL` adds one)",
        ));
        return;
    }
    for hook in hooks {
        let name = format!("webhook {}", hook.webhook_id);
        let recent = dashboard
            .webhooks()
            .deliveries(hook.webhook_id)
            .page_size(RECENT)
            .send()
            .await;
        checks.push(match recent {
            Ok(page) => judge_deliveries(name, hook, &page.data),
            Err(e) => Check::fail(
                name,
                format!(
                    "{}: cannot read its deliveries: {}",
                    hook.url,
                    Failure::sdk(e, Surface::Webhooks).message
                ),
                TRY_AGAIN,
            ),
        });
    }
}

/// A webhook's health from its latest deliveries (newest first): it fails
/// when paused (changes are not delivered to it, nor kept for later), when
/// the latest delivery failed (the receiver is broken now), or when at
/// least one in ten recent ones failed (it loses updates: failures are not
/// retried by the service).
pub(super) fn judge_deliveries(name: String, hook: &Webhook, recent: &[Delivery]) -> Check {
    let id = hook.webhook_id;
    if !hook.active {
        return Check::fail(
            name,
            format!("{}: paused, so changes are not delivered to it", hook.url),
            format!("`shipctl webhooks enable {id}` (or `shipctl webhooks delete {id}`)"),
        );
    }
    let Some(latest) = recent.first() else {
        return Check::pass(name, format!("{}: no deliveries yet", hook.url));
    };
    let failures: Vec<&Delivery> = recent.iter().filter(|d| !d.success).collect();
    let total = recent.len();
    let Some(last) = failures.first() else {
        let all = match total {
            1 => "its only delivery".to_owned(),
            n => format!("the last {n} deliveries"),
        };
        return Check::pass(name, format!("{}: {all} succeeded", hook.url));
    };
    let mut detail = format!(
        "{}: {} of the last {total} deliveries failed ({}%)",
        hook.url,
        failures.len(),
        failures.len() * 100 / total
    );
    let error = match (&last.error, last.status_code) {
        (Some(error), _) => error.clone(),
        (None, Some(status)) => format!("HTTP {status}"),
        (None, None) => "no answer".to_owned(),
    };
    detail.push_str(&format!(
        "; last error at {}: {error}",
        output::short_time(&last.delivered_at)
    ));
    if latest.success && failures.len() * 10 < total {
        return Check::pass(name, detail);
    }
    // Failures are not retried by the service: once the receiver works,
    // each change it missed has to be sent again.
    let oldest = failures.last().unwrap_or(last);
    Check::fail(
        name,
        detail,
        format!(
            "fix the receiver, then send what it missed again: `shipctl webhooks redeliver {id} \
             --failed-since {}`",
            oldest
                .delivered_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
    )
}
