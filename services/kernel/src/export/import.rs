//! Imports: an export ([`super`]) read back into a tenant, as it streams in. A vault's archive
//! becomes a new vault (its own name, or one given); a tenant's archive becomes a new vault per
//! vault it holds, under their names. Every file is stored and committed (indexed like any
//! commit), each checked against its index page's SHA-256; the tables' rows are inserted with
//! this tenant's and its new vaults' ids. Memory stays at one file, one data chunk and one
//! index page whatever the archive's size.
//!
//! An import that fails part way (a cut or damaged archive, a file that differs from its
//! index, a quota met) leaves nothing: the vaults it made are deleted and erased before it
//! answers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use otc_blobs::Blobs;
use otc_indexer::Indexer;
use otc_kv::Kv;
use otc_store::export::{EXPORTED, Exported};
use otc_store::{Action, Change, Expect, Provenance, Store, StoreError, Vault};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::io::AsyncRead;
use uuid::Uuid;

use super::FORMAT;
use super::tar::{Entry, ReadError, Reader};

/// Files per commit.
const FILES_PER_COMMIT: usize = 200;
/// Content bytes per commit (a batch closes at whichever comes first).
const BYTES_PER_COMMIT: u64 = 64 << 20;
/// The most bytes one data chunk or document of the archive may hold.
const MAX_DOCUMENT_BYTES: u64 = 16 << 20;
/// Rows per insert transaction.
const ROWS_PER_TX: usize = 500;

/// What an import needs of the server.
pub struct Deps<'a> {
    pub store: &'a Store,
    pub blobs: &'a Blobs,
    pub indexer: &'a Indexer,
    pub kv: &'a Arc<Kv>,
    /// The largest file taken (the sync API's upload limit).
    pub max_file_bytes: u64,
}

/// What an import made.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Imported {
    /// The vaults made, by name.
    pub vaults: Vec<String>,
    pub files: u64,
    pub bytes: u64,
    /// Rows inserted per table.
    pub rows: BTreeMap<String, u64>,
    /// Rows left out per table: their ids were taken, or they name a principal or vault this
    /// tenant does not have.
    pub skipped: BTreeMap<String, u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The archive is not one this server made, or it is cut or damaged.
    #[error("{0}")]
    Archive(String),
    /// An entry is larger than the import takes.
    #[error("{path}: {size} bytes, more than the {limit} an import takes for one file")]
    TooLarge { path: String, size: u64, limit: u64 },
    /// A vault of that name is there already (live, or deleted and not erased yet).
    #[error("the tenant already has a vault named {0}")]
    Exists(String),
    #[error("the archive: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Blobs(#[from] otc_blobs::BlobError),
    #[error(transparent)]
    Index(#[from] otc_indexer::IndexError),
}

impl From<ReadError> for ImportError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Io(e) => Self::Io(e),
            ReadError::Malformed(why) => Self::Archive(why),
            ReadError::TooLarge { path, size, limit } => Self::TooLarge { path, size, limit },
        }
    }
}

#[derive(Deserialize)]
struct VaultRef {
    id: Uuid,
    name: String,
}

#[derive(Deserialize)]
struct Manifest {
    format: String,
    /// A vault's archive.
    vault: Option<VaultRef>,
    /// A tenant's archive.
    vaults: Option<Vec<VaultRef>>,
}

/// Where an archive's entries go: the vault each exported vault became.
struct Target {
    /// Old id to the vault made for it.
    by_id: HashMap<Uuid, Vault>,
    /// Old name to the new vault's id, for the tables that name their vault.
    by_name: HashMap<String, Vault>,
    /// Archive prefix (`""` or `vaults/<name>/`) to old id.
    prefixes: Vec<(String, Uuid)>,
}

/// Files read but not committed yet, and those committed since the last index page.
#[derive(Default)]
struct Pending {
    vault: Option<Uuid>,
    changes: Vec<Change>,
    bytes: u64,
    /// Path to SHA-256 (hex) of each file since the last index page, per archive prefix.
    unindexed: HashMap<String, String>,
}

/// Reads `archive` into `tenant`. `name` renames a vault's archive's vault; a tenant's archive
/// keeps its vaults' names.
pub async fn import<R: AsyncRead + Unpin>(
    deps: &Deps<'_>,
    tenant: Uuid,
    archive: R,
    name: Option<&str>,
) -> Result<Imported, ImportError> {
    let mut made = Vec::new();
    let outcome = read_all(deps, tenant, Reader::new(archive), name, &mut made).await;
    if outcome.is_err() {
        for vault in &made {
            if let Err(e) = crate::lifecycle::discard_vault(deps.store, deps.kv, tenant, vault.id).await {
                tracing::error!(%tenant, vault = %vault.id, error = %otc_errors::error_chain(&*e), "an import failed and its vault could not be erased; the erase pass will");
            }
        }
    }
    outcome
}

async fn read_all<R: AsyncRead + Unpin>(
    deps: &Deps<'_>,
    tenant: Uuid,
    mut reader: Reader<R>,
    name: Option<&str>,
    made: &mut Vec<Vault>,
) -> Result<Imported, ImportError> {
    let not_ours = || {
        ImportError::Archive(format!(
            "not an obsidian-tc export ({FORMAT}): it opens with neither manifest.json nor tenant.json"
        ))
    };
    let first = reader.next().await?.ok_or_else(not_ours)?;
    let manifest: Manifest = match first.path.as_str() {
        "manifest.json" | "tenant.json" => document(&mut reader, &first).await?,
        _ => return Err(not_ours()),
    };
    if manifest.format != FORMAT {
        return Err(ImportError::Archive(format!("format {:?}: this server reads {FORMAT}", manifest.format)));
    }
    let exported: Vec<(String, VaultRef)> = match (first.path.as_str(), manifest.vault, manifest.vaults) {
        ("manifest.json", Some(vault), _) => vec![(String::new(), vault)],
        ("tenant.json", _, Some(vaults)) if name.is_none() => {
            vaults.into_iter().map(|v| (format!("vaults/{}/", v.name), v)).collect()
        }
        ("tenant.json", _, Some(_)) => {
            return Err(ImportError::Archive(
                "a tenant's archive imports its vaults under their own names: give no vault name".into(),
            ));
        }
        _ => return Err(ImportError::Archive(format!("{} names no vault", first.path))),
    };
    let mut target = Target { by_id: HashMap::new(), by_name: HashMap::new(), prefixes: Vec::new() };
    let mut imported = Imported::default();
    for (prefix, old) in exported {
        let wanted = name.unwrap_or(&old.name);
        let mut tx = deps.store.begin(tenant).await?;
        let vault = tx.create_vault(wanted).await.map_err(|e| match e {
            StoreError::Conflict { .. } => ImportError::Exists(wanted.to_string()),
            other => other.into(),
        })?;
        tx.commit().await?;
        made.push(vault.clone());
        imported.vaults.push(vault.name.clone());
        target.prefixes.push((prefix, old.id));
        target.by_name.insert(old.name.clone(), vault.clone());
        target.by_name.insert(old.id.to_string(), vault.clone());
        target.by_id.insert(old.id, vault);
    }
    // Longest prefix first, so `vaults/a b/` is not taken for `vaults/a/`.
    target.prefixes.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));

    let mut pending = Pending::default();
    let mut complete = false;
    while let Some(entry) = reader.next().await? {
        if complete {
            return Err(ImportError::Archive(format!("{} comes after END.json", entry.path)));
        }
        if entry.path == "END.json" {
            flush(deps, tenant, &mut pending, &mut imported).await?;
            if !pending.unindexed.is_empty() {
                return Err(ImportError::Archive(format!("{} file(s) are in no index page", pending.unindexed.len())));
            }
            let _: Value = document(&mut reader, &entry).await?;
            complete = true;
            continue;
        }
        if let Some(table) = entry.path.strip_prefix("data/") {
            flush(deps, tenant, &mut pending, &mut imported).await?;
            let table = EXPORTED
                .iter()
                .find(|t| table.strip_prefix(t.table).is_some_and(is_chunk_suffix))
                .ok_or_else(|| ImportError::Archive(format!("{}: not a table an export carries", entry.path)))?;
            let chunk = reader.content(&entry, MAX_DOCUMENT_BYTES).await?;
            rows(deps, tenant, &target, table, &chunk, &mut imported).await?;
            continue;
        }
        let Some((prefix, old)) = target.prefixes.iter().find(|(p, _)| entry.path.starts_with(p.as_str())) else {
            return Err(ImportError::Archive(format!("{}: not part of this archive's vaults", entry.path)));
        };
        let vault = target.by_id[old].id;
        let rest = &entry.path[prefix.len()..];
        if let Some(path) = rest.strip_prefix("files/") {
            let content = reader.content(&entry, deps.max_file_bytes).await?;
            if pending.vault != Some(vault) {
                flush(deps, tenant, &mut pending, &mut imported).await?;
                pending.vault = Some(vault);
            }
            let hash: [u8; 32] = Sha256::digest(&content).into();
            pending.unindexed.insert(format!("{prefix}{path}"), hex::encode(hash));
            let size = content.len() as u64;
            let mut tx = deps.store.begin(tenant).await?;
            tx.record_blob(&hash, size as i64).await?;
            tx.commit().await?;
            deps.blobs.put_blob(tenant, &hash, bytes::Bytes::from(content)).await?;
            let mtime = DateTime::<Utc>::from_timestamp(entry.mtime, 0).unwrap_or_else(Utc::now);
            pending.changes.push(Change {
                path: path.to_string(),
                expect: Expect::Absent,
                action: Action::Put { hash, size: size as i64, mtime },
            });
            pending.bytes += size;
            if pending.changes.len() >= FILES_PER_COMMIT || pending.bytes >= BYTES_PER_COMMIT {
                flush(deps, tenant, &mut pending, &mut imported).await?;
            }
        } else if rest.starts_with("index/") {
            let page = reader.content(&entry, MAX_DOCUMENT_BYTES).await?;
            check_index(prefix, &entry, &page, &mut pending)?;
        } else {
            return Err(ImportError::Archive(format!("{}: not an entry an export writes", entry.path)));
        }
    }
    if !complete {
        return Err(ImportError::Archive("the archive stops short: it has no END.json".into()));
    }
    Ok(imported)
}

/// `-NNNNNN.jsonl`
fn is_chunk_suffix(rest: &str) -> bool {
    rest.strip_prefix('-')
        .and_then(|r| r.strip_suffix(".jsonl"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A small JSON document of the archive.
async fn document<T: serde::de::DeserializeOwned, R: AsyncRead + Unpin>(
    reader: &mut Reader<R>,
    entry: &Entry,
) -> Result<T, ImportError> {
    let bytes = reader.content(entry, MAX_DOCUMENT_BYTES).await?;
    serde_json::from_slice(&bytes).map_err(|e| ImportError::Archive(format!("{}: {e}", entry.path)))
}

/// Every file since the last page must be on this page, with the same SHA-256, and the page
/// must name no file the archive did not hold.
fn check_index(prefix: &str, entry: &Entry, page: &[u8], pending: &mut Pending) -> Result<(), ImportError> {
    #[derive(Deserialize)]
    struct Line {
        path: String,
        sha256: String,
    }
    for line in page.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let line: Line =
            serde_json::from_slice(line).map_err(|e| ImportError::Archive(format!("{}: {e}", entry.path)))?;
        match pending.unindexed.remove(&format!("{prefix}{}", line.path)) {
            Some(hash) if hash == line.sha256 => {}
            Some(_) => {
                return Err(ImportError::Archive(format!(
                    "{}: the content differs from its SHA-256 in the index",
                    line.path
                )));
            }
            None => return Err(ImportError::Archive(format!("{}: in the index but not in the archive", line.path))),
        }
    }
    if let Some(path) = pending.unindexed.keys().find(|p| p.starts_with(prefix)) {
        return Err(ImportError::Archive(format!("{path}: in the archive but not in its index page")));
    }
    Ok(())
}

/// Commits the files read so far.
async fn flush(
    deps: &Deps<'_>,
    tenant: Uuid,
    pending: &mut Pending,
    imported: &mut Imported,
) -> Result<(), ImportError> {
    let (Some(vault), false) = (pending.vault, pending.changes.is_empty()) else { return Ok(()) };
    let who = Provenance {
        principal_id: None,
        tool: Some("import".into()),
        client_name: None,
        client_model: None,
        origin: None,
        client_tool: None,
        token_id: None,
    };
    let tx = deps.store.begin(tenant).await?;
    let changes = std::mem::take(&mut pending.changes);
    let outcome =
        otc_indexer::commit::commit_with_jobs(deps.indexer, deps.kv, tx, vault, &changes, &who, None, Vec::new())
            .await?;
    if let Err(stale) = outcome {
        return Err(ImportError::Archive(format!("the archive names {} path(s) twice", stale.paths.len().max(1))));
    }
    imported.files += changes.len() as u64;
    imported.bytes += pending.bytes;
    pending.bytes = 0;
    Ok(())
}

/// A data chunk's rows, given this tenant's and its new vaults' ids.
async fn rows(
    deps: &Deps<'_>,
    tenant: Uuid,
    target: &Target,
    table: &Exported,
    chunk: &[u8],
    imported: &mut Imported,
) -> Result<(), ImportError> {
    let mut batch = Vec::new();
    let mut left_out = 0;
    for line in chunk.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let mut row: serde_json::Map<String, Value> = serde_json::from_slice(line)
            .map_err(|e| ImportError::Archive(format!("data/{}: a row is not a JSON object: {e}", table.table)))?;
        row.insert("tenant_id".into(), Value::String(tenant.to_string()));
        if let Some(old) = row.get("vault_id").and_then(Value::as_str) {
            match Uuid::parse_str(old).ok().and_then(|id| target.by_id.get(&id)) {
                Some(vault) => row.insert("vault_id".into(), Value::String(vault.id.to_string())),
                // A row of a vault the archive does not hold (one deleted before the export).
                None => {
                    left_out += 1;
                    continue;
                }
            };
        }
        // The tables that name their vault keep naming it, by its new name.
        if let Some(old) = row.get("vault").and_then(Value::as_str)
            && let Some(vault) = target.by_name.get(old)
        {
            row.insert("vault".into(), Value::String(vault.name.clone()));
        }
        batch.push(Value::Object(row));
        if batch.len() >= ROWS_PER_TX {
            insert(deps, tenant, table, &mut batch, imported).await?;
        }
    }
    insert(deps, tenant, table, &mut batch, imported).await?;
    if left_out > 0 {
        *imported.skipped.entry(table.table.to_string()).or_default() += left_out;
    }
    Ok(())
}

async fn insert(
    deps: &Deps<'_>,
    tenant: Uuid,
    table: &Exported,
    batch: &mut Vec<Value>,
    imported: &mut Imported,
) -> Result<(), ImportError> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut tx = deps.store.begin(tenant).await?;
    let done = tx.import_rows(table, batch).await?;
    tx.commit().await?;
    batch.clear();
    *imported.rows.entry(table.table.to_string()).or_default() += done.inserted;
    if done.skipped > 0 {
        *imported.skipped.entry(table.table.to_string()).or_default() += done.skipped;
    }
    Ok(())
}
