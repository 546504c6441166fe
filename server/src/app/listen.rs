//! Listening to a merchant's changes (`shipctl listen`): the listener
//! signing key, and a listener's feed of signed deliveries.
//!
//! A listener receives exactly what a webhook delivery carries (the body
//! bytes, the signature, the delivery id), signed with the merchant's
//! listener signing key: one per merchant, stable across runs so the local
//! app's configuration does not change, replaced only on request.
//!
//! The rule a stream follows, wherever it was opened: its event ids are
//! listen positions, which grow in the order changes are fed to listeners
//! (`store::listen`), and a stream sends positions in increasing order
//! only. Opened with `Last-Event-ID` *p*, it first sends the merchant's
//! changes with a position above *p* (from the database), then every
//! change fed later; opened without, it starts at the last position given
//! when it opened, which its `ready` event carries as its id, so a client
//! that resumes from there misses nothing either. A change sent again (by
//! a second stream resuming from an earlier event) carries the same id. A
//! stream that could have a hole ends instead (`webhooks::listeners`), and
//! one that was owed more than [`MAX_RESUMED`] changes ends after sending
//! that many, so that its listener resumes after the last of them.

use std::collections::VecDeque;

use chrono::Duration;
use shipment_sdk::model::{ListenerDelivery, MerchantId, Secret, SigningKey};
use tokio::time::{Interval, MissedTickBehavior};

use super::webhooks::new_signing_key;
use super::{AppState, Result};
use crate::domain::ids::EventId;
use crate::store::StoreError;
use crate::store::listen::{ListenerRow, SealedKey};
use crate::webhooks::listeners::{Heard, Subscription};

/// What opened a listener's stream (an API key or a session): the stream
/// ends when it is revoked. Front ends name it from here.
pub(crate) use crate::webhooks::listeners::Credential;

/// How far back a reconnecting listener is caught up (`Last-Event-ID`).
pub(crate) const RESUME_WINDOW: Duration = Duration::hours(1);
/// Most changes sent again to a reconnecting listener by one stream: a
/// stream owed more ends after sending these, and its listener resumes
/// after the last of them.
pub(crate) const MAX_RESUMED: u32 = 1_000;
/// How long a new stream waits for its server process to hear every change
/// fed to listeners (PostgreSQL, after its notification connection was
/// lost) before it is refused with 503.
pub(crate) const HEARING_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
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
    /// The stream ends once `missed` is sent: it was owed more than
    /// [`MAX_RESUMED`] changes.
    end_after_missed: bool,
    /// The position of the last change sent (or the one the stream started
    /// after): a change at or below it was sent already or is not owed.
    sent: EventId,
}

/// A change as a listener receives it, with the event's id (its listen
/// position, for `Last-Event-ID`).
#[derive(Debug, Clone)]
pub(crate) struct ListenerEvent {
    /// The SSE event id.
    pub id: EventId,
    /// The delivery.
    pub delivery: ListenerDelivery,
}

/// Connects a listener of the merchant, authenticated by `credential`: its
/// signing key (made now if it has none), the position it starts after
/// (`last_event_id`, or the last one given now), for the `ready` event's
/// id, and its feed. With `last_event_id`, the feed starts with the
/// changes fed after it from the last [`RESUME_WINDOW`].
pub(crate) async fn connect(
    state: &AppState,
    merchant_id: MerchantId,
    credential: Credential,
    last_event_id: Option<EventId>,
) -> Result<(SigningKey, EventId, Feed)> {
    // Subscribed first, and hearing every change before the database is
    // read: a change fed while it is read comes either way, and `sent`
    // drops the second.
    let subscription = state.listeners.subscribe(merchant_id, credential)?;
    if !state.listeners.heard_within(HEARING_WAIT).await {
        return Err(super::Error::Unavailable(
            "this server cannot follow changes for listeners at the moment; \
             connect again shortly"
                .into(),
        ));
    }
    let key = listener_key_or_create(state, merchant_id).await?;
    let (start, missed) = match last_event_id {
        Some(after) => {
            let since = crate::store::now() - RESUME_WINDOW;
            let missed = state
                .store
                .missed_listener_rows(merchant_id, after, since, MAX_RESUMED)
                .await?;
            (after, missed)
        }
        None => (state.store.last_listen_position().await?, Vec::new()),
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
        end_after_missed: missed.len() >= MAX_RESUMED as usize,
        missed: missed.into(),
        sent: start,
    };
    Ok((key, start, feed))
}

impl Feed {
    /// The next delivery; `None` when the stream ends: the server stops,
    /// the listener signing key was replaced, the listener fell too far
    /// behind (it reconnects with `Last-Event-ID`), or the stream's
    /// credential no longer works (the reconnection is refused).
    pub(crate) async fn next(&mut self) -> Option<ListenerEvent> {
        if let Some(row) = self.missed.pop_front() {
            return Some(self.send(&row));
        }
        if self.end_after_missed {
            return None;
        }
        loop {
            let row = tokio::select! {
                heard = self.subscription.next() => match heard? {
                    Heard::Change(row) => row,
                    Heard::KeyReplaced if self.signs_with_the_current_key().await => continue,
                    Heard::KeyReplaced => return None,
                },
                _ = self.recheck.tick() => {
                    if self.credential_works().await {
                        continue;
                    }
                    return None;
                }
            };
            if row.position > self.sent.get() {
                return Some(self.send(&row));
            }
        }
    }

    /// Whether the merchant's listener signing key is still the one this
    /// stream signs with, asked of the database after a replacement was
    /// announced: the announcement may reach this process after the stream
    /// opened with the new key (the replacement was made through another
    /// process, or is announced twice, by the process that made it and by
    /// PostgreSQL), and only streams signing with an older key end. When
    /// the database cannot say, the stream ends: its listener reconnects.
    async fn signs_with_the_current_key(&self) -> bool {
        match listener_key(&self.state, self.merchant_id).await {
            Ok(Some(current)) => current.signing_key.expose() == self.key.expose(),
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(error = %e, "a listener's signing key could not be checked; ending its stream");
                false
            }
        }
    }

    /// Whether the stream's key or session still works, asked of the
    /// database. When the database cannot say, the stream ends: it must
    /// not outlive a revocation it cannot see, and a listener reconnects.
    async fn credential_works(&self) -> bool {
        let store = &self.state.store;
        let works = match self.credential {
            // Not deleted, and not expired since (expiry is a time, so a
            // stream opened by an expiring key ends within a recheck).
            Credential::ApiKey(id) => store.api_key(self.merchant_id, id).await.map(|key| {
                key.is_some_and(|k| k.expires_at.is_none_or(|at| at > crate::store::now()))
            }),
            Credential::Session(id) => store.session_is_live(id).await,
            // Never opens a stream (the route takes merchants' credentials).
            Credential::CourierKey(_) => Ok(false),
        };
        works.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "a listener's credential could not be checked; ending its stream");
            false
        })
    }

    /// `row` as its event, signed; it is the last sent now.
    fn send(&mut self, row: &ListenerRow) -> ListenerEvent {
        let signature = webhook_verify::sign(self.key.expose(), row.payload.as_bytes());
        let id = EventId::new(row.position);
        self.sent = id;
        ListenerEvent {
            id,
            delivery: ListenerDelivery::new(
                delivery_id(EventId::new(row.id)),
                row.shipment_code.clone(),
                row.version,
                signature,
                row.payload.clone(),
            )
            .with_traceparent(row.trace_parent.clone()),
        }
    }
}

/// A listener's delivery id: like a webhook's (`dlv_<change>_w<webhook>`,
/// the change named by its outbox id, not its listen position), with `l`
/// for the listener.
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
