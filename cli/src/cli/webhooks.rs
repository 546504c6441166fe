//! `shipctl webhooks ...`: register and manage webhooks, sign and verify
//! deliveries offline.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::{ArgGroup, Args, Subcommand};
use shipment_sdk::model::{DeliveryId, WebhookId};

use super::{parse_time, parse_webhook_url};

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
