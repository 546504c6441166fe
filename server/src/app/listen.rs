//! Listening to a merchant's changes (`shipctl listen`): the listener
//! signing key, and a listener's feed of signed deliveries.
//!
//! A listener receives exactly what a webhook delivery carries (the body
//! bytes, the signature, the delivery id), signed with the merchant's
//! listener signing key: one per merchant, stable across runs so the local
//! app's configuration does not change, replaced only on request.

use std::collections::{HashSet, VecDeque};

use chrono::Duration;
use shipment_sdk::model::{ListenerDelivery, Secret, SigningKey};

use super::webhooks::new_signing_key;
use super::{AppState, Result};
use crate::store::StoreError;
use crate::store::listen::{ListenerRow, SealedKey};
use crate::webhooks::listeners::Subscription;

/// How far back a reconnecting listener is caught up (`Last-Event-ID`).
pub const RESUME_WINDOW: Duration = Duration::hours(1);
/// Most changes sent again to a reconnecting listener; older ones are
/// skipped (a receiver catches up with `GET /shipments?updated_after=`).
pub const MAX_RESUMED: u32 = 1_000;

fn open(state: &AppState, sealed: &SealedKey) -> Result<SigningKey> {
    let key = state
        .data_key
        .open(&sealed.signing_key_encrypted)
        .map_err(|e| StoreError::Corrupt(format!("listener signing key: {e}")))?;
    Ok(SigningKey::new(Secret::new(key), sealed.created_at))
}

/// The merchant's listener signing key; `None` until a listener first
/// connected or one was made with [`rotate_listener_key`].
pub async fn listener_key(state: &AppState, merchant_id: i64) -> Result<Option<SigningKey>> {
    match state.store.listener_signing_key(merchant_id).await? {
        Some(sealed) => open(state, &sealed).map(Some),
        None => Ok(None),
    }
}

/// The merchant's listener signing key, made now if it has none.
pub async fn listener_key_or_create(state: &AppState, merchant_id: i64) -> Result<SigningKey> {
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
pub async fn rotate_listener_key(state: &AppState, merchant_id: i64) -> Result<SigningKey> {
    let (key, sealed) = new_signing_key(state);
    let created_at = state
        .store
        .set_listener_signing_key(merchant_id, &sealed)
        .await?;
    state.listeners.key_rotated(merchant_id);
    Ok(SigningKey::new(key, created_at))
}

/// One connected listener: the changes it missed (after `Last-Event-ID`),
/// then every change published while it stays connected, each signed.
pub struct Feed {
    key: Secret,
    subscription: Subscription,
    missed: VecDeque<ListenerRow>,
    /// Ids sent from the outbox that may still come live; sent once only.
    resumed: HashSet<i64>,
}

/// A change as a listener receives it, with the event's id (the outbox
/// row's, for `Last-Event-ID`).
#[derive(Debug, Clone)]
pub struct ListenerEvent {
    /// The SSE event id.
    pub id: i64,
    /// The delivery.
    pub delivery: ListenerDelivery,
}

/// Connects a listener of the merchant: its signing key (made now if it
/// has none) and its feed. With `last_event_id`, the feed starts with the
/// changes after that event from the last [`RESUME_WINDOW`] (at most
/// [`MAX_RESUMED`]) that were already fed to listeners.
pub async fn connect(
    state: &AppState,
    merchant_id: i64,
    last_event_id: Option<i64>,
) -> Result<(SigningKey, Feed)> {
    // Subscribed first, so a change claimed while the outbox is read
    // comes either way, and `resumed` sends it once.
    let subscription = state.listeners.subscribe(merchant_id)?;
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
    let feed = Feed {
        key: key.signing_key.clone(),
        subscription,
        resumed: missed.iter().map(|r| r.id).collect(),
        missed: missed.into(),
    };
    Ok((key, feed))
}

impl Feed {
    /// The next delivery; `None` when the stream ends (the server stops,
    /// the key was replaced, or the listener fell too far behind: it
    /// reconnects with `Last-Event-ID`).
    pub async fn next(&mut self) -> Option<ListenerEvent> {
        if let Some(row) = self.missed.pop_front() {
            return Some(self.sign(&row));
        }
        loop {
            let row = self.subscription.next().await?;
            if !self.resumed.remove(&row.id) {
                return Some(self.sign(&row));
            }
        }
    }

    fn sign(&self, row: &ListenerRow) -> ListenerEvent {
        let signature = webhook_verify::sign(self.key.expose(), row.payload.as_bytes());
        ListenerEvent {
            id: row.id,
            delivery: ListenerDelivery::new(
                delivery_id(row.id),
                row.shipment_code.clone(),
                row.version,
                signature,
                row.payload.clone(),
            ),
        }
    }
}

/// A listener's delivery id: like a webhook's (`dlv_<change>_w<webhook>`),
/// with `l` for the listener.
fn delivery_id(outbox_id: i64) -> String {
    format!("dlv_{outbox_id}_l")
}

#[cfg(test)]
mod tests {
    #[test]
    fn listener_delivery_ids_name_the_change() {
        assert_eq!(super::delivery_id(42), "dlv_42_l");
    }
}
