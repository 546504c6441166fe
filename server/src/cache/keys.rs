//! Verified API keys, remembered for a moment so an authenticated read is
//! one database round trip instead of two (issue 17;
//! docs/src/appendix/benchmarks-history.md, "Authentication from memory").
//!
//! A key is remembered for [`KEY_CACHE_TTL`] after the database confirmed
//! it. Unknown keys are never remembered, so a new key works at once
//! everywhere. A key's expiry is remembered with it and compared with the
//! clock on every use (`app::auth::authenticate_key`), so a remembered key
//! expires on time. What can make an entry stale is the key's deletion, or
//! the test controls' change of its expiry (the server changes nothing else
//! of a key that a lookup answers); both answer a [`Revoked`], and the rule
//! that keeps a stale entry from being served is built in rather than left
//! to callers:
//!
//! - The store's deletion of a key answers a [`Revoked`] (must-use), and
//!   [`KeyCache::forget`] takes nothing else: the deleting process forgets
//!   the key before it answers (`app::auth::forget_revoked`). A lookup
//!   that raced with the deletion cannot put it back (see `generation`).
//! - On PostgreSQL the deletion announces itself in its own statement
//!   (`store::listen::REVOKED_CHANNEL`), and every process's listener relay
//!   (`webhooks::listeners::relay`) forgets it as it commits: revocation is
//!   immediate across processes, the time of a notification. When the
//!   relay (re)starts listening it forgets every key, since a revocation
//!   may have gone unheard meanwhile.
//! - The TTL stays as the bound of last resort: on SQLite (one process
//!   per file normally, which forgets at once anyway; a second process on
//!   the same file stops taking the key within the TTL), and for a key
//!   deleted by hand in the database.
//!
//! The tests hold the rule: `key_writes_are_known` fails on any new
//! statement that deletes or changes a key row, and the revocation tests
//! (`server/tests/api/revocation.rs`) check that a deleted key is refused
//! at once by the deleting process and, on PostgreSQL, by another.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::memo::Memo;
use crate::domain::keys::KeyKind;
use crate::store::api_keys::KeyOwner;
use crate::store::listen::{Credential, Revoked};
use crate::webhooks::listeners::ForgetRevoked;

/// How long a verified key is taken without asking the database again: the
/// longest a key deleted elsewhere keeps working here when no announcement
/// tells this process (SQLite, a hand edit, a lost notification).
pub const KEY_CACHE_TTL: Duration = Duration::from_millis(500);

/// Keys remembered at most (see [`Memo::new`]).
const MAX_ENTRIES: usize = 10_000;

/// See the module's documentation. Cheap to share (`Arc` it).
#[derive(Debug)]
pub(crate) struct KeyCache {
    entries: Memo<(KeyKind, String), KeyOwner>,
    /// Bumped by every deletion. A lookup notes it before asking the
    /// database and remembers the answer only if no deletion happened
    /// meanwhile: otherwise a read that began before a deletion committed
    /// could remember the deleted key after the deletion forgot it.
    generation: AtomicU64,
}

impl Default for KeyCache {
    fn default() -> KeyCache {
        KeyCache {
            entries: Memo::new(KEY_CACHE_TTL, MAX_ENTRIES),
            generation: AtomicU64::new(0),
        }
    }
}

/// A lookup's ticket: what [`KeyCache::remember`] needs to know whether a
/// deletion happened since [`KeyCache::get`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket(u64);

impl KeyCache {
    /// The owner of the key with this digest if it was verified less than
    /// [`KEY_CACHE_TTL`] ago; else `Err` with the ticket to remember the
    /// database's answer with.
    pub(crate) fn get(&self, kind: KeyKind, digest: &str) -> Result<KeyOwner, Ticket> {
        let ticket = Ticket(self.generation.load(Ordering::Acquire));
        self.entries.get(&(kind, digest.to_owned())).ok_or(ticket)
    }

    /// Remembers a key the database just confirmed, unless a key was
    /// deleted since the lookup's ticket was taken.
    pub(crate) fn remember(&self, ticket: Ticket, kind: KeyKind, digest: &str, owner: KeyOwner) {
        self.entries
            .remember_if((kind, digest.to_owned()), owner, || {
                self.generation.load(Ordering::Acquire) == ticket.0
            });
    }

    /// Notes that the key was used now, so the once-a-minute `last_used_at`
    /// bookkeeping is not started again by every request that finds it here.
    pub(crate) fn touched(&self, kind: KeyKind, digest: &str, at: chrono::DateTime<chrono::Utc>) {
        self.entries.update(&(kind, digest.to_owned()), |owner| {
            owner.last_used_at = Some(at);
        });
    }

    /// Forgets a revoked key: called by the process that deleted it, as
    /// the deletion committed, and by every process's listener relay when
    /// the deletion is announced. (Sessions are not remembered here.)
    pub(crate) fn forget(&self, revoked: Revoked) {
        let (kind, key_id) = match revoked.credential() {
            Credential::ApiKey(id) => (KeyKind::Merchant, id.get()),
            Credential::CourierKey(id) => (KeyKind::Courier, id.get()),
            Credential::Session(_) => return,
        };
        self.entries.forget_where(
            || {
                self.generation.fetch_add(1, Ordering::AcqRel);
            },
            |(k, _), owner| *k == kind && owner.key_id == key_id,
        );
    }

    /// Forgets every key: each is verified by the database again on its
    /// next use.
    pub(crate) fn forget_all(&self) {
        self.entries.forget_where(
            || {
                self.generation.fetch_add(1, Ordering::AcqRel);
            },
            |_, _| true,
        );
    }
}

impl ForgetRevoked for KeyCache {
    fn forget(&self, revoked: Revoked) {
        KeyCache::forget(self, revoked);
    }

    fn forget_all(&self) {
        KeyCache::forget_all(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::memo::statements::{Verb, writing};
    use crate::store::listen::REVOKED_CHANNEL;
    use shipment_sdk::model::ApiKeyId;

    /// The rule of the module: the statements that change a key row (or a
    /// session, which listener streams hold on to) are the ones known to
    /// keep what remembers them right. A new one fails here until it is
    /// made to answer a [`Revoked`] (and, on PostgreSQL, announce it on
    /// [`REVOKED_CHANNEL`]), and is listed.
    #[test]
    fn key_writes_are_known() {
        let announced =
            |kind: &str| format!("pg_notify('{REVOKED_CHANNEL}', '{kind}:' || gone.id)");
        let mut deletions = 0;
        for table in ["api_keys", "courier_keys", "sessions", "merchants"] {
            for write in writing(table) {
                let sql = write.sql.as_str();
                let known = match (table, write.verb) {
                    // A new row: unknown keys are never remembered.
                    (_, Verb::Insert) => true,
                    // Bookkeeping the cache keeps itself (`KeyCache::touched`).
                    ("api_keys" | "courier_keys", Verb::Update)
                        if sql == format!("UPDATE {table} SET last_used_at = $1 WHERE id = $2") =>
                    {
                        true
                    }
                    // The test controls' expiry (`Store::expire_api_key`),
                    // which answers `Revoked`, on either engine.
                    ("api_keys", Verb::Update) => {
                        sql == "UPDATE api_keys SET expires_at = $1 WHERE merchant_id = $2 \
                                AND id = $3 RETURNING id"
                            || sql.contains(&announced("api_key"))
                    }
                    // `Store::delete_api_key` and `Store::delete_session`,
                    // which answer `Revoked`, on either engine.
                    // (and the test controls' `Store::delete_merchant`,
                    // which answers one `Revoked` per key and session).
                    // The test controls' deletion of a test merchant's own
                    // companies (`Store::delete_test_merchant`), which
                    // answers one `Revoked` per courier key.
                    ("courier_keys", Verb::Delete) => {
                        sql.starts_with("DELETE FROM courier_keys WHERE courier_company_id IN")
                            && sql.ends_with("RETURNING id")
                            || sql.contains(&announced("courier_key"))
                    }
                    ("api_keys", Verb::Delete) => {
                        sql == "DELETE FROM api_keys WHERE merchant_id = $1 AND id = $2 RETURNING id"
                            || sql == "DELETE FROM api_keys WHERE merchant_id = $1 RETURNING id"
                            || sql.contains(&announced("api_key"))
                    }
                    ("sessions", Verb::Delete) => {
                        sql == "DELETE FROM sessions WHERE id = $1 RETURNING id"
                            || sql == "DELETE FROM sessions WHERE merchant_id = $1 RETURNING id"
                            || sql.contains(&announced("session"))
                            // Expired sessions, which end their streams by
                            // themselves (`app::listen::RECHECK`).
                            || sql == "DELETE FROM sessions WHERE expires_at <= $1"
                    }
                    // The merchant of the test controls' deletion, whose
                    // keys and sessions went first in the same transaction.
                    ("merchants", Verb::Delete) => sql == "DELETE FROM merchants WHERE id = $1",
                    _ => false,
                };
                assert!(
                    known,
                    "`{sql}` in {} changes a credential that key caches or listener streams \
                     remember: make its function answer `Revoked` (announced on PostgreSQL), \
                     then list it here",
                    write.file
                );
                deletions += usize::from(write.verb == Verb::Delete);
            }
        }
        assert_eq!(
            deletions, 12,
            "both engines' deletions of a key and of a session, the pruning, and the \
             merchant deletion's (keys, courier keys and sessions on both engines, the merchant)"
        );
    }

    #[test]
    fn forgetting_all_forgets_every_key_and_races_no_lookup() {
        let cache = KeyCache::default();
        for digest in ["d1", "d2"] {
            let ticket = cache.get(KeyKind::Merchant, digest).unwrap_err();
            cache.remember(ticket, KeyKind::Merchant, digest, owner(ApiKeyId::new(1)));
        }
        let racing = cache.get(KeyKind::Merchant, "d3").unwrap_err();
        cache.forget_all();
        cache.remember(racing, KeyKind::Merchant, "d3", owner(ApiKeyId::new(3)));
        for digest in ["d1", "d2", "d3"] {
            assert!(cache.get(KeyKind::Merchant, digest).is_err(), "{digest}");
        }
    }

    #[test]
    fn a_session_or_another_key_leaves_a_key_remembered() {
        let cache = KeyCache::default();
        let ticket = cache.get(KeyKind::Merchant, "d1").unwrap_err();
        cache.remember(ticket, KeyKind::Merchant, "d1", owner(ApiKeyId::new(1)));
        cache.forget(Revoked::announced("session:1").unwrap());
        cache.forget(deleted_key(ApiKeyId::new(2)));
        assert_eq!(
            cache.get(KeyKind::Merchant, "d1").unwrap(),
            owner(ApiKeyId::new(1))
        );
    }

    fn deleted_key(id: ApiKeyId) -> Revoked {
        Revoked::announced(&format!("api_key:{id}")).unwrap()
    }

    fn owner(key_id: ApiKeyId) -> KeyOwner {
        KeyOwner {
            key_id: key_id.get(),
            owner_id: 7,
            last_used_at: None,
            permissions: Default::default(),
            expires_at: None,
        }
    }

    #[test]
    fn a_remembered_key_is_found_until_forgotten() {
        let cache = KeyCache::default();
        let ticket = cache.get(KeyKind::Merchant, "d1").unwrap_err();
        cache.remember(ticket, KeyKind::Merchant, "d1", owner(ApiKeyId::new(1)));
        assert_eq!(
            cache.get(KeyKind::Merchant, "d1").unwrap(),
            owner(ApiKeyId::new(1))
        );
        assert!(
            cache.get(KeyKind::Courier, "d1").is_err(),
            "kinds are apart"
        );
        cache.forget(deleted_key(ApiKeyId::new(1)));
        assert!(cache.get(KeyKind::Merchant, "d1").is_err());
    }

    #[test]
    fn a_lookup_that_raced_a_deletion_is_not_remembered() {
        let cache = KeyCache::default();
        let ticket = cache.get(KeyKind::Merchant, "d1").unwrap_err();
        // The database answered "valid", then the key was deleted and
        // forgotten before the answer was remembered.
        cache.forget(deleted_key(ApiKeyId::new(1)));
        cache.remember(ticket, KeyKind::Merchant, "d1", owner(ApiKeyId::new(1)));
        assert!(cache.get(KeyKind::Merchant, "d1").is_err());
    }

    #[test]
    fn entries_expire_after_the_ttl() {
        let cache = KeyCache::default();
        let ticket = cache.get(KeyKind::Merchant, "d1").unwrap_err();
        cache.remember(ticket, KeyKind::Merchant, "d1", owner(ApiKeyId::new(1)));
        std::thread::sleep(KEY_CACHE_TTL + Duration::from_millis(20));
        assert!(cache.get(KeyKind::Merchant, "d1").is_err());
    }
}
