//! A small in-process memory of database answers, each kept for a fixed
//! time and bounded in size: what every cache of this module
//! ([`keys`](super::keys), [`pricing`](super::pricing),
//! [`listed`](super::listed)) is built on.
//!
//! Only answers that may be a little old are kept here; each user says
//! why, and what makes it forget earlier. Each user's rule (which writes
//! could make it stale, and how they make it forget) has a test that reads
//! the statements of the server's source ([`statements`]), so a write added
//! without following the rule fails it.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

#[cfg(test)]
pub(crate) mod statements;

/// Values by key, each taken for `ttl` after it was remembered.
#[derive(Debug)]
pub(crate) struct Memo<K, V> {
    entries: Mutex<HashMap<K, (V, Instant)>>,
    ttl: Duration,
    max_entries: usize,
}

impl<K: Eq + Hash, V: Clone> Memo<K, V> {
    /// An empty memory whose entries last `ttl`; beyond `max_entries`,
    /// expired entries are dropped, and if that is not enough, all (a flood
    /// of distinct keys is not a workload worth remembering).
    pub(crate) fn new(ttl: Duration, max_entries: usize) -> Memo<K, V> {
        Memo {
            entries: Mutex::default(),
            ttl,
            max_entries,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, (V, Instant)>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value remembered for `key` less than the TTL ago.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        match self.lock().get(key) {
            Some((value, at)) if at.elapsed() < self.ttl => Some(value.clone()),
            _ => None,
        }
    }

    /// [`Memo::get`] for each key, under one lock.
    pub(crate) fn get_each<'k>(&self, keys: impl IntoIterator<Item = &'k K>) -> Vec<Option<V>>
    where
        K: 'k,
    {
        let entries = self.lock();
        keys.into_iter()
            .map(|key| match entries.get(key) {
                Some((value, at)) if at.elapsed() < self.ttl => Some(value.clone()),
                _ => None,
            })
            .collect()
    }

    /// Remembers `value` for `key` from now, if `still_valid` (asked while
    /// no other call can change the memory) says so.
    pub(crate) fn remember_if(&self, key: K, value: V, still_valid: impl FnOnce() -> bool) {
        let mut entries = self.lock();
        if !still_valid() {
            return;
        }
        self.insert(&mut entries, key, value, Instant::now());
    }

    /// Inserts into `entries` (the locked map), first making room if it is
    /// full.
    fn insert(&self, entries: &mut HashMap<K, (V, Instant)>, key: K, value: V, at: Instant) {
        if entries.len() >= self.max_entries {
            entries.retain(|_, (_, at)| at.elapsed() < self.ttl);
            if entries.len() >= self.max_entries {
                entries.clear();
            }
        }
        entries.insert(key, (value, at));
    }

    /// Remembers `value` for `key` from now.
    pub(crate) fn remember(&self, key: K, value: V) {
        self.remember_if(key, value, || true);
    }

    /// [`Memo::remember`] for each pair, under one lock.
    pub(crate) fn remember_each(&self, pairs: impl IntoIterator<Item = (K, V)>) {
        let mut entries = self.lock();
        let at = Instant::now();
        for (key, value) in pairs {
            self.insert(&mut entries, key, value, at);
        }
    }

    /// Changes the value remembered for `key`, if any, keeping its age.
    pub(crate) fn update(&self, key: &K, change: impl FnOnce(&mut V)) {
        if let Some((value, _)) = self.lock().get_mut(key) {
            change(value);
        }
    }

    /// Forgets every entry `forget` picks; `before` runs first, while no
    /// other call can change the memory.
    pub(crate) fn forget_where(&self, before: impl FnOnce(), forget: impl Fn(&K, &V) -> bool) {
        let mut entries = self.lock();
        before();
        entries.retain(|k, (v, _)| !forget(k, v));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_taken_until_it_expires_or_is_forgotten() {
        let memo = Memo::new(Duration::from_millis(200), 10);
        memo.remember("a", 1);
        memo.remember("b", 2);
        assert_eq!(memo.get(&"a"), Some(1));
        memo.forget_where(|| {}, |k, _| *k == "a");
        assert_eq!(memo.get(&"a"), None);
        assert_eq!(memo.get(&"b"), Some(2));
        std::thread::sleep(Duration::from_millis(220));
        assert_eq!(memo.get(&"b"), None);
    }

    #[test]
    fn many_are_taken_and_remembered_under_one_lock() {
        let memo = Memo::new(Duration::from_secs(60), 10);
        memo.remember_each([("a", 1), ("b", 2)]);
        assert_eq!(memo.get_each(&["b", "c", "a"]), [Some(2), None, Some(1)]);
    }

    #[test]
    fn remember_if_keeps_nothing_when_told_no() {
        let memo = Memo::new(Duration::from_secs(60), 10);
        memo.remember_if("a", 1, || false);
        assert_eq!(memo.get(&"a"), None);
    }

    #[test]
    fn update_changes_a_remembered_value_only() {
        let memo = Memo::new(Duration::from_secs(60), 10);
        memo.remember("a", 1);
        memo.update(&"a", |v| *v += 1);
        memo.update(&"b", |v| *v += 1);
        assert_eq!(memo.get(&"a"), Some(2));
        assert_eq!(memo.get(&"b"), None);
    }

    #[test]
    fn the_memory_stays_bounded() {
        let memo = Memo::new(Duration::from_secs(60), 100);
        for i in 0..=100 {
            memo.remember(i, i);
        }
        assert!(memo.len() <= 100);
        assert_eq!(memo.get(&100), Some(100), "the newest entry is kept");
    }
}
