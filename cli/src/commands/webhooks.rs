//! `shipctl webhooks ...`: registered webhooks through the dashboard
//! session (their delivery log and redelivery included), and offline
//! signing and checking of deliveries.

use std::io::{self, Read as _, Write};

use shipment_sdk::model::{RedeliveryQueued, WebhookId};

use crate::cli::{BodyArg, WebhooksCommand};
use crate::error::{FAILURE, Failure, Surface};
use crate::output::{self, Cell, Format};
use crate::{Ctx, note};

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
                note(
                    "more failures matched than one run queues: run the same command again to \
                     queue the rest (changes already waiting are skipped)",
                );
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
