//! Registered webhooks, their delivery log (and its counts for the
//! dashboard's charts), a shipment's delivery history, and the merchant's
//! shipment signing key.

use chrono::{DateTime, Utc};
use shipment_sdk::model::{MerchantId, WebhookId};

use super::{Backend, Store, StoreError, Tx, now};

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

/// The columns of a [`DeliveryRecord`].
macro_rules! delivery_columns {
    () => {
        "id, webhook_id, url, shipment_code, version, status_code, error, duration_ms, \
         delivered_at, redelivery_of"
    };
}

/// A webhook's delivery log (`$1`, of merchant `$2`) counted by hour from
/// `$3` (a whole hour) until `$4`: the hour's number from `$3`, and its
/// attempts that succeeded (no error) and failed. A range scan of
/// `webhook_deliveries_by_webhook_time`, at most a span's hours in groups.
/// SQLite keeps times as RFC 3339 text, which `strftime('%s', …)` reads
/// as whole Unix seconds (the range compares the text, whose order is the
/// time's: every row is written in the same form, in UTC).
pub(super) const HOURLY_COUNTS_SQLITE: &str = "SELECT (CAST(strftime('%s', delivered_at) AS INTEGER) \
     - CAST(strftime('%s', $3) AS INTEGER)) / 3600 AS hour, \
     SUM(CASE WHEN error IS NULL THEN 1 ELSE 0 END) AS succeeded, \
     SUM(CASE WHEN error IS NULL THEN 0 ELSE 1 END) AS failed \
     FROM webhook_deliveries WHERE webhook_id = $1 AND merchant_id = $2 \
     AND delivered_at >= $3 AND delivered_at < $4 GROUP BY hour ORDER BY hour";

/// [`HOURLY_COUNTS_SQLITE`] on PostgreSQL, whose `EXTRACT(EPOCH …)` is a
/// fraction: rounded down, so a row at 20:59:59.9 stays in 20:00.
pub(super) const HOURLY_COUNTS_POSTGRES: &str = "SELECT \
     CAST(FLOOR(EXTRACT(EPOCH FROM (delivered_at - $3)) / 3600) AS BIGINT) AS hour, \
     SUM(CASE WHEN error IS NULL THEN 1 ELSE 0 END) AS succeeded, \
     SUM(CASE WHEN error IS NULL THEN 0 ELSE 1 END) AS failed \
     FROM webhook_deliveries WHERE webhook_id = $1 AND merchant_id = $2 \
     AND delivered_at >= $3 AND delivered_at < $4 GROUP BY hour ORDER BY hour";

/// The latest attempt to webhook `$1` of merchant `$2` (a probe of
/// `webhook_deliveries_by_webhook`).
const LATEST_DELIVERY: &str = concat!(
    "SELECT ",
    delivery_columns!(),
    " FROM webhook_deliveries WHERE webhook_id = $1 AND merchant_id = $2 \
     ORDER BY id DESC LIMIT 1"
);

/// The latest failed attempt to webhook `$1` of merchant `$2` (a probe of
/// the partial index `webhook_deliveries_failed`).
const LAST_FAILURE: &str = concat!(
    "SELECT ",
    delivery_columns!(),
    " FROM webhook_deliveries WHERE webhook_id = $1 AND merchant_id = $2 \
     AND error IS NOT NULL ORDER BY delivered_at DESC LIMIT 1"
);

/// The latest attempt of each active webhook of merchant `$1` whose latest
/// attempt failed, by webhook, at most `$2`: one probe of
/// `webhook_deliveries_by_webhook` per webhook of the merchant.
const FAILING_NOW: &str = "SELECT d.id, d.webhook_id, d.url, d.shipment_code, d.version, \
     d.status_code, d.error, d.duration_ms, d.delivered_at, d.redelivery_of \
     FROM webhooks w JOIN webhook_deliveries d ON d.id = \
     (SELECT l.id FROM webhook_deliveries l WHERE l.webhook_id = w.id ORDER BY l.id DESC LIMIT 1) \
     WHERE w.merchant_id = $1 AND w.active AND d.error IS NOT NULL ORDER BY w.id LIMIT $2";

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

/// One hour of a webhook's delivery log, as [`HOURLY_COUNTS_SQLITE`]
/// counts it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct HourlyCount {
    /// Whole hours from the start of the range.
    pub hour: i64,
    /// Attempts without an error.
    pub succeeded: i64,
    /// Attempts with one.
    pub failed: i64,
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

    /// Webhook `webhook_id`'s delivery log (if it is merchant
    /// `merchant_id`'s) counted by hour, in `[since, until)`: hour `n` is
    /// `[since + n h, since + (n + 1) h)`, so `since` must be a whole hour
    /// (UTC). Only hours with attempts are listed, oldest first.
    pub(crate) async fn hourly_delivery_counts(
        &self,
        merchant_id: MerchantId,
        webhook_id: WebhookId,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<HourlyCount>, StoreError> {
        let sql = match self.backend() {
            Backend::Sqlite => HOURLY_COUNTS_SQLITE,
            Backend::Postgres => HOURLY_COUNTS_POSTGRES,
        };
        Ok(self
            .query(sql)
            .bind(webhook_id.get())
            .bind(merchant_id.get())
            .bind(since)
            .bind(until)
            .fetch_all()
            .await?)
    }

    /// The latest attempt to webhook `webhook_id` of merchant
    /// `merchant_id`, and its latest failed one (the same row when the
    /// latest failed).
    pub(crate) async fn latest_deliveries(
        &self,
        merchant_id: MerchantId,
        webhook_id: WebhookId,
    ) -> Result<(Option<DeliveryRecord>, Option<DeliveryRecord>), StoreError> {
        let latest = self
            .query(LATEST_DELIVERY)
            .bind(webhook_id.get())
            .bind(merchant_id.get())
            .fetch_optional()
            .await?;
        let failure = self
            .query(LAST_FAILURE)
            .bind(webhook_id.get())
            .bind(merchant_id.get())
            .fetch_optional()
            .await?;
        Ok((latest, failure))
    }

    /// The merchant's active webhooks whose latest attempt failed, as that
    /// attempt, by webhook id, at most `limit`.
    pub(crate) async fn failing_webhooks(
        &self,
        merchant_id: MerchantId,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        Ok(self
            .query(FAILING_NOW)
            .bind(merchant_id.get())
            .bind(i64::from(limit))
            .fetch_all()
            .await?)
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
