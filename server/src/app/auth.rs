//! Who is calling: API keys (merchants' and courier companies'), checked
//! and remembered for a moment; and dashboard sign-in and sessions: the
//! throttle, the password check, and the session a token opens. The JSON
//! API (Bearer) and the pages (cookie) share all of the sessions' part.

use chrono::{DateTime, Duration, Utc};
use shipment_sdk::model::{ApiKeyId, CourierId, MerchantId, Permissions};

use super::{AppState, Error, Result};
use crate::domain::ids::{CourierKeyId, SessionId};
use crate::domain::keys::KeyKind;
use crate::domain::password::{self, MAX_CREDENTIAL_LEN};
use crate::domain::{FieldError, email, keys};
use crate::store::listen::Revoked;
use crate::store::now;

/// `last_used_at` is refreshed at most this often, so reads stay reads.
const TOUCH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// Whom a kind of key belongs to: [`MerchantId`] for `sk_` keys,
/// [`CourierId`] for `ck_` keys, so the id a key is checked for is typed.
pub(crate) trait KeyOwnerId: From<i64> + Copy + Send + 'static {
    /// The kind of key such an owner holds.
    const KIND: KeyKind;
    /// The id of such a key.
    type KeyId: From<i64> + Copy + Send + 'static;
}

impl KeyOwnerId for MerchantId {
    const KIND: KeyKind = KeyKind::Merchant;
    type KeyId = ApiKeyId;
}

impl KeyOwnerId for CourierId {
    const KIND: KeyKind = KeyKind::Courier;
    type KeyId = CourierKeyId;
}

/// A merchant or courier company that presented one of its keys, a key
/// that has not expired.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHolder<Owner: KeyOwnerId> {
    /// The merchant or courier company the key belongs to.
    pub owner_id: Owner,
    /// The key's own id (a listener's stream ends when its key is deleted).
    pub key_id: Owner::KeyId,
    /// A restricted key's permissions; `None` for a full key (and every
    /// courier key): what the front end checks the operation against.
    pub permissions: Option<Permissions>,
    /// When the key stops working, if it does.
    pub expires_at: Option<DateTime<Utc>>,
}

/// Why a presented key is refused; each front end words it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyRefused {
    /// Not shaped like any key.
    #[error("not a valid key")]
    Malformed,
    /// A key of the other environment (staging or production).
    #[error("a key of the other environment")]
    OtherEnvironment,
    /// A well-formed key of the other kind (merchant or courier).
    #[error("a key of the other kind")]
    OtherKind,
    /// No such key, or deleted.
    #[error("invalid or revoked key")]
    Unknown,
    /// The key is known but expired at this time.
    #[error("this API key expired at {}", keys::rfc3339(*.0))]
    Expired(DateTime<Utc>),
    /// The lookup failed.
    #[error(transparent)]
    Failed(#[from] Error),
}

/// Checks a presented API key against the keys of `expected` kind (a
/// merchant's full or restricted key, or a courier company's): its shape,
/// environment and kind first (no database), then the key itself, from the
/// key cache or else the database, then its expiry, against the clock on
/// every request, so a remembered key expires on time too. A key not
/// recorded as used in the last minute is recorded so, off the request's
/// path (an expired key is not: it was refused, not used).
pub(crate) async fn authenticate_key<Owner: KeyOwnerId>(
    state: &AppState,
    presented: &str,
) -> Result<KeyHolder<Owner>, KeyRefused> {
    let expected = Owner::KIND;
    let shape = keys::shape(presented).ok_or(KeyRefused::Malformed)?;
    if shape.environment != state.environment {
        return Err(KeyRefused::OtherEnvironment);
    }
    let of_kind = match expected {
        KeyKind::Merchant => shape.kind.is_merchant(),
        _ => shape.kind == expected,
    };
    if !of_kind {
        return Err(KeyRefused::OtherKind);
    }
    let digest = keys::digest(presented);
    let owner = match state.key_cache.get(expected, &digest) {
        Ok(owner) => owner,
        Err(ticket) => {
            let owner = state
                .store
                .find_key(expected, &digest)
                .await
                .map_err(Error::from)?
                .ok_or(KeyRefused::Unknown)?;
            state.key_cache.remember(ticket, expected, &digest, owner);
            owner
        }
    };
    let at = now();
    if let Some(expired_at) = owner.expires_at.filter(|e| *e <= at) {
        return Err(KeyRefused::Expired(expired_at));
    }
    let stale = owner
        .last_used_at
        .is_none_or(|t| (at - t).to_std().unwrap_or_default() >= TOUCH_INTERVAL);
    if stale {
        state.key_cache.touched(expected, &digest, at);
        // Off the request path: a failed bookkeeping write must not fail the call.
        let store = state.store.clone();
        tokio::spawn(async move {
            if let Err(e) = store.touch_key(expected, owner.key_id).await {
                tracing::warn!(error = %e, "could not record key use");
            }
        });
    }
    Ok(KeyHolder {
        owner_id: Owner::from(owner.owner_id),
        key_id: Owner::KeyId::from(owner.key_id),
        permissions: owner.permissions.0,
        expires_at: owner.expires_at,
    })
}

/// How long a session token works.
pub(crate) const SESSION_TTL: Duration = Duration::hours(12);
/// Sign-in attempts for one e-mail that may fail within [`LOGIN_WINDOW`];
/// the next one is 429 until the window ends.
pub(crate) const MAX_LOGIN_FAILURES: i64 = 5;
/// The window over which sign-in attempts are counted, from the first.
pub(crate) const LOGIN_WINDOW: Duration = Duration::minutes(15);

/// A signed-in dashboard session: a Bearer token or the dashboard's cookie.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Session {
    /// The session's id.
    pub id: SessionId,
    /// The merchant it belongs to.
    pub merchant_id: MerchantId,
}

/// Checks an e-mail and password and opens a session: the one sign-in of
/// the JSON API and the dashboard pages, with the same limits, the same
/// throttle (429 after [`MAX_LOGIN_FAILURES`] failures in [`LOGIN_WINDOW`])
/// and the same errors. Returns the session token (shown once; only its
/// digest is stored) and when it expires.
pub(crate) async fn sign_in(
    state: &AppState,
    email: &str,
    password: &str,
) -> Result<(keys::Secret, DateTime<Utc>)> {
    // Attempts are counted by e-mail, so it is stored: no control
    // characters (nor NUL, which PostgreSQL's text cannot hold), as sent.
    crate::domain::validation::no_control_characters("email", email)?;
    let email = email::normalize(email);
    if email.is_empty() || email.chars().count() > MAX_CREDENTIAL_LEN {
        return Err(FieldError::invalid(
            "email",
            format!("`email` must be 1 to {MAX_CREDENTIAL_LEN} characters"),
        )
        .into());
    }
    if password.chars().count() > MAX_CREDENTIAL_LEN {
        return Err(FieldError::invalid(
            "password",
            format!("`password` must be at most {MAX_CREDENTIAL_LEN} characters"),
        )
        .into());
    }
    let at = now();
    // The attempt is counted before the password is looked at, in one
    // atomic step: of any burst, only the first MAX_LOGIN_FAILURES reach
    // argon2, and the rest wait for the window to end.
    let (attempts, window_start) = state
        .store
        .reserve_login_attempt(&email, at, LOGIN_WINDOW)
        .await?;
    if attempts > MAX_LOGIN_FAILURES {
        let until = window_start + LOGIN_WINDOW;
        let secs = u64::try_from((until - at).num_seconds() + 1).unwrap_or(1);
        return Err(Error::Throttled {
            retry_after_secs: secs,
        });
    }
    let account = state.store.login(&email).await?;
    // An unknown e-mail costs the same argon2 run as a known one, so timing
    // does not tell which addresses have accounts.
    let hash = account.as_ref().map_or_else(
        || password::dummy_hash().to_owned(),
        |a| a.password_hash.clone(),
    );
    let matches = check_password(state, hash, password.to_owned()).await?;
    match account {
        Some(account) if matches => {
            state
                .store
                .clear_login_attempts(&email, at - LOGIN_WINDOW)
                .await?;
            Ok(state
                .store
                .create_session(MerchantId::new(account.merchant_id), SESSION_TTL)
                .await?)
        }
        // The reserved attempt stays counted as a failure.
        _ => Err(Error::WrongCredentials),
    }
}

/// Verifies a password ([`password::verify`]) off the async threads, at
/// most one per core at a time.
pub(crate) async fn check_password(
    state: &AppState,
    hash: String,
    password: String,
) -> Result<bool> {
    let _permit = state
        .password_checks
        .acquire()
        .await
        .map_err(|e| Error::Internal(e.to_string()))?;
    tokio::task::spawn_blocking(move || password::verify(&hash, &password))
        .await
        .map_err(|e| Error::Internal(e.to_string()))
}

/// Hashes a new password ([`password::hash`], as sign-in checks it) off the
/// async threads, with the same limit as [`check_password`].
pub(crate) async fn hash_password(state: &AppState, password: String) -> Result<String> {
    let _permit = state
        .password_checks
        .acquire()
        .await
        .map_err(|e| Error::Internal(e.to_string()))?;
    tokio::task::spawn_blocking(move || {
        password::hash(&password)
            .map_err(|e| Error::Internal(format!("cannot hash a password: {e}")))
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?
}

/// The live session a token opens, if any: the one lookup behind the
/// Bearer header and the dashboard's session cookie.
pub(crate) async fn session_for_token(state: &AppState, token: &str) -> Result<Option<Session>> {
    Ok(state
        .store
        .session(&keys::digest(token))
        .await?
        .map(|session| Session {
            id: SessionId::new(session.id),
            merchant_id: MerchantId::new(session.merchant_id),
        }))
}

/// Ends a session: its token stops working at once, and the listener
/// streams it opened end.
pub(crate) async fn sign_out(state: &AppState, session: Session) -> Result<()> {
    if let Some(revoked) = state.store.delete_session(session.id).await? {
        forget_revoked(state, revoked);
    }
    Ok(())
}

/// Forgets a credential this process just deleted wherever the process
/// remembers it: the key cache, and the listener streams it opened.
pub(crate) fn forget_revoked(state: &AppState, revoked: Revoked) {
    state.key_cache.forget(revoked);
    state.listeners.revoked(revoked);
}
