//! Merchants: their accounts, how sign-in finds them, and the merchants
//! per test of the test controls (`POST /testing/merchants`): made with
//! courier companies of their own, counted against their limits, and
//! deleted with everything made for them (`DELETE /testing/merchants/{id}`).

use chrono::{DateTime, Utc};
use shipment_sdk::model::{ApiKeyId, CourierId, MerchantId};

use super::couriers::DriverRow;
use super::listen::{Credential, Revoked};
use super::{Store, StoreError, Tx, now};
use crate::domain::ids::{CourierKeyId, SessionId};
use crate::domain::keys::{self, Environment, KeyKind, Secret};

/// The one insert of a merchant, whoever makes it: `test_made_by` names
/// the merchant whose key made it through `POST /testing/merchants`, which
/// is what makes it deletable through the test route and what the limits
/// count; it is NULL for the others (fixtures, `admin`, the demo).
const CREATE_MERCHANT: &str = "INSERT INTO merchants \
                               (name, email, password_hash, created_at, test_made_by) \
                               VALUES ($1, $2, $3, $4, $5) RETURNING id";

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
    /// [`StoreError::EmailTaken`] if the e-mail is taken. In a transaction
    /// of its own, as `Tx::create_merchant` makes it.
    pub async fn create_merchant(
        &self,
        name: &str,
        email: &str,
        password_hash: &str,
    ) -> Result<MerchantId, StoreError> {
        let mut tx = self.begin().await?;
        let id = tx.create_merchant(name, email, password_hash).await?;
        tx.commit().await?;
        Ok(id)
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

    /// Adds a merchant that no merchant's key made (fixtures, `admin`, the
    /// demo), its e-mail normalised (`domain::email`);
    /// [`StoreError::EmailTaken`] if the e-mail is taken.
    pub async fn create_merchant(
        &mut self,
        name: &str,
        email: &str,
        password_hash: &str,
    ) -> Result<MerchantId, StoreError> {
        self.insert_merchant(name, email, password_hash, None, now())
            .await
    }

    /// The one path by which a merchant's row is written ([`CREATE_MERCHANT`]).
    async fn insert_merchant(
        &mut self,
        name: &str,
        email: &str,
        password_hash: &str,
        made_by: Option<MerchantId>,
        at: DateTime<Utc>,
    ) -> Result<MerchantId, StoreError> {
        let id = self
            .query(CREATE_MERCHANT)
            .bind(name)
            .bind(crate::domain::email::normalize(email))
            .bind(password_hash)
            .bind(at)
            .bind(made_by.map(MerchantId::get))
            .scalar()
            .await?;
        Ok(MerchantId::new(id))
    }
}

/// A company of the test merchant's own, priced like `$3`, which must be
/// linked to the creator `$2`: no row (so no copy) for a company the
/// creator is not linked to, whether it exists or not.
const COPY_LINKED_COURIER: &str = "INSERT INTO courier_companies \
    (name, active, base_fee_minor, per_kg_minor, per_km_minor, created_at, test_merchant_id) \
    SELECT c.name, c.active, c.base_fee_minor, c.per_kg_minor, c.per_km_minor, $4, $1 \
    FROM courier_companies c JOIN merchant_couriers l \
    ON l.courier_company_id = c.id AND l.merchant_id = $2 WHERE c.id = $3 RETURNING id";
/// PostgreSQL: test merchant creations take turns, so two at once cannot
/// both pass the limits' count (SQLite's write transactions take turns
/// already). The key is an arbitrary constant of this server's own.
const TEST_MERCHANTS_LOCK: &str = "SELECT pg_advisory_xact_lock(7215036917)";

/// How many test merchants may exist at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TestMerchantLimits {
    /// Made by one merchant's keys.
    pub per_caller: u64,
    /// Made by anyone.
    pub total: u64,
}

/// What a test merchant is made with.
#[derive(Debug)]
pub(crate) struct TestMerchantSpec<'a> {
    /// The merchant whose key asked.
    pub made_by: MerchantId,
    /// Display name.
    pub name: &'a str,
    /// Sign-in e-mail.
    pub email: &'a str,
    /// The argon2id PHC string of its password.
    pub password_hash: &'a str,
    /// Companies linked to `made_by` to copy, in order, without repeats.
    pub couriers: &'a [CourierId],
    /// The driver's name, made in the first copy.
    pub driver_name: &'a str,
    /// The environment of the courier key made for the first copy.
    pub environment: Environment,
    /// The limits checked before anything is made.
    pub limits: TestMerchantLimits,
}

/// A test merchant as [`Store::create_test_merchant`] made it.
#[derive(Debug)]
pub(crate) struct MadeTestMerchant {
    /// Its id.
    pub merchant_id: MerchantId,
    /// A key of the first of them (shown once), with a driver of it.
    pub courier_key: Option<(Secret, DriverRow)>,
}

/// What [`Store::create_test_merchant`] did.
#[derive(Debug)]
pub(crate) enum TestMerchantCreation {
    /// Made, with its companies, courier key and driver.
    Made(MadeTestMerchant),
    /// Nothing made: the caller's test merchants are at the limit.
    CallerAtLimit(u64),
    /// Nothing made: all test merchants together are at the limit.
    TotalAtLimit(u64),
    /// Nothing made: the caller is not linked to this company (or no
    /// company has the id: the two are not told apart).
    NotLinked(CourierId),
}

impl Store {
    /// Makes a test merchant in one transaction: its row, a company of its
    /// own for each company of the spec (priced as that one, linked to it
    /// alone), a courier key and a driver of the first. Why copies: a
    /// company's courier key sees every shipment at the company, so a
    /// company shared by two merchants would show each the other's.
    pub(crate) async fn create_test_merchant(
        &self,
        spec: &TestMerchantSpec<'_>,
    ) -> Result<TestMerchantCreation, StoreError> {
        let mut tx = self.begin().await?;
        if tx.backend() == super::Backend::Postgres {
            tx.query(TEST_MERCHANTS_LOCK).execute().await?;
        }
        let by_caller: i64 = tx
            .query("SELECT COUNT(*) FROM merchants WHERE test_made_by = $1")
            .bind(spec.made_by.get())
            .scalar()
            .await?;
        let by_caller = u64::try_from(by_caller).unwrap_or(0);
        if by_caller >= spec.limits.per_caller {
            return Ok(TestMerchantCreation::CallerAtLimit(spec.limits.per_caller));
        }
        let all: i64 = tx
            .query("SELECT COUNT(*) FROM merchants WHERE test_made_by IS NOT NULL")
            .scalar()
            .await?;
        if u64::try_from(all).unwrap_or(0) >= spec.limits.total {
            return Ok(TestMerchantCreation::TotalAtLimit(spec.limits.total));
        }
        let at = now();
        let merchant_id = tx
            .insert_merchant(
                spec.name,
                spec.email,
                spec.password_hash,
                Some(spec.made_by),
                at,
            )
            .await?;
        let mut first = None;
        for &named in spec.couriers {
            let copy: Option<i64> = tx
                .query(COPY_LINKED_COURIER)
                .bind(merchant_id.get())
                .bind(spec.made_by.get())
                .bind(named.get())
                .bind(at)
                .scalar_optional()
                .await?;
            let Some(copy) = copy else {
                return Ok(TestMerchantCreation::NotLinked(named));
            };
            let copy = CourierId::new(copy);
            tx.link_courier(merchant_id, copy).await?;
            first.get_or_insert(copy);
        }
        let courier_key = match first {
            Some(first) => {
                let key = keys::generate(KeyKind::Courier, spec.environment);
                tx.create_courier_key_of(first, &key, spec.environment)
                    .await?;
                let driver = tx.create_driver(first, spec.driver_name).await?;
                Some((key, driver))
            }
            None => None,
        };
        tx.commit().await?;
        Ok(TestMerchantCreation::Made(MadeTestMerchant {
            merchant_id,
            courier_key,
        }))
    }
}

/// Locks the merchant's row until the deleting transaction ends, so a
/// write that names the merchant (a create by its key) waits for the
/// deletion and then fails instead of racing it. PostgreSQL only: a SQLite
/// write transaction is alone already.
const LOCK_MERCHANT: &str = "SELECT test_made_by FROM merchants WHERE id = $1 FOR UPDATE";
const MERCHANT_ROW: &str = "SELECT test_made_by FROM merchants WHERE id = $1";
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
/// The companies made for the test merchant `$1`.
const OWN_COURIERS: &str = "SELECT id FROM courier_companies WHERE test_merchant_id = $1";
const DELETE_COURIER_KEYS: &str = "DELETE FROM courier_keys WHERE courier_company_id IN \
    (SELECT id FROM courier_companies WHERE test_merchant_id = $1) RETURNING id";
const DELETE_COURIER_KEYS_AND_ANNOUNCE: &str = "WITH gone AS \
    (DELETE FROM courier_keys WHERE courier_company_id IN \
    (SELECT id FROM courier_companies WHERE test_merchant_id = $1) RETURNING id) \
    SELECT gone.id FROM gone, \
    LATERAL pg_notify('shipment_credential_revoked', 'courier_key:' || gone.id) n";

/// Who made a merchant: a merchant's key through `POST /testing/merchants`,
/// or nobody the server knows (`None`: fixtures, `admin`, the demo).
#[derive(sqlx::FromRow)]
struct Made {
    test_made_by: Option<i64>,
}

/// What a test merchant's deletion removed: the rows, per kind, that
/// [`Store::delete_test_merchant`] counts, and the in-memory state the
/// use-case drops after it (left 0 here). One type from the deleting
/// transaction to the answer of `DELETE /testing/merchants/{id}`, so a kind
/// of row counted here is a field of the answer, never lost between two
/// copies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[schema(description = "The rows a deletion removed, per kind, and the in-memory state dropped.")]
pub struct RemovedCounts {
    /// Shipments.
    pub shipments: u64,
    /// Their pending confirmation codes.
    pub confirmation_codes: u64,
    /// Outbox rows (changes and redeliveries), delivered or not.
    pub outbox_rows: u64,
    /// Delivery log rows.
    pub deliveries: u64,
    /// Webhooks.
    pub webhooks: u64,
    /// Shipment and listener signing keys.
    pub signing_keys: u64,
    /// API keys (refused from now on).
    pub api_keys: u64,
    /// Dashboard sessions (signed out).
    pub sessions: u64,
    /// Links to courier companies.
    pub courier_links: u64,
    /// Its own courier companies.
    pub courier_companies: u64,
    /// Their courier keys (refused from now on).
    pub courier_keys: u64,
    /// Their drivers.
    pub drivers: u64,
    /// Stored answers to creates with an `Idempotency-Key`.
    pub idempotency_keys: u64,
    /// Its sign-in throttle row.
    pub login_attempts: u64,
    /// Faults still armed in the process that was asked.
    pub faults: u64,
    /// Duplicate deliveries still pending in the process that was asked.
    pub duplicate_deliveries: u64,
}

/// What [`Store::delete_test_merchant`] did.
#[derive(Debug)]
pub enum MerchantDeletion {
    /// The merchant and everything it owned are gone; its credentials are
    /// to be forgotten where they are remembered.
    Deleted {
        /// The rows removed, per kind.
        removed: RemovedCounts,
        /// Its API keys and sessions (announced to the other processes on
        /// PostgreSQL in the same transaction).
        revoked: Vec<Revoked>,
    },
    /// Nothing was deleted: this many of its changes are being delivered
    /// by a dispatcher right now.
    InFlight(u64),
    /// No merchant has this id.
    Missing,
    /// Nothing was deleted: the merchant was not made by
    /// `POST /testing/merchants` (a fixtures or `admin` merchant), and only
    /// those are deleted here.
    NotATestMerchant,
}

impl Store {
    /// Deletes a test merchant and every row it owns or that was made for
    /// it (its courier companies with their keys and drivers), in one
    /// transaction, unless a dispatcher is delivering one of its changes
    /// right now (its log row would name a deleted change).
    pub async fn delete_test_merchant(
        &self,
        id: MerchantId,
    ) -> Result<MerchantDeletion, StoreError> {
        let mut tx = self.begin().await?;
        let postgres = tx.backend() == super::Backend::Postgres;
        let m = id.get();
        let lock = if postgres {
            LOCK_MERCHANT
        } else {
            MERCHANT_ROW
        };
        let found: Option<Made> = tx.query(lock).bind(m).fetch_optional().await?;
        match found {
            None => return Ok(MerchantDeletion::Missing),
            Some(Made { test_made_by: None }) => return Ok(MerchantDeletion::NotATestMerchant),
            Some(Made {
                test_made_by: Some(_),
            }) => {}
        }
        let pending = if postgres { PENDING_LOCKED } else { PENDING };
        let claims: Vec<Option<String>> = tx.query(pending).bind(m).scalars().await?;
        let in_flight = claims.iter().filter(|c| c.is_some()).count() as u64;
        if in_flight > 0 {
            return Ok(MerchantDeletion::InFlight(in_flight));
        }
        let mut removed = RemovedCounts {
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
            ..RemovedCounts::default()
        };
        tx.query("DELETE FROM shipment_counts_by_courier WHERE merchant_id = $1")
            .bind(m)
            .execute()
            .await?;
        tx.query("DELETE FROM shipment_counts_by_day WHERE merchant_id = $1")
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
        // Its own companies, last: its shipments (the only ones at them:
        // no route links another merchant to them) are gone already.
        let own: Vec<i64> = tx.query(OWN_COURIERS).bind(m).scalars().await?;
        let courier_keys: Vec<i64> = if own.is_empty() {
            Vec::new()
        } else {
            let keys = if postgres {
                DELETE_COURIER_KEYS_AND_ANNOUNCE
            } else {
                DELETE_COURIER_KEYS
            };
            let keys: Vec<i64> = tx.query(keys).bind(m).scalars().await?;
            removed.drivers = tx
                .query(
                    "DELETE FROM drivers WHERE courier_company_id IN \
                     (SELECT id FROM courier_companies WHERE test_merchant_id = $1)",
                )
                .bind(m)
                .execute()
                .await?;
            removed.courier_companies = tx
                .query("DELETE FROM courier_companies WHERE test_merchant_id = $1")
                .bind(m)
                .execute()
                .await?;
            keys
        };
        removed.courier_keys = courier_keys.len() as u64;
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
            .chain(
                courier_keys
                    .into_iter()
                    .map(|k| Revoked::deleted(Credential::CourierKey(CourierKeyId::new(k)))),
            )
            .collect();
        Ok(MerchantDeletion::Deleted { removed, revoked })
    }
}
