//! The in-memory half of a generation-checked cache: what a process read from Postgres, each
//! entry tagged with the generation (a counter in Redis a commit moves on) read just before
//! that read. The caller reads the current generation and asks for an entry under it; an entry
//! counts only under the generation it was tagged with and while younger than the cache's age
//! limit.

use std::borrow::Borrow;
use std::hash::Hash;
use std::time::{Duration, Instant};

use crate::{Bounded, Figures};

pub struct GenerationCache<K, V> {
    max_age: Duration,
    entries: Bounded<K, Tagged<V>>,
}

#[derive(Clone)]
struct Tagged<V> {
    value: V,
    generation: i64,
    stored_at: Instant,
}

impl<K: Eq + Hash + 'static, V: Clone + 'static> GenerationCache<K, V> {
    /// Entries count for at most `max_age` (zero: the cache keeps nothing); past `max_entries`
    /// or `max_bytes` (each entry weighing what `weigh` says) the least recently used go.
    pub fn new(
        name: &'static str,
        max_age: Duration,
        max_entries: usize,
        max_bytes: u64,
        weigh: fn(&K, &V) -> usize,
    ) -> Self {
        let weigh = move |key: &K, tagged: &Tagged<V>| weigh(key, &tagged.value);
        Self { max_age, entries: Bounded::new(name, max_entries, max_bytes, weigh) }
    }

    /// Whether the cache keeps anything at all.
    pub fn enabled(&self) -> bool {
        !self.max_age.is_zero()
    }

    /// Entries held now (some may be stale).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn figures(&self) -> Figures {
        self.entries.figures()
    }

    /// The value stored under `key`, if it was tagged with `generation` and is young enough
    /// (one that is not is dropped).
    pub fn get<Q>(&self, key: &Q, generation: i64) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        self.entries
            .get_if(key, |tagged| tagged.generation == generation && tagged.stored_at.elapsed() < self.max_age)
            .map(|tagged| tagged.value)
    }

    /// Stores `value`, read from Postgres after `generation` was read.
    pub fn put(&self, key: K, generation: i64, value: V) {
        if !self.enabled() {
            return;
        }
        self.entries.put(key, Tagged { value, generation, stored_at: Instant::now() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_counts_only_under_its_generation_and_while_young() {
        let cache = GenerationCache::new("t", Duration::from_millis(30), 10, 1 << 20, |_, _| 8);
        cache.put("a", 7, 1);
        cache.put("c", 7, 3);
        assert_eq!(cache.get("a", 7), Some(1));
        assert_eq!(cache.get("a", 8), None, "the generation moved since");
        assert_eq!((cache.get("a", 7), cache.len()), (None, 1), "and the stale entry is gone");
        assert_eq!(cache.get("b", 7), None);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(cache.get("c", 7), None, "too old");
    }

    #[test]
    fn a_full_cache_evicts_the_least_recently_used_and_a_zero_age_keeps_nothing() {
        let cache = GenerationCache::new("t", Duration::from_secs(60), 2, 1 << 20, |_, _| 8);
        cache.put(1, 0, "x");
        cache.put(2, 0, "y");
        assert_eq!(cache.get(&1, 0), Some("x"));
        cache.put(3, 0, "z");
        assert_eq!((cache.get(&1, 0), cache.get(&2, 0), cache.get(&3, 0)), (Some("x"), None, Some("z")));
        assert_eq!(cache.figures().evictions, 1);
        let off = GenerationCache::new("t", Duration::ZERO, 2, 1 << 20, |_, _| 8);
        off.put(1, 0, "x");
        assert!(!off.enabled() && off.get(&1, 0).is_none());
    }
}
