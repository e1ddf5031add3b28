//! The in-process caches' one building block: a map bounded by its entries and by the bytes its
//! values weigh, evicting the least recently used first, and counting what it does (entries,
//! bytes, hits, misses, evictions) for `/metrics`. Every cache a gateway keeps is one of these,
//! so each has a configured bound and gives memory back.

mod generation;

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, PoisonError};

use hashlink::LinkedHashMap;

pub use generation::GenerationCache;

/// What a cache holds and has done, as `/metrics` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    pub name: &'static str,
    pub entries: u64,
    pub bytes: u64,
    /// The bytes it may hold.
    pub max_bytes: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
}

/// A least-recently-used map of at most `max_entries` entries and `max_bytes` bytes (each entry
/// weighing what `weigh` says, plus its key's share). An entry heavier than the whole budget
/// is not kept.
pub struct Bounded<K, V> {
    name: &'static str,
    max_entries: usize,
    max_bytes: usize,
    weigh: Box<dyn Fn(&K, &V) -> usize + Send + Sync>,
    inner: Mutex<Inner<K, V>>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

struct Inner<K, V> {
    map: LinkedHashMap<K, (V, usize)>,
    bytes: usize,
}

/// What one entry costs beyond its value: the map's slot and links.
const ENTRY_OVERHEAD: usize = 64;

impl<K: Eq + Hash, V: Clone> Bounded<K, V> {
    pub fn new(
        name: &'static str,
        max_entries: usize,
        max_bytes: u64,
        weigh: impl Fn(&K, &V) -> usize + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            max_entries,
            // A bound past what this machine can address is no bound.
            max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
            weigh: Box::new(weigh),
            inner: Mutex::new(Inner { map: LinkedHashMap::new(), bytes: 0 }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<K, V>> {
        // Entries are replaced whole, so a panicking holder leaves nothing half-written.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value under `key`, made the most recently used; counted as a hit or a miss.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let found = self.lock().map.to_back(key).map(|(value, _)| value.clone());
        match found {
            Some(_) => self.hits.fetch_add(1, Relaxed),
            None => self.misses.fetch_add(1, Relaxed),
        };
        found
    }

    /// The value under `key` if `keep` accepts it; one it refuses is removed (a miss).
    pub fn get_if<Q>(&self, key: &Q, keep: impl FnOnce(&V) -> bool) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let mut inner = self.lock();
        let found = match inner.map.to_back(key) {
            Some((value, _)) if keep(value) => Some(value.clone()),
            Some(_) => {
                if let Some((_, weight)) = inner.map.remove(key) {
                    inner.bytes -= weight;
                }
                None
            }
            None => None,
        };
        drop(inner);
        match found {
            Some(_) => self.hits.fetch_add(1, Relaxed),
            None => self.misses.fetch_add(1, Relaxed),
        };
        found
    }

    /// Stores `value` under `key` as the most recently used, evicting the least recently used
    /// entries until the cache is within its bounds again.
    pub fn put(&self, key: K, value: V) {
        let weight = (self.weigh)(&key, &value) + ENTRY_OVERHEAD;
        let mut inner = self.lock();
        if weight > self.max_bytes || self.max_entries == 0 {
            if let Some((_, old)) = inner.map.remove(&key) {
                inner.bytes -= old;
            }
            return;
        }
        inner.bytes += weight;
        if let Some((_, old)) = inner.map.insert(key, (value, weight)) {
            inner.bytes -= old;
        }
        let mut evicted = 0;
        while inner.bytes > self.max_bytes || inner.map.len() > self.max_entries {
            let Some((_, (_, gone))) = inner.map.pop_front() else { break };
            inner.bytes -= gone;
            evicted += 1;
        }
        drop(inner);
        if evicted > 0 {
            self.evictions.fetch_add(evicted, Relaxed);
        }
    }

    pub fn remove<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let mut inner = self.lock();
        if let Some((_, weight)) = inner.map.remove(key) {
            inner.bytes -= weight;
        }
    }

    /// Keeps only the entries `keep` accepts.
    pub fn retain(&self, mut keep: impl FnMut(&K, &V) -> bool) {
        let mut inner = self.lock();
        let mut freed = 0;
        inner.map.retain(|k, (v, weight)| {
            let kept = keep(k, v);
            if !kept {
                freed += *weight;
            }
            kept
        });
        inner.bytes -= freed;
    }

    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn figures(&self) -> Figures {
        let (entries, bytes) = {
            let inner = self.lock();
            (inner.map.len() as u64, inner.bytes as u64)
        };
        Figures {
            name: self.name,
            entries,
            bytes,
            max_bytes: self.max_bytes as u64,
            hits: self.hits.load(Relaxed),
            misses: self.misses.load(Relaxed),
            evictions: self.evictions.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weigh(_: &u32, v: &Vec<u8>) -> usize {
        v.len()
    }

    #[test]
    fn the_least_recently_used_goes_first_when_the_bytes_run_out() {
        let cache = Bounded::new("t", 100, 3 * (100 + ENTRY_OVERHEAD) as u64, weigh);
        for k in 0..3 {
            cache.put(k, vec![0; 100]);
        }
        assert!(cache.get(&0).is_some(), "0 is now the most recent");
        cache.put(3, vec![0; 100]);
        assert!(cache.get(&1).is_none(), "1 was the least recently used");
        assert!(cache.get(&0).is_some() && cache.get(&2).is_some() && cache.get(&3).is_some());
        let f = cache.figures();
        assert_eq!((f.entries, f.bytes, f.evictions), (3, 3 * (100 + ENTRY_OVERHEAD as u64), 1));
        assert_eq!((f.hits, f.misses), (4, 1));
    }

    #[test]
    fn entries_are_bounded_too_and_an_entry_over_the_budget_is_not_kept() {
        let cache = Bounded::new("t", 2, 1 << 20, weigh);
        for k in 0..5 {
            cache.put(k, vec![1]);
        }
        assert_eq!(cache.len(), 2);
        cache.put(9, vec![0; 2 << 20]);
        assert!(cache.get(&9).is_none());
        cache.put(4, vec![0; 10]);
        cache.retain(|k, _| *k != 4);
        let f = cache.figures();
        assert_eq!((f.entries, f.bytes), (1, (1 + ENTRY_OVERHEAD) as u64), "replacing and removing keep the count");
        assert!(cache.get_if(&3, |v| v.len() == 2).is_none(), "refused");
        assert!(cache.is_empty(), "and removed");
    }
}
