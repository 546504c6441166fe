//! `shipctl keys ...`: API keys, through the dashboard session.

use std::io::Write;

use chrono::{DateTime, TimeDelta, Utc};
use clap::Subcommand;
use shipment_sdk::model::{ApiKeyId, CreateApiKey, Permissions};

use crate::config::Profile;
use crate::error::{FAILURE, Failure, Surface};
use crate::output::{self, Cell, Format};
use crate::{Ctx, note};

use super::values::{parse_key_lifetime, parse_time};

/// `shipctl keys ...`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create an API key. The key is shown once: store it at once.
    ///
    /// Without --permissions, a full key (sk_): everything the account may
    /// do. With them, a restricted key (rk_) that may do only that.
    Create {
        /// A name to recognise the key by.
        #[arg(long)]
        name: Option<String>,
        /// A restricted key's permissions, as resource:level pairs (levels
        /// none, read, write; write includes read), e.g.
        /// shipments:read,couriers:read for support staff. Resources left
        /// out are none: shipments (read, write), couriers (read), listen
        /// (read, write), testing (write).
        #[arg(long, value_parser = parse_permissions)]
        permissions: Option<Permissions>,
        /// Make the key stop working after this long: 90m, 12h, 30d, 4w (up
        /// to 366d).
        #[arg(long, value_parser = parse_key_lifetime, conflicts_with = "expires_at")]
        expires_in: Option<TimeDelta>,
        /// Make the key stop working at this time: RFC 3339
        /// (2027-03-31T00:00:00Z) or a date (midnight UTC), at most 366
        /// days ahead.
        #[arg(long, value_parser = parse_time)]
        expires_at: Option<DateTime<Utc>>,
        /// Also store the new key in the active profile (`api_key`).
        #[arg(long)]
        save: bool,
    },
    /// List the API keys (their prefix and last four characters only), with
    /// each key's permissions (`full` for a full key), expiry and last use.
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

fn fail(e: shipment_sdk::Error) -> Failure {
    Failure::sdk(e, Surface::Keys)
}

/// Reads `--permissions` in the SDK's form, so the flag and the model
/// cannot disagree about a resource or a level.
fn parse_permissions(s: &str) -> Result<Permissions, String> {
    s.parse::<Permissions>().map_err(|e| e.to_string())
}

/// Runs a `keys` command.
pub async fn exec(ctx: &Ctx, out: &mut dyn Write, command: KeysCommand) -> Result<(), Failure> {
    let dashboard = ctx.dashboard()?;
    let keys = dashboard.api_keys();
    let format = ctx.format();
    match command {
        KeysCommand::Create {
            name,
            permissions,
            expires_in,
            expires_at,
            save,
        } => {
            let expires_at = expires_at.or_else(|| expires_in.map(|d| Utc::now() + d));
            let created = keys
                .create_with(&CreateApiKey {
                    name,
                    permissions,
                    expires_at,
                })
                .await
                .map_err(fail)?;
            match format {
                Format::Table => {
                    let mut fields = output::Tabular::detail(&created.api_key);
                    fields.push(("SECRET", Cell::plain(created.key.expose())));
                    output::detail(out, &fields)?;
                }
                Format::Json => output::json(out, &created)?,
                Format::Ndjson => output::json_line(out, &created)?,
            }
            if save {
                let mut file = crate::config::ConfigFile::load(&ctx.paths)?;
                let profile = ctx.settings.profile.value.clone();
                file.profiles
                    .entry(profile.clone())
                    .or_insert_with(Profile::default)
                    .api_key = Some(created.key.expose().to_owned());
                file.save(&ctx.paths)?;
                note(format!("saved as the API key of profile {profile}"));
            } else {
                note("store the key now: it is not shown again");
            }
        }
        KeysCommand::List => output::list(out, format, &keys.list().await.map_err(fail)?)?,
        KeysCommand::Delete { id } => {
            keys.delete(id).await.map_err(fail)?;
            note(format!("deleted API key {id}: requests with it now fail"));
        }
        KeysCommand::Verify { key } => {
            let key = match key {
                Some(key) => key,
                None => super::read_secret("API key: ", "API key")?,
            };
            let verdict = keys.verify(key.trim()).await.map_err(fail)?;
            match format {
                Format::Table => {
                    let fields = [
                        (
                            "valid",
                            Cell::plain(if verdict.valid { "yes" } else { "no" }),
                        ),
                        ("id", Cell::opt(verdict.id)),
                        ("name", Cell::opt(verdict.name.as_ref())),
                    ];
                    output::detail(out, &fields)?;
                }
                Format::Json => output::json(out, &verdict)?,
                Format::Ndjson => output::json_line(out, &verdict)?,
            }
            if !verdict.valid {
                return Err(Failure::new(
                    FAILURE,
                    "the key is not a valid key of this account",
                ));
            }
        }
    }
    Ok(())
}
