//! `shipctl config ...`: the configuration file and its profiles.

use std::io::Write;

use clap::{Subcommand, ValueEnum};
use serde::Serialize;

use crate::Ctx;
use crate::config::{self, ConfigFile, Profile, check_profile_name, mask, parse_environment};
use crate::error::Failure;
use crate::output::{self, Cell, Format};

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

/// Runs a `config` command.
pub fn exec(ctx: &Ctx, out: &mut dyn Write, command: ConfigCommand) -> Result<(), Failure> {
    match command {
        ConfigCommand::Show => show(ctx, out),
        ConfigCommand::Set { key, value } => {
            let value = match (key, value) {
                (_, Some(v)) => v,
                (ConfigKey::ApiKey, None) => super::read_secret("API key: ", "API key")?,
                (_, None) => {
                    return Err(Failure::usage(format!("`{}` needs a value", key_name(key))));
                }
            };
            let value = value.trim().to_owned();
            if key == ConfigKey::Environment {
                parse_environment(&value)?;
            }
            let mut file = ConfigFile::load(&ctx.paths)?;
            let name = ctx.settings.profile.value.clone();
            let profile = file
                .profiles
                .entry(name.clone())
                .or_insert_with(Profile::default);
            let shown = if key == ConfigKey::ApiKey {
                mask(&value)
            } else {
                value.clone()
            };
            *field(profile, key) = Some(value);
            file.save(&ctx.paths)?;
            crate::note(format!("profile {name}: {} = {shown}", key_name(key)));
            Ok(())
        }
        ConfigCommand::Unset { key } => {
            let mut file = ConfigFile::load(&ctx.paths)?;
            let name = ctx.settings.profile.value.clone();
            if let Some(profile) = file.profiles.get_mut(&name) {
                *field(profile, key) = None;
                file.save(&ctx.paths)?;
            }
            crate::note(format!("profile {name}: {} unset", key_name(key)));
            Ok(())
        }
        ConfigCommand::Use { profile } => {
            check_profile_name(&profile)?;
            let mut file = ConfigFile::load(&ctx.paths)?;
            file.profiles.entry(profile.clone()).or_default();
            file.default_profile = Some(profile.clone());
            file.save(&ctx.paths)?;
            crate::note(format!("default profile: {profile}"));
            Ok(())
        }
    }
}

fn key_name(key: ConfigKey) -> &'static str {
    match key {
        ConfigKey::BaseUrl => "base_url",
        ConfigKey::ApiKey => "api_key",
        ConfigKey::Environment => "environment",
        ConfigKey::Email => "email",
    }
}

fn field(profile: &mut Profile, key: ConfigKey) -> &mut Option<String> {
    match key {
        ConfigKey::BaseUrl => &mut profile.base_url,
        ConfigKey::ApiKey => &mut profile.api_key,
        ConfigKey::Environment => &mut profile.environment,
        ConfigKey::Email => &mut profile.email,
    }
}

/// `config show` as JSON.
#[derive(Serialize)]
struct Shown<'a> {
    file: String,
    default_profile: Option<&'a str>,
    active: Active,
    profiles: Vec<ShownProfile<'a>>,
}

#[derive(Serialize)]
struct Active {
    profile: String,
    profile_source: String,
    environment: &'static str,
    environment_source: String,
    base_url: String,
    base_url_source: String,
    api_key: Option<String>,
    api_key_source: Option<String>,
}

#[derive(Serialize)]
struct ShownProfile<'a> {
    name: &'a str,
    environment: Option<&'a str>,
    base_url: Option<&'a str>,
    api_key: Option<String>,
    email: Option<&'a str>,
}

fn show(ctx: &Ctx, out: &mut dyn Write) -> Result<(), Failure> {
    let s = &ctx.settings;
    let shown = Shown {
        file: ctx.paths.config_file().display().to_string(),
        default_profile: ctx.file.default_profile.as_deref(),
        active: Active {
            profile: s.profile.value.clone(),
            profile_source: s.profile.source.to_string(),
            environment: s.environment.value.as_str(),
            environment_source: s.environment.source.to_string(),
            base_url: s.effective_base_url(),
            base_url_source: s.base_url.as_ref().map_or_else(
                || config::Source::Default.to_string(),
                |u| u.source.to_string(),
            ),
            api_key: s.api_key.as_ref().map(|k| mask(&k.value)),
            api_key_source: s.api_key.as_ref().map(|k| k.source.to_string()),
        },
        profiles: ctx
            .file
            .profiles
            .iter()
            .map(|(name, p)| ShownProfile {
                name,
                environment: p.environment.as_deref(),
                base_url: p.base_url.as_deref(),
                api_key: p.api_key.as_deref().map(mask),
                email: p.email.as_deref(),
            })
            .collect(),
    };
    match ctx.format() {
        Format::Json => output::json(out, &shown)?,
        Format::Ndjson => output::json_line(out, &shown)?,
        Format::Table => {
            let a = &shown.active;
            let with_source = |v: &str, src: &str| Cell::plain(format!("{v} ({src})"));
            output::detail(
                out,
                &[
                    ("file", Cell::plain(&shown.file)),
                    ("profile", with_source(&a.profile, &a.profile_source)),
                    (
                        "environment",
                        with_source(a.environment, &a.environment_source),
                    ),
                    ("base_url", with_source(&a.base_url, &a.base_url_source)),
                    (
                        "api_key",
                        match (&a.api_key, &a.api_key_source) {
                            (Some(k), Some(src)) => with_source(k, src),
                            _ => Cell::opt(None::<String>),
                        },
                    ),
                ],
            )?;
            if !shown.profiles.is_empty() {
                writeln!(out)?;
                output::list(out, Format::Table, &shown.profiles)?;
            }
        }
    }
    Ok(())
}

impl output::Tabular for ShownProfile<'_> {
    const HEADERS: &'static [&'static str] =
        &["PROFILE", "ENVIRONMENT", "BASE URL", "API KEY", "EMAIL"];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::plain(self.name),
            Cell::opt(self.environment),
            Cell::opt(self.base_url),
            Cell::opt(self.api_key.as_ref()),
            Cell::opt(self.email),
        ]
    }
}
