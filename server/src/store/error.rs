//! The store's errors: what a statement ran into, named where the caller
//! must decide what it means (a unique constraint), and whether trying
//! again may help.

use super::engine::reach;

/// Why the store did not read or write. A type of its own because only the
/// store knows sqlx and the schema: the `…Taken` variants name the unique
/// constraint a write ran into, for the caller to decide what it means,
/// and [`StoreError::is_transient`] and [`StoreError::is_unavailable`] say
/// whether trying again may help; `app::Error`'s `From` turns it into what
/// it means to a caller, so nothing above `app` sees a database error.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed or is unreachable.
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
    /// Applying migrations failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// `merchants.email`: a merchant has this e-mail already.
    #[error("a merchant has this e-mail already")]
    EmailTaken,
    /// `shipments.code`: a new shipment's random code collided (the store
    /// retries with another).
    #[error("a shipment has this code already")]
    ShipmentCodeTaken,
    /// `webhooks (merchant_id, url)`: the merchant registered this URL already.
    #[error("the merchant has a webhook with this URL already")]
    WebhookUrlTaken,
    /// `idempotency_keys (merchant_id, idem_key)`: a concurrent create with
    /// the same `Idempotency-Key` committed first (the store retries, and
    /// replays its answer).
    #[error("this idempotency key was stored by a concurrent request")]
    IdempotencyKeyTaken,
    /// `api_keys.key_digest`: a new merchant key's digest collided.
    #[error("an API key has this digest already")]
    ApiKeyDigestTaken,
    /// `courier_keys.key_digest`: a new courier key's digest collided.
    #[error("a courier key has this digest already")]
    CourierKeyDigestTaken,
    /// `sessions.token_digest`: a new session token's digest collided.
    #[error("a session has this token digest already")]
    SessionTokenTaken,
    /// A write kept losing races with concurrent writers and gave up; trying
    /// again shortly is likely to succeed.
    #[error("{0}: too many concurrent writes; try again")]
    Contended(String),
    /// Stored data that cannot be read back (a bug or manual editing).
    #[error("corrupt row: {0}")]
    Corrupt(String),
}

impl From<sqlx::Error> for StoreError {
    /// A unique violation becomes the variant of its constraint; anything
    /// else (an unnamed constraint included: the store has no write that
    /// should meet one) stays [`StoreError::Database`].
    fn from(e: sqlx::Error) -> StoreError {
        if let sqlx::Error::Database(db) = &e
            && db.is_unique_violation()
            && let Some(taken) = unique_violation(db.constraint(), db.message())
        {
            return taken;
        }
        StoreError::Database(e)
    }
}

impl StoreError {
    /// Whether the database could not be reached, or the connection to it
    /// was lost or refused (the pool timed out, an I/O error, PostgreSQL
    /// shutting down or starting up): a passing fault that the same request
    /// may well get through shortly, answered 503 with `Retry-After`.
    /// (Whether a write in flight was committed is then unknown; a retry
    /// with the same `Idempotency-Key` finds out.)
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Database(e) => reach::connection_lost(e),
            _ => false,
        }
    }

    /// A conflict with a concurrent write that trying again (in a new
    /// transaction) resolves: a new shipment's random code or an
    /// idempotency key stored meanwhile, a PostgreSQL deadlock or
    /// serialization failure.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::ShipmentCodeTaken | StoreError::IdempotencyKeyTaken => true,
            StoreError::Database(sqlx::Error::Database(db)) => {
                matches!(db.code().as_deref(), Some("40001" | "40P01"))
            }
            _ => false,
        }
    }
}

/// The error for a unique violation, from the constraint PostgreSQL names or
/// else from SQLite's message, `UNIQUE constraint failed: table.column, …`
/// (SQLite reports no constraint name). The one place that knows the
/// constraints: PostgreSQL's names are the ones it generated for the
/// migrations' `UNIQUE` and `PRIMARY KEY` clauses.
pub(super) fn unique_violation(constraint: Option<&str>, message: &str) -> Option<StoreError> {
    let key = constraint.or_else(|| message.strip_prefix("UNIQUE constraint failed: "))?;
    Some(match key {
        "merchants_email_key" | "merchants.email" => StoreError::EmailTaken,
        "shipments_code_key" | "shipments.code" => StoreError::ShipmentCodeTaken,
        "webhooks_merchant_id_url_key" | "webhooks.merchant_id, webhooks.url" => {
            StoreError::WebhookUrlTaken
        }
        "idempotency_keys_pkey" | "idempotency_keys.merchant_id, idempotency_keys.idem_key" => {
            StoreError::IdempotencyKeyTaken
        }
        "api_keys_key_digest_key" | "api_keys.key_digest" => StoreError::ApiKeyDigestTaken,
        "courier_keys_key_digest_key" | "courier_keys.key_digest" => {
            StoreError::CourierKeyDigestTaken
        }
        "sessions_token_digest_key" | "sessions.token_digest" => StoreError::SessionTokenTaken,
        _ => return None,
    })
}
