//! Merchants: their accounts and how sign-in finds them.

use shipment_sdk::model::MerchantId;

use super::{Store, StoreError, Tx, now};

const CREATE_MERCHANT: &str = "INSERT INTO merchants (name, email, password_hash, created_at) \
                               VALUES ($1, $2, $3, $4) RETURNING id";

/// A merchant's account as declared fixtures compare it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Account {
    /// The merchant's id.
    pub id: i64,
    /// Display name.
    pub name: String,
    /// The argon2id PHC string.
    pub password_hash: String,
}

/// A merchant as sign-in needs it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Login {
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
