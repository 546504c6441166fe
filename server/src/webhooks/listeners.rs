//! Live listeners (`GET /webhooks/listen`, `shipctl listen`): the
//! dispatcher hands every change it claims to [`Listeners`], which passes it
//! to the listeners connected to this process.
//!
//! A change reaches listeners when a dispatcher claims its outbox row: after
//! the change's commit, and in version order per shipment, since only the
//! oldest undelivered row of a shipment is claimable. Each comes with its
//! listen position, the stream's event id, and they come in position order
//! (`store::listen` says how). Nothing is kept for a listener that is not
//! connected; one that reconnects with `Last-Event-ID` gets what it missed
//! from the outbox (`app::listen`).
//!
//! A stream is never left open with a hole in it: on PostgreSQL, when this
//! process may have missed an announcement (its notification connection
//! was lost, or the rows announced could not be read), every stream of the
//! process ends, and a listener resumes from the database with
//! `Last-Event-ID`; and no stream starts while the process is not
//! listening for announcements.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use shipment_sdk::model::MerchantId;
use tokio::sync::{broadcast, watch};

use crate::store::Store;
use crate::store::listen::{
    CLAIMED_CHANNEL, KEY_ROTATED_CHANNEL, ListenerRow, REVOKED_CHANNEL, Revoked,
};

/// Listeners one merchant may have connected to one server process at once;
/// one more is answered 429.
pub const MAX_LISTENERS_PER_MERCHANT: usize = 16;

/// Events waiting for the slowest listener of the process. A listener that
/// falls this far behind is disconnected; it reconnects with
/// `Last-Event-ID` and catches up from the outbox.
const BUFFER: usize = 4_096;

/// What listeners are told.
#[derive(Debug, Clone)]
pub(crate) enum News {
    /// A shipment changed.
    Change(Arc<ListenerRow>),
    /// The merchant's listener signing key was replaced: its listeners that
    /// sign with an older key are disconnected, and sign with the new key
    /// once they reconnect.
    KeyRotated(MerchantId),
    /// A credential stopped working: the streams it opened end.
    Revoked(Credential),
    /// Changes may have been announced that this process did not hear:
    /// every stream ends, and its listener resumes from the database.
    Missed,
}

/// What a listener's stream was opened with. A stream lasts only as long
/// as its credential: deleting the key or ending the session ends it, so a
/// leaked key cannot go on reading every change (nor hold the merchant's
/// listener slots) after it was revoked.
pub(crate) use crate::store::listen::Credential;

/// What remembers credentials besides the listener streams (the key cache,
/// handed to [`relay`] by the server): told of every revocation made
/// through any server process sharing the PostgreSQL database.
pub(crate) trait ForgetRevoked: Send + Sync + 'static {
    /// Forgets a credential whose deletion committed (in any process).
    fn forget(&self, revoked: Revoked);
    /// Forgets every credential: revocations may have gone unheard (the
    /// relay's connection was lost, or is only now listening).
    fn forget_all(&self);
}

/// The listeners connected to this process. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Listeners {
    inner: Arc<Hub>,
}

#[derive(Debug)]
struct Hub {
    news: broadcast::Sender<News>,
    /// Listeners connected per merchant.
    connected: Mutex<HashMap<MerchantId, usize>>,
    /// Turns true when the server stops: every stream ends, so a graceful
    /// shutdown does not wait for them.
    closed: watch::Sender<bool>,
    /// Whether this process hears every change fed to listeners: always on
    /// SQLite (its own dispatcher feeds them); on PostgreSQL only while the
    /// [`relay`] is listening for announcements.
    hearing: watch::Sender<bool>,
}

/// The merchant has [`MAX_LISTENERS_PER_MERCHANT`] listeners connected.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error(
    "you have {MAX_LISTENERS_PER_MERCHANT} listeners connected to this server already; \
     stop one first"
)]
pub struct TooManyListeners;

impl Default for Listeners {
    fn default() -> Self {
        Listeners::new()
    }
}

impl Listeners {
    /// No listeners yet.
    pub fn new() -> Listeners {
        Listeners {
            inner: Arc::new(Hub {
                news: broadcast::channel(BUFFER).0,
                connected: Mutex::default(),
                closed: watch::channel(false).0,
                hearing: watch::channel(true).0,
            }),
        }
    }

    /// Hands claimed changes to the connected listeners (of any merchant:
    /// each listener keeps its merchant's). Costs nothing when none is
    /// connected.
    pub fn publish(&self, rows: impl IntoIterator<Item = ListenerRow>) {
        if self.inner.news.receiver_count() == 0 {
            return;
        }
        for row in rows {
            // An error only means every listener left meanwhile.
            let _ = self.inner.news.send(News::Change(Arc::new(row)));
        }
    }

    /// Tells the merchant's listeners that its key was replaced: those
    /// signing with an older key end ([`Heard::KeyReplaced`]).
    pub fn key_rotated(&self, merchant_id: MerchantId) {
        let _ = self.inner.news.send(News::KeyRotated(merchant_id));
    }

    /// Ends the streams of this process that the revoked credential
    /// opened: called after its deletion committed. On PostgreSQL every
    /// other process is told by its [`relay`]; on SQLite (one process per
    /// file) or when a notification is lost, a stream notices by itself
    /// (`app::listen::RECHECK`).
    pub fn revoked(&self, revoked: Revoked) {
        if self.inner.news.receiver_count() > 0 {
            let _ = self.inner.news.send(News::Revoked(revoked.credential()));
        }
    }

    /// Ends every listener's stream: this process may have missed changes
    /// (`News::Missed`). From now until [`Listeners::hearing`], no stream
    /// starts.
    fn missed(&self) {
        self.inner.hearing.send_replace(false);
        let _ = self.inner.news.send(News::Missed);
    }

    /// This process hears every change fed to listeners again: streams may
    /// start.
    fn hearing(&self) {
        self.inner.hearing.send_replace(true);
    }

    /// Waits (at most `within`) until this process hears every change fed
    /// to listeners; whether it does. A stream starts only then: one
    /// started while changes go unheard would have a hole.
    pub(crate) async fn heard_within(&self, within: std::time::Duration) -> bool {
        let mut hearing = self.inner.hearing.subscribe();
        tokio::time::timeout(within, hearing.wait_for(|h| *h))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Ends every listener's stream (the server is stopping).
    pub fn close(&self) {
        self.inner.closed.send_replace(true);
    }

    /// Listeners connected for the merchant.
    pub fn connected(&self, merchant_id: MerchantId) -> usize {
        let connected = self.lock();
        connected.get(&merchant_id).copied().unwrap_or(0)
    }

    /// A new listener of the merchant, opened with `credential`, receiving
    /// every change published from now on.
    pub(crate) fn subscribe(
        &self,
        merchant_id: MerchantId,
        credential: Credential,
    ) -> Result<Subscription, TooManyListeners> {
        {
            let mut connected = self.lock();
            let n = connected.entry(merchant_id).or_default();
            if *n >= MAX_LISTENERS_PER_MERCHANT {
                return Err(TooManyListeners);
            }
            *n += 1;
        }
        Ok(Subscription {
            news: self.inner.news.subscribe(),
            closed: self.inner.closed.subscribe(),
            merchant_id,
            credential,
            hub: self.inner.clone(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<MerchantId, usize>> {
        self.inner
            .connected
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// PostgreSQL: feeds this process's listeners with the changes any
/// process's dispatcher claims (announced on [`CLAIMED_CHANNEL`]), and
/// makes this process forget at once every credential any process revokes
/// (announced on [`REVOKED_CHANNEL`]): `keys` forgets it, and the streams it
/// opened end. Runs until `stop` turns true. Does nothing on SQLite, where
/// the dispatcher feeds listeners directly and the process that deletes a
/// credential forgets it (one process owns the file).
///
/// Also ends, in this process, the streams of a merchant whose listener
/// signing key any process replaced (announced on [`KEY_ROTATED_CHANNEL`]),
/// so no stream goes on signing with the old key.
///
/// Holds one connection of the pool. When that connection is lost, or the
/// rows of an announcement cannot be read, this process's listeners may
/// have missed changes: every stream ends at once (its listener resumes
/// with `Last-Event-ID`, from the database), and no stream starts until
/// the relay listens again (after a second, when connecting fails). Since
/// revocations and key replacements may have gone unheard too, `keys`
/// forgets every credential each time the relay starts listening (and
/// those streams have ended).
pub(crate) async fn relay(
    store: Store,
    listeners: Listeners,
    keys: Arc<dyn ForgetRevoked>,
    mut stop: watch::Receiver<bool>,
) {
    let crate::store::Pool::Postgres(pool) = store.pool() else {
        return;
    };
    // Any stream opened before the relay first listens may have missed an
    // announcement.
    listeners.missed();
    while !*stop.borrow() {
        let connected = async {
            let mut pg = sqlx::postgres::PgListener::connect_with(pool).await?;
            pg.listen_all([CLAIMED_CHANNEL, REVOKED_CHANNEL, KEY_ROTATED_CHANNEL])
                .await?;
            Ok::<_, sqlx::Error>(pg)
        };
        let mut pg = match connected.await {
            Ok(pg) => pg,
            Err(e) => {
                tracing::warn!(error = %e, "listeners: cannot listen for claimed changes; retrying in 1 s");
                tokio::select! {
                    () = tokio::time::sleep(std::time::Duration::from_secs(1)) => continue,
                    _ = stop.changed() => return,
                }
            }
        };
        // Anything remembered before now may have been revoked unheard.
        keys.forget_all();
        listeners.hearing();
        loop {
            // `try_recv`, not `recv`, which would connect again by itself
            // without saying that notifications may have been missed.
            let notification = tokio::select! {
                n = pg.try_recv() => n.transpose(),
                _ = stop.changed() => return,
            };
            let Some(notification) = notification else {
                tracing::warn!(
                    "listeners: the notification connection was lost; ending this process's \
                     listener streams (they resume with Last-Event-ID)"
                );
                listeners.missed();
                break;
            };
            match notification {
                Ok(n) if n.channel() == REVOKED_CHANNEL => match Revoked::announced(n.payload()) {
                    Some(revoked) => {
                        keys.forget(revoked);
                        listeners.revoked(revoked);
                    }
                    None => tracing::warn!(
                        payload = n.payload(),
                        "listeners: a revocation not understood"
                    ),
                },
                Ok(n) if n.channel() == KEY_ROTATED_CHANNEL => match n.payload().parse() {
                    Ok(merchant_id) => listeners.key_rotated(MerchantId::new(merchant_id)),
                    Err(_) => tracing::warn!(
                        payload = n.payload(),
                        "listeners: a key replacement not understood"
                    ),
                },
                // Rows are read only while someone listens here.
                Ok(_) if listeners.inner.news.receiver_count() == 0 => {}
                Ok(n) => match store.announced_rows(n.payload()).await {
                    Ok(rows) => listeners.publish(rows),
                    Err(e) => {
                        tracing::warn!(
                            error = %e,
                            "listeners: cannot read the changes announced; ending this \
                             process's listener streams (they resume with Last-Event-ID)"
                        );
                        // They are not lost: the streams resume them. The
                        // next announcement is heard as usual.
                        listeners.missed();
                        listeners.hearing();
                    }
                },
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        "listeners: the notification connection failed; ending this \
                         process's listener streams (they resume with Last-Event-ID)"
                    );
                    listeners.missed();
                    break;
                }
            }
        }
    }
}

/// What a listener's [`Subscription`] hears.
#[derive(Debug)]
pub(crate) enum Heard {
    /// A change of the listener's merchant.
    Change(Arc<ListenerRow>),
    /// The merchant's listener signing key was replaced, by this process or
    /// another. The stream ends if it signs with an older key; one opened
    /// after the replacement signs with the new key already, and an
    /// announcement that reaches this process late must not end it.
    KeyReplaced,
}

/// One connected listener; it counts as connected until dropped.
#[derive(Debug)]
pub(crate) struct Subscription {
    news: broadcast::Receiver<News>,
    closed: watch::Receiver<bool>,
    merchant_id: MerchantId,
    credential: Credential,
    hub: Arc<Hub>,
}

impl Subscription {
    /// The next change of this listener's merchant, or the news that its
    /// listener signing key was replaced; `None` when the stream must end:
    /// the server is stopping, the stream's credential was revoked, the
    /// process may have missed changes, or the listener fell [`BUFFER`]
    /// events behind.
    pub(crate) async fn next(&mut self) -> Option<Heard> {
        loop {
            if *self.closed.borrow() {
                return None;
            }
            let news = tokio::select! {
                news = self.news.recv() => news,
                _ = self.closed.changed() => return None,
            };
            match news {
                Ok(News::Change(row)) if row.merchant_id == self.merchant_id.get() => {
                    return Some(Heard::Change(row));
                }
                Ok(News::KeyRotated(merchant)) if merchant == self.merchant_id => {
                    return Some(Heard::KeyReplaced);
                }
                Ok(News::Revoked(credential)) if credential == self.credential => return None,
                Ok(News::Missed) => return None,
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::info!(
                        merchant_id = self.merchant_id.get(),
                        missed,
                        "a listener fell behind and is disconnected; it resumes with Last-Event-ID"
                    );
                    return None;
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut connected = self
            .hub
            .connected
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = connected.get_mut(&self.merchant_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                connected.remove(&self.merchant_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::SessionId;
    use shipment_sdk::model::ApiKeyId;

    /// The id of the change heard.
    fn change(heard: Option<Heard>) -> i64 {
        match heard {
            Some(Heard::Change(row)) => row.id,
            other => panic!("a change, not {other:?}"),
        }
    }

    fn row(id: i64, merchant: MerchantId) -> ListenerRow {
        ListenerRow {
            id,
            position: id,
            merchant_id: merchant.get(),
            shipment_code: format!("SHP-{id}"),
            version: 1,
            payload: "{}".into(),
            trace_parent: None,
        }
    }

    #[tokio::test]
    async fn each_listener_gets_every_change_of_its_merchant_only() {
        let hub = Listeners::new();
        let mut a = hub
            .subscribe(MerchantId::new(1), Credential::ApiKey(ApiKeyId::new(1)))
            .unwrap();
        let mut b = hub
            .subscribe(MerchantId::new(1), Credential::ApiKey(ApiKeyId::new(1)))
            .unwrap();
        let mut other = hub
            .subscribe(MerchantId::new(2), Credential::ApiKey(ApiKeyId::new(2)))
            .unwrap();
        hub.publish([
            row(10, MerchantId::new(1)),
            row(11, MerchantId::new(2)),
            row(12, MerchantId::new(1)),
        ]);
        for listener in [&mut a, &mut b] {
            assert_eq!(change(listener.next().await), 10);
            assert_eq!(change(listener.next().await), 12);
        }
        assert_eq!(change(other.next().await), 11);
    }

    #[tokio::test]
    async fn the_limit_per_merchant_counts_connected_listeners() {
        let hub = Listeners::new();
        let mut held: Vec<_> = (0..MAX_LISTENERS_PER_MERCHANT)
            .map(|_| {
                hub.subscribe(MerchantId::new(1), Credential::ApiKey(ApiKeyId::new(1)))
                    .unwrap()
            })
            .collect();
        assert!(
            hub.subscribe(MerchantId::new(1), Credential::ApiKey(ApiKeyId::new(1)))
                .is_err()
        );
        assert!(
            hub.subscribe(MerchantId::new(2), Credential::ApiKey(ApiKeyId::new(2)))
                .is_ok(),
            "another merchant has its own count"
        );
        held.pop();
        assert_eq!(
            hub.connected(MerchantId::new(1)),
            MAX_LISTENERS_PER_MERCHANT - 1
        );
        assert!(
            hub.subscribe(MerchantId::new(1), Credential::ApiKey(ApiKeyId::new(1)))
                .is_ok()
        );
    }

    #[tokio::test]
    async fn streams_end_on_close_and_when_behind_and_hear_of_rotations() {
        let hub = Listeners::new();
        let mut rotated = hub
            .subscribe(MerchantId::new(1), Credential::ApiKey(ApiKeyId::new(1)))
            .unwrap();
        let mut untouched = hub
            .subscribe(MerchantId::new(2), Credential::ApiKey(ApiKeyId::new(2)))
            .unwrap();
        hub.key_rotated(MerchantId::new(1));
        hub.publish([row(1, MerchantId::new(2))]);
        assert!(matches!(rotated.next().await, Some(Heard::KeyReplaced)));
        assert_eq!(change(untouched.next().await), 1);

        let mut behind = hub
            .subscribe(MerchantId::new(3), Credential::ApiKey(ApiKeyId::new(3)))
            .unwrap();
        hub.publish((0..=i64::try_from(BUFFER).unwrap()).map(|id| row(id, MerchantId::new(3))));
        assert!(behind.next().await.is_none(), "a lagging listener is ended");

        hub.close();
        assert!(untouched.next().await.is_none());
    }

    #[tokio::test]
    async fn changes_gone_unheard_end_every_stream_and_hold_new_ones_back() {
        let hub = Listeners::new();
        assert!(hub.heard_within(std::time::Duration::ZERO).await);
        let mut a = hub
            .subscribe(MerchantId::new(1), Credential::ApiKey(ApiKeyId::new(1)))
            .unwrap();
        let mut b = hub
            .subscribe(MerchantId::new(2), Credential::ApiKey(ApiKeyId::new(2)))
            .unwrap();
        hub.missed();
        assert!(a.next().await.is_none());
        assert!(b.next().await.is_none());
        assert!(
            !hub.heard_within(std::time::Duration::from_millis(20)).await,
            "no stream starts while changes go unheard"
        );
        let waiting = tokio::spawn({
            let hub = hub.clone();
            async move { hub.heard_within(std::time::Duration::from_secs(10)).await }
        });
        hub.hearing();
        assert!(waiting.await.unwrap());
    }

    #[tokio::test]
    async fn a_revoked_credential_ends_the_streams_it_opened_only() {
        let hub = Listeners::new();
        let mut by_key = hub
            .subscribe(MerchantId::new(1), Credential::ApiKey(ApiKeyId::new(5)))
            .unwrap();
        let mut by_other_key = hub
            .subscribe(MerchantId::new(1), Credential::ApiKey(ApiKeyId::new(6)))
            .unwrap();
        let mut by_session = hub
            .subscribe(MerchantId::new(1), Credential::Session(SessionId::new(5)))
            .unwrap();
        hub.revoked(Revoked::announced("api_key:5").unwrap());
        hub.publish([row(1, MerchantId::new(1))]);
        assert!(by_key.next().await.is_none());
        assert_eq!(change(by_other_key.next().await), 1);
        assert_eq!(
            change(by_session.next().await),
            1,
            "a session of the same id is another credential"
        );
        hub.revoked(Revoked::announced("session:5").unwrap());
        assert!(by_session.next().await.is_none());
    }
}
