//! Merchant webhooks, their delivery log, redelivery, and the signing key
//! of per-shipment `webhook_url` deliveries.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use super::WebhookUrl;
use super::timestamp;
use super::{DeliveryId, Secret, ShipmentCode, WebhookId};

/// A merchant webhook as listed (`GET /webhooks`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct Webhook {
    /// Identifier, used in `/webhooks/:id`.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub webhook_id: WebhookId,
    /// The HTTPS address deliveries go to.
    #[cfg_attr(
        feature = "openapi",
        schema(example = "https://shop.example.com/hooks/shipments")
    )]
    pub url: String,
    /// Whether deliveries are sent.
    pub active: bool,
    /// When it was registered.
    #[serde(serialize_with = "timestamp::serialize")]
    pub created_at: DateTime<Utc>,
}

impl Webhook {
    /// A webhook as listed.
    pub fn new(
        webhook_id: WebhookId,
        url: impl Into<String>,
        active: bool,
        created_at: DateTime<Utc>,
    ) -> Webhook {
        Webhook {
            webhook_id,
            url: url.into(),
            active,
            created_at,
        }
    }
}

/// Answer of `POST /webhooks`: the webhook and, this once, its signing key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct NewWebhook {
    /// The webhook as it will be listed.
    #[serde(flatten)]
    pub webhook: Webhook,
    /// `whsec_...`: the HMAC key is the UTF-8 bytes of this whole string.
    pub signing_key: Secret,
}

impl NewWebhook {
    /// The answer of a registration.
    pub fn new(webhook: Webhook, signing_key: Secret) -> NewWebhook {
        NewWebhook {
            webhook,
            signing_key,
        }
    }
}

/// Body of `POST /webhooks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RegisterWebhook {
    /// The HTTPS address to deliver to (a `WebhookUrl`, kept normalised).
    #[cfg_attr(feature = "openapi", schema(value_type = WebhookUrl))]
    pub url: String,
}

/// Body of `PATCH /webhooks/:id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SetWebhookActive {
    /// Whether deliveries should be sent.
    pub active: bool,
}

/// One attempt to deliver one change to one URL, as a webhook's delivery
/// log (`GET /webhooks/:id/deliveries`) and a shipment's delivery history
/// (`GET /webhooks/deliveries?shipment_code=...`) list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct Delivery {
    /// Identifier of the attempt.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    pub id: DeliveryId,
    /// The shipment whose change was delivered.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub shipment_code: ShipmentCode,
    /// The shipment version the body carried.
    pub version: i64,
    /// Where it was sent.
    pub url: String,
    /// The registered webhook it was sent to; null for a shipment's own
    /// `webhook_url`, and for a webhook deleted since (its log is kept).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub webhook_id: Option<WebhookId>,
    /// Whether the receiver answered below 400.
    pub success: bool,
    /// The receiver's HTTP status, if it answered.
    #[serde(default)]
    pub status_code: Option<i64>,
    /// What went wrong, for a failure.
    #[serde(default)]
    pub error: Option<String>,
    /// How long the attempt took.
    pub duration_ms: i64,
    /// When the attempt was made.
    #[serde(serialize_with = "timestamp::serialize")]
    pub delivered_at: DateTime<Utc>,
    /// The attempt this one sends again (a redelivery someone asked for:
    /// the same body, version and shipment); null for a change's first
    /// attempt.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub redelivery_of: Option<DeliveryId>,
}

impl Delivery {
    /// A successful first attempt to a shipment's own `webhook_url`
    /// (`status_code` below 400, no error); set `success`, `status_code`,
    /// `error`, `webhook_id` and `redelivery_of` for another.
    pub fn new(
        id: DeliveryId,
        shipment_code: ShipmentCode,
        version: i64,
        url: impl Into<String>,
        duration_ms: i64,
        delivered_at: DateTime<Utc>,
    ) -> Delivery {
        Delivery {
            id,
            shipment_code,
            version,
            url: url.into(),
            webhook_id: None,
            success: true,
            status_code: None,
            error: None,
            duration_ms,
            delivered_at,
            redelivery_of: None,
        }
    }
}

/// Body of `POST /webhooks/:id/redeliver`: send again every change whose
/// delivery to the webhook failed in `[failed_since, failed_until]` and has
/// not been delivered successfully since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RedeliverFailures {
    /// The start of the range (RFC 3339): failures at or after it.
    #[serde(serialize_with = "timestamp::serialize")]
    pub failed_since: DateTime<Utc>,
    /// The end of the range (RFC 3339): failures at or before it; now when
    /// absent. Before `failed_since` is 400 `invalid_field`.
    #[serde(
        default,
        serialize_with = "timestamp::serialize_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub failed_until: Option<DateTime<Utc>>,
}

impl RedeliverFailures {
    /// Every failure from `failed_since` until now.
    ///
    /// ```
    /// use shipment_sdk::model::{DateTime, RedeliverFailures, Utc};
    /// let since: DateTime<Utc> = "2026-11-23T07:00:00Z".parse().unwrap();
    /// let body = RedeliverFailures::new(since);
    /// assert_eq!(
    ///     serde_json::to_string(&body).unwrap(),
    ///     r#"{"failed_since":"2026-11-23T07:00:00.000000Z"}"#
    /// );
    /// let until = "2026-11-23T09:00:00Z".parse().unwrap();
    /// assert_eq!(body.until(until).failed_until, Some(until));
    /// ```
    pub fn new(failed_since: DateTime<Utc>) -> RedeliverFailures {
        RedeliverFailures {
            failed_since,
            failed_until: None,
        }
    }

    /// Only failures at or before `failed_until`.
    #[must_use]
    pub fn until(mut self, failed_until: DateTime<Utc>) -> RedeliverFailures {
        self.failed_until = Some(failed_until);
        self
    }
}

/// Answer (202) of `POST /webhooks/:id/deliveries/:delivery_id/redeliver`
/// and `POST /webhooks/:id/redeliver`: how many redeliveries were queued.
///
/// Each goes through the outbox, so it is sent shortly (and survives a
/// restart), and appears in the delivery log with `redelivery_of` once
/// attempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct RedeliveryQueued {
    /// Redeliveries queued: 1 for one delivery; for failures, one per
    /// change, however many of its attempts failed.
    pub queued: u32,
    /// More failures matched than were queued: more than one call queues
    /// (10,000), or than the merchant's budget of redelivered changes per
    /// minute had left (the answer then has `Retry-After`). Changes whose
    /// redelivery is still waiting are skipped, so calling again with the
    /// same range (after `Retry-After`, when given) queues the rest.
    pub truncated: bool,
    /// When the merchant's budget per minute cut the call, how long until
    /// it has room again: the answer's `Retry-After` header, which the SDK
    /// reads into it. `None` when nothing was cut, or only the limit of one
    /// call (call again at once). Not part of the JSON body: the service
    /// neither writes nor reads it.
    #[serde(skip)]
    pub retry_after: Option<Duration>,
}

impl RedeliveryQueued {
    /// `queued` redeliveries, `truncated` when more matched; no
    /// [`retry_after`](Self::retry_after).
    pub fn new(queued: u32, truncated: bool) -> RedeliveryQueued {
        RedeliveryQueued {
            queued,
            truncated,
            retry_after: None,
        }
    }

    /// With the answer's `Retry-After` (for tests of code that reads one).
    ///
    /// ```
    /// use std::time::Duration;
    /// use shipment_sdk::model::RedeliveryQueued;
    /// let cut = RedeliveryQueued::new(1_000, true).with_retry_after(Duration::from_secs(42));
    /// assert_eq!(cut.retry_after, Some(Duration::from_secs(42)));
    /// // Not on the wire.
    /// assert_eq!(
    ///     serde_json::to_string(&cut).unwrap(),
    ///     r#"{"queued":1000,"truncated":true}"#
    /// );
    /// ```
    #[must_use]
    pub fn with_retry_after(mut self, retry_after: Duration) -> RedeliveryQueued {
        self.retry_after = Some(retry_after);
        self
    }
}

/// Answer of `POST /webhooks/shipment-signing-key`: the key that signs
/// per-shipment `webhook_url` deliveries, shown once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct SigningKey {
    /// `whsec_...`; the HMAC key is the UTF-8 bytes of this whole string.
    pub signing_key: Secret,
    /// When it was created (the previous one stopped working then).
    #[serde(serialize_with = "timestamp::serialize")]
    pub created_at: DateTime<Utc>,
}

impl SigningKey {
    /// A signing key made at `created_at`.
    pub fn new(signing_key: Secret, created_at: DateTime<Utc>) -> SigningKey {
        SigningKey {
            signing_key,
            created_at,
        }
    }
}
