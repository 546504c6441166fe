//! API keys (merchants' `sk_`, couriers' `ck_`): made, found by digest,
//! listed without secrets, deleted.

use chrono::{DateTime, Utc};
use shipment_sdk::model::{ApiKeyId, CourierId, MerchantId};

use super::listen::{Credential, Revoked};
use super::{Backend, Store, StoreError, Tx, now};
use crate::domain::ids::CourierKeyId;
use crate::domain::keys::{self, Environment, KeyKind, KeyTerms, Secret, StoredPermissions};

const CREATE_API_KEY: &str = "INSERT INTO api_keys \
                              (merchant_id, name, prefix, last4, key_digest, created_at, \
                              permissions, expires_at) \
                              VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id";
/// The columns of a listed key ([`ApiKeyInfo`]).
macro_rules! listed {
    () => {
        "SELECT id, name, prefix, last4, created_at, last_used_at, permissions, expires_at \
         FROM api_keys "
    };
}
const CREATE_COURIER_KEY: &str = "INSERT INTO courier_keys \
                                  (courier_company_id, prefix, last4, key_digest, created_at) \
                                  VALUES ($1, $2, $3, $4, $5) RETURNING id";

/// Deletes a merchant's key ([`Store::delete_api_key`]).
const DELETE_API_KEY: &str = "DELETE FROM api_keys WHERE merchant_id = $1 AND id = $2 RETURNING id";
/// The same on PostgreSQL, announcing the deletion on
/// [`REVOKED_CHANNEL`](super::listen::REVOKED_CHANNEL) as it commits.
const DELETE_API_KEY_AND_ANNOUNCE: &str = "WITH gone AS \
    (DELETE FROM api_keys WHERE merchant_id = $1 AND id = $2 RETURNING id) \
    SELECT gone.id FROM gone, \
    LATERAL pg_notify('shipment_credential_revoked', 'api_key:' || gone.id) n";

/// Makes a merchant's key expire now ([`Store::expire_api_key`]).
const EXPIRE_API_KEY: &str =
    "UPDATE api_keys SET expires_at = $1 WHERE merchant_id = $2 AND id = $3 RETURNING id";
/// The same on PostgreSQL, announced as [`DELETE_API_KEY_AND_ANNOUNCE`] is.
const EXPIRE_API_KEY_AND_ANNOUNCE: &str = "WITH gone AS \
    (UPDATE api_keys SET expires_at = $1 WHERE merchant_id = $2 AND id = $3 RETURNING id) \
    SELECT gone.id FROM gone, \
    LATERAL pg_notify('shipment_credential_revoked', 'api_key:' || gone.id) n";

/// Finds a key's owner by digest ([`Store::find_key`]).
fn find_key_sql(kind: KeyKind) -> &'static str {
    match kind {
        KeyKind::Courier => {
            "SELECT id AS key_id, courier_company_id AS owner_id, last_used_at, \
             NULL AS permissions, NULL AS expires_at \
             FROM courier_keys WHERE key_digest = $1"
        }
        // A merchant's key, full or restricted.
        _ => {
            "SELECT id AS key_id, merchant_id AS owner_id, last_used_at, permissions, expires_at \
             FROM api_keys WHERE key_digest = $1"
        }
    }
}

/// Who a presented key belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct KeyOwner {
    /// The key's row id.
    pub key_id: i64,
    /// The merchant or courier company id.
    pub owner_id: i64,
    /// When the key was last used (updated at most once a minute).
    pub last_used_at: Option<DateTime<Utc>>,
    /// A restricted key's permissions; `None` for a full key (and a
    /// courier's, which the merchant routes never take).
    #[sqlx(try_from = "Option<String>")]
    pub permissions: StoredPermissions,
    /// When the key stops working, if it does.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A freshly created key: the secret is in this value only.
#[derive(Debug)]
pub struct NewKey<Id> {
    /// The key's id ([`ApiKeyId`] or [`CourierKeyId`]).
    pub id: Id,
    /// The full key, to show once.
    pub key: Secret,
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
    #[sqlx(try_from = "Option<String>")]
    pub permissions: StoredPermissions,
    pub expires_at: Option<DateTime<Utc>>,
}

impl Store {
    /// Creates a merchant API key of `env`; the secret is returned once and
    /// only its digest is stored. ([`StoreError::ApiKeyDigestTaken`] would
    /// mean two random 32-character keys collided.)
    pub async fn create_api_key(
        &self,
        merchant_id: MerchantId,
        name: &str,
        env: Environment,
    ) -> Result<NewKey<ApiKeyId>, StoreError> {
        self.create_api_key_on(merchant_id, name, env, &KeyTerms::default())
            .await
    }

    /// Creates a merchant API key on `terms`: restricted (`rk_`) when they
    /// carry permissions, else full (`sk_`).
    pub(crate) async fn create_api_key_on(
        &self,
        merchant_id: MerchantId,
        name: &str,
        env: Environment,
        terms: &KeyTerms,
    ) -> Result<NewKey<ApiKeyId>, StoreError> {
        let kind = terms.kind();
        let key = keys::generate(kind, env);
        let id = self
            .query(CREATE_API_KEY)
            .bind(merchant_id.get())
            .bind(name)
            .bind(kind.prefix(env))
            .bind(keys::last4(key.expose()))
            .bind(keys::digest(key.expose()))
            .bind(now())
            .bind(terms.permissions.as_ref().map(keys::stored_permissions))
            .bind(terms.expires_at)
            .scalar()
            .await?;
        Ok(NewKey {
            id: ApiKeyId::new(id),
            key,
        })
    }

    /// Creates a courier company key of `env`.
    pub async fn create_courier_key(
        &self,
        courier_id: CourierId,
        env: Environment,
    ) -> Result<NewKey<CourierKeyId>, StoreError> {
        let key = keys::generate(KeyKind::Courier, env);
        let id = self
            .query(CREATE_COURIER_KEY)
            .bind(courier_id.get())
            .bind(KeyKind::Courier.prefix(env))
            .bind(keys::last4(key.expose()))
            .bind(keys::digest(key.expose()))
            .bind(now())
            .scalar()
            .await?;
        Ok(NewKey {
            id: CourierKeyId::new(id),
            key,
        })
    }

    /// Finds the owner of a key by the digest of the presented string.
    ///
    /// The lookup is by digest, so the secret itself is never compared; the
    /// digest of a high-entropy key reveals nothing through timing.
    pub(crate) async fn find_key(
        &self,
        kind: KeyKind,
        digest: &str,
    ) -> Result<Option<KeyOwner>, StoreError> {
        Ok(self
            .query(find_key_sql(kind))
            .bind(digest)
            .fetch_optional()
            .await?)
    }

    /// Records that a key was used now.
    pub(crate) async fn touch_key(&self, kind: KeyKind, key_id: i64) -> Result<(), StoreError> {
        let sql = match kind {
            KeyKind::Courier => "UPDATE courier_keys SET last_used_at = $1 WHERE id = $2",
            _ => "UPDATE api_keys SET last_used_at = $1 WHERE id = $2",
        };
        self.query(sql).bind(now()).bind(key_id).execute().await?;
        Ok(())
    }

    /// The merchant's API keys, oldest first.
    pub async fn api_keys(&self, merchant_id: MerchantId) -> Result<Vec<ApiKeyInfo>, StoreError> {
        let sql = concat!(listed!(), "WHERE merchant_id = $1 ORDER BY id");
        Ok(self.query(sql).bind(merchant_id.get()).fetch_all().await?)
    }

    /// One of the merchant's API keys.
    pub(crate) async fn api_key(
        &self,
        merchant_id: MerchantId,
        id: ApiKeyId,
    ) -> Result<Option<ApiKeyInfo>, StoreError> {
        let sql = concat!(listed!(), "WHERE merchant_id = $1 AND id = $2");
        Ok(self
            .query(sql)
            .bind(merchant_id.get())
            .bind(id.get())
            .fetch_optional()
            .await?)
    }

    /// The merchant's key whose secret has this digest, if any.
    pub(crate) async fn api_key_by_digest(
        &self,
        merchant_id: MerchantId,
        digest: &str,
    ) -> Result<Option<ApiKeyInfo>, StoreError> {
        let sql = concat!(listed!(), "WHERE merchant_id = $1 AND key_digest = $2");
        Ok(self
            .query(sql)
            .bind(merchant_id.get())
            .bind(digest)
            .fetch_optional()
            .await?)
    }

    /// Deletes one of the merchant's keys; `None` if it has no such key.
    /// Authentication reads this table, so the key stops working at once
    /// wherever it is not remembered: the caller forgets the [`Revoked`]
    /// key in this process, and on PostgreSQL every process is told of it
    /// on [`REVOKED_CHANNEL`](super::listen::REVOKED_CHANNEL) when the
    /// deletion commits.
    pub(crate) async fn delete_api_key(
        &self,
        merchant_id: MerchantId,
        id: ApiKeyId,
    ) -> Result<Option<Revoked>, StoreError> {
        let sql = match self.backend() {
            Backend::Postgres => DELETE_API_KEY_AND_ANNOUNCE,
            Backend::Sqlite => DELETE_API_KEY,
        };
        let gone: Option<i64> = self
            .query(sql)
            .bind(merchant_id.get())
            .bind(id.get())
            .scalar_optional()
            .await?;
        Ok(gone.map(|id| Revoked::deleted(Credential::ApiKey(ApiKeyId::new(id)))))
    }

    /// Creates an API key and returns it with its secret (shown once).
    pub(crate) async fn create_named_api_key(
        &self,
        merchant_id: MerchantId,
        name: &str,
        env: Environment,
        terms: &KeyTerms,
    ) -> Result<(ApiKeyInfo, Secret), StoreError> {
        let new = self
            .create_api_key_on(merchant_id, name, env, terms)
            .await?;
        let info = self
            .api_key(merchant_id, new.id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a new API key vanished".into()))?;
        debug_assert_eq!(info.prefix, terms.kind().prefix(env));
        Ok((info, new.key))
    }

    /// Makes one of the merchant's keys expire now (the test controls);
    /// `None` if it has no such key. As a deletion does, it answers the key
    /// as [`Revoked`] for the caller to forget, and on PostgreSQL announces
    /// it on [`REVOKED_CHANNEL`](super::listen::REVOKED_CHANNEL) as it
    /// commits: a process that remembers the key would otherwise take it
    /// until its memory of it runs out, with the old expiry.
    pub(crate) async fn expire_api_key(
        &self,
        merchant_id: MerchantId,
        id: ApiKeyId,
    ) -> Result<Option<Revoked>, StoreError> {
        let sql = match self.backend() {
            Backend::Postgres => EXPIRE_API_KEY_AND_ANNOUNCE,
            Backend::Sqlite => EXPIRE_API_KEY,
        };
        let gone: Option<i64> = self
            .query(sql)
            .bind(now())
            .bind(merchant_id.get())
            .bind(id.get())
            .scalar_optional()
            .await?;
        Ok(gone.map(|id| Revoked::deleted(Credential::ApiKey(ApiKeyId::new(id)))))
    }
}

/// Keys of given values inside a transaction, for declared fixtures.
impl Tx {
    /// Finds the owner of a key by the digest of its value.
    pub(crate) async fn find_key(
        &mut self,
        kind: KeyKind,
        digest: &str,
    ) -> Result<Option<KeyOwner>, StoreError> {
        Ok(self
            .query(find_key_sql(kind))
            .bind(digest)
            .fetch_optional()
            .await?)
    }

    /// Stores a merchant API key of a value the caller chose (of `env`,
    /// well formed, of the kind `terms` make: the caller checked it); only
    /// its digest is kept.
    pub(crate) async fn create_api_key_of(
        &mut self,
        merchant_id: MerchantId,
        name: &str,
        key: &Secret,
        env: Environment,
        terms: &KeyTerms,
    ) -> Result<i64, StoreError> {
        Ok(self
            .query(CREATE_API_KEY)
            .bind(merchant_id.get())
            .bind(name)
            .bind(terms.kind().prefix(env))
            .bind(keys::last4(key.expose()))
            .bind(keys::digest(key.expose()))
            .bind(now())
            .bind(terms.permissions.as_ref().map(keys::stored_permissions))
            .bind(terms.expires_at)
            .scalar()
            .await?)
    }

    /// Stores a courier key of a value the caller chose, as
    /// [`Tx::create_api_key_of`] does.
    pub(crate) async fn create_courier_key_of(
        &mut self,
        courier_id: CourierId,
        key: &Secret,
        env: Environment,
    ) -> Result<i64, StoreError> {
        Ok(self
            .query(CREATE_COURIER_KEY)
            .bind(courier_id.get())
            .bind(KeyKind::Courier.prefix(env))
            .bind(keys::last4(key.expose()))
            .bind(keys::digest(key.expose()))
            .bind(now())
            .scalar()
            .await?)
    }
}
