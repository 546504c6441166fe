//! `shipctl webhooks ...`: registered webhooks through the dashboard
//! session (their delivery log and redelivery included), and offline
//! signing and checking of deliveries.

use std::io::{self, Read as _, Write};
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{ArgGroup, Args, Subcommand};
use shipment_sdk::model::{DeliveryId, RedeliveryQueued, WebhookId};

use super::values::{parse_time, parse_webhook_url};
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
        WebhooksCommand::Sign { key, body } => {
            let body = read_body(&body)?;
            writeln!(out, "{}", webhook_verify::sign(&key.signing_key, &body))?;
            Ok(())
        }
        WebhooksCommand::Verify {
            key,
            signature,
            body,
        } => {
            let body = read_body(&body)?;
            webhook_verify::verify(&key.signing_key, &body, &signature)
                .map_err(|e| Failure::new(FAILURE, format!("invalid signature: {e}")))?;
            writeln!(out, "valid")?;
            Ok(())
        }
        _ => unreachable!("only sign and verify are offline"),
    }
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
