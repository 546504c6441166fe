//! What the dashboard endpoints keep: sessions, sign-in attempts, API keys,
//! webhooks, signing keys and the delivery log.

use chrono::{DateTime, Duration, Utc};

use super::{Store, StoreError, classify, now, on_pool};
use crate::domain::keys::{self, Environment, KeyKind, Secret};

/// A merchant as sign-in needs it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Login {
    /// The merchant's id.
    pub merchant_id: i64,
    /// The argon2id PHC string.
    pub password_hash: String,
}

/// A live dashboard session.
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub struct Session {
    /// The session's id.
    pub id: i64,
    /// Whose session it is.
    pub merchant_id: i64,
    /// When the token stops working.
    pub expires_at: DateTime<Utc>,
}

/// An API key as listed: never the secret.
#[derive(Debug, Clone, sqlx::FromRow)]
#[allow(missing_docs)]
pub struct ApiKeyInfo {
    pub id: i64,
    pub name: String,
    pub prefix: String,
    pub last4: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
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
    pub url: String,
    pub shipment_code: String,
    pub version: i64,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
    pub delivered_at: DateTime<Utc>,
}

const KEY_COLUMNS: &str = "id, name, prefix, last4, created_at, last_used_at";
const WEBHOOK_COLUMNS: &str = "id, url, active, created_at";

impl Store {
    /// The merchant signing in with `email`, if any.
    pub async fn login(&self, email: &str) -> Result<Option<Login>, StoreError> {
        let sql = "SELECT id AS merchant_id, password_hash FROM merchants WHERE email = $1";
        Ok(on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(email)
            .fetch_optional(pool)
            .await)?)
    }

    /// Reserves one sign-in attempt for `email` before its password is
    /// checked, and returns how many attempts its current window holds
    /// (this one included) and when that window began. A window older than
    /// `window` starts afresh.
    ///
    /// One upsert, so the count and the reservation are atomic: concurrent
    /// attempts, in one process or many sharing PostgreSQL, each see a
    /// distinct count, and only the first few may go on to the password.
    pub async fn reserve_login_attempt(
        &self,
        email: &str,
        at: DateTime<Utc>,
        window: Duration,
    ) -> Result<(i64, DateTime<Utc>), StoreError> {
        let sql = "INSERT INTO login_attempts (email, window_start, attempts) VALUES ($1, $2, 1) \
                   ON CONFLICT (email) DO UPDATE SET \
                   attempts = CASE WHEN login_attempts.window_start <= $3 THEN 1 \
                                   ELSE login_attempts.attempts + 1 END, \
                   window_start = CASE WHEN login_attempts.window_start <= $3 THEN $2 \
                                       ELSE login_attempts.window_start END \
                   RETURNING attempts, window_start";
        Ok(on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(email)
            .bind(at)
            .bind(at - window)
            .fetch_one(pool)
            .await)?)
    }

    /// Forgets the attempts of `email` after a successful sign-in, and every
    /// window that ended before `forget_before` (so the table stays small).
    pub async fn clear_login_attempts(
        &self,
        email: &str,
        forget_before: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let sql = "DELETE FROM login_attempts WHERE email = $1 OR window_start <= $2";
        on_pool!(self, |pool| sqlx::query(sql)
            .bind(email)
            .bind(forget_before)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Opens a session for `merchant_id` valid for `ttl`; the token is
    /// returned once and only its digest is stored.
    pub async fn create_session(
        &self,
        merchant_id: i64,
        ttl: Duration,
    ) -> Result<(Secret, DateTime<Utc>), StoreError> {
        let token = keys::random_token("");
        let at = now();
        let expires_at = at + ttl;
        let sql = "INSERT INTO sessions (merchant_id, token_digest, created_at, expires_at) \
                   VALUES ($1, $2, $3, $4)";
        let prune = "DELETE FROM sessions WHERE expires_at <= $1";
        on_pool!(self, |pool| {
            sqlx::query(sql)
                .bind(merchant_id)
                .bind(keys::digest(token.expose()))
                .bind(at)
                .bind(expires_at)
                .execute(pool)
                .await?;
            sqlx::query(prune)
                .bind(at)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
        })?;
        Ok((token, expires_at))
    }

    /// The unexpired session whose token has this digest.
    pub async fn session(&self, token_digest: &str) -> Result<Option<Session>, StoreError> {
        let sql = "SELECT id, merchant_id, expires_at FROM sessions \
                   WHERE token_digest = $1 AND expires_at > $2";
        Ok(on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(token_digest)
            .bind(now())
            .fetch_optional(pool)
            .await)?)
    }

    /// Ends a session.
    pub async fn delete_session(&self, id: i64) -> Result<(), StoreError> {
        let sql = "DELETE FROM sessions WHERE id = $1";
        on_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// The merchant's API keys, oldest first.
    pub async fn api_keys(&self, merchant_id: i64) -> Result<Vec<ApiKeyInfo>, StoreError> {
        let sql = format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE merchant_id = $1 ORDER BY id");
        Ok(on_pool!(self, |pool| sqlx::query_as(sqlx::AssertSqlSafe(
            sql.clone()
        ))
        .bind(merchant_id)
        .fetch_all(pool)
        .await)?)
    }

    /// One of the merchant's API keys.
    pub async fn api_key(
        &self,
        merchant_id: i64,
        id: i64,
    ) -> Result<Option<ApiKeyInfo>, StoreError> {
        let sql = format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE merchant_id = $1 AND id = $2");
        Ok(on_pool!(self, |pool| sqlx::query_as(sqlx::AssertSqlSafe(
            sql.clone()
        ))
        .bind(merchant_id)
        .bind(id)
        .fetch_optional(pool)
        .await)?)
    }

    /// The merchant's key whose secret has this digest, if any.
    pub async fn api_key_by_digest(
        &self,
        merchant_id: i64,
        digest: &str,
    ) -> Result<Option<ApiKeyInfo>, StoreError> {
        let sql = format!(
            "SELECT {KEY_COLUMNS} FROM api_keys WHERE merchant_id = $1 AND key_digest = $2"
        );
        Ok(on_pool!(self, |pool| sqlx::query_as(sqlx::AssertSqlSafe(
            sql.clone()
        ))
        .bind(merchant_id)
        .bind(digest)
        .fetch_optional(pool)
        .await)?)
    }

    /// Deletes one of the merchant's keys; `false` if it has no such key.
    /// The key stops working at once: authentication reads this table.
    pub async fn delete_api_key(&self, merchant_id: i64, id: i64) -> Result<bool, StoreError> {
        let sql = "DELETE FROM api_keys WHERE merchant_id = $1 AND id = $2";
        let n = on_pool!(self, |pool| sqlx::query(sql)
            .bind(merchant_id)
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }

    /// Creates an API key and returns it with its secret (shown once).
    pub async fn create_named_api_key(
        &self,
        merchant_id: i64,
        name: &str,
        env: Environment,
    ) -> Result<(ApiKeyInfo, Secret), StoreError> {
        let new = self.create_api_key(merchant_id, name, env).await?;
        let info = self
            .api_key(merchant_id, new.id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a new API key vanished".into()))?;
        debug_assert_eq!(info.prefix, KeyKind::Merchant.prefix(env));
        Ok((info, new.key))
    }

    /// Registers a webhook; `Conflict` when the merchant has this URL already.
    pub async fn create_webhook(
        &self,
        merchant_id: i64,
        url: &str,
        signing_key_sealed: &str,
    ) -> Result<WebhookInfo, StoreError> {
        let sql = format!(
            "INSERT INTO webhooks (merchant_id, url, signing_key_encrypted, active, created_at) \
             VALUES ($1, $2, $3, TRUE, $4) RETURNING {WEBHOOK_COLUMNS}"
        );
        on_pool!(self, |pool| sqlx::query_as(sqlx::AssertSqlSafe(
            sql.clone()
        ))
        .bind(merchant_id)
        .bind(url)
        .bind(signing_key_sealed)
        .bind(now())
        .fetch_one(pool)
        .await)
        .map_err(classify)
    }

    /// The merchant's webhooks, oldest first.
    pub async fn webhooks(&self, merchant_id: i64) -> Result<Vec<WebhookInfo>, StoreError> {
        let sql =
            format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE merchant_id = $1 ORDER BY id");
        Ok(on_pool!(self, |pool| sqlx::query_as(sqlx::AssertSqlSafe(
            sql.clone()
        ))
        .bind(merchant_id)
        .fetch_all(pool)
        .await)?)
    }

    /// One of the merchant's webhooks.
    pub async fn webhook(
        &self,
        merchant_id: i64,
        id: i64,
    ) -> Result<Option<WebhookInfo>, StoreError> {
        let sql =
            format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE merchant_id = $1 AND id = $2");
        Ok(on_pool!(self, |pool| sqlx::query_as(sqlx::AssertSqlSafe(
            sql.clone()
        ))
        .bind(merchant_id)
        .bind(id)
        .fetch_optional(pool)
        .await)?)
    }

    /// Turns a webhook on or off; `None` if the merchant has no such webhook.
    pub async fn set_webhook_active(
        &self,
        merchant_id: i64,
        id: i64,
        active: bool,
    ) -> Result<Option<WebhookInfo>, StoreError> {
        let sql = format!(
            "UPDATE webhooks SET active = $1 WHERE merchant_id = $2 AND id = $3 \
             RETURNING {WEBHOOK_COLUMNS}"
        );
        Ok(on_pool!(self, |pool| sqlx::query_as(sqlx::AssertSqlSafe(
            sql.clone()
        ))
        .bind(active)
        .bind(merchant_id)
        .bind(id)
        .fetch_optional(pool)
        .await)?)
    }

    /// Deletes a webhook (its delivery log stays, detached); `false` if the
    /// merchant has no such webhook.
    pub async fn delete_webhook(&self, merchant_id: i64, id: i64) -> Result<bool, StoreError> {
        let detach = "UPDATE webhook_deliveries SET webhook_id = NULL WHERE webhook_id = $1 \
                      AND merchant_id = $2";
        let delete = "DELETE FROM webhooks WHERE merchant_id = $1 AND id = $2";
        let mut tx = self.begin().await?;
        let n = super::on_tx!(&mut tx, |conn| {
            sqlx::query(detach)
                .bind(id)
                .bind(merchant_id)
                .execute(&mut *conn)
                .await?;
            sqlx::query(delete)
                .bind(merchant_id)
                .bind(id)
                .execute(&mut *conn)
                .await
                .map(|r| r.rows_affected())
        })?;
        tx.commit().await?;
        Ok(n == 1)
    }

    /// A page of a webhook's delivery log, newest first, and the total.
    pub async fn webhook_deliveries(
        &self,
        webhook_id: i64,
        limit: u32,
        offset: u64,
    ) -> Result<(Vec<DeliveryRecord>, u64), StoreError> {
        let count = "SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = $1";
        let page = format!(
            "SELECT id, url, shipment_code, version, status_code, error, duration_ms, \
             delivered_at FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC \
             LIMIT {limit} OFFSET {offset}"
        );
        let total: i64 = on_pool!(self, |pool| sqlx::query_scalar(count)
            .bind(webhook_id)
            .fetch_one(pool)
            .await)?;
        let rows = on_pool!(self, |pool| sqlx::query_as(sqlx::AssertSqlSafe(
            page.clone()
        ))
        .bind(webhook_id)
        .fetch_all(pool)
        .await)?;
        Ok((rows, u64::try_from(total).unwrap_or(0)))
    }

    /// Creates or replaces the merchant's shipment signing key (sealed).
    pub async fn set_shipment_signing_key(
        &self,
        merchant_id: i64,
        sealed: &str,
    ) -> Result<DateTime<Utc>, StoreError> {
        let at = now();
        let sql = "INSERT INTO shipment_signing_keys (merchant_id, signing_key_encrypted, created_at) \
                   VALUES ($1, $2, $3) ON CONFLICT (merchant_id) DO UPDATE SET \
                   signing_key_encrypted = excluded.signing_key_encrypted, \
                   created_at = excluded.created_at";
        on_pool!(self, |pool| sqlx::query(sql)
            .bind(merchant_id)
            .bind(sealed)
            .bind(at)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(at)
    }

    /// The merchant's sealed shipment signing key, if one was created.
    pub async fn shipment_signing_key(
        &self,
        merchant_id: i64,
    ) -> Result<Option<String>, StoreError> {
        let sql = "SELECT signing_key_encrypted FROM shipment_signing_keys WHERE merchant_id = $1";
        Ok(on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(merchant_id)
            .fetch_optional(pool)
            .await)?)
    }
}
