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

use std::time::Duration;

use otc_cache::{Figures, GenerationCache};
use otc_kv::{Generation, Kv};
use otc_store::{FileEntry, Store, StoreError};
use uuid::Uuid;

/// Manifest rows (None: nothing at that path) by tenant, vault and path.
pub struct FileCache(GenerationCache<(Uuid, Uuid, String), Option<FileEntry>>);

impl FileCache {
    /// Rows held now.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// What the cache holds and has done.
    pub fn figures(&self) -> Figures {
        self.0.figures()
    }

    /// A cache trusting a row for at most `max_age` (zero turns it off), of at most
    /// `max_bytes` (`caches.files_bytes`), the least recently used rows evicted first.
    pub fn new(max_age: Duration, max_bytes: u64) -> Self {
        let weigh = |key: &(Uuid, Uuid, String), row: &Option<FileEntry>| {
            std::mem::size_of::<(Uuid, Uuid, String)>()
                + 2 * key.2.len()
                + row.as_ref().map_or(0, |_| std::mem::size_of::<FileEntry>())
        };
        Self(GenerationCache::new("files", max_age, usize::MAX, max_bytes, weigh))
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
        if !self.0.enabled() {
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
        if let Some(entry) = self.0.get(&key, generation) {
            return Ok(entry);
        }
        let entry = store.file(tenant, vault, path).await?;
        self.0.put(key, generation, entry.clone());
        Ok(entry)
    }
}
