//! The transactional outbox: a row per shipment change, written in the
//! change's own transaction, claimed by a dispatcher under a lease, and
//! marked done once every target has been attempted.

use chrono::{DateTime, Duration, Utc};
use shipment_sdk::model::Shipment;
use sqlx::AssertSqlSafe;

use super::{Backend, Store, StoreError, Tx, now, on_pool, on_tx};

/// A change waiting to be delivered.
#[derive(Debug, Clone, sqlx::FromRow)]
#[allow(missing_docs)]
pub struct OutboxRow {
    pub id: i64,
    pub shipment_id: i64,
    pub merchant_id: i64,
    pub shipment_code: String,
    pub version: i64,
    /// The shipment's JSON at that change: the delivery body, byte for byte.
    pub payload: String,
}

/// Where one change goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The registered webhook, or `None` for the shipment's own `webhook_url`.
    pub webhook_id: Option<i64>,
    /// The URL to POST to.
    pub url: String,
    /// The sealed signing key, or `None` when the merchant has none (only
    /// possible for a shipment's own URL).
    pub signing_key_sealed: Option<String>,
}

/// What one attempt produced, for the delivery log.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The HTTP status, when an answer came.
    pub status_code: Option<u16>,
    /// Why it failed, when it did (a status of 400 or more, a time-out, a
    /// refused or failed connection).
    pub error: Option<String>,
    /// From sending to the answer (or the failure).
    pub duration_ms: i64,
}

/// Age and count of the rows not yet delivered.
#[derive(Debug, Clone, Copy, Default)]
pub struct Backlog {
    /// Rows not done.
    pub depth: i64,
    /// When the oldest of them was written.
    pub oldest: Option<DateTime<Utc>>,
}

/// Writes the outbox row for a change, inside the change's transaction.
pub(crate) async fn enqueue(
    tx: &mut Tx,
    shipment_id: i64,
    merchant_id: i64,
    shipment: &Shipment,
) -> Result<(), StoreError> {
    let payload = serde_json::to_string(shipment).expect("shipments serialize");
    let sql = "INSERT INTO outbox (shipment_id, merchant_id, shipment_code, version, payload, created_at) \
               VALUES ($1, $2, $3, $4, $5, $6)";
    on_tx!(tx, |conn| sqlx::query(sql)
        .bind(shipment_id)
        .bind(merchant_id)
        .bind(&shipment.code)
        .bind(shipment.version)
        .bind(&payload)
        .bind(now())
        .execute(conn)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(())
}

impl Store {
    /// Claims up to `limit` rows for `worker` until now + `lease`, and
    /// commits the claim before returning, so no network call happens inside
    /// a transaction.
    ///
    /// Only the oldest undelivered row of each shipment is claimable, so the
    /// changes of one shipment leave in order even across processes. A row
    /// whose lease ran out (its process died) is claimable again. On
    /// PostgreSQL, `FOR UPDATE SKIP LOCKED` lets several processes claim at
    /// once without waiting on or taking each other's rows; on SQLite the
    /// claim runs in an immediate transaction, so claims are serialized.
    ///
    /// "Oldest of its shipment" is a correlated `MIN` rather than `NOT
    /// EXISTS` on purpose: PostgreSQL turns `NOT EXISTS` into an anti-join
    /// whose plan depends on statistics, and a plan cached while the outbox
    /// was small went quadratic once a burst left 20k rows waiting; the
    /// scalar subquery stays one index probe per candidate row.
    pub async fn claim_outbox(
        &self,
        worker: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        let lock = match self.backend() {
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE outbox SET claimed_by = $1, claimed_until = $2 WHERE id IN (\
               SELECT o.id FROM outbox o \
               WHERE o.done_at IS NULL AND (o.claimed_until IS NULL OR o.claimed_until < $3) \
               AND o.id = (SELECT MIN(e.id) FROM outbox e \
                           WHERE e.shipment_id = o.shipment_id AND e.done_at IS NULL) \
               ORDER BY o.id LIMIT {limit}{lock}) \
             RETURNING id, shipment_id, merchant_id, shipment_code, version, payload"
        );
        let at = now();
        let mut tx = self.begin().await?;
        let mut rows: Vec<OutboxRow> =
            on_tx!(&mut tx, |conn| sqlx::query_as(AssertSqlSafe(sql.clone()))
                .bind(worker)
                .bind(at + lease)
                .bind(at)
                .fetch_all(conn)
                .await)?;
        tx.commit().await?;
        rows.sort_by_key(|r| r.id);
        Ok(rows)
    }

    /// Every place a change goes: the merchant's active webhooks, then the
    /// shipment's own `webhook_url` with the shipment signing key.
    pub async fn outbox_targets(&self, row: &OutboxRow) -> Result<Vec<Target>, StoreError> {
        let hooks = "SELECT id, url, signing_key_encrypted FROM webhooks \
                     WHERE merchant_id = $1 AND active ORDER BY id";
        let own = "SELECT s.webhook_url, k.signing_key_encrypted FROM shipments s \
                   LEFT JOIN shipment_signing_keys k ON k.merchant_id = s.merchant_id \
                   WHERE s.id = $1";
        let registered: Vec<(i64, String, String)> = on_pool!(self, |pool| sqlx::query_as(hooks)
            .bind(row.merchant_id)
            .fetch_all(pool)
            .await)?;
        let shipment: Option<(Option<String>, Option<String>)> =
            on_pool!(self, |pool| sqlx::query_as(own)
                .bind(row.shipment_id)
                .fetch_optional(pool)
                .await)?;
        let mut targets: Vec<Target> = registered
            .into_iter()
            .map(|(id, url, key)| Target {
                webhook_id: Some(id),
                url,
                signing_key_sealed: Some(key),
            })
            .collect();
        if let Some((Some(url), key)) = shipment {
            targets.push(Target {
                webhook_id: None,
                url,
                signing_key_sealed: key,
            });
        }
        Ok(targets)
    }

    /// URLs already attempted for a row (by a process that died before it
    /// marked the row done), so a re-claim does not send them twice.
    pub async fn attempted_urls(&self, outbox_id: i64) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT url FROM webhook_deliveries WHERE outbox_id = $1";
        Ok(on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(outbox_id)
            .fetch_all(pool)
            .await)?)
    }

    /// Logs one attempt. A second record for the same row and URL is ignored.
    pub async fn record_delivery(
        &self,
        row: &OutboxRow,
        target: &Target,
        attempt: &Attempt,
    ) -> Result<(), StoreError> {
        let sql = "INSERT INTO webhook_deliveries (outbox_id, webhook_id, merchant_id, url, \
                   shipment_code, version, status_code, error, duration_ms, delivered_at) \
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                   ON CONFLICT (outbox_id, url) DO NOTHING";
        on_pool!(self, |pool| sqlx::query(sql)
            .bind(row.id)
            .bind(target.webhook_id)
            .bind(row.merchant_id)
            .bind(&target.url)
            .bind(&row.shipment_code)
            .bind(row.version)
            .bind(attempt.status_code.map(i64::from))
            .bind(&attempt.error)
            .bind(attempt.duration_ms)
            .bind(now())
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Marks a row delivered, if `worker` still holds it.
    pub async fn finish_outbox(&self, id: i64, worker: &str) -> Result<(), StoreError> {
        let sql = "UPDATE outbox SET done_at = $1 WHERE id = $2 AND claimed_by = $3";
        on_pool!(self, |pool| sqlx::query(sql)
            .bind(now())
            .bind(id)
            .bind(worker)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// How many rows wait, and since when (for `/metrics` and tests).
    pub async fn outbox_backlog(&self) -> Result<Backlog, StoreError> {
        let sql = "SELECT COUNT(*), MIN(created_at) FROM outbox WHERE done_at IS NULL";
        let (depth, oldest) = on_pool!(self, |pool| sqlx::query_as(sql).fetch_one(pool).await)?;
        Ok(Backlog { depth, oldest })
    }
}
