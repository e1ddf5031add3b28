//! Exports: one vault, or the whole tenant, as a tar archive made as it is read (a bounded
//! channel of byte chunks: the reader's pace holds the writer back, and memory stays at a
//! page of the manifest and one file whatever the size). A vault's archive holds:
//!
//! - `manifest.json`: the format, the tenant and vault, when, and the change-log head the
//!   export began at;
//! - `files/<path>`: every file as stored, its mtime kept;
//! - `index/files-NNNNNN.jsonl`: per page of files, each file's path, size, mtime and SHA-256;
//! - `data/<table>-NNNNNN.jsonl`: the rows the tenant made and cannot rebuild (folder ACLs,
//!   memory, captures, work sessions, goals, episodes, the audit trail), as JSON, a chunk of at
//!   most a megabyte each;
//! - `END.json`: the counts, written last, so a cut archive is known by its absence.
//!
//! A tenant's archive holds `tenant.json`, each live vault's files and index under
//! `vaults/<name>/`, the tenant's tables whole under `data/`, and `END.json`.

pub mod import;
pub mod tar;

use std::collections::BTreeMap;

use bytes::Bytes;
use chrono::Utc;
use otc_blobs::Blobs;
use otc_store::export::{EXPORTED, Exported};
use otc_store::{Store, Vault};
use serde_json::json;
use tokio::sync::mpsc;
use uuid::Uuid;

/// What the archives say they are.
pub const FORMAT: &str = "obsidian-tc-export/1";
/// Files per manifest page (and per index chunk).
const FILES_PER_PAGE: i64 = 500;
/// The most bytes of rows one data chunk holds (one row may make it larger).
const DATA_CHUNK_BYTES: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Store(#[from] otc_store::StoreError),
    #[error(transparent)]
    Blobs(#[from] otc_blobs::BlobError),
    /// The reader stopped reading (a client that hung up).
    #[error("the export's reader went away")]
    Closed,
}

/// A chunk of an archive, or why the archive stops short (its reader must not take what came
/// before for a whole archive: a response is aborted, a file left marked incomplete).
pub type Chunk = Result<Bytes, String>;

/// Where an archive goes: a bounded channel of chunks.
pub struct Sink(mpsc::Sender<Chunk>);

impl Sink {
    /// A sink and the chunks it hands on, at most `depth` waiting.
    pub fn new(depth: usize) -> (Self, mpsc::Receiver<Chunk>) {
        let (tx, rx) = mpsc::channel(depth.max(1));
        (Self(tx), rx)
    }

    /// Tells the reader the archive stops short, and why.
    pub async fn fail(&self, why: String) {
        let _ = self.0.send(Err(why)).await;
    }

    async fn send(&self, bytes: Bytes) -> Result<(), ExportError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.0.send(Ok(bytes)).await.map_err(|_| ExportError::Closed)
    }

    /// One file entry of the archive.
    async fn entry(&self, path: &str, mtime: i64, content: Bytes) -> Result<(), ExportError> {
        let size = content.len() as u64;
        self.send(tar::file_header(path, size, mtime)).await?;
        self.send(content).await?;
        self.send(tar::padding(size)).await
    }

    async fn json(&self, path: &str, value: &serde_json::Value) -> Result<(), ExportError> {
        let text = serde_json::to_vec_pretty(value).expect("JSON serializes");
        self.entry(path, Utc::now().timestamp(), Bytes::from(text)).await
    }
}

/// What an export carried.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Carried {
    pub files: u64,
    pub bytes: u64,
    /// Rows per table.
    pub rows: BTreeMap<String, u64>,
}

/// Exports `vault` of `tenant` whole into `out` as its own archive.
pub async fn export_vault(
    store: &Store,
    blobs: &Blobs,
    tenant: Uuid,
    vault: &Vault,
    out: &Sink,
) -> Result<Carried, ExportError> {
    let mut tx = store.begin(tenant).await?;
    let head = tx.head_seq(vault.id).await?;
    tx.commit().await?;
    out.json(
        "manifest.json",
        &json!({"format": FORMAT, "tenant": tenant, "vault": {"id": vault.id, "name": vault.name},
                "exported_at": Utc::now(), "change_log_head": head}),
    )
    .await?;
    let mut carried = Carried::default();
    files(store, blobs, tenant, vault, "", out, &mut carried).await?;
    tables(store, tenant, Some(vault.id), "", out, &mut carried).await?;
    out.json("END.json", &json!({"complete": true, "carried": carried})).await?;
    out.send(tar::end()).await?;
    Ok(carried)
}

/// Exports the whole tenant into `out`: every live vault's files and the tenant's tables.
pub async fn export_tenant(store: &Store, blobs: &Blobs, tenant: Uuid, out: &Sink) -> Result<Carried, ExportError> {
    let mut tx = store.begin(tenant).await?;
    let about = tx.tenant().await?;
    let vaults = tx.list_vaults().await?;
    let mut heads = Vec::new();
    for vault in &vaults {
        heads.push(json!({"id": vault.id, "name": vault.name, "change_log_head": tx.head_seq(vault.id).await?}));
    }
    tx.commit().await?;
    out.json(
        "tenant.json",
        &json!({"format": FORMAT, "tenant": about.map(|t| json!({"id": t.id, "slug": t.slug, "name": t.name})),
                "exported_at": Utc::now(), "vaults": heads}),
    )
    .await?;
    let mut carried = Carried::default();
    for vault in &vaults {
        files(store, blobs, tenant, vault, &format!("vaults/{}/", vault.name), out, &mut carried).await?;
    }
    tables(store, tenant, None, "", out, &mut carried).await?;
    out.json("END.json", &json!({"complete": true, "carried": carried})).await?;
    out.send(tar::end()).await?;
    Ok(carried)
}

/// Every file of `vault` under `prefix`files/, with an index chunk per page.
async fn files(
    store: &Store,
    blobs: &Blobs,
    tenant: Uuid,
    vault: &Vault,
    prefix: &str,
    out: &Sink,
    carried: &mut Carried,
) -> Result<(), ExportError> {
    // Every path: the export is the tenant's own copy, hidden folders and all.
    let everything = otc_store::Visible { hidden: "^$", readable: None };
    let mut after: Option<String> = None;
    let mut page_number = 0;
    loop {
        let mut tx = store.begin(tenant).await?;
        let page = tx.visible_files(vault.id, after.as_deref(), FILES_PER_PAGE, everything).await?;
        tx.commit().await?;
        if page.is_empty() {
            return Ok(());
        }
        page_number += 1;
        let mut index = Vec::new();
        for file in &page {
            let content = blobs.get_blob(tenant, &file.hash).await?;
            let mtime = file.mtime.timestamp();
            out.entry(&format!("{prefix}files/{}", file.path), mtime, content).await?;
            carried.files += 1;
            carried.bytes += file.size.max(0) as u64;
            let line =
                json!({"path": file.path, "size": file.size, "mtime": file.mtime, "sha256": hex::encode(file.hash)});
            index.extend_from_slice(line.to_string().as_bytes());
            index.push(b'\n');
        }
        out.entry(&format!("{prefix}index/files-{page_number:06}.jsonl"), Utc::now().timestamp(), Bytes::from(index))
            .await?;
        if (page.len() as i64) < FILES_PER_PAGE {
            return Ok(());
        }
        after = page.last().map(|f| f.path.clone());
    }
}

/// Every exported table's rows (of `vault`, or the tenant's whole tables) under `prefix`data/.
async fn tables(
    store: &Store,
    tenant: Uuid,
    vault: Option<Uuid>,
    prefix: &str,
    out: &Sink,
    carried: &mut Carried,
) -> Result<(), ExportError> {
    for table in &EXPORTED {
        let rows = table_rows(store, tenant, vault, table, prefix, out).await?;
        carried.rows.insert(table.table.to_string(), rows);
    }
    Ok(())
}

async fn table_rows(
    store: &Store,
    tenant: Uuid,
    vault: Option<Uuid>,
    table: &Exported,
    prefix: &str,
    out: &Sink,
) -> Result<u64, ExportError> {
    let (rows_to, mut rows) = mpsc::channel::<String>(256);
    let read = async {
        let rows_to = rows_to;
        let mut tx = store.begin(tenant).await?;
        let sent = tx.export_rows(table, vault, &rows_to).await?;
        tx.commit().await?;
        Ok::<_, ExportError>(sent)
    };
    let write = async {
        let mut chunk = Vec::new();
        let mut number = 0;
        loop {
            let row = rows.recv().await;
            if let Some(row) = &row {
                chunk.extend_from_slice(row.as_bytes());
                chunk.push(b'\n');
            }
            if !chunk.is_empty() && (row.is_none() || chunk.len() >= DATA_CHUNK_BYTES) {
                number += 1;
                let name = format!("{prefix}data/{}-{number:06}.jsonl", table.table);
                out.entry(&name, Utc::now().timestamp(), Bytes::from(std::mem::take(&mut chunk))).await?;
            }
            if row.is_none() {
                return Ok::<_, ExportError>(());
            }
        }
    };
    let (sent, ()) = tokio::try_join!(read, write)?;
    Ok(sent)
}
