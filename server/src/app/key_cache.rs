//! Verified API keys, remembered for a moment so an authenticated read is
//! one database round trip instead of two (issue 17;
//! docs/src/appendix/benchmarks-history.md, "Authentication from memory").
//!
//! A key is remembered for [`KEY_CACHE_TTL`] after the database confirmed
//! it. Deleting a key forgets it in the deleting process at once (and a
//! lookup that raced with the deletion cannot put it back: see
//! `generation`); every other process sharing the database stops taking it
//! within the TTL, which bounds how long revocation takes to spread without
//! any message between processes. Unknown keys are never remembered, so a
//! new key works at once everywhere.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::memo::Memo;
use crate::domain::keys::KeyKind;
use crate::store::api_keys::KeyOwner;

/// How long a verified key is taken without asking the database again: the
/// longest a key deleted through another server process keeps working here.
pub const KEY_CACHE_TTL: Duration = Duration::from_millis(500);

/// Keys remembered at most (see [`Memo::new`]).
const MAX_ENTRIES: usize = 10_000;

/// See the module's documentation. Cheap to share (`Arc` it).
#[derive(Debug)]
pub struct KeyCache {
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
pub struct Ticket(u64);

impl KeyCache {
    /// The owner of the key with this digest if it was verified less than
    /// [`KEY_CACHE_TTL`] ago; else `Err` with the ticket to remember the
    /// database's answer with.
    pub fn get(&self, kind: KeyKind, digest: &str) -> Result<KeyOwner, Ticket> {
        let ticket = Ticket(self.generation.load(Ordering::Acquire));
        self.entries.get(&(kind, digest.to_owned())).ok_or(ticket)
    }

    /// Remembers a key the database just confirmed, unless a key was
    /// deleted since the lookup's ticket was taken.
    pub fn remember(&self, ticket: Ticket, kind: KeyKind, digest: &str, owner: KeyOwner) {
        self.entries
            .remember_if((kind, digest.to_owned()), owner, || {
                self.generation.load(Ordering::Acquire) == ticket.0
            });
    }

    /// Notes that the key was used now, so the once-a-minute `last_used_at`
    /// bookkeeping is not started again by every request that finds it here.
    pub fn touched(&self, kind: KeyKind, digest: &str, at: chrono::DateTime<chrono::Utc>) {
        self.entries.update(&(kind, digest.to_owned()), |owner| {
            owner.last_used_at = Some(at);
        });
    }

    /// Forgets the key `key_id` of `kind`: called when it is deleted, after
    /// the deletion committed.
    pub fn forget(&self, kind: KeyKind, key_id: i64) {
        self.entries.forget_where(
            || {
                self.generation.fetch_add(1, Ordering::AcqRel);
            },
            |(k, _), owner| *k == kind && owner.key_id == key_id,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(key_id: i64) -> KeyOwner {
        KeyOwner {
            key_id,
            owner_id: 7,
            last_used_at: None,
        }
    }

    #[test]
    fn a_remembered_key_is_found_until_forgotten() {
        let cache = KeyCache::default();
        let ticket = cache.get(KeyKind::Merchant, "d1").unwrap_err();
        cache.remember(ticket, KeyKind::Merchant, "d1", owner(1));
        assert_eq!(cache.get(KeyKind::Merchant, "d1").unwrap(), owner(1));
        assert!(
            cache.get(KeyKind::Courier, "d1").is_err(),
            "kinds are apart"
        );
        cache.forget(KeyKind::Merchant, 1);
        assert!(cache.get(KeyKind::Merchant, "d1").is_err());
    }

    #[test]
    fn a_lookup_that_raced_a_deletion_is_not_remembered() {
        let cache = KeyCache::default();
        let ticket = cache.get(KeyKind::Merchant, "d1").unwrap_err();
        // The database answered "valid", then the key was deleted and
        // forgotten before the answer was remembered.
        cache.forget(KeyKind::Merchant, 1);
        cache.remember(ticket, KeyKind::Merchant, "d1", owner(1));
        assert!(cache.get(KeyKind::Merchant, "d1").is_err());
    }

    #[test]
    fn entries_expire_after_the_ttl() {
        let cache = KeyCache::default();
        let ticket = cache.get(KeyKind::Merchant, "d1").unwrap_err();
        cache.remember(ticket, KeyKind::Merchant, "d1", owner(1));
        std::thread::sleep(KEY_CACHE_TTL + Duration::from_millis(20));
        assert!(cache.get(KeyKind::Merchant, "d1").is_err());
    }
}
