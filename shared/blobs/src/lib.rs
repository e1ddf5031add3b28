//! The object store: S3 or a local directory behind one trait (`object_store`), with every key
//! under a configured prefix. Issue-by-issue this grows into the content-addressed blob store;
//! for now it knows how to connect and how to prove it works.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, PutPayload, RetryConfig};
use otc_config::{ObjectStoreConfig, ObjectStoreKind};
use sha2::{Digest, Sha256};
use uuid::Uuid;

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("bad object store configuration: {0}")]
    Config(String),
    #[error("object store unavailable")]
    Unavailable(#[source] object_store::Error),
    #[error("object store round trip returned other bytes than were written")]
    Corrupt,
    #[error("the bytes hash to {actual}, not {expected}")]
    HashMismatch { expected: String, actual: String },
    #[error("blob not found")]
    NotFound,
    #[error("the upload is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("the upload's body could not be read: {0}")]
    Body(String),
}

pub type Result<T, E = BlobError> = std::result::Result<T, E>;

/// An object store failure inside a call, its whole chain logged (under the call's span):
/// `service_unavailable` naming the object store when it could not be reached, else
/// `internal_error` (a blob the manifest names but the store lacks is the server's fault).
impl From<BlobError> for otc_errors::ToolError {
    fn from(err: BlobError) -> Self {
        use otc_errors::{ErrorCode, ToolError};
        tracing::error!(error = %otc_errors::error_chain(&err), "object store failed");
        match err {
            BlobError::Unavailable(_) => {
                ToolError::with_message(ErrorCode::ServiceUnavailable, "the object store is unavailable")
                    .detail("dependency", "object_store")
            }
            _ => ToolError::new(ErrorCode::InternalError),
        }
    }
}

/// A plain object found under a reconcile prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainObject {
    pub path: String,
    pub size: i64,
    pub modified: chrono::DateTime<chrono::Utc>,
    pub e_tag: Option<String>,
}

/// The configured object store, rooted at the configured prefix.
#[derive(Clone)]
pub struct Blobs {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    describe: String,
    cache: Arc<otc_cache::Bounded<(Uuid, [u8; 32]), Bytes>>,
}

/// The part size of a streamed upload (S3 wants at least 5 MiB for every part but the last).
pub const PART_BYTES: usize = 8 * 1024 * 1024;
/// Parts of one streamed upload in flight at once.
const PARTS_IN_FLIGHT: usize = 2;

/// Blobs up to this size are kept in memory once read.
const CACHE_ITEM_MAX: usize = 256 * 1024;
/// The memory the cache holds unless told otherwise ([`Blobs::with_cache_bytes`]).
const CACHE_LIMIT: u64 = 64 * 1024 * 1024;

/// Recently read blobs by (tenant, hash), the least recently used evicted first. Blobs are
/// content-addressed, so a cached copy is never stale; the tenant is part of the key, so one
/// tenant's read never serves another's.
fn cache(bytes: u64) -> Arc<otc_cache::Bounded<(Uuid, [u8; 32]), Bytes>> {
    Arc::new(otc_cache::Bounded::new("blobs", usize::MAX, bytes, |_, value: &Bytes| value.len()))
}

impl std::fmt::Debug for Blobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe)
    }
}

impl Blobs {
    /// Builds the client. No request is made; a local root directory is created if missing.
    pub fn from_config(config: &ObjectStoreConfig, timeout: Duration) -> Result<Self> {
        let prefix = config.prefix.trim_matches('/').to_string();
        let (store, describe): (Arc<dyn ObjectStore>, String) = match config.kind {
            ObjectStoreKind::Local => {
                std::fs::create_dir_all(&config.path)
                    .map_err(|e| BlobError::Config(format!("object_store.path {}: {e}", config.path.display())))?;
                let fs = LocalFileSystem::new_with_prefix(&config.path)
                    .map_err(|e| BlobError::Config(format!("object_store.path: {e}")))?;
                (Arc::new(fs), format!("local directory {}", config.path.display()))
            }
            ObjectStoreKind::S3 => {
                let mut builder = AmazonS3Builder::new()
                    .with_bucket_name(&config.bucket)
                    .with_region(&config.region)
                    .with_allow_http(config.allow_http)
                    .with_client_options(
                        ClientOptions::new()
                            .with_timeout(timeout)
                            .with_connect_timeout(timeout)
                            .with_allow_http(config.allow_http),
                    )
                    .with_retry(RetryConfig { max_retries: 2, retry_timeout: timeout, ..RetryConfig::default() });
                if let Some(endpoint) = &config.endpoint {
                    builder = builder.with_endpoint(endpoint).with_virtual_hosted_style_request(false);
                }
                if let Some(key) = &config.access_key_id {
                    builder = builder.with_access_key_id(key);
                }
                if let Some(secret) = &config.secret_access_key {
                    builder = builder.with_secret_access_key(secret.expose());
                }
                let s3 = builder.build().map_err(|e| BlobError::Config(e.to_string()))?;
                let at = config.endpoint.as_deref().unwrap_or("AWS");
                (Arc::new(s3), format!("S3 bucket {} at {at}", config.bucket))
            }
        };
        Ok(Self { store, prefix, describe, cache: cache(CACHE_LIMIT) })
    }

    /// Where the store is, for messages (no secrets).
    pub fn describe(&self) -> &str {
        &self.describe
    }

    fn path(&self, key: &str) -> Path {
        if self.prefix.is_empty() { Path::from(key) } else { Path::from(format!("{}/{key}", self.prefix)) }
    }

    /// Where a plain object under `prefix` lives. Its key is the vault path as it is, not
    /// percent-encoded the way `Path::from` encodes `? * # [ ] % ~ ^ |` and more: an outside tool
    /// writes `C# notes.md` or `What?.md` under that very key, and a listed key reads back.
    fn plain_path(&self, prefix: &str, path: &str) -> Result<Path> {
        let key = format!("{}/{path}", prefix.trim_matches('/'));
        let full = if self.prefix.is_empty() { key } else { format!("{}/{key}", self.prefix) };
        Path::parse(full).map_err(|source| BlobError::Unavailable(object_store::Error::InvalidPath { source }))
    }

    /// Where a tenant's blob lives: `<prefix>/t/<tenant>/blobs/<aa>/<hash hex>`.
    fn blob_path(&self, tenant: Uuid, hash: &[u8; 32]) -> Path {
        let hex = hex::encode(hash);
        self.path(&format!("t/{}/blobs/{}/{hex}", tenant.simple(), &hex[..2]))
    }

    /// SHA-256 of `bytes`.
    pub fn hash_of(bytes: &[u8]) -> [u8; 32] {
        Sha256::digest(bytes).into()
    }

    /// Stores `bytes` as the tenant's blob `expected`, after checking they hash to it. Storing
    /// a blob that is already there is harmless: the same key always holds the same bytes.
    pub async fn put_blob(&self, tenant: Uuid, expected: &[u8; 32], bytes: Bytes) -> Result<()> {
        let actual = Self::hash_of(&bytes);
        if &actual != expected {
            return Err(BlobError::HashMismatch { expected: hex::encode(expected), actual: hex::encode(actual) });
        }
        let path = self.blob_path(tenant, expected);
        self.store.put(&path, PutPayload::from(bytes)).await.map_err(BlobError::Unavailable)?;
        Ok(())
    }

    /// Stores what `body` yields as the tenant's blob `expected`, never holding more than
    /// [`PART_BYTES`] times ([`PARTS_IN_FLIGHT`] + 1) of it: a blob that ends within the first
    /// part goes up with one put, a larger one as a multipart upload whose parts leave as they
    /// fill. The hash is checked before the object is completed, so bytes that do not hash to
    /// `expected` are never visible (the upload is aborted); more than `limit` bytes abort it
    /// as soon as they arrive. Answers the size.
    pub async fn put_blob_stream<S, E>(&self, tenant: Uuid, expected: &[u8; 32], mut body: S, limit: u64) -> Result<u64>
    where
        S: futures::Stream<Item = std::result::Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        use futures::StreamExt;
        let mut hasher = Sha256::new();
        let mut size: u64 = 0;
        let mut first = Vec::new();
        let mut upload: Option<object_store::WriteMultipart> = None;
        let path = self.blob_path(tenant, expected);
        let outcome: Result<()> = async {
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| BlobError::Body(e.to_string()))?;
                size += chunk.len() as u64;
                if size > limit {
                    return Err(BlobError::TooLarge { limit });
                }
                hasher.update(&chunk);
                match upload.as_mut() {
                    Some(writer) => {
                        writer.wait_for_capacity(PARTS_IN_FLIGHT).await.map_err(BlobError::Unavailable)?;
                        writer.put(chunk);
                    }
                    None if first.len() + chunk.len() <= PART_BYTES => first.extend_from_slice(&chunk),
                    None => {
                        let started = self.store.put_multipart(&path).await.map_err(BlobError::Unavailable)?;
                        let mut writer = object_store::WriteMultipart::new_with_chunk_size(started, PART_BYTES);
                        writer.put(Bytes::from(std::mem::take(&mut first)));
                        writer.put(chunk);
                        upload = Some(writer);
                    }
                }
            }
            Ok(())
        }
        .await;
        let actual: [u8; 32] = hasher.finalize().into();
        let outcome = outcome.and_then(|()| {
            if &actual == expected {
                Ok(())
            } else {
                Err(BlobError::HashMismatch { expected: hex::encode(expected), actual: hex::encode(actual) })
            }
        });
        match (outcome, upload) {
            (Ok(()), Some(writer)) => {
                writer.finish().await.map_err(BlobError::Unavailable)?;
            }
            (Ok(()), None) => {
                self.store.put(&path, PutPayload::from(first)).await.map_err(BlobError::Unavailable)?;
            }
            (Err(e), writer) => {
                if let Some(writer) = writer {
                    // Should the abort fail too, the store's own lifecycle rules drop the parts;
                    // either way nothing was completed, so nothing shows.
                    let _ = writer.abort().await;
                }
                return Err(e);
            }
        }
        Ok(size)
    }

    /// This store with a blob cache of at most `bytes` (`caches.blobs_bytes`).
    pub fn with_cache_bytes(mut self, bytes: u64) -> Self {
        self.cache = cache(bytes);
        self
    }

    /// What the blob cache holds and has done.
    pub fn cache_figures(&self) -> otc_cache::Figures {
        self.cache.figures()
    }

    /// The bytes of one of the tenant's blobs (small ones from memory once read).
    pub async fn get_blob(&self, tenant: Uuid, hash: &[u8; 32]) -> Result<Bytes> {
        let key = (tenant, *hash);
        if let Some(bytes) = self.cache.get(&key) {
            return Ok(bytes);
        }
        let path = self.blob_path(tenant, hash);
        let bytes = match self.store.get(&path).await {
            Ok(got) => got.bytes().await.map_err(BlobError::Unavailable)?,
            Err(object_store::Error::NotFound { .. }) => return Err(BlobError::NotFound),
            Err(e) => return Err(BlobError::Unavailable(e)),
        };
        if bytes.len() <= CACHE_ITEM_MAX {
            self.cache.put(key, bytes.clone());
        }
        Ok(bytes)
    }

    /// The bytes `range` of one of the tenant's blobs (the range ends at the blob's end at
    /// most), read from the store without the rest.
    pub async fn get_blob_range(&self, tenant: Uuid, hash: &[u8; 32], range: std::ops::Range<u64>) -> Result<Bytes> {
        let key = (tenant, *hash);
        if let Some(bytes) = self.cache.get(&key) {
            let len = bytes.len() as u64;
            return Ok(bytes.slice(range.start.min(len) as usize..range.end.min(len) as usize));
        }
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        let path = self.blob_path(tenant, hash);
        let options =
            object_store::GetOptions { range: Some(object_store::GetRange::Bounded(range)), ..Default::default() };
        match self.store.get_opts(&path, options).await {
            Ok(got) => got.bytes().await.map_err(BlobError::Unavailable),
            Err(object_store::Error::NotFound { .. }) => Err(BlobError::NotFound),
            Err(e) => Err(BlobError::Unavailable(e)),
        }
    }

    /// Removes one of the tenant's blobs (garbage collection); a missing blob is not an error.
    pub async fn delete_blob(&self, tenant: Uuid, hash: &[u8; 32]) -> Result<()> {
        self.cache.remove(&(tenant, *hash));
        match self.store.delete(&self.blob_path(tenant, hash)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(BlobError::Unavailable(e)),
        }
    }

    /// Deletes every object of the tenant (`<prefix>/t/<tenant>/`), listing and deleting as it
    /// goes (bounded memory however many there are), and drops its cached blobs. Answers how
    /// many objects it deleted.
    pub async fn erase_tenant(&self, tenant: Uuid) -> Result<u64> {
        use futures::StreamExt;
        let root = self.path(&format!("t/{}", tenant.simple()));
        let mut listed = self.store.list(Some(&root));
        let mut deleted = 0u64;
        while let Some(meta) = listed.next().await {
            let meta = meta.map_err(BlobError::Unavailable)?;
            match self.store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => deleted += 1,
                Err(e) => return Err(BlobError::Unavailable(e)),
            }
        }
        self.cache.retain(|(owner, _), _| *owner != tenant);
        Ok(deleted)
    }

    /// Plain objects (written by an outside sync tool) under `prefix`: (path below the prefix,
    /// size, last modified, e-tag).
    pub async fn list_plain(&self, prefix: &str) -> Result<Vec<PlainObject>> {
        use futures::TryStreamExt;
        let root = self.path(prefix.trim_matches('/'));
        let listed: Vec<object_store::ObjectMeta> =
            self.store.list(Some(&root)).try_collect().await.map_err(BlobError::Unavailable)?;
        let base = format!("{}/", root.as_ref());
        Ok(listed
            .into_iter()
            .filter_map(|meta| {
                let path = meta.location.as_ref().strip_prefix(&base)?.to_string();
                Some(PlainObject { path, size: meta.size as i64, modified: meta.last_modified, e_tag: meta.e_tag })
            })
            .collect())
    }

    /// The bytes of a plain object under `prefix`.
    pub async fn get_plain(&self, prefix: &str, path: &str) -> Result<Bytes> {
        let location = self.plain_path(prefix, path)?;
        match self.store.get(&location).await {
            Ok(got) => got.bytes().await.map_err(BlobError::Unavailable),
            Err(object_store::Error::NotFound { .. }) => Err(BlobError::NotFound),
            Err(e) => Err(BlobError::Unavailable(e)),
        }
    }

    /// Writes a plain object under `prefix`, as an outside sync tool would.
    pub async fn put_plain(&self, prefix: &str, path: &str, bytes: Bytes) -> Result<()> {
        let location = self.plain_path(prefix, path)?;
        self.store.put(&location, PutPayload::from(bytes)).await.map_err(BlobError::Unavailable)?;
        Ok(())
    }

    /// Deletes a plain object under `prefix`.
    pub async fn delete_plain(&self, prefix: &str, path: &str) -> Result<()> {
        let location = self.plain_path(prefix, path)?;
        match self.store.delete(&location).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(BlobError::Unavailable(e)),
        }
    }

    /// A cheap read that proves the store is reachable and the credentials work.
    pub async fn check(&self) -> Result<()> {
        let prefix = self.path("_health");
        self.store.list_with_delimiter(Some(&prefix)).await.map_err(BlobError::Unavailable)?;
        Ok(())
    }

    /// Writes, reads back and deletes a small object: proves read, write and delete access.
    pub async fn round_trip(&self) -> Result<()> {
        let path = self.path(&format!("_health/doctor-{}", std::process::id()));
        let body = Bytes::from_static(b"obsidian-tc doctor");
        self.store.put(&path, PutPayload::from(body.clone())).await.map_err(BlobError::Unavailable)?;
        let read = self.store.get(&path).await.map_err(BlobError::Unavailable)?;
        let read = read.bytes().await.map_err(BlobError::Unavailable)?;
        self.store.delete(&path).await.map_err(BlobError::Unavailable)?;
        if read != body {
            return Err(BlobError::Corrupt);
        }
        Ok(())
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;

    #[test]
    fn the_cache_keeps_its_limit_and_separates_tenants() {
        let blobs = Blobs::from_config(
            &ObjectStoreConfig {
                kind: ObjectStoreKind::Local,
                path: std::env::temp_dir().join("otc-blobs-cache-test"),
                ..Default::default()
            },
            Duration::from_secs(1),
        )
        .unwrap()
        .with_cache_bytes(1 << 20);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        blobs.cache.put((a, [1; 32]), Bytes::from_static(b"one"));
        assert!(blobs.cache.get(&(b, [1; 32])).is_none(), "another tenant's key misses");
        for i in 0..300u32 {
            let mut key = [0u8; 32];
            key[..4].copy_from_slice(&i.to_be_bytes());
            blobs.cache.put((b, key), Bytes::from(vec![0u8; 64 << 10]));
        }
        let figures = blobs.cache_figures();
        assert!(figures.bytes <= 1 << 20 && figures.evictions > 0, "{figures:?}");
        assert!(blobs.cache.get(&(a, [1; 32])).is_none(), "the least recently used went first");
    }
}
