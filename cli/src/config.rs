//! The configuration file (named profiles), the dashboard session files, and
//! the settings in effect once flags, environment and profile are combined.
//!
//! ```toml
//! # <config dir>/config.toml
//! default_profile = "staging"
//!
//! [profiles.staging]
//! api_key = "sk_test_..."
//!
//! [profiles.production]
//! environment = "production"
//! base_url = "https://shipments.example.com/api/v1"
//! api_key = "sk_live_..."
//! email = "ops@example.com"
//! ```
//!
//! The directory is the platform's configuration directory (`~/.config/shipctl`
//! on Linux), or `SHIPCTL_CONFIG_DIR`. Files holding a key or a token are
//! written readable by their owner only.

mod toml_error;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use clap::parser::ValueSource;
use serde::{Deserialize, Serialize};

use self::toml_error::not_valid;
use crate::cli::{EnvironmentName, GlobalArgs};
use crate::error::{FAILURE, Failure};

/// The variable that moves the configuration directory (tests use it).
pub const CONFIG_DIR_ENV: &str = "SHIPCTL_CONFIG_DIR";

/// The profile used when none is chosen and the file names no default.
pub const DEFAULT_PROFILE: &str = "default";

/// `config.toml`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The profile used without `--profile` / `SHIPCTL_PROFILE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_profile: Option<String>,
    /// The profiles by name.
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
}

/// One named set of settings.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// `staging` or `production`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// The API base address, with `/api/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The merchant API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The dashboard e-mail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// A dashboard session kept between runs (`sessions/<profile>.toml`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    /// The address it was signed in at.
    pub base_url: String,
    /// Who signed in.
    pub email: String,
    /// The Bearer token.
    pub token: String,
    /// When the service ends it.
    pub expires_at: DateTime<Utc>,
}

/// Where the files are.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The configuration directory.
    pub dir: PathBuf,
}

impl Paths {
    /// `SHIPCTL_CONFIG_DIR`, else the platform's configuration directory.
    pub fn locate() -> Result<Paths, Failure> {
        if let Some(dir) = std::env::var_os(CONFIG_DIR_ENV).filter(|d| !d.is_empty()) {
            return Ok(Paths { dir: dir.into() });
        }
        use etcetera::AppStrategy as _;
        let strategy = etcetera::app_strategy::choose_native_strategy(etcetera::AppStrategyArgs {
            top_level_domain: "com".into(),
            author: "Shipments".into(),
            app_name: "shipctl".into(),
        })
        .map_err(|_| {
            Failure::new(FAILURE, "cannot find the home directory").hint(format!(
                "set {CONFIG_DIR_ENV} to a directory for the configuration"
            ))
        })?;
        Ok(Paths {
            dir: strategy.config_dir(),
        })
    }

    /// `config.toml`.
    pub fn config_file(&self) -> PathBuf {
        self.dir.join("config.toml")
    }

    /// The session file of `profile`.
    pub fn session_file(&self, profile: &str) -> PathBuf {
        self.dir.join("sessions").join(format!("{profile}.toml"))
    }
}

impl ConfigFile {
    /// Reads the file; a missing file is an empty configuration.
    pub fn load(paths: &Paths) -> Result<ConfigFile, Failure> {
        let path = paths.config_file();
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ConfigFile::default()),
            Err(e) => {
                return Err(Failure::new(
                    FAILURE,
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        };
        toml::from_str(&text).map_err(|e| {
            Failure::usage(not_valid(&path, &text, &e))
                .hint("fix it by hand, or move it away and use `shipctl config set`")
        })
    }

    /// Writes the file, readable by its owner only (it may hold keys).
    pub fn save(&self, paths: &Paths) -> Result<(), Failure> {
        let text = toml::to_string_pretty(self)
            .map_err(|e| Failure::new(FAILURE, format!("cannot write the configuration: {e}")))?;
        write_private(&paths.config_file(), text.as_bytes())
    }
}

impl Session {
    /// The session of `profile`, if one was saved.
    pub fn load(paths: &Paths, profile: &str) -> Result<Option<Session>, Failure> {
        let path = paths.session_file(profile);
        match fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text).map(Some).map_err(|e| {
                Failure::new(FAILURE, not_valid(&path, &text, &e)).hint("run `shipctl login` again")
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Failure::new(
                FAILURE,
                format!("cannot read {}: {e}", path.display()),
            )),
        }
    }

    /// Saves the session of `profile`, readable by its owner only.
    pub fn save(&self, paths: &Paths, profile: &str) -> Result<(), Failure> {
        let text = toml::to_string(self)
            .map_err(|e| Failure::new(FAILURE, format!("cannot write the session: {e}")))?;
        write_private(&paths.session_file(profile), text.as_bytes())
    }

    /// Forgets the session of `profile`; true if there was one.
    pub fn remove(paths: &Paths, profile: &str) -> Result<bool, Failure> {
        let path = paths.session_file(profile);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Failure::new(
                FAILURE,
                format!("cannot remove {}: {e}", path.display()),
            )),
        }
    }
}

/// Writes `bytes` to `path` through a temporary file, so a crash never
/// leaves half a file; the file (and a directory it creates) is private to
/// its owner.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let fail =
        |e: std::io::Error| Failure::new(FAILURE, format!("cannot write {}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir).map_err(fail)?;
    }
    let tmp = path.with_extension("tmp");
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp).map_err(fail)?;
    #[cfg(unix)]
    {
        // A file left by an older run may have wider permissions.
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(fail)?;
    }
    file.write_all(bytes).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    drop(file);
    fs::rename(&tmp, path).map_err(fail)
}

/// Checks that a profile name is safe as a file name.
pub fn check_profile_name(name: &str) -> Result<(), Failure> {
    if !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        Ok(())
    } else {
        Err(Failure::usage(format!(
            "`{name}` is not a profile name: use letters, digits, - and _"
        )))
    }
}

/// Parses an environment name from the file or `config set`.
pub fn parse_environment(s: &str) -> Result<EnvironmentName, Failure> {
    s.parse::<shipment_sdk::keys::KeyEnvironment>()
        .map(EnvironmentName::from)
        .map_err(|unknown| {
            Failure::usage(format!(
                "`{}` is not an environment: staging or production",
                unknown.0
            ))
        })
}

/// Where a setting in effect comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A command-line flag.
    Flag(&'static str),
    /// An environment variable.
    Env(&'static str),
    /// The configuration file's profile.
    Profile(String),
    /// The configuration file's `default_profile`.
    FileDefault,
    /// Built in.
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag(flag) => write!(f, "flag {flag}"),
            Source::Env(var) => write!(f, "env {var}"),
            Source::Profile(name) => write!(f, "profile {name}"),
            Source::FileDefault => f.write_str("default_profile"),
            Source::Default => f.write_str("default"),
        }
    }
}

/// A setting in effect and where it comes from.
#[derive(Debug, Clone)]
pub struct Setting<T> {
    /// The value.
    pub value: T,
    /// Where it comes from.
    pub source: Source,
}

/// The settings in effect: flags, then environment variables, then the
/// active profile, then the defaults.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The active profile's name.
    pub profile: Setting<String>,
    /// The environment.
    pub environment: Setting<EnvironmentName>,
    /// The base address, if any was given (staging has a default).
    pub base_url: Option<Setting<String>>,
    /// The API key, if any.
    pub api_key: Option<Setting<String>>,
    /// The dashboard e-mail, if the profile has one.
    pub email: Option<String>,
}

/// How each global flag was given (flag or environment variable).
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobalSources {
    /// `--profile`.
    pub profile: Option<ValueSource>,
    /// `--api-key`.
    pub api_key: Option<ValueSource>,
    /// `--base-url`.
    pub base_url: Option<ValueSource>,
    /// `--environment`.
    pub environment: Option<ValueSource>,
}

impl GlobalSources {
    /// Reads the sources from the parsed matches.
    pub fn from_matches(m: &clap::ArgMatches) -> GlobalSources {
        GlobalSources {
            profile: m.value_source("profile"),
            api_key: m.value_source("api_key"),
            base_url: m.value_source("base_url"),
            environment: m.value_source("environment"),
        }
    }
}

fn arg_source(given: Option<ValueSource>, flag: &'static str, var: &'static str) -> Source {
    match given {
        Some(ValueSource::EnvVariable) => Source::Env(var),
        _ => Source::Flag(flag),
    }
}

impl Settings {
    /// Combines the flags (and their variables) with the configuration file.
    /// A profile that is chosen but not in the file is an error, unless
    /// `creating` it (`shipctl config`).
    pub fn resolve(
        global: &GlobalArgs,
        sources: GlobalSources,
        file: &ConfigFile,
        creating: bool,
    ) -> Result<Settings, Failure> {
        let profile = match (&global.profile, &file.default_profile) {
            (Some(p), _) => Setting {
                value: p.clone(),
                source: arg_source(sources.profile, "--profile", "SHIPCTL_PROFILE"),
            },
            (None, Some(p)) => Setting {
                value: p.clone(),
                source: Source::FileDefault,
            },
            (None, None) => Setting {
                value: DEFAULT_PROFILE.to_owned(),
                source: Source::Default,
            },
        };
        check_profile_name(&profile.value)?;
        let stored = file.profiles.get(&profile.value);
        if stored.is_none() && profile.source != Source::Default && !creating {
            return Err(Failure::usage(format!(
                "there is no profile `{}` in the configuration file",
                profile.value
            ))
            .hint(format!(
                "create it with `shipctl config set base-url URL --profile {}`; `shipctl config show` lists the profiles",
                profile.value
            )));
        }
        let from_profile = |value: Option<&String>| {
            value.map(|v| Setting {
                value: v.clone(),
                source: Source::Profile(profile.value.clone()),
            })
        };
        let environment = match (
            global.environment,
            stored.and_then(|p| p.environment.as_ref()),
        ) {
            (Some(env), _) => Setting {
                value: env,
                source: arg_source(sources.environment, "--environment", "SHIPCTL_ENVIRONMENT"),
            },
            (None, Some(name)) => Setting {
                value: parse_environment(name)?,
                source: Source::Profile(profile.value.clone()),
            },
            (None, None) => Setting {
                value: EnvironmentName::Staging,
                source: Source::Default,
            },
        };
        let base_url = match &global.base_url {
            Some(url) => Some(Setting {
                value: url.clone(),
                source: arg_source(sources.base_url, "--base-url", "SHIPCTL_BASE_URL"),
            }),
            None => from_profile(stored.and_then(|p| p.base_url.as_ref())),
        };
        let api_key = match &global.api_key {
            Some(key) => Some(Setting {
                value: key.clone(),
                source: arg_source(sources.api_key, "--api-key", "SHIPCTL_API_KEY"),
            }),
            None => from_profile(stored.and_then(|p| p.api_key.as_ref())),
        };
        Ok(Settings {
            email: stored.and_then(|p| p.email.clone()),
            profile,
            environment,
            base_url,
            api_key,
        })
    }

    /// The SDK's environment, with the production address.
    pub fn sdk_environment(&self) -> Result<shipment_sdk::Environment, Failure> {
        match self.environment.value {
            EnvironmentName::Staging => Ok(shipment_sdk::Environment::Staging),
            EnvironmentName::Production => match &self.base_url {
                Some(url) => Ok(shipment_sdk::Environment::Production(url.value.clone())),
                None => Err(Failure::usage(
                    "production has no default address: give the one your operator supplied",
                )
                .hint(format!(
                    "`shipctl config set base-url https://.../api/v1 --profile {}`, or --base-url",
                    self.profile.value
                ))),
            },
        }
    }

    /// The address calls go to.
    pub fn effective_base_url(&self) -> String {
        match &self.base_url {
            Some(url) => url.value.trim_end_matches('/').to_owned(),
            None => shipment_sdk::STAGING_URL.to_owned(),
        }
    }
}

/// Shows a key or token as its prefix and last four characters.
pub fn mask(secret: &str) -> String {
    let prefix_len = secret.find('_').map_or(0, |first| {
        secret[first + 1..]
            .find('_')
            .map_or(first + 1, |second| first + 1 + second + 1)
    });
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() <= prefix_len + 8 {
        return format!("{}...", &secret[..prefix_len]);
    }
    let last4: String = chars[chars.len() - 4..].iter().collect();
    format!("{}...{last4}", &secret[..prefix_len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masking_keeps_the_prefix_and_the_last_four() {
        assert_eq!(
            mask("sk_test_0123456789abcdefghijABCDEFGHIJ"),
            "sk_test_...GHIJ"
        );
        assert_eq!(
            mask("whsec_7Qm2vR9xLp4TzK8nB3cW6yH1dF5gJ0sA"),
            "whsec_...J0sA"
        );
        assert_eq!(mask("sk_test_short"), "sk_test_...");
        assert_eq!(
            mask("rk_live_0123456789abcdefghijABCDEFGHIJ"),
            "rk_live_...GHIJ"
        );
        assert_eq!(mask("nounderscore-but-long-enough"), "...ough");
    }

    #[test]
    fn profile_names_are_safe_file_names() {
        assert!(check_profile_name("staging-2").is_ok());
        for bad in ["", "../x", "a b", "a/b"] {
            assert!(check_profile_name(bad).is_err(), "{bad}");
        }
    }
}
