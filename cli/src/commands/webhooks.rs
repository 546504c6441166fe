//! `shipctl webhooks ...`: registered webhooks through the dashboard
//! session (their delivery log and redelivery included), and offline
//! signing and checking of deliveries.

use std::io::{self, Read as _, Write};
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{ArgGroup, Args, Subcommand, ValueEnum};
use shipment_sdk::model::{DeliveryId, RedeliveryQueued, WebhookId};
use webhook_verify::standard::{self, Headers};
use webhook_verify::{Verifier, VerifyError};

use super::values::{parse_time, parse_tolerance, parse_webhook_url};
use crate::error::{FAILURE, Failure, Surface};
use crate::output::{self, Cell, Format};
use crate::{Ctx, note};

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
    ///
    /// Bounded by the service: while a redelivery of a change to the
    /// webhook is waiting, asking for it again fails with exit 5 (409
    /// invalid_state, naming the waiting one), and --failed-since skips
    /// it. Your account may have at most 1000 changes redelivered per
    /// minute across its webhooks (the server's --redeliveries-per-minute):
    /// beyond that a delivery fails with exit 6 (429, saying when to try
    /// again), and --failed-since queues what is left and says so; run it
    /// again a minute later for the rest.
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
    /// Sign a body as the service signs a delivery (offline).
    ///
    /// --scheme service (the default) prints the X-Service-Signature value,
    /// `sha256=<hex>` of the body alone. --scheme standard prints the three
    /// Standard Webhooks headers, one `name: value` line each, ready for
    /// `curl -H`: the --id you give, the --timestamp (default now) and
    /// `webhook-signature: v1,<base64>`, keyed with the base64 part of the
    /// whsec_ key. A receiver refuses that signature once the timestamp is
    /// more than its tolerance (5 minutes by default) old.
    Sign {
        /// The signing key (whsec_...).
        #[command(flatten)]
        key: SigningKeyArg,
        /// Which signature to make.
        #[arg(long, value_enum, default_value_t = SchemeArg::Service)]
        scheme: SchemeArg,
        /// The webhook-id to sign (--scheme standard; required there): the
        /// service sends ids such as msg_41_w7 (change 41, webhook 7).
        #[arg(long, required_if_eq("scheme", "standard"))]
        id: Option<String>,
        /// The webhook-timestamp to sign, in Unix seconds (--scheme
        /// standard) [default: now].
        #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
        timestamp: Option<i64>,
        /// Where the body comes from.
        #[command(flatten)]
        body: BodyArg,
    },
    /// Check a delivery's signature (offline): exit 0 if valid, exit 1 with
    /// the reason on stderr if not.
    ///
    /// The scheme follows from --signature unless --scheme says: a
    /// `webhook-signature` value (`v1,...`), or --id or --timestamp given,
    /// is checked as Standard Webhooks (the id, timestamp and body, and the
    /// timestamp within --tolerance of now, so an old delivery is refused
    /// as a possible replay); anything else as X-Service-Signature (the
    /// body alone). Paste the header you received and
    /// the right check runs.
    Verify {
        /// The signing key (whsec_...).
        #[command(flatten)]
        key: SigningKeyArg,
        /// The X-Service-Signature or webhook-signature header value,
        /// exactly as received (several `v1,` signatures separated by
        /// spaces while keys rotate).
        #[arg(long, allow_hyphen_values = true)]
        signature: String,
        /// Which scheme to check [default: from --signature, see above].
        #[arg(long, value_enum)]
        scheme: Option<SchemeArg>,
        /// The webhook-id header value, exactly as received (Standard
        /// Webhooks).
        #[arg(long)]
        id: Option<String>,
        /// The webhook-timestamp header value, exactly as received
        /// (Standard Webhooks).
        #[arg(long, allow_hyphen_values = true)]
        timestamp: Option<String>,
        /// How far the timestamp may be from now, either way (Standard
        /// Webhooks; whole seconds, up to 24h) [default: 5m].
        #[arg(long, value_parser = parse_tolerance)]
        tolerance: Option<Duration>,
        /// Check as of this time instead of now, in Unix seconds (Standard
        /// Webhooks): a recorded delivery as when it arrived.
        #[arg(long, value_name = "UNIX_SECONDS")]
        received_at: Option<i64>,
        /// Where the body comes from.
        #[command(flatten)]
        body: BodyArg,
    },
}

/// The signature schemes of `webhooks sign` and `webhooks verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemeArg {
    /// X-Service-Signature: sha256= and the hex HMAC of the body alone.
    Service,
    /// Standard Webhooks: webhook-id, webhook-timestamp and webhook-signature
    /// (v1, and the base64 HMAC of id.timestamp.body).
    Standard,
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

fn fail(e: shipment_sdk::Error) -> Failure {
    Failure::sdk(e, Surface::Webhooks)
}

/// Whether the command works without the service (and without settings).
pub fn is_offline(command: &WebhooksCommand) -> bool {
    matches!(
        command,
        WebhooksCommand::Sign { .. } | WebhooksCommand::Verify { .. }
    )
}

/// `webhooks sign` and `webhooks verify`: exit 0 when valid, 1 with the
/// reason when not.
pub fn exec_offline(out: &mut dyn Write, command: WebhooksCommand) -> Result<(), Failure> {
    match command {
        WebhooksCommand::Sign {
            key,
            scheme,
            id,
            timestamp,
            body,
        } => {
            match (scheme, id) {
                (SchemeArg::Service, None) if timestamp.is_none() => {
                    let body = read_body(&body)?;
                    writeln!(out, "{}", webhook_verify::sign(&key.signing_key, &body))?;
                }
                (SchemeArg::Service, _) => {
                    return Err(only_standard("--id and --timestamp"));
                }
                (SchemeArg::Standard, id) => {
                    // clap requires --id with --scheme standard.
                    let id = id.unwrap_or_default();
                    let timestamp = timestamp.unwrap_or_else(unix_now);
                    let body = read_body(&body)?;
                    let signature = standard::sign(&key.signing_key, &id, timestamp, &body)
                        .map_err(|e| Failure::new(FAILURE, e.to_string()).hint(KEY_HINT))?;
                    writeln!(out, "{}: {id}", standard::ID_HEADER)?;
                    writeln!(out, "{}: {timestamp}", standard::TIMESTAMP_HEADER)?;
                    writeln!(out, "{}: {signature}", standard::SIGNATURE_HEADER)?;
                }
            }
            Ok(())
        }
        WebhooksCommand::Verify {
            key,
            signature,
            scheme,
            id,
            timestamp,
            tolerance,
            received_at,
            body,
        } => {
            let scheme = scheme.unwrap_or_else(|| {
                let standard_signature = signature
                    .split(' ')
                    .any(|entry| entry.starts_with(standard::VERSION_PREFIX));
                if standard_signature || id.is_some() || timestamp.is_some() {
                    SchemeArg::Standard
                } else {
                    SchemeArg::Service
                }
            });
            match scheme {
                SchemeArg::Service => {
                    if id.is_some()
                        || timestamp.is_some()
                        || tolerance.is_some()
                        || received_at.is_some()
                    {
                        return Err(only_standard(
                            "--id, --timestamp, --tolerance and --received-at",
                        ));
                    }
                    let body = read_body(&body)?;
                    webhook_verify::verify(&key.signing_key, &body, &signature)
                        .map_err(|e| Failure::new(FAILURE, format!("invalid signature: {e}")))?;
                }
                SchemeArg::Standard => {
                    let (Some(id), Some(timestamp)) = (id, timestamp) else {
                        return Err(Failure::usage(
                            "a Standard Webhooks signature needs --id and --timestamp: the \
                             webhook-id and webhook-timestamp header values as received",
                        ));
                    };
                    let body = read_body(&body)?;
                    let headers = Headers {
                        id: &id,
                        timestamp: &timestamp,
                        signature: &signature,
                    };
                    let now = received_at.unwrap_or_else(unix_now);
                    Verifier::new(&key.signing_key)
                        .with_tolerance(tolerance.unwrap_or(standard::DEFAULT_TOLERANCE))
                        .verify_standard_at(headers, &body, now)
                        .map_err(standard_failure)?;
                }
            }
            writeln!(out, "valid")?;
            Ok(())
        }
        _ => unreachable!("only sign and verify are offline"),
    }
}

/// What to do about a key that cannot sign Standard Webhooks (the service's
/// keys all can: `whsec_` and 32 base62 characters are base64).
const KEY_HINT: &str =
    "use the key exactly as the service showed it (whsec_ and 32 letters and digits)";

/// Flags of the Standard Webhooks scheme given for the service's scheme.
fn only_standard(flags: &str) -> Failure {
    Failure::usage(format!(
        "{flags} belong to --scheme standard; X-Service-Signature signs the body alone"
    ))
}

/// Why a Standard Webhooks signature was refused, and, where one helps,
/// what to do about it.
fn standard_failure(e: VerifyError) -> Failure {
    let failure = Failure::new(FAILURE, format!("invalid signature: {e}"));
    match e {
        VerifyError::TimestampTooOld { .. } | VerifyError::TimestampTooNew { .. } => failure.hint(
            "to check a recorded delivery as when it arrived, give --received-at (its Unix \
             seconds); --tolerance widens the window",
        ),
        VerifyError::NotAStandardKey => failure.hint(KEY_HINT),
        _ => failure,
    }
}

/// The Unix time now, in seconds.
fn unix_now() -> i64 {
    Utc::now().timestamp()
}

fn read_body(arg: &BodyArg) -> Result<Vec<u8>, Failure> {
    match &arg.body_file {
        Some(path) => std::fs::read(path)
            .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display()))),
        None => {
            let mut body = Vec::new();
            io::stdin()
                .read_to_end(&mut body)
                .map_err(|e| Failure::usage(format!("cannot read the body from stdin: {e}")))?;
            Ok(body)
        }
    }
}

/// Runs a `webhooks` command that talks to the service.
pub async fn exec(ctx: &Ctx, out: &mut dyn Write, command: WebhooksCommand) -> Result<(), Failure> {
    let dashboard = ctx.dashboard()?;
    let webhooks = dashboard.webhooks();
    let format = ctx.format();
    match command {
        WebhooksCommand::Register { url } => {
            let created = webhooks.register(&url).await.map_err(fail)?;
            match format {
                Format::Table => {
                    let mut fields = output::Tabular::detail(&created.webhook);
                    fields.push(("SIGNING KEY", Cell::plain(created.signing_key.expose())));
                    output::detail(out, &fields)?;
                }
                Format::Json => output::json(out, &created)?,
                Format::Ndjson => output::json_line(out, &created)?,
            }
            note("store the signing key now: it is not shown again");
        }
        WebhooksCommand::List => output::list(out, format, &webhooks.list().await.map_err(fail)?)?,
        WebhooksCommand::Enable { id } => {
            output::one(
                out,
                format,
                &webhooks.set_active(id, true).await.map_err(fail)?,
            )?;
        }
        WebhooksCommand::Disable { id } => {
            output::one(
                out,
                format,
                &webhooks.set_active(id, false).await.map_err(fail)?,
            )?;
        }
        WebhooksCommand::Delete { id } => {
            webhooks.delete(id).await.map_err(fail)?;
            note(format!("deleted webhook {id}: deliveries to it stop"));
        }
        WebhooksCommand::Deliveries { id, page } => {
            let deliveries = webhooks
                .deliveries(id)
                .page(page)
                .send()
                .await
                .map_err(fail)?;
            output::list(out, format, &deliveries.data)?;
            if format == Format::Table {
                note(output::page_summary(
                    &deliveries,
                    ("delivery", "deliveries"),
                ));
            }
        }
        WebhooksCommand::Redeliver {
            id,
            delivery_id,
            failed_since,
            failed_until,
        } => {
            let queued = match (delivery_id, failed_since) {
                (Some(delivery_id), _) => webhooks.redeliver(id, delivery_id).await,
                (None, Some(since)) => webhooks.redeliver_failures(id, since, failed_until).await,
                (None, None) => unreachable!("clap requires a delivery id or --failed-since"),
            }
            .map_err(|e| {
                let not_found = e.is_not_found();
                let failure = fail(e);
                if not_found {
                    failure.hint(format!(
                        "`shipctl webhooks list` shows your webhooks, `shipctl webhooks \
                         deliveries {id}` this one's deliveries"
                    ))
                } else {
                    failure
                }
            })?;
            match format {
                Format::Table => redelivery_table(out, id, &queued)?,
                Format::Json => output::json(out, &queued)?,
                Format::Ndjson => output::json_line(out, &queued)?,
            }
            if queued.truncated {
                note(rerun_hint(queued.retry_after));
            }
        }
        WebhooksCommand::RotateShipmentKey => {
            let key = webhooks.rotate_shipment_signing_key().await.map_err(fail)?;
            match format {
                Format::Table => output::detail(
                    out,
                    &[
                        ("SIGNING KEY", Cell::plain(key.signing_key.expose())),
                        ("CREATED", Cell::plain(output::short_time(&key.created_at))),
                    ],
                )?,
                Format::Json => output::json(out, &key)?,
                Format::Ndjson => output::json_line(out, &key)?,
            }
            note(
                "deliveries to shipments' own webhook_url are now signed with this key; store \
                 it now: it is not shown again",
            );
        }
        WebhooksCommand::Sign { .. } | WebhooksCommand::Verify { .. } => {
            exec_offline(out, command)?;
        }
    }
    Ok(())
}

/// When to run a truncated bulk redelivery again for the rest: once the
/// budget per minute has room (the answer's `Retry-After`), or at once
/// when only the limit of one run cut it.
fn rerun_hint(retry_after: Option<Duration>) -> String {
    const SKIPPED: &str = "changes already waiting are skipped";
    match retry_after {
        Some(wait) => {
            // Whole seconds, rounded up, so a rerun at that time has room.
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            format!(
                "your budget of redelivered changes per minute is used up: run the same command \
                 again in {} s to queue the rest ({SKIPPED})",
                secs.max(1)
            )
        }
        None => format!(
            "more failures matched than one run queues (10,000): run the same command again now \
             to queue the rest ({SKIPPED})"
        ),
    }
}

/// `Queued 3 redeliveries to webhook 7`, then where to see them (stderr).
fn redelivery_table(
    out: &mut dyn Write,
    id: WebhookId,
    queued: &RedeliveryQueued,
) -> Result<(), Failure> {
    let noun = if queued.queued == 1 {
        "redelivery"
    } else {
        "redeliveries"
    };
    writeln!(out, "Queued {} {noun} to webhook {id}", queued.queued)?;
    if queued.queued == 0 {
        note(
            "no change failed in that range without being delivered since (or it is already queued)",
        );
    } else {
        note(format!(
            "sent shortly; `shipctl webhooks deliveries {id}` shows each new attempt and the \
             delivery it repeats (REDELIVERY OF)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_cut_says_when_to_run_again_and_a_limit_cut_says_now() {
        let later = rerun_hint(Some(Duration::from_millis(41_200)));
        assert!(later.contains("again in 42 s"), "{later}");
        assert!(later.contains("budget"), "{later}");
        let soon = rerun_hint(Some(Duration::ZERO));
        assert!(soon.contains("again in 1 s"), "{soon}");
        let now = rerun_hint(None);
        assert!(now.contains("again now"), "{now}");
        assert!(now.contains("10,000"), "{now}");
    }
}
