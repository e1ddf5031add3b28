//! Manifest rows this gateway has read, so that a read of an unchanged note needs no Postgres
//! round trip.
//!
//! Freshness comes from the vault's write generation in Redis ([`otc_kv::Generation::Vault`]):
//! every commit moves it on before it is answered, and a row read from Postgres is tagged with
//! the generation read just *before* the Postgres read. A cached row is served only while the
//! generation still reads the same, so a read that starts after a write's response never sees
//! what that write replaced, whichever gateway took the write. (Tagged with the generation
//! before the read, a row can only be older than its tag claims if a commit landed in between,
//! and that commit's bump then makes the tag stale.)
//!
//! When Redis cannot be read, nothing is served from or added to the cache. A commit whose bump
//! failed (Redis lost between its commit and its answer) leaves other gateways' rows valid for
//! at most `tools.file_cache_ms`, the age past which a row is always read again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use otc_kv::{Generation, Kv};
use otc_store::{FileEntry, Store, StoreError};
use uuid::Uuid;

/// Rows kept at most; past it the cache starts over (cheap, and rare).
const MAX_ENTRIES: usize = 100_000;

pub struct FileCache {
    max_age: Duration,
    entries: Mutex<HashMap<(Uuid, Uuid, String), Cached>>,
}

struct Cached {
    entry: Option<FileEntry>,
    generation: i64,
    read_at: Instant,
}

impl FileCache {
    /// A cache trusting a row for at most `max_age` (zero turns it off).
    pub fn new(max_age: Duration) -> Self {
        Self { max_age, entries: Mutex::new(HashMap::new()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Uuid, Uuid, String), Cached>> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The manifest row at `path` (None when nothing is there), as of now.
    pub async fn file(
        &self,
        store: &Store,
        kv: &Kv,
        tenant: Uuid,
        vault: Uuid,
        path: &str,
    ) -> Result<Option<FileEntry>, StoreError> {
        if self.max_age.is_zero() {
            return store.file(tenant, vault, path).await;
        }
        let generation = match kv.generation(Generation::Vault(vault)).await {
            Ok(generation) => generation,
            Err(e) => {
                tracing::debug!(error = %e, "vault generation unreadable; reading the manifest directly");
                return store.file(tenant, vault, path).await;
            }
        };
        let key = (tenant, vault, path.to_string());
        if let Some(cached) = self.lock().get(&key)
            && cached.generation == generation
            && cached.read_at.elapsed() < self.max_age
        {
            return Ok(cached.entry.clone());
        }
        let entry = store.file(tenant, vault, path).await?;
        let mut entries = self.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key, Cached { entry: entry.clone(), generation, read_at: Instant::now() });
        Ok(entry)
    }
}
