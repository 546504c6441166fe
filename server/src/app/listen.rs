//! Listening to a merchant's changes (`shipctl listen`): the listener
//! signing key, and a listener's feed of signed deliveries.
//!
//! A listener receives exactly what a webhook delivery carries (the body
//! bytes, the signature, the delivery id), signed with the merchant's
//! listener signing key: one per merchant, stable across runs so the local
//! app's configuration does not change, replaced only on request.

use std::collections::{HashSet, VecDeque};

use chrono::Duration;
use shipment_sdk::model::{ListenerDelivery, MerchantId, Secret, SigningKey};
use tokio::time::{Interval, MissedTickBehavior};

use super::webhooks::new_signing_key;
use super::{AppState, Result};
use crate::domain::ids::EventId;
use crate::store::StoreError;
use crate::store::listen::{ListenerRow, SealedKey};
use crate::webhooks::listeners::Subscription;

/// What opened a listener's stream (an API key or a session): the stream
/// ends when it is revoked. Front ends name it from here.
pub(crate) use crate::webhooks::listeners::Credential;

/// How far back a reconnecting listener is caught up (`Last-Event-ID`).
pub(crate) const RESUME_WINDOW: Duration = Duration::hours(1);
/// Most changes sent again to a reconnecting listener; older ones are
/// skipped (a receiver catches up with `GET /shipments?updated_after=`).
pub(crate) const MAX_RESUMED: u32 = 1_000;
/// How often an open stream asks the database whether its credential still
/// works: the longest a stream outlives a key deleted, or a session ended,
/// through another server process, or a session's expiry. (The process
/// that revokes a credential ends its streams at once.) One indexed read
/// per open stream and period, not through the key cache, whose window
/// would add to the delay.
pub(crate) const RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

fn open(state: &AppState, sealed: &SealedKey) -> Result<SigningKey> {
    let key = state
        .data_key
        .open(&sealed.signing_key_encrypted)
        .map_err(|e| StoreError::Corrupt(format!("listener signing key: {e}")))?;
    Ok(SigningKey::new(Secret::new(key), sealed.created_at))
}

/// The merchant's listener signing key; `None` until a listener first
/// connected or one was made with [`rotate_listener_key`].
pub(crate) async fn listener_key(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<Option<SigningKey>> {
    match state.store.listener_signing_key(merchant_id).await? {
        Some(sealed) => open(state, &sealed).map(Some),
        None => Ok(None),
    }
}

/// The merchant's listener signing key, made now if it has none.
pub(crate) async fn listener_key_or_create(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<SigningKey> {
    let (_, candidate) = new_signing_key(state);
    let sealed = state
        .store
        .listener_signing_key_or_insert(merchant_id, &candidate)
        .await?;
    open(state, &sealed)
}

/// Replaces the merchant's listener signing key (or makes its first). The
/// listeners connected to this process are disconnected and sign with the
/// new key once they reconnect.
pub(crate) async fn rotate_listener_key(
    state: &AppState,
    merchant_id: MerchantId,
) -> Result<SigningKey> {
    let (key, sealed) = new_signing_key(state);
    let created_at = state
        .store
        .set_listener_signing_key(merchant_id, &sealed)
        .await?;
    state.listeners.key_rotated(merchant_id);
    Ok(SigningKey::new(key, created_at))
}

/// One connected listener: the changes it missed (after `Last-Event-ID`),
/// then every change published while it stays connected, each signed, for
/// as long as the credential it was opened with works.
pub(crate) struct Feed {
    state: AppState,
    merchant_id: MerchantId,
    credential: Credential,
    recheck: Interval,
    key: Secret,
    subscription: Subscription,
    missed: VecDeque<ListenerRow>,
    /// Ids sent from the outbox that may still come live; sent once only.
    resumed: HashSet<EventId>,
}

/// A change as a listener receives it, with the event's id (the outbox
/// row's, for `Last-Event-ID`).
#[derive(Debug, Clone)]
pub(crate) struct ListenerEvent {
    /// The SSE event id.
    pub id: EventId,
    /// The delivery.
    pub delivery: ListenerDelivery,
}

/// Connects a listener of the merchant, authenticated by `credential`: its
/// signing key (made now if it has none) and its feed. With
/// `last_event_id`, the feed starts with the changes after that event from
/// the last [`RESUME_WINDOW`] (at most [`MAX_RESUMED`]) that were already
/// fed to listeners.
pub(crate) async fn connect(
    state: &AppState,
    merchant_id: MerchantId,
    credential: Credential,
    last_event_id: Option<EventId>,
) -> Result<(SigningKey, Feed)> {
    // Subscribed first, so a change claimed while the outbox is read
    // comes either way, and `resumed` sends it once.
    let subscription = state.listeners.subscribe(merchant_id, credential)?;
    let key = listener_key_or_create(state, merchant_id).await?;
    let missed = match last_event_id {
        Some(after) => {
            let since = crate::store::now() - RESUME_WINDOW;
            state
                .store
                .missed_listener_rows(merchant_id, after, since, MAX_RESUMED)
                .await?
        }
        None => Vec::new(),
    };
    let mut recheck = tokio::time::interval_at(tokio::time::Instant::now() + RECHECK, RECHECK);
    recheck.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let feed = Feed {
        state: state.clone(),
        merchant_id,
        credential,
        recheck,
        key: key.signing_key.clone(),
        subscription,
        resumed: missed.iter().map(|r| EventId::new(r.id)).collect(),
        missed: missed.into(),
    };
    Ok((key, feed))
}

impl Feed {
    /// The next delivery; `None` when the stream ends: the server stops,
    /// the listener signing key was replaced, the listener fell too far
    /// behind (it reconnects with `Last-Event-ID`), or the stream's
    /// credential no longer works (the reconnection is refused).
    pub(crate) async fn next(&mut self) -> Option<ListenerEvent> {
        if let Some(row) = self.missed.pop_front() {
            return Some(self.sign(&row));
        }
        loop {
            let row = tokio::select! {
                row = self.subscription.next() => row?,
                _ = self.recheck.tick() => {
                    if self.credential_works().await {
                        continue;
                    }
                    return None;
                }
            };
            if !self.resumed.remove(&EventId::new(row.id)) {
                return Some(self.sign(&row));
            }
        }
    }

    /// Whether the stream's key or session still works, asked of the
    /// database. When the database cannot say, the stream ends: it must
    /// not outlive a revocation it cannot see, and a listener reconnects.
    async fn credential_works(&self) -> bool {
        let store = &self.state.store;
        let works = match self.credential {
            Credential::ApiKey(id) => store
                .api_key(self.merchant_id, id)
                .await
                .map(|key| key.is_some()),
            Credential::Session(id) => store.session_is_live(id).await,
            // Never opens a stream (the route takes merchants' credentials).
            Credential::CourierKey(_) => Ok(false),
        };
        works.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "a listener's credential could not be checked; ending its stream");
            false
        })
    }

    fn sign(&self, row: &ListenerRow) -> ListenerEvent {
        let signature = webhook_verify::sign(self.key.expose(), row.payload.as_bytes());
        let id = EventId::new(row.id);
        ListenerEvent {
            id,
            delivery: ListenerDelivery::new(
                delivery_id(id),
                row.shipment_code.clone(),
                row.version,
                signature,
                row.payload.clone(),
            )
            .with_traceparent(row.trace_parent.clone()),
        }
    }
}

/// A listener's delivery id: like a webhook's (`dlv_<change>_w<webhook>`),
/// with `l` for the listener.
fn delivery_id(outbox_id: EventId) -> String {
    format!("dlv_{outbox_id}_l")
}

#[cfg(test)]
mod tests {
    #[test]
    fn listener_delivery_ids_name_the_change() {
        assert_eq!(super::delivery_id(super::EventId::new(42)), "dlv_42_l");
    }
}
