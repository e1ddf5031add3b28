//! The in-memory half of a generation-checked cache: what a process read from Postgres, each
//! entry tagged with the [`crate::Generation`] value read just before that read. The caller
//! reads the current generation and asks for an entry under it; an entry counts only under the
//! generation it was tagged with and while younger than the cache's age limit.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

pub struct GenerationCache<K, V> {
    max_age: Duration,
    max_entries: usize,
    entries: Mutex<HashMap<K, Tagged<V>>>,
}

struct Tagged<V> {
    value: V,
    generation: i64,
    stored_at: Instant,
}

impl<K: Eq + Hash, V: Clone> GenerationCache<K, V> {
    /// Entries count for at most `max_age` (zero: the cache keeps nothing); past
    /// `max_entries` the cache starts over (cheap, and rare).
    pub fn new(max_age: Duration, max_entries: usize) -> Self {
        Self { max_age, max_entries, entries: Mutex::new(HashMap::new()) }
    }

    /// Whether the cache keeps anything at all.
    pub fn enabled(&self) -> bool {
        !self.max_age.is_zero()
    }

    /// Entries held now (some may be stale), for the metrics.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, Tagged<V>>> {
        // Entries are replaced whole, so a panicking holder leaves nothing half-written.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value stored under `key`, if it was tagged with `generation` and is young enough.
    pub fn get<Q>(&self, key: &Q, generation: i64) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let entries = self.lock();
        let tagged = entries.get(key)?;
        (tagged.generation == generation && tagged.stored_at.elapsed() < self.max_age).then(|| tagged.value.clone())
    }

    /// Stores `value`, read from Postgres after `generation` was read.
    pub fn put(&self, key: K, generation: i64, value: V) {
        if !self.enabled() {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= self.max_entries {
            entries.clear();
        }
        entries.insert(key, Tagged { value, generation, stored_at: Instant::now() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_counts_only_under_its_generation_and_while_young() {
        let cache = GenerationCache::new(Duration::from_millis(30), 10);
        cache.put("a", 7, 1);
        assert_eq!(cache.get("a", 7), Some(1));
        assert_eq!(cache.get("a", 8), None, "the generation moved since");
        assert_eq!(cache.get("b", 7), None);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(cache.get("a", 7), None, "too old");
    }

    #[test]
    fn a_full_cache_starts_over_and_a_zero_age_keeps_nothing() {
        let cache = GenerationCache::new(Duration::from_secs(60), 2);
        cache.put(1, 0, "x");
        cache.put(2, 0, "y");
        cache.put(3, 0, "z");
        assert_eq!((cache.get(&1, 0), cache.get(&3, 0)), (None, Some("z")));
        let off = GenerationCache::new(Duration::ZERO, 2);
        off.put(1, 0, "x");
        assert!(!off.enabled() && off.get(&1, 0).is_none());
    }
}
