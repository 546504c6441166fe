//! Dashboard sign-in: the attempts counted per e-mail, and sessions.

use chrono::{DateTime, Duration, Utc};
use shipment_sdk::model::MerchantId;

use super::listen::{Credential, Revoked};
use super::{Backend, Store, StoreError, now};
use crate::domain::ids::SessionId;
use crate::domain::keys::{self, Secret};

/// Ends a session ([`Store::delete_session`]).
const DELETE_SESSION: &str = "DELETE FROM sessions WHERE id = $1 RETURNING id";
/// The same on PostgreSQL, announcing the deletion on
/// [`REVOKED_CHANNEL`](super::listen::REVOKED_CHANNEL) as it commits.
const DELETE_SESSION_AND_ANNOUNCE: &str = "WITH gone AS \
    (DELETE FROM sessions WHERE id = $1 RETURNING id) \
    SELECT gone.id FROM gone, \
    LATERAL pg_notify('shipment_credential_revoked', 'session:' || gone.id) n";

/// A live dashboard session as stored (the app layer's `Session` is what a
/// request carries).
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub(crate) struct SessionRow {
    /// The session's id.
    pub id: i64,
    /// Whose session it is.
    pub merchant_id: i64,
}

/// The sign-in window of one e-mail after an attempt was reserved.
#[derive(sqlx::FromRow)]
struct Window {
    attempts: i64,
    window_start: DateTime<Utc>,
}

impl Store {
    /// Reserves one sign-in attempt for `email` before its password is
    /// checked, and returns how many attempts its current window holds
    /// (this one included) and when that window began. A window older than
    /// `window` starts afresh.
    ///
    /// One upsert, so the count and the reservation are atomic: concurrent
    /// attempts, in one process or many sharing PostgreSQL, each see a
    /// distinct count, and only the first few may go on to the password.
    pub(crate) async fn reserve_login_attempt(
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
        let w: Window = self
            .query(sql)
            .bind(email)
            .bind(at)
            .bind(at - window)
            .fetch_one()
            .await?;
        Ok((w.attempts, w.window_start))
    }

    /// Forgets the attempts of `email` after a successful sign-in, and every
    /// window that ended before `forget_before` (so the table stays small).
    pub(crate) async fn clear_login_attempts(
        &self,
        email: &str,
        forget_before: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let sql = "DELETE FROM login_attempts WHERE email = $1 OR window_start <= $2";
        self.query(sql)
            .bind(email)
            .bind(forget_before)
            .execute()
            .await?;
        Ok(())
    }

    /// Opens a session for `merchant_id` valid for `ttl`; the token is
    /// returned once and only its digest is stored.
    pub(crate) async fn create_session(
        &self,
        merchant_id: MerchantId,
        ttl: Duration,
    ) -> Result<(Secret, DateTime<Utc>), StoreError> {
        let token = keys::random_token("");
        let at = now();
        let expires_at = at + ttl;
        let sql = "INSERT INTO sessions (merchant_id, token_digest, created_at, expires_at) \
                   VALUES ($1, $2, $3, $4)";
        let prune = "DELETE FROM sessions WHERE expires_at <= $1";
        self.query(sql)
            .bind(merchant_id.get())
            .bind(keys::digest(token.expose()))
            .bind(at)
            .bind(expires_at)
            .execute()
            .await?;
        self.query(prune).bind(at).execute().await?;
        Ok((token, expires_at))
    }

    /// The unexpired session whose token has this digest.
    pub(crate) async fn session(
        &self,
        token_digest: &str,
    ) -> Result<Option<SessionRow>, StoreError> {
        let sql = "SELECT id, merchant_id FROM sessions \
                   WHERE token_digest = $1 AND expires_at > $2";
        Ok(self
            .query(sql)
            .bind(token_digest)
            .bind(now())
            .fetch_optional()
            .await?)
    }

    /// Whether the session `id` still works: not signed out, not expired.
    pub(crate) async fn session_is_live(&self, id: SessionId) -> Result<bool, StoreError> {
        let sql = "SELECT id FROM sessions WHERE id = $1 AND expires_at > $2";
        let found: Option<i64> = self
            .query(sql)
            .bind(id.get())
            .bind(now())
            .scalar_optional()
            .await?;
        Ok(found.is_some())
    }

    /// Ends a session; `None` if it had ended. On PostgreSQL every process
    /// is told of it on [`REVOKED_CHANNEL`](super::listen::REVOKED_CHANNEL)
    /// when the deletion commits (to end the listener streams it opened).
    pub(crate) async fn delete_session(
        &self,
        id: SessionId,
    ) -> Result<Option<Revoked>, StoreError> {
        let sql = match self.backend() {
            Backend::Postgres => DELETE_SESSION_AND_ANNOUNCE,
            Backend::Sqlite => DELETE_SESSION,
        };
        let gone: Option<i64> = self.query(sql).bind(id.get()).scalar_optional().await?;
        Ok(gone.map(|id| Revoked::deleted(Credential::Session(SessionId::new(id)))))
    }
}
