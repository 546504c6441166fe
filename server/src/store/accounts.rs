//! Merchants, courier companies, their links, drivers and keys.

use chrono::{DateTime, Utc};
use shipment_sdk::model::CourierCompany;

use super::{Store, StoreError, classify, now, on_pool};
use crate::domain::fee::{Pricing, from_minor_units};
use crate::domain::keys::{self, Environment, KeyKind, Secret};

/// Who a presented key belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyOwner {
    /// The key's row id.
    pub key_id: i64,
    /// The merchant or courier company id.
    pub owner_id: i64,
    /// When the key was last used (updated at most once a minute).
    pub last_used_at: Option<DateTime<Utc>>,
}

/// A driver of a courier company.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Driver {
    /// Identifier used as `driver_id`.
    pub id: i64,
    /// The company employing the driver.
    pub courier_company_id: i64,
    /// Display name.
    pub name: String,
    /// When the driver was added.
    #[serde(serialize_with = "shipment_sdk::model::timestamp::serialize")]
    pub created_at: DateTime<Utc>,
}

/// A freshly created key: the secret is in this value only.
#[derive(Debug)]
pub struct NewKey {
    /// The key's row id.
    pub id: i64,
    /// The full key, to show once.
    pub key: Secret,
}

#[derive(sqlx::FromRow)]
struct CourierRow {
    id: i64,
    name: String,
    active: bool,
    base_fee_minor: i64,
    per_kg_minor: i64,
    per_km_minor: i64,
    linked_at: DateTime<Utc>,
}

impl CourierRow {
    fn pricing(&self) -> Pricing {
        Pricing {
            base_fee: from_minor_units(self.base_fee_minor),
            per_kg: from_minor_units(self.per_kg_minor),
            per_km: from_minor_units(self.per_km_minor),
        }
    }
}

impl Store {
    /// Adds a merchant, its e-mail normalised ([`crate::domain::email`]);
    /// `Conflict` if the e-mail is taken.
    pub async fn create_merchant(
        &self,
        name: &str,
        email: &str,
        password_hash: &str,
    ) -> Result<i64, StoreError> {
        let sql = "INSERT INTO merchants (name, email, password_hash, created_at) \
                   VALUES ($1, $2, $3, $4) RETURNING id";
        on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(name)
            .bind(crate::domain::email::normalize(email))
            .bind(password_hash)
            .bind(now())
            .fetch_one(pool)
            .await)
        .map_err(classify)
    }

    /// Whether a merchant with this id exists.
    pub async fn merchant_exists(&self, id: i64) -> Result<bool, StoreError> {
        let sql = "SELECT COUNT(*) FROM merchants WHERE id = $1";
        let n: i64 = on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(pool)
            .await)?;
        Ok(n > 0)
    }

    /// Whether a courier company with this id exists.
    pub async fn courier_exists(&self, id: i64) -> Result<bool, StoreError> {
        let sql = "SELECT COUNT(*) FROM courier_companies WHERE id = $1";
        let n: i64 = on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(pool)
            .await)?;
        Ok(n > 0)
    }

    /// Creates a merchant API key of `env`; the secret is returned once and
    /// only its digest is stored.
    pub async fn create_api_key(
        &self,
        merchant_id: i64,
        name: &str,
        env: Environment,
    ) -> Result<NewKey, StoreError> {
        let key = keys::generate(KeyKind::Merchant, env);
        let sql = "INSERT INTO api_keys (merchant_id, name, prefix, last4, key_digest, created_at) \
                   VALUES ($1, $2, $3, $4, $5, $6) RETURNING id";
        let id = on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(merchant_id)
            .bind(name)
            .bind(KeyKind::Merchant.prefix(env))
            .bind(keys::last4(key.expose()))
            .bind(keys::digest(key.expose()))
            .bind(now())
            .fetch_one(pool)
            .await)
        .map_err(classify)?;
        Ok(NewKey { id, key })
    }

    /// Creates a courier company key of `env`.
    pub async fn create_courier_key(
        &self,
        courier_id: i64,
        env: Environment,
    ) -> Result<NewKey, StoreError> {
        let key = keys::generate(KeyKind::Courier, env);
        let sql = "INSERT INTO courier_keys (courier_company_id, prefix, last4, key_digest, created_at) \
                   VALUES ($1, $2, $3, $4, $5) RETURNING id";
        let id = on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(courier_id)
            .bind(KeyKind::Courier.prefix(env))
            .bind(keys::last4(key.expose()))
            .bind(keys::digest(key.expose()))
            .bind(now())
            .fetch_one(pool)
            .await)
        .map_err(classify)?;
        Ok(NewKey { id, key })
    }

    /// Finds the owner of a key by the digest of the presented string.
    ///
    /// The lookup is by digest, so the secret itself is never compared; the
    /// digest of a high-entropy key reveals nothing through timing.
    pub async fn find_key(
        &self,
        kind: KeyKind,
        digest: &str,
    ) -> Result<Option<KeyOwner>, StoreError> {
        let sql = match kind {
            KeyKind::Merchant => {
                "SELECT id, merchant_id, last_used_at FROM api_keys WHERE key_digest = $1"
            }
            KeyKind::Courier => {
                "SELECT id, courier_company_id, last_used_at FROM courier_keys WHERE key_digest = $1"
            }
        };
        let row: Option<(i64, i64, Option<DateTime<Utc>>)> =
            on_pool!(self, |pool| sqlx::query_as(sql)
                .bind(digest)
                .fetch_optional(pool)
                .await)?;
        Ok(row.map(|(key_id, owner_id, last_used_at)| KeyOwner {
            key_id,
            owner_id,
            last_used_at,
        }))
    }

    /// Records that a key was used now.
    pub async fn touch_key(&self, kind: KeyKind, key_id: i64) -> Result<(), StoreError> {
        let sql = match kind {
            KeyKind::Merchant => "UPDATE api_keys SET last_used_at = $1 WHERE id = $2",
            KeyKind::Courier => "UPDATE courier_keys SET last_used_at = $1 WHERE id = $2",
        };
        on_pool!(self, |pool| sqlx::query(sql)
            .bind(now())
            .bind(key_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Adds a courier company with its prices in minor units.
    pub async fn create_courier(
        &self,
        name: &str,
        base_fee_minor: i64,
        per_kg_minor: i64,
        per_km_minor: i64,
    ) -> Result<i64, StoreError> {
        let sql = "INSERT INTO courier_companies \
                   (name, active, base_fee_minor, per_kg_minor, per_km_minor, created_at) \
                   VALUES ($1, TRUE, $2, $3, $4, $5) RETURNING id";
        on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(name)
            .bind(base_fee_minor)
            .bind(per_kg_minor)
            .bind(per_km_minor)
            .bind(now())
            .fetch_one(pool)
            .await)
        .map_err(classify)
    }

    /// Links a courier company to a merchant (idempotent).
    pub async fn link_courier(&self, merchant_id: i64, courier_id: i64) -> Result<(), StoreError> {
        let sql = "INSERT INTO merchant_couriers (merchant_id, courier_company_id, linked_at) \
                   VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
        on_pool!(self, |pool| sqlx::query(sql)
            .bind(merchant_id)
            .bind(courier_id)
            .bind(now())
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
        .map_err(classify)?;
        Ok(())
    }

    /// The courier companies linked to a merchant, by id.
    pub async fn merchant_couriers(
        &self,
        merchant_id: i64,
    ) -> Result<Vec<CourierCompany>, StoreError> {
        let sql = "SELECT c.id, c.name, c.active, c.base_fee_minor, c.per_kg_minor, c.per_km_minor, \
                   l.linked_at FROM merchant_couriers l \
                   JOIN courier_companies c ON c.id = l.courier_company_id \
                   WHERE l.merchant_id = $1 ORDER BY c.id";
        let rows: Vec<CourierRow> = on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(merchant_id)
            .fetch_all(pool)
            .await)?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let p = r.pricing();
                CourierCompany {
                    id: r.id,
                    name: r.name,
                    active: r.active,
                    base_fee: p.base_fee,
                    per_kg: p.per_kg,
                    per_km: p.per_km,
                    linked_at: r.linked_at,
                }
            })
            .collect())
    }

    /// The prices of a courier company if it is linked to the merchant and
    /// active; `None` otherwise.
    pub async fn linked_courier_pricing(
        &self,
        merchant_id: i64,
        courier_id: i64,
    ) -> Result<Option<Pricing>, StoreError> {
        let sql = "SELECT c.id, c.name, c.active, c.base_fee_minor, c.per_kg_minor, c.per_km_minor, \
                   l.linked_at FROM merchant_couriers l \
                   JOIN courier_companies c ON c.id = l.courier_company_id \
                   WHERE l.merchant_id = $1 AND l.courier_company_id = $2 AND c.active";
        let row: Option<CourierRow> = on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(merchant_id)
            .bind(courier_id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(|r| r.pricing()))
    }

    /// Adds a driver to a courier company.
    pub async fn create_driver(&self, courier_id: i64, name: &str) -> Result<Driver, StoreError> {
        let sql = "INSERT INTO drivers (courier_company_id, name, created_at) VALUES ($1, $2, $3) \
                   RETURNING id, courier_company_id, name, created_at";
        on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(courier_id)
            .bind(name)
            .bind(now())
            .fetch_one(pool)
            .await)
        .map_err(classify)
    }

    /// The drivers of a courier company, by id.
    pub async fn drivers(&self, courier_id: i64) -> Result<Vec<Driver>, StoreError> {
        let sql = "SELECT id, courier_company_id, name, created_at FROM drivers \
                   WHERE courier_company_id = $1 ORDER BY id";
        Ok(on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(courier_id)
            .fetch_all(pool)
            .await)?)
    }

    /// One driver, if it exists.
    pub async fn driver(&self, driver_id: i64) -> Result<Option<Driver>, StoreError> {
        let sql = "SELECT id, courier_company_id, name, created_at FROM drivers WHERE id = $1";
        Ok(on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(driver_id)
            .fetch_optional(pool)
            .await)?)
    }
}
