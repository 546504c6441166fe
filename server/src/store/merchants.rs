//! Merchants: their accounts, how sign-in finds them, and deleting one with
//! everything it owns (the test controls' `DELETE /testing/merchants/{id}`).

use shipment_sdk::model::{ApiKeyId, MerchantId};

use super::listen::{Credential, Revoked};
use super::{Store, StoreError, Tx, now};
use crate::domain::ids::SessionId;

const CREATE_MERCHANT: &str = "INSERT INTO merchants (name, email, password_hash, created_at) \
                               VALUES ($1, $2, $3, $4) RETURNING id";

/// A merchant's account as declared fixtures compare it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct Account {
    /// The merchant's id.
    pub id: i64,
    /// Display name.
    pub name: String,
    /// The argon2id PHC string.
    pub password_hash: String,
}

/// A merchant as sign-in needs it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct Login {
    /// The merchant's id.
    pub merchant_id: i64,
    /// The argon2id PHC string.
    pub password_hash: String,
}

impl Store {
    /// Adds a merchant, its e-mail normalised (`domain::email`);
    /// [`StoreError::EmailTaken`] if the e-mail is taken.
    pub async fn create_merchant(
        &self,
        name: &str,
        email: &str,
        password_hash: &str,
    ) -> Result<MerchantId, StoreError> {
        let id = self
            .query(CREATE_MERCHANT)
            .bind(name)
            .bind(crate::domain::email::normalize(email))
            .bind(password_hash)
            .bind(now())
            .scalar()
            .await?;
        Ok(MerchantId::new(id))
    }

    /// Whether a merchant with this id exists.
    pub(crate) async fn merchant_exists(&self, id: MerchantId) -> Result<bool, StoreError> {
        let sql = "SELECT COUNT(*) FROM merchants WHERE id = $1";
        let n: i64 = self.query(sql).bind(id.get()).scalar().await?;
        Ok(n > 0)
    }

    /// The merchant signing in with `email`, if any.
    pub(crate) async fn login(&self, email: &str) -> Result<Option<Login>, StoreError> {
        let sql = "SELECT id AS merchant_id, password_hash FROM merchants WHERE email = $1";
        Ok(self.query(sql).bind(email).fetch_optional().await?)
    }
}

/// Accounts inside a transaction, for declared fixtures.
impl Tx {
    /// The merchant signing in with `email` (normalised), if any.
    pub(crate) async fn merchant_by_email(
        &mut self,
        email: &str,
    ) -> Result<Option<Account>, StoreError> {
        let sql = "SELECT id, name, password_hash FROM merchants WHERE email = $1";
        Ok(self.query(sql).bind(email).fetch_optional().await?)
    }

    /// Adds a merchant, as [`Store::create_merchant`] does.
    pub async fn create_merchant(
        &mut self,
        name: &str,
        email: &str,
        password_hash: &str,
    ) -> Result<MerchantId, StoreError> {
        let id = self
            .query(CREATE_MERCHANT)
            .bind(name)
            .bind(crate::domain::email::normalize(email))
            .bind(password_hash)
            .bind(now())
            .scalar()
            .await?;
        Ok(MerchantId::new(id))
    }
}

/// Locks the merchant's row until the deleting transaction ends, so a
/// write that names the merchant (a create by its key) waits for the
/// deletion and then fails instead of racing it. PostgreSQL only: a SQLite
/// write transaction is alone already.
const LOCK_MERCHANT: &str = "SELECT id FROM merchants WHERE id = $1 FOR UPDATE";
const MERCHANT_ROW: &str = "SELECT id FROM merchants WHERE id = $1";
/// The merchant's outbox rows not delivered yet, locked on PostgreSQL so no
/// dispatcher claims one while the deletion runs (its claim skips locked
/// rows); `claimed_by` tells the ones a dispatcher is delivering now.
const PENDING_LOCKED: &str = "SELECT claimed_by FROM outbox \
                              WHERE merchant_id = $1 AND done_at IS NULL FOR UPDATE";
const PENDING: &str = "SELECT claimed_by FROM outbox WHERE merchant_id = $1 AND done_at IS NULL";
const DELETE_SESSIONS: &str = "DELETE FROM sessions WHERE merchant_id = $1 RETURNING id";
const DELETE_SESSIONS_AND_ANNOUNCE: &str = "WITH gone AS \
    (DELETE FROM sessions WHERE merchant_id = $1 RETURNING id) \
    SELECT gone.id FROM gone, \
    LATERAL pg_notify('shipment_credential_revoked', 'session:' || gone.id) n";
const DELETE_API_KEYS: &str = "DELETE FROM api_keys WHERE merchant_id = $1 RETURNING id";
const DELETE_API_KEYS_AND_ANNOUNCE: &str = "WITH gone AS \
    (DELETE FROM api_keys WHERE merchant_id = $1 RETURNING id) \
    SELECT gone.id FROM gone, \
    LATERAL pg_notify('shipment_credential_revoked', 'api_key:' || gone.id) n";

/// The rows a merchant's deletion removed, per kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemovedRows {
    /// Its shipments.
    pub shipments: u64,
    /// Their pending confirmation codes.
    pub confirmation_codes: u64,
    /// Its outbox rows (one per change of its shipments, and redeliveries).
    pub outbox_rows: u64,
    /// Its delivery log rows.
    pub deliveries: u64,
    /// Its webhooks.
    pub webhooks: u64,
    /// Its shipment and listener signing keys.
    pub signing_keys: u64,
    /// Its API keys.
    pub api_keys: u64,
    /// Its dashboard sessions.
    pub sessions: u64,
    /// Its links to courier companies.
    pub courier_links: u64,
    /// Its stored answers to creates with an `Idempotency-Key`.
    pub idempotency_keys: u64,
    /// Its sign-in throttle row.
    pub login_attempts: u64,
}

/// What [`Store::delete_merchant`] did.
#[derive(Debug)]
pub enum MerchantDeletion {
    /// The merchant and everything it owned are gone; its credentials are
    /// to be forgotten where they are remembered.
    Deleted {
        /// The rows removed, per kind.
        removed: RemovedRows,
        /// Its API keys and sessions (announced to the other processes on
        /// PostgreSQL in the same transaction).
        revoked: Vec<Revoked>,
    },
    /// Nothing was deleted: this many of its changes are being delivered
    /// by a dispatcher right now.
    InFlight(u64),
    /// No merchant has this id.
    Missing,
}

impl Store {
    /// Deletes a merchant and every row it owns, in one transaction, unless
    /// a dispatcher is delivering one of its changes right now (its log row
    /// would name a deleted change).
    pub async fn delete_merchant(&self, id: MerchantId) -> Result<MerchantDeletion, StoreError> {
        let mut tx = self.begin().await?;
        let postgres = tx.backend() == super::Backend::Postgres;
        let m = id.get();
        let lock = if postgres {
            LOCK_MERCHANT
        } else {
            MERCHANT_ROW
        };
        let found: Option<i64> = tx.query(lock).bind(m).scalar_optional().await?;
        if found.is_none() {
            return Ok(MerchantDeletion::Missing);
        }
        let pending = if postgres { PENDING_LOCKED } else { PENDING };
        let claims: Vec<Option<String>> = tx.query(pending).bind(m).scalars().await?;
        let in_flight = claims.iter().filter(|c| c.is_some()).count() as u64;
        if in_flight > 0 {
            return Ok(MerchantDeletion::InFlight(in_flight));
        }
        let mut removed = RemovedRows {
            deliveries: tx
                .query("DELETE FROM webhook_deliveries WHERE merchant_id = $1")
                .bind(m)
                .execute()
                .await?,
            confirmation_codes: tx
                .query(
                    "DELETE FROM confirmation_codes WHERE shipment_id IN \
                     (SELECT id FROM shipments WHERE merchant_id = $1)",
                )
                .bind(m)
                .execute()
                .await?,
            outbox_rows: tx
                .query("DELETE FROM outbox WHERE merchant_id = $1")
                .bind(m)
                .execute()
                .await?,
            ..RemovedRows::default()
        };
        tx.query("DELETE FROM shipment_counts_by_courier WHERE merchant_id = $1")
            .bind(m)
            .execute()
            .await?;
        removed.shipments = tx
            .query("DELETE FROM shipments WHERE merchant_id = $1")
            .bind(m)
            .execute()
            .await?;
        removed.idempotency_keys = tx
            .query("DELETE FROM idempotency_keys WHERE merchant_id = $1")
            .bind(m)
            .execute()
            .await?;
        removed.webhooks = tx
            .query("DELETE FROM webhooks WHERE merchant_id = $1")
            .bind(m)
            .execute()
            .await?;
        removed.signing_keys = tx
            .query("DELETE FROM shipment_signing_keys WHERE merchant_id = $1")
            .bind(m)
            .execute()
            .await?
            + tx.query("DELETE FROM listener_signing_keys WHERE merchant_id = $1")
                .bind(m)
                .execute()
                .await?;
        let (sessions, api_keys) = if postgres {
            (DELETE_SESSIONS_AND_ANNOUNCE, DELETE_API_KEYS_AND_ANNOUNCE)
        } else {
            (DELETE_SESSIONS, DELETE_API_KEYS)
        };
        let sessions: Vec<i64> = tx.query(sessions).bind(m).scalars().await?;
        let api_keys: Vec<i64> = tx.query(api_keys).bind(m).scalars().await?;
        removed.sessions = sessions.len() as u64;
        removed.api_keys = api_keys.len() as u64;
        removed.courier_links = tx
            .query("DELETE FROM merchant_couriers WHERE merchant_id = $1")
            .bind(m)
            .execute()
            .await?;
        removed.login_attempts = tx
            .query(
                "DELETE FROM login_attempts WHERE email = \
                 (SELECT email FROM merchants WHERE id = $1)",
            )
            .bind(m)
            .execute()
            .await?;
        tx.query("DELETE FROM merchants WHERE id = $1")
            .bind(m)
            .execute()
            .await?;
        tx.commit().await?;
        let revoked = sessions
            .into_iter()
            .map(|s| Revoked::deleted(Credential::Session(SessionId::new(s))))
            .chain(
                api_keys
                    .into_iter()
                    .map(|k| Revoked::deleted(Credential::ApiKey(ApiKeyId::new(k)))),
            )
            .collect();
        Ok(MerchantDeletion::Deleted { removed, revoked })
    }
}
