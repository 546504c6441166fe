//! Merchant webhooks, their delivery log, and the signing key of
//! per-shipment `webhook_url` deliveries.

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

/// One attempt in a webhook's delivery log (`GET /webhooks/:id/deliveries`).
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
}

impl Delivery {
    /// A successful attempt (`status_code` below 400, no error); set
    /// `success`, `status_code` and `error` for another outcome.
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
            success: true,
            status_code: None,
            error: None,
            duration_ms,
            delivered_at,
        }
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
