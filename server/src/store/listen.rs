//! Listeners (`GET /webhooks/listen`): the merchant's listener signing key,
//! the listen positions of the changes fed to listeners, and the changes a
//! reconnecting listener missed.
//!
//! A listener stream's event id is the change's *listen position*, not its
//! outbox id. Changes reach listeners when a dispatcher's claim of them
//! commits, which is not the order of their outbox ids: a shipment's next
//! change waits until its previous one was delivered while later changes
//! of other shipments go ahead, and claims of several processes commit in
//! any order. So after its claim, each change gets a position in a
//! transaction that holds the one row of `listen_positions` until it
//! commits (`Store::feed_listeners`): positions grow in commit order, on
//! PostgreSQL the announcement ([`CLAIMED_CHANNEL`]) is sent in that same
//! transaction, and notifications arrive in commit order. Every change fed
//! after the one a listener saw last therefore has a higher position, and
//! resuming with `position > Last-Event-ID` cannot skip one. A change's
//! position is given once and never changes, so a change sent twice (live
//! and by a resume) carries the same event id.

use chrono::{DateTime, Utc};
use shipment_sdk::model::{ApiKeyId, MerchantId};

use super::{Backend, Store, StoreError, Tx, now};
use crate::domain::ids::{CourierKeyId, EventId, SessionId};

/// A sealed signing key and when it was made.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct SealedKey {
    /// The key, sealed with the data key.
    pub signing_key_encrypted: String,
    /// When it was made (the previous one stopped working then).
    pub created_at: DateTime<Utc>,
}

/// One change as a listener receives it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ListenerRow {
    /// The outbox row: the change's id, which names its delivery.
    pub id: i64,
    /// The change's listen position: the stream's event id, growing in the
    /// order changes are fed to listeners (this module's documentation).
    pub position: i64,
    /// Whose shipment changed.
    pub merchant_id: i64,
    /// The shipment's code.
    pub shipment_code: String,
    /// The shipment's version after the change.
    pub version: i64,
    /// The shipment's JSON at that change: the body, byte for byte.
    pub payload: String,
    /// The W3C `traceparent` of the request that made the change, if it
    /// had one (`OutboxRow::trace_parent`): the event carries it on.
    pub trace_parent: Option<String>,
}

const LISTENER_KEY: &str = "SELECT signing_key_encrypted, created_at FROM listener_signing_keys \
                            WHERE merchant_id = $1";
const SET_LISTENER_KEY: &str = "INSERT INTO listener_signing_keys \
                                (merchant_id, signing_key_encrypted, created_at) \
                                VALUES ($1, $2, $3) ON CONFLICT (merchant_id) DO UPDATE SET \
                                signing_key_encrypted = excluded.signing_key_encrypted, \
                                created_at = excluded.created_at";
/// [`SET_LISTENER_KEY`] on PostgreSQL, announcing the replacement on
/// [`KEY_ROTATED_CHANNEL`] as it commits.
const SET_LISTENER_KEY_AND_ANNOUNCE: &str = "WITH k AS (INSERT INTO listener_signing_keys \
    (merchant_id, signing_key_encrypted, created_at) \
    VALUES ($1, $2, $3) ON CONFLICT (merchant_id) DO UPDATE SET \
    signing_key_encrypted = excluded.signing_key_encrypted, \
    created_at = excluded.created_at RETURNING merchant_id) \
    SELECT k.merchant_id FROM k, \
    LATERAL pg_notify('shipment_listener_key_rotated', k.merchant_id::text) n";
const ADD_LISTENER_KEY: &str = "INSERT INTO listener_signing_keys \
                                (merchant_id, signing_key_encrypted, created_at) \
                                VALUES ($1, $2, $3) ON CONFLICT (merchant_id) DO NOTHING";
/// Rows fed to listeners (they have a position) after a position.
/// Redeliveries (`only_webhook_id`) are for one webhook and never get one.
const MISSED: &str = "SELECT id, listen_position AS position, merchant_id, shipment_code, \
                      version, payload, trace_parent \
                      FROM outbox \
                      WHERE merchant_id = $1 AND listen_position > $2 AND created_at >= $3 \
                      ORDER BY listen_position LIMIT $4";
/// The last position given: a new listener's starting point.
const LAST_POSITION: &str = "SELECT last_position FROM listen_positions";

/// The PostgreSQL channel on which a dispatcher announces the outbox rows
/// it claimed, so every server process feeds its own listeners.
pub(crate) const CLAIMED_CHANNEL: &str = "shipment_outbox_claimed";
const ANNOUNCE: &str = "SELECT pg_notify('shipment_outbox_claimed', $1)";
/// PostgreSQL only: the ids come as the announcement's comma-separated text.
const ROWS_BY_ID: &str = "SELECT id, listen_position AS position, merchant_id, shipment_code, \
                          version, payload, trace_parent \
                          FROM outbox \
                          WHERE id = ANY(string_to_array($1, ',')::bigint[]) \
                          AND listen_position IS NOT NULL ORDER BY listen_position";

/// The PostgreSQL channel on which the replacement of a merchant's listener
/// signing key is announced (the payload is the merchant's id), so every
/// server process ends the streams that sign with the old key.
pub(crate) const KEY_ROTATED_CHANNEL: &str = "shipment_listener_key_rotated";

/// The PostgreSQL channel on which the deletion of a credential (an API
/// key, a dashboard session) is announced, in the deleting transaction, so
/// every server process forgets it at once: its key cache, and the
/// listener streams it opened ([`Revoked`]).
pub(crate) const REVOKED_CHANNEL: &str = "shipment_credential_revoked";

/// What a credential is, by its row id: what a listener's stream was
/// opened with, and what a deletion revokes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Credential {
    /// A merchant API key (`X-API-KEY`), by its id.
    ApiKey(ApiKeyId),
    /// A dashboard session (`Authorization: Bearer`), by its id.
    Session(SessionId),
    /// A courier company's key, by its id: deleted only with a test
    /// merchant's own company. It opens no listener stream; key caches
    /// remember it.
    CourierKey(CourierKeyId),
}

/// A credential whose deletion committed: only the store's deletions (and
/// their announcements on [`REVOKED_CHANNEL`]) make one, and only what
/// remembers credentials takes one (`KeyCache::forget`, the listener
/// streams). So a deletion cannot be written without its caller being
/// handed what must be forgotten, and dropping it unread is a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a revoked credential must be forgotten where it is remembered (`app::auth::forget_revoked`)"]
pub struct Revoked(Credential);

impl Revoked {
    /// The credential revoked.
    pub(crate) fn credential(self) -> Credential {
        self.0
    }

    /// `credential`, whose deletion the store just made (or, for an API
    /// key, its expiry by the test controls, which ends it as surely).
    pub(super) fn deleted(credential: Credential) -> Revoked {
        Revoked(credential)
    }

    /// The revocation a [`REVOKED_CHANNEL`] notification announces, if its
    /// payload is one (`api_key:<id>`, `session:<id>` or `courier_key:<id>`).
    pub(crate) fn announced(payload: &str) -> Option<Revoked> {
        let (kind, id) = payload.split_once(':')?;
        let id: i64 = id.parse().ok()?;
        match kind {
            "api_key" => Some(Revoked(Credential::ApiKey(ApiKeyId::new(id)))),
            "session" => Some(Revoked(Credential::Session(SessionId::new(id)))),
            "courier_key" => Some(Revoked(Credential::CourierKey(CourierKeyId::new(id)))),
            _ => None,
        }
    }
}

/// PostgreSQL: tells every server process (this one included) that the
/// outbox rows `ids` (comma-separated) were given their listen positions,
/// on [`CLAIMED_CHANNEL`], when `tx` (the one that gave them) commits. A
/// batch's ids fit easily in a notification (8000 bytes: a claim is at
/// most a few hundred rows of at most 20 digits).
pub(super) async fn announce_fed(tx: &mut Tx, ids: &str) -> Result<(), StoreError> {
    tx.query(ANNOUNCE).bind(ids).execute().await?;
    Ok(())
}

impl Store {
    /// PostgreSQL: the rows of an announcement, as listeners receive them.
    pub(crate) async fn announced_rows(&self, ids: &str) -> Result<Vec<ListenerRow>, StoreError> {
        if ids.is_empty() || !ids.bytes().all(|b| b.is_ascii_digit() || b == b',') {
            return Err(StoreError::Corrupt(format!("announcement `{ids}`")));
        }
        Ok(self.query(ROWS_BY_ID).bind(ids).fetch_all().await?)
    }

    /// The merchant's sealed listener signing key, if it has one.
    pub(crate) async fn listener_signing_key(
        &self,
        merchant_id: MerchantId,
    ) -> Result<Option<SealedKey>, StoreError> {
        Ok(self
            .query(LISTENER_KEY)
            .bind(merchant_id.get())
            .fetch_optional()
            .await?)
    }

    /// Creates or replaces the merchant's listener signing key; returns when.
    /// On PostgreSQL the replacement is announced on
    /// [`KEY_ROTATED_CHANNEL`] as it commits, so every server process ends
    /// the streams that sign with the old key.
    pub(crate) async fn set_listener_signing_key(
        &self,
        merchant_id: MerchantId,
        sealed: &str,
    ) -> Result<DateTime<Utc>, StoreError> {
        let sql = match self.backend() {
            Backend::Postgres => SET_LISTENER_KEY_AND_ANNOUNCE,
            Backend::Sqlite => SET_LISTENER_KEY,
        };
        self.replace_signing_key(sql, merchant_id, sealed).await
    }

    /// The last listen position given: a listener that connects now is fed
    /// every change with a higher one.
    pub(crate) async fn last_listen_position(&self) -> Result<EventId, StoreError> {
        Ok(EventId::new(self.query(LAST_POSITION).scalar().await?))
    }

    /// The merchant's listener signing key, stored first as `sealed` if it
    /// has none: of two listeners connecting for the first time at once,
    /// both get the one key that was stored first.
    pub(crate) async fn listener_signing_key_or_insert(
        &self,
        merchant_id: MerchantId,
        sealed: &str,
    ) -> Result<SealedKey, StoreError> {
        self.query(ADD_LISTENER_KEY)
            .bind(merchant_id.get())
            .bind(sealed)
            .bind(now())
            .execute()
            .await?;
        self.listener_signing_key(merchant_id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("the listener signing key vanished".into()))
    }

    /// Changes of the merchant fed to listeners after position `after`,
    /// written since `since`, in position order, at most `limit`: what a
    /// reconnecting listener missed (`Last-Event-ID`).
    pub(crate) async fn missed_listener_rows(
        &self,
        merchant_id: MerchantId,
        after: EventId,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<ListenerRow>, StoreError> {
        Ok(self
            .query(MISSED)
            .bind(merchant_id.get())
            .bind(after.get())
            .bind(since)
            .bind(i64::from(limit))
            .fetch_all()
            .await?)
    }
}
