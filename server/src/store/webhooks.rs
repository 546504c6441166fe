//! Registered webhooks, their delivery log, a shipment's delivery
//! history, and the merchant's shipment signing key.

use chrono::{DateTime, Utc};
use shipment_sdk::model::{MerchantId, WebhookId};

use super::{Store, StoreError, Tx, now};

const CREATE_WEBHOOK: &str = "INSERT INTO webhooks \
                              (merchant_id, url, signing_key_encrypted, active, created_at) \
                              VALUES ($1, $2, $3, TRUE, $4) RETURNING id, url, active, created_at";
const SET_SHIPMENT_SIGNING_KEY: &str = "INSERT INTO shipment_signing_keys \
                                        (merchant_id, signing_key_encrypted, created_at) \
                                        VALUES ($1, $2, $3) ON CONFLICT (merchant_id) DO UPDATE SET \
                                        signing_key_encrypted = excluded.signing_key_encrypted, \
                                        created_at = excluded.created_at";
const SHIPMENT_SIGNING_KEY: &str =
    "SELECT signing_key_encrypted FROM shipment_signing_keys WHERE merchant_id = $1";

/// A registered webhook with its sealed signing key, as declared fixtures
/// compare it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct SealedWebhook {
    /// The webhook's id.
    pub id: i64,
    /// Whether deliveries go to it.
    pub active: bool,
    /// The signing key, sealed with the data key.
    pub signing_key_encrypted: String,
}

/// A registered webhook as listed: never the signing key.
#[derive(Debug, Clone, sqlx::FromRow)]
#[allow(missing_docs)]
pub struct WebhookInfo {
    pub id: i64,
    pub url: String,
    pub active: bool,
    pub created_at: DateTime<Utc>,
}

/// One attempt to deliver one change to one URL.
#[derive(Debug, Clone, sqlx::FromRow)]
#[allow(missing_docs)]
pub struct DeliveryRecord {
    pub id: i64,
    /// `None` for a shipment's own `webhook_url`, or a webhook deleted since.
    pub webhook_id: Option<i64>,
    pub url: String,
    pub shipment_code: String,
    pub version: i64,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
    pub delivered_at: DateTime<Utc>,
    /// The delivery a redelivery repeats; `None` for a first attempt.
    pub redelivery_of: Option<i64>,
}

/// The columns of a [`DeliveryRecord`].
macro_rules! delivery_columns {
    () => {
        "id, webhook_id, url, shipment_code, version, status_code, error, duration_ms, \
         delivered_at, redelivery_of"
    };
}

impl Store {
    /// Registers a webhook; [`StoreError::WebhookUrlTaken`] when the merchant
    /// has this URL already.
    pub async fn create_webhook(
        &self,
        merchant_id: MerchantId,
        url: &str,
        signing_key_sealed: &str,
    ) -> Result<WebhookInfo, StoreError> {
        Ok(self
            .query(CREATE_WEBHOOK)
            .bind(merchant_id.get())
            .bind(url)
            .bind(signing_key_sealed)
            .bind(now())
            .fetch_one()
            .await?)
    }

    /// The merchant's webhooks, oldest first.
    pub async fn webhooks(&self, merchant_id: MerchantId) -> Result<Vec<WebhookInfo>, StoreError> {
        let sql = "SELECT id, url, active, created_at FROM webhooks \
                   WHERE merchant_id = $1 ORDER BY id";
        Ok(self.query(sql).bind(merchant_id.get()).fetch_all().await?)
    }

    /// One of the merchant's webhooks.
    pub async fn webhook(
        &self,
        merchant_id: MerchantId,
        id: WebhookId,
    ) -> Result<Option<WebhookInfo>, StoreError> {
        let sql = "SELECT id, url, active, created_at FROM webhooks \
                   WHERE merchant_id = $1 AND id = $2";
        Ok(self
            .query(sql)
            .bind(merchant_id.get())
            .bind(id.get())
            .fetch_optional()
            .await?)
    }

    /// Turns a webhook on or off; `None` if the merchant has no such webhook.
    pub(crate) async fn set_webhook_active(
        &self,
        merchant_id: MerchantId,
        id: WebhookId,
        active: bool,
    ) -> Result<Option<WebhookInfo>, StoreError> {
        let sql = "UPDATE webhooks SET active = $1 WHERE merchant_id = $2 AND id = $3 \
                   RETURNING id, url, active, created_at";
        Ok(self
            .query(sql)
            .bind(active)
            .bind(merchant_id.get())
            .bind(id.get())
            .fetch_optional()
            .await?)
    }

    /// Deletes a webhook (its delivery log stays, detached); `false` if the
    /// merchant has no such webhook.
    pub(crate) async fn delete_webhook(
        &self,
        merchant_id: MerchantId,
        id: WebhookId,
    ) -> Result<bool, StoreError> {
        let detach = "UPDATE webhook_deliveries SET webhook_id = NULL WHERE webhook_id = $1 \
                      AND merchant_id = $2";
        let delete = "DELETE FROM webhooks WHERE merchant_id = $1 AND id = $2";
        let mut tx = self.begin().await?;
        tx.query(detach)
            .bind(id.get())
            .bind(merchant_id.get())
            .execute()
            .await?;
        let n = tx
            .query(delete)
            .bind(merchant_id.get())
            .bind(id.get())
            .execute()
            .await?;
        tx.commit().await?;
        Ok(n == 1)
    }

    /// A page of a webhook's delivery log, newest first, and the total.
    pub async fn webhook_deliveries(
        &self,
        webhook_id: WebhookId,
        limit: u32,
        offset: u64,
    ) -> Result<(Vec<DeliveryRecord>, u64), StoreError> {
        let count = "SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = $1";
        let page = concat!(
            "SELECT ",
            delivery_columns!(),
            " FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3"
        );
        let total: i64 = self.query(count).bind(webhook_id.get()).scalar().await?;
        let rows = self
            .query(page)
            .bind(webhook_id.get())
            .bind(i64::from(limit))
            .bind(i64::try_from(offset).unwrap_or(i64::MAX))
            .fetch_all()
            .await?;
        Ok((rows, u64::try_from(total).unwrap_or(0)))
    }

    /// A page of the delivery history of the merchant's shipment `code`,
    /// across its webhooks and the shipment's own `webhook_url`, newest
    /// first, and the total (an index probe: `webhook_deliveries_by_shipment`).
    pub(crate) async fn shipment_deliveries(
        &self,
        merchant_id: MerchantId,
        code: &str,
        limit: u32,
        offset: u64,
    ) -> Result<(Vec<DeliveryRecord>, u64), StoreError> {
        let count = "SELECT COUNT(*) FROM webhook_deliveries \
                     WHERE merchant_id = $1 AND shipment_code = $2";
        let page = concat!(
            "SELECT ",
            delivery_columns!(),
            " FROM webhook_deliveries WHERE merchant_id = $1 AND shipment_code = $2 \
             ORDER BY id DESC LIMIT $3 OFFSET $4"
        );
        let total: i64 = self
            .query(count)
            .bind(merchant_id.get())
            .bind(code)
            .scalar()
            .await?;
        let rows = self
            .query(page)
            .bind(merchant_id.get())
            .bind(code)
            .bind(i64::from(limit))
            .bind(i64::try_from(offset).unwrap_or(i64::MAX))
            .fetch_all()
            .await?;
        Ok((rows, u64::try_from(total).unwrap_or(0)))
    }

    /// Creates or replaces the merchant's shipment signing key (sealed).
    pub(crate) async fn set_shipment_signing_key(
        &self,
        merchant_id: MerchantId,
        sealed: &str,
    ) -> Result<DateTime<Utc>, StoreError> {
        self.replace_signing_key(SET_SHIPMENT_SIGNING_KEY, merchant_id, sealed)
            .await
    }

    /// Runs an upsert of a merchant's sealed signing key (`$1` merchant,
    /// `$2` sealed key, `$3` now) and returns when the key was made.
    pub(super) async fn replace_signing_key(
        &self,
        upsert: &'static str,
        merchant_id: MerchantId,
        sealed: &str,
    ) -> Result<DateTime<Utc>, StoreError> {
        let at = now();
        self.query(upsert)
            .bind(merchant_id.get())
            .bind(sealed)
            .bind(at)
            .execute()
            .await?;
        Ok(at)
    }

    /// The merchant's sealed shipment signing key, if one was created.
    pub async fn shipment_signing_key(
        &self,
        merchant_id: MerchantId,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .query(SHIPMENT_SIGNING_KEY)
            .bind(merchant_id.get())
            .scalar_optional()
            .await?)
    }
}

/// Webhooks and signing keys inside a transaction, for declared fixtures.
impl Tx {
    /// The merchant's webhook of this (normalised) URL, with its sealed key.
    pub(crate) async fn webhook_by_url(
        &mut self,
        merchant_id: MerchantId,
        url: &str,
    ) -> Result<Option<SealedWebhook>, StoreError> {
        let sql = "SELECT id, active, signing_key_encrypted FROM webhooks \
                   WHERE merchant_id = $1 AND url = $2";
        Ok(self
            .query(sql)
            .bind(merchant_id.get())
            .bind(url)
            .fetch_optional()
            .await?)
    }

    /// Registers a webhook, as [`Store::create_webhook`] does.
    pub async fn create_webhook(
        &mut self,
        merchant_id: MerchantId,
        url: &str,
        signing_key_sealed: &str,
    ) -> Result<WebhookInfo, StoreError> {
        Ok(self
            .query(CREATE_WEBHOOK)
            .bind(merchant_id.get())
            .bind(url)
            .bind(signing_key_sealed)
            .bind(now())
            .fetch_one()
            .await?)
    }

    /// The merchant's sealed shipment signing key, if one was created.
    pub async fn shipment_signing_key(
        &mut self,
        merchant_id: MerchantId,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .query(SHIPMENT_SIGNING_KEY)
            .bind(merchant_id.get())
            .scalar_optional()
            .await?)
    }

    /// Creates or replaces the merchant's shipment signing key (sealed).
    pub(crate) async fn set_shipment_signing_key(
        &mut self,
        merchant_id: MerchantId,
        sealed: &str,
    ) -> Result<(), StoreError> {
        self.query(SET_SHIPMENT_SIGNING_KEY)
            .bind(merchant_id.get())
            .bind(sealed)
            .bind(now())
            .execute()
            .await?;
        Ok(())
    }
}
