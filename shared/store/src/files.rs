//! The vault manifest and the commit engine.
//!
//! A commit is one transaction: it locks the vault's head row (serialising commits per vault),
//! checks every path's expected state (compare-and-swap), and only if all hold moves the
//! manifest rows, appends one hash-chained change-log record per path, keeps the replaced
//! content as snapshots (and deleted files in the trash), and writes the follow-up jobs. A stale
//! path anywhere means nothing is applied.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::{Result, TenantTx};

/// SHA-256 of a blob's bytes.
pub type Hash = [u8; 32];

/// What kind of file a path holds, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Note,
    Canvas,
    Base,
    Attachment,
    Other,
}

impl FileKind {
    pub fn of_path(path: &str) -> FileKind {
        let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
        match ext.as_str() {
            "md" => FileKind::Note,
            "canvas" => FileKind::Canvas,
            "base" => FileKind::Base,
            "png" | "jpg" | "jpeg" | "gif" | "bmp" | "svg" | "webp" | "avif" | "pdf" | "mp3" | "wav" | "m4a"
            | "ogg" | "webm" | "flac" | "3gp" | "mp4" | "mov" | "mkv" | "ogv" => FileKind::Attachment,
            _ => FileKind::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Note => "note",
            FileKind::Canvas => "canvas",
            FileKind::Base => "base",
            FileKind::Attachment => "attachment",
            FileKind::Other => "other",
        }
    }

    fn parse(text: &str) -> FileKind {
        match text {
            "note" => FileKind::Note,
            "canvas" => FileKind::Canvas,
            "base" => FileKind::Base,
            "attachment" => FileKind::Attachment,
            _ => FileKind::Other,
        }
    }
}

/// One manifest row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    pub path: String,
    pub hash: Hash,
    pub size: i64,
    pub mtime: DateTime<Utc>,
    pub kind: FileKind,
    /// The change that put this content here.
    pub seq: i64,
}

/// An existing file whose name a new name would clash with on macOS or Windows
/// ([`TenantTx::name_clashes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameClash {
    /// The existing file.
    pub path: String,
    /// For a clash of folders: that file's folder, as the vault spells it (the new name spells
    /// it otherwise). None when the whole path clashes.
    pub folder: Option<String>,
}

/// What a change expects to find at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Whatever is there (last writer wins: only for tools that say so).
    Any,
    /// Nothing: the path must not exist.
    Absent,
    /// A new name: the path must not exist, and no other file may hold a name (or sit under a
    /// folder) that differs from it only in case or Unicode form, unless this commit deletes
    /// it. Checked under the vault's head lock, so of concurrent creations of `a.md` and `A.md`
    /// one lands and the other is stale.
    NewName,
    /// Exactly this content.
    Hash(Hash),
}

/// What a change does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Put { hash: Hash, size: i64, mtime: DateTime<Utc> },
    Delete,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub expect: Expect,
    pub action: Action,
}

/// Who made a commit, through what, for the change log.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    pub principal_id: Option<Uuid>,
    pub tool: Option<String>,
    pub client_name: Option<String>,
    pub client_model: Option<String>,
    /// Who stands behind the content, as the writer declared it ("authored", "agent_synthesis").
    pub origin: Option<String>,
    /// The tool name a client claims for its change (a /v1 commit's body), kept apart from
    /// `tool`, which is what the server knows made it.
    pub client_tool: Option<String>,
    /// The credential the change came with.
    pub token_id: Option<Uuid>,
}

/// The longest provenance field kept, in characters; longer ones are cut (they are what a
/// client says about itself, so they are bounded, not trusted).
pub const PROVENANCE_FIELD_CHARS: usize = 200;

impl Provenance {
    /// The fields as stored: trimmed, control characters removed, at most
    /// [`PROVENANCE_FIELD_CHARS`] each, empty ones dropped.
    pub fn bounded(&self) -> Provenance {
        fn cap(field: &Option<String>) -> Option<String> {
            let text: String =
                field.as_deref()?.trim().chars().filter(|c| !c.is_control()).take(PROVENANCE_FIELD_CHARS).collect();
            (!text.is_empty()).then_some(text)
        }
        Provenance {
            principal_id: self.principal_id,
            tool: cap(&self.tool),
            client_name: cap(&self.client_name),
            client_model: cap(&self.client_model),
            origin: cap(&self.origin),
            client_tool: cap(&self.client_tool),
            token_id: self.token_id,
        }
    }
}

/// A job written in the commit's transaction.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub kind: String,
    pub payload: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub commit_id: Uuid,
    /// The vault's sequence after the commit.
    pub seq: i64,
    /// How many paths changed (a put of identical content changes nothing).
    pub changed: usize,
}

/// Why a commit was refused: every path whose state was not what the change expected, and
/// every delete of a path that holds nothing (with `Expect::Any`, the one way that happens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    pub paths: Vec<String>,
    pub missing: Vec<String>,
    /// The vault's sequence, when the commit expected another (`commit_changes_at`).
    pub head_moved: Option<i64>,
}

/// One change-log record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRecord {
    pub seq: i64,
    pub commit_id: Uuid,
    pub path: String,
    pub op: String,
    pub old_hash: Option<Hash>,
    pub new_hash: Option<Hash>,
    pub size: Option<i64>,
    pub mtime: Option<DateTime<Utc>>,
    pub principal_id: Option<Uuid>,
    pub tool: Option<String>,
    pub client_name: Option<String>,
    pub client_model: Option<String>,
    pub origin: Option<String>,
    /// The tool name the client claimed (a /v1 commit's body), apart from `tool`.
    pub client_tool: Option<String>,
    pub committed_at: DateTime<Utc>,
    pub prev_hash: Hash,
    pub record_hash: Hash,
}

impl crate::Store {
    /// One manifest row of `tenant`'s vault, read in a single round trip (no explicit
    /// transaction; row-level security applies as in [`crate::TenantTx`]). For the read path,
    /// where a call needs this one row.
    pub async fn file(&self, tenant: Uuid, vault: Uuid, path: &str) -> Result<Option<FileEntry>> {
        if self.pooled() {
            // A transaction pooler gives out a server connection only for a transaction.
            let mut tx = self.begin(tenant).await?;
            let found = tx.file(vault, path).await?;
            tx.commit().await?;
            return Ok(found);
        }
        match self.file_once(tenant, vault, path).await {
            // A pooled connection that died while idle (the pool does not ping before use):
            // the read is harmless to repeat, on a connection the pool makes or has.
            Err(crate::StoreError::Unavailable(sqlx::Error::Io(e))) => {
                tracing::debug!(error = %e, "manifest read on a dead connection; reading again");
                self.file_once(tenant, vault, path).await
            }
            other => other,
        }
    }

    async fn file_once(&self, tenant: Uuid, vault: Uuid, path: &str) -> Result<Option<FileEntry>> {
        let row = sqlx::query_as!(
            FileRow,
            r#"SELECT path AS "path!", blob_hash AS "blob_hash!", size AS "size!", mtime AS "mtime!",
                      kind AS "kind!", seq AS "seq!"
                 FROM otc_read_file($1, $2, $3)"#,
            tenant,
            vault,
            path
        )
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(FileEntry::from))
    }
}

/// A manifest row as the database returns it.
pub(crate) struct FileRow {
    pub(crate) path: String,
    pub(crate) blob_hash: Vec<u8>,
    pub(crate) size: i64,
    pub(crate) mtime: DateTime<Utc>,
    pub(crate) kind: String,
    pub(crate) seq: i64,
}

impl From<FileRow> for FileEntry {
    fn from(r: FileRow) -> Self {
        FileEntry {
            path: r.path,
            hash: to_hash(&r.blob_hash),
            size: r.size,
            mtime: r.mtime,
            kind: FileKind::parse(&r.kind),
            seq: r.seq,
        }
    }
}

/// A change-log row as the database returns it.
pub(crate) struct ChangeRow {
    pub(crate) seq: i64,
    pub(crate) commit_id: Uuid,
    pub(crate) path: String,
    pub(crate) op: String,
    pub(crate) old_hash: Option<Vec<u8>>,
    pub(crate) new_hash: Option<Vec<u8>>,
    pub(crate) size: Option<i64>,
    pub(crate) mtime: Option<DateTime<Utc>>,
    pub(crate) principal_id: Option<Uuid>,
    pub(crate) tool: Option<String>,
    pub(crate) client_name: Option<String>,
    pub(crate) client_model: Option<String>,
    pub(crate) origin: Option<String>,
    pub(crate) client_tool: Option<String>,
    pub(crate) committed_at: DateTime<Utc>,
    pub(crate) prev_hash: Vec<u8>,
    pub(crate) record_hash: Vec<u8>,
}

impl From<ChangeRow> for ChangeRecord {
    fn from(r: ChangeRow) -> Self {
        ChangeRecord {
            seq: r.seq,
            commit_id: r.commit_id,
            path: r.path,
            op: r.op,
            old_hash: r.old_hash.as_deref().map(to_hash),
            new_hash: r.new_hash.as_deref().map(to_hash),
            size: r.size,
            mtime: r.mtime,
            principal_id: r.principal_id,
            tool: r.tool,
            client_name: r.client_name,
            client_model: r.client_model,
            origin: r.origin,
            client_tool: r.client_tool,
            committed_at: r.committed_at,
            prev_hash: to_hash(&r.prev_hash),
            record_hash: to_hash(&r.record_hash),
        }
    }
}

pub(crate) fn to_hash(bytes: &[u8]) -> Hash {
    let mut out = [0u8; 32];
    if bytes.len() == 32 {
        out.copy_from_slice(bytes);
    }
    out
}

/// The hash that chains a record to the one before it.
#[allow(clippy::too_many_arguments)]
pub fn record_hash(
    prev: &Hash,
    seq: i64,
    commit_id: Uuid,
    path: &str,
    op: &str,
    old: Option<&Hash>,
    new: Option<&Hash>,
) -> Hash {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(seq.to_be_bytes());
    h.update(commit_id.as_bytes());
    h.update(path.as_bytes());
    h.update([0]);
    h.update(op.as_bytes());
    h.update([0]);
    h.update(old.map(|x| &x[..]).unwrap_or(&[]));
    h.update([0]);
    h.update(new.map(|x| &x[..]).unwrap_or(&[]));
    h.finalize().into()
}

impl TenantTx {
    /// Applies `changes` to `vault` atomically, or reports every stale path and applies nothing.
    pub async fn commit_changes(
        &mut self,
        vault: Uuid,
        changes: &[Change],
        who: &Provenance,
        jobs: &[NewJob],
    ) -> Result<Result<Committed, Stale>> {
        self.commit_changes_at(vault, changes, who, jobs, None).await
    }

    /// [`Self::commit_changes`], refused (with `head_moved`) unless the vault is still at
    /// sequence `at_head`: for a batch planned from more than the paths it changes (a move's
    /// link rewrites depend on which notes link where).
    pub async fn commit_changes_at(
        &mut self,
        vault: Uuid,
        changes: &[Change],
        who: &Provenance,
        jobs: &[NewJob],
        at_head: Option<i64>,
    ) -> Result<Result<Committed, Stale>> {
        let tenant = self.tenant;
        let who = &who.bounded();
        sqlx::query!(
            "INSERT INTO vault_heads (tenant_id, vault_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            tenant,
            vault
        )
        .execute(&mut *self.tx)
        .await?;
        let head = sqlx::query!(
            "SELECT seq, head_hash FROM vault_heads WHERE tenant_id = $1 AND vault_id = $2 FOR UPDATE",
            tenant,
            vault
        )
        .fetch_one(&mut *self.tx)
        .await?;
        if let Some(want) = at_head
            && head.seq != want
        {
            return Ok(Err(Stale { paths: Vec::new(), missing: Vec::new(), head_moved: Some(head.seq) }));
        }

        let paths: Vec<String> = changes.iter().map(|c| c.path.clone()).collect();
        let current: std::collections::HashMap<String, (Hash, i64)> = sqlx::query!(
            "SELECT path, blob_hash, size FROM vault_files WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)",
            tenant,
            vault,
            &paths
        )
        .fetch_all(&mut *self.tx)
        .await?
        .into_iter()
        .map(|r| (r.path, (to_hash(&r.blob_hash), r.size)))
        .collect();

        let mut stale = Vec::new();
        let mut missing = Vec::new();
        for change in changes {
            let now = current.get(&change.path).map(|(h, _)| *h);
            let holds = match (change.expect, now) {
                (Expect::Any, _) => true,
                (Expect::Absent | Expect::NewName, None) => true,
                (Expect::Absent | Expect::NewName, Some(_)) => false,
                (Expect::Hash(want), Some(have)) => want == have,
                (Expect::Hash(_), None) => false,
            };
            if !holds {
                stale.push(change.path.clone());
            } else if change.action == Action::Delete && now.is_none() {
                missing.push(change.path.clone());
            }
        }
        if stale.is_empty() && missing.is_empty() {
            stale = self.new_name_clashes(vault, changes).await?;
        }
        if !stale.is_empty() || !missing.is_empty() {
            return Ok(Err(Stale { paths: stale, missing, head_moved: None }));
        }

        let commit_id = Uuid::now_v7();
        let mut seq = head.seq;
        let mut prev = to_hash(&head.head_hash);
        let mut log = LogRows::default();
        let mut upserts = FileRows::default();
        let mut deletes: Vec<String> = Vec::new();
        let mut keep = KeptRows::default();
        for change in changes {
            let old = current.get(&change.path).copied();
            let (op, new_hash, size, mtime) = match (&change.action, old) {
                (Action::Put { hash, .. }, Some((have, _))) if *hash == have => continue,
                (Action::Put { hash, size, mtime }, Some(_)) => ("update", Some(*hash), Some(*size), Some(*mtime)),
                (Action::Put { hash, size, mtime }, None) => ("create", Some(*hash), Some(*size), Some(*mtime)),
                (Action::Delete, _) => ("delete", None, None, None),
            };
            seq += 1;
            let old_hash = old.map(|(h, _)| h);
            let hash = record_hash(&prev, seq, commit_id, &change.path, op, old_hash.as_ref(), new_hash.as_ref());
            log.push(seq, &change.path, op, old_hash, new_hash, size, mtime, prev, hash);
            prev = hash;
            if let Some((old_hash, old_size)) = old {
                keep.push(&change.path, old_hash, old_size, seq, op == "delete");
            }
            match (&change.action, new_hash) {
                (Action::Put { size, mtime, .. }, Some(new_hash)) => {
                    upserts.push(&change.path, new_hash, *size, *mtime, seq)
                }
                _ => deletes.push(change.path.clone()),
            }
        }
        let changed = log.seq.len();
        if changed == 0 {
            return Ok(Ok(Committed { commit_id, seq: head.seq, changed: 0 }));
        }
        // Notes made less notes removed, against the tenant's note quota (what Obsidian's trash
        // folder keeps is not counted: storage covers it).
        let is_note = |path: &str| FileKind::of_path(path) == FileKind::Note && !path.starts_with(".trash/");
        let notes_delta = (0..changed)
            .map(|i| match log.op[i].as_str() {
                "create" if is_note(&log.path[i]) => 1,
                "delete" if is_note(&log.path[i]) => -1,
                _ => 0,
            })
            .sum::<i64>();
        self.check_notes(notes_delta).await?;

        sqlx::query!(
            r#"INSERT INTO vault_files (tenant_id, vault_id, path, blob_hash, size, mtime, kind, seq)
               SELECT $1, $2, * FROM UNNEST($3::text[], $4::bytea[], $5::bigint[], $6::timestamptz[], $7::text[], $8::bigint[])
               ON CONFLICT (tenant_id, vault_id, path) DO UPDATE
                 SET blob_hash = EXCLUDED.blob_hash, size = EXCLUDED.size, mtime = EXCLUDED.mtime,
                     kind = EXCLUDED.kind, seq = EXCLUDED.seq"#,
            tenant,
            vault,
            &upserts.path,
            &upserts.hash,
            &upserts.size,
            &upserts.mtime,
            &upserts.kind,
            &upserts.seq
        )
        .execute(&mut *self.tx)
        .await?;
        if !deletes.is_empty() {
            sqlx::query!(
                "DELETE FROM vault_files WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)",
                tenant,
                vault,
                &deletes
            )
            .execute(&mut *self.tx)
            .await?;
        }
        sqlx::query!(
            r#"INSERT INTO change_log (tenant_id, vault_id, commit_id, principal_id, tool, client_name, client_model,
                                      origin, client_tool, token_id, seq, path, op, old_hash, new_hash, size, mtime,
                                      prev_hash, record_hash)
               SELECT $1, $2, $3, $4, $5, $6, $7, $8, $18, $19, *
                 FROM UNNEST($9::bigint[], $10::text[], $11::text[], $12::bytea[], $13::bytea[], $14::bigint[],
                             $15::timestamptz[], $16::bytea[], $17::bytea[])"#,
            tenant,
            vault,
            commit_id,
            who.principal_id,
            who.tool,
            who.client_name,
            who.client_model,
            who.origin,
            &log.seq,
            &log.path,
            &log.op,
            &log.old as &[Option<Vec<u8>>],
            &log.new as &[Option<Vec<u8>>],
            &log.size as &[Option<i64>],
            &log.mtime as &[Option<DateTime<Utc>>],
            &log.prev,
            &log.hash,
            who.client_tool,
            who.token_id
        )
        .execute(&mut *self.tx)
        .await?;
        if !keep.path.is_empty() {
            sqlx::query!(
                r#"INSERT INTO snapshots (tenant_id, vault_id, id, path, blob_hash, size, seq, op)
                   SELECT $1, $2, * FROM UNNEST($3::uuid[], $4::text[], $5::bytea[], $6::bigint[], $7::bigint[], $8::text[])"#,
                tenant,
                vault,
                &keep.id,
                &keep.path,
                &keep.hash,
                &keep.size,
                &keep.seq,
                &keep.deleted.iter().map(|d| if *d { "delete" } else { "update" }.to_string()).collect::<Vec<_>>()
            )
            .execute(&mut *self.tx)
            .await?;
            let trashed: Vec<usize> = (0..keep.path.len()).filter(|i| keep.deleted[*i]).collect();
            if !trashed.is_empty() {
                let ids: Vec<Uuid> = trashed.iter().map(|_| Uuid::now_v7()).collect();
                sqlx::query!(
                    r#"INSERT INTO trash (tenant_id, vault_id, id, original_path, blob_hash, size, seq)
                       SELECT $1, $2, * FROM UNNEST($3::uuid[], $4::text[], $5::bytea[], $6::bigint[], $7::bigint[])"#,
                    tenant,
                    vault,
                    &ids,
                    &pick(&keep.path, &trashed),
                    &pick(&keep.hash, &trashed),
                    &pick(&keep.size, &trashed),
                    &pick(&keep.seq, &trashed)
                )
                .execute(&mut *self.tx)
                .await?;
            }
        }
        for job in jobs {
            sqlx::query!(
                "INSERT INTO jobs (tenant_id, vault_id, kind, payload, seq) VALUES ($1, $2, $3, $4, $5)",
                tenant,
                vault,
                job.kind,
                job.payload,
                seq
            )
            .execute(&mut *self.tx)
            .await?;
        }
        sqlx::query!(
            "UPDATE vault_heads SET seq = $3, head_hash = $4, notes = notes + $5 WHERE tenant_id = $1 AND vault_id = $2",
            tenant,
            vault,
            seq,
            &prev[..],
            notes_delta
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(Ok(Committed { commit_id, seq, changed }))
    }

    /// The vault's current sequence (0 before the first commit).
    pub async fn head_seq(&mut self, vault: Uuid) -> Result<i64> {
        Ok(sqlx::query_scalar!(
            "SELECT seq FROM vault_heads WHERE tenant_id = $1 AND vault_id = $2",
            self.tenant,
            vault
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .unwrap_or(0))
    }

    /// One manifest row.
    pub async fn file(&mut self, vault: Uuid, path: &str) -> Result<Option<FileEntry>> {
        let row = sqlx::query_as!(
            FileRow,
            "SELECT path, blob_hash, size, mtime, kind, seq FROM vault_files WHERE tenant_id = $1 AND vault_id = $2 AND path = $3",
            self.tenant,
            vault,
            path
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(row.map(FileEntry::from))
    }

    /// The manifest rows of `paths` (absent paths are simply missing).
    pub async fn files_at(&mut self, vault: Uuid, paths: &[String]) -> Result<Vec<FileEntry>> {
        let rows = sqlx::query_as!(
            FileRow,
            r#"SELECT path, blob_hash, size, mtime, kind, seq FROM vault_files
                WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)"#,
            self.tenant,
            vault,
            paths
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(FileEntry::from).collect())
    }

    /// Manifest rows in path order after `after` (exclusive), at most `limit`.
    pub async fn files(&mut self, vault: Uuid, after: Option<&str>, limit: i64) -> Result<Vec<FileEntry>> {
        let rows = sqlx::query_as!(
            FileRow,
            r#"SELECT path, blob_hash, size, mtime, kind, seq FROM vault_files
                WHERE tenant_id = $1 AND vault_id = $2 AND ($3::text IS NULL OR path > $3)
                ORDER BY path LIMIT $4"#,
            self.tenant,
            vault,
            after,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(FileEntry::from).collect())
    }

    /// Change-log records after `since`, in order, at most `limit`.
    pub async fn changes_since(&mut self, vault: Uuid, since: i64, limit: i64) -> Result<Vec<ChangeRecord>> {
        let rows = sqlx::query_as!(
            ChangeRow,
            r#"SELECT seq, commit_id, path, op, old_hash, new_hash, size, mtime, principal_id, tool, client_name,
                      client_model, origin, client_tool, committed_at, prev_hash, record_hash
                 FROM change_log WHERE tenant_id = $1 AND vault_id = $2 AND seq > $3 ORDER BY seq LIMIT $4"#,
            self.tenant,
            vault,
            since,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(ChangeRecord::from).collect())
    }

    /// Walks the vault's whole change log; returns the first sequence whose record does not
    /// chain to its predecessor, or `None` when the chain is intact.
    pub async fn verify_chain(&mut self, vault: Uuid) -> Result<Option<i64>> {
        let mut prev = [0u8; 32];
        let mut since = 0;
        loop {
            let page = self.changes_since(vault, since, 5000).await?;
            if page.is_empty() {
                return Ok(None);
            }
            for r in &page {
                let expect =
                    record_hash(&prev, r.seq, r.commit_id, &r.path, &r.op, r.old_hash.as_ref(), r.new_hash.as_ref());
                if r.prev_hash != prev || r.record_hash != expect {
                    return Ok(Some(r.seq));
                }
                prev = r.record_hash;
                since = r.seq;
            }
        }
    }

    /// Notes a blob in the tenant's inventory, or refreshes its upload time (which restarts
    /// its grace period against garbage collection).
    pub async fn record_blob(&mut self, hash: &Hash, size: i64) -> Result<()> {
        let added = sqlx::query_scalar!(
            r#"INSERT INTO blobs (tenant_id, hash, size) VALUES ($1, $2, $3)
               ON CONFLICT (tenant_id, hash) DO UPDATE SET uploaded_at = now()
               RETURNING CASE WHEN xmax = 0 THEN size ELSE 0 END AS "added!""#,
            self.tenant,
            &hash[..],
            size
        )
        .fetch_one(&mut *self.tx)
        .await?;
        // New content counts against the storage quota (refused past it).
        self.add_storage(added).await
    }

    /// [`Self::record_blob`] for many blobs in one statement.
    pub async fn record_blobs(&mut self, blobs: &[(Hash, i64)]) -> Result<()> {
        if blobs.is_empty() {
            return Ok(());
        }
        let mut unique: std::collections::BTreeMap<Hash, i64> = std::collections::BTreeMap::new();
        unique.extend(blobs.iter().copied());
        let hashes: Vec<Vec<u8>> = unique.keys().map(|h| h.to_vec()).collect();
        let sizes: Vec<i64> = unique.values().copied().collect();
        let added = sqlx::query_scalar!(
            r#"WITH stored AS (
                   INSERT INTO blobs (tenant_id, hash, size) SELECT $1, * FROM UNNEST($2::bytea[], $3::bigint[])
                   ON CONFLICT (tenant_id, hash) DO UPDATE SET uploaded_at = now()
                   RETURNING CASE WHEN xmax = 0 THEN size ELSE 0 END AS added)
               SELECT coalesce(sum(added), 0)::bigint AS "added!" FROM stored"#,
            self.tenant,
            &hashes,
            &sizes
        )
        .fetch_one(&mut *self.tx)
        .await?;
        self.add_storage(added).await
    }

    /// The sizes of those of `hashes` the tenant's inventory holds.
    pub async fn blob_sizes(&mut self, hashes: &[Hash]) -> Result<std::collections::HashMap<Hash, i64>> {
        let list: Vec<Vec<u8>> = hashes.iter().map(|h| h.to_vec()).collect();
        // FOR SHARE: garbage collection skips (or waits for) blobs a commit is about to use.
        let rows = sqlx::query!(
            "SELECT hash, size FROM blobs WHERE tenant_id = $1 AND hash = ANY($2) FOR SHARE",
            self.tenant,
            &list
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (to_hash(&r.hash), r.size)).collect())
    }

    /// Which of `paths` exist in the vault now.
    pub async fn existing_paths(&mut self, vault: Uuid, paths: &[String]) -> Result<std::collections::HashSet<String>> {
        Ok(sqlx::query_scalar!(
            "SELECT path FROM vault_files WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)",
            self.tenant,
            vault,
            paths
        )
        .fetch_all(&mut *self.tx)
        .await?
        .into_iter()
        .collect())
    }

    /// Files whose names clash with `path` on a case-insensitive, normalization-insensitive file
    /// system (macOS, Windows): a file whose whole path has the same clash key
    /// (`otc_vault::clash_key`; here the stored column `clash_key`, `casefold(normalize(path,
    /// NFC) COLLATE pg_c_utf8)`, served by the `vault_files_clash_key` index), then, for each folder of `path` under which no
    /// file exists spelled as in `path`, one file under a folder spelled otherwise. `except` is
    /// left out (the file a rename moves away from). Files first, then folders from the top;
    /// at most 20 files.
    pub async fn name_clashes(&mut self, vault: Uuid, path: &str, except: Option<&str>) -> Result<Vec<NameClash>> {
        let except = except.unwrap_or("");
        let files = sqlx::query_scalar!(
            r#"SELECT path FROM vault_files
               WHERE tenant_id = $1 AND vault_id = $2
                 AND clash_key = casefold(normalize($3, NFC) COLLATE pg_c_utf8)
                 AND path <> $3 AND path <> $4
               ORDER BY path LIMIT 20"#,
            self.tenant,
            vault,
            path,
            except
        )
        .fetch_all(&mut *self.tx)
        .await?;
        let mut out: Vec<NameClash> = files.into_iter().map(|path| NameClash { path, folder: None }).collect();
        let folders: Vec<String> = path.match_indices('/').map(|(i, _)| path[..i].to_string()).collect();
        if folders.is_empty() {
            return Ok(out);
        }
        // '/' + 1 = '0': the keys under a folder's key sort between key || '/' and key || '0'.
        // "No file under the folder as spelled" is a LEFT JOIN LATERAL ... LIMIT 1, not NOT
        // EXISTS: under a prepared statement's generic plan the anti-join read the whole
        // vault's manifest (100 ms at 100k files, 440 ms under write load).
        let rows = sqlx::query!(
            r#"SELECT p.folder AS "folder!", f.path AS "path!"
               FROM unnest($3::text[]) WITH ORDINALITY AS p(folder, depth)
               LEFT JOIN LATERAL (
                   SELECT e.path FROM vault_files e
                   WHERE e.tenant_id = $1 AND e.vault_id = $2 AND e.path <> $4
                     AND e.path >= p.folder || '/' AND e.path < p.folder || '0'
                   LIMIT 1
               ) same ON true
               CROSS JOIN LATERAL (
                   SELECT v.path FROM vault_files v
                   WHERE v.tenant_id = $1 AND v.vault_id = $2 AND v.path <> $4
                     AND v.clash_key
                         >= casefold(normalize(p.folder, NFC) COLLATE pg_c_utf8) || '/'
                     AND v.clash_key
                         < casefold(normalize(p.folder, NFC) COLLATE pg_c_utf8) || '0'
                   ORDER BY v.clash_key
                   LIMIT 1
               ) f
               WHERE same.path IS NULL
               ORDER BY p.depth"#,
            self.tenant,
            vault,
            &folders,
            except
        )
        .fetch_all(&mut *self.tx)
        .await?;
        for row in rows {
            let depth = row.folder.matches('/').count() + 1;
            let existing: String = row.path.split('/').take(depth).collect::<Vec<_>>().join("/");
            out.push(NameClash { path: row.path, folder: Some(existing) });
        }
        Ok(out)
    }

    /// Whether the tenant's inventory holds this blob.
    pub async fn has_blob(&mut self, hash: &Hash) -> Result<bool> {
        Ok(sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM blobs WHERE tenant_id = $1 AND hash = $2) AS "e!""#,
            self.tenant,
            &hash[..]
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// Blobs uploaded before `before` that no manifest row, snapshot or trash entry references,
    /// locked until this transaction ends (rows a commit holds are skipped).
    pub async fn unreferenced_blobs(&mut self, before: DateTime<Utc>, limit: i64) -> Result<Vec<Hash>> {
        let rows = sqlx::query_scalar!(
            r#"SELECT b.hash FROM blobs b
                WHERE b.tenant_id = $1 AND b.uploaded_at < $2
                  AND NOT EXISTS (SELECT 1 FROM vault_files f WHERE f.tenant_id = b.tenant_id AND f.blob_hash = b.hash)
                  AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.tenant_id = b.tenant_id AND s.blob_hash = b.hash)
                  AND NOT EXISTS (SELECT 1 FROM trash t WHERE t.tenant_id = b.tenant_id AND t.blob_hash = b.hash)
                LIMIT $3
                FOR UPDATE SKIP LOCKED"#,
            self.tenant,
            before,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.iter().map(|h| to_hash(h)).collect())
    }

    /// The paths of `changes` expecting [`Expect::NewName`] that clash with a file this commit
    /// keeps (one it deletes does not count: a case-only rename stays allowed). Runs under the
    /// vault's head lock, so no concurrent commit can land a clashing name in between.
    async fn new_name_clashes(&mut self, vault: Uuid, changes: &[Change]) -> Result<Vec<String>> {
        let deleted: std::collections::HashSet<&str> =
            changes.iter().filter(|c| c.action == Action::Delete).map(|c| c.path.as_str()).collect();
        let mut clashing = Vec::new();
        for change in changes.iter().filter(|c| c.expect == Expect::NewName) {
            let clashes = self.name_clashes(vault, &change.path, None).await?;
            if clashes.iter().any(|c| !deleted.contains(c.path.as_str())) {
                clashing.push(change.path.clone());
            }
        }
        Ok(clashing)
    }

    /// Forgets blobs (after the object store deleted them).
    pub async fn forget_blobs(&mut self, hashes: &[Hash]) -> Result<u64> {
        let list: Vec<Vec<u8>> = hashes.iter().map(|h| h.to_vec()).collect();
        let gone = sqlx::query!(
            r#"WITH gone AS (DELETE FROM blobs WHERE tenant_id = $1 AND hash = ANY($2) RETURNING size)
               SELECT count(*) AS "count!", coalesce(sum(size), 0)::bigint AS "bytes!" FROM gone"#,
            self.tenant,
            &list
        )
        .fetch_one(&mut *self.tx)
        .await?;
        self.add_storage(-gone.bytes).await?;
        Ok(gone.count as u64)
    }

    /// Keeps the newest `keep` snapshots of each path; returns how many older ones went.
    pub async fn prune_snapshots(&mut self, keep: i64) -> Result<u64> {
        Ok(sqlx::query!(
            r#"DELETE FROM snapshots s USING (
                   SELECT vault_id, id, row_number() OVER (PARTITION BY vault_id, path ORDER BY seq DESC) AS n
                     FROM snapshots WHERE tenant_id = $1) r
                WHERE s.tenant_id = $1 AND s.vault_id = r.vault_id AND s.id = r.id AND r.n > $2"#,
            self.tenant,
            keep
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected())
    }
}

fn pick<T: Clone>(items: &[T], at: &[usize]) -> Vec<T> {
    at.iter().map(|i| items[*i].clone()).collect()
}

#[derive(Default)]
struct LogRows {
    seq: Vec<i64>,
    path: Vec<String>,
    op: Vec<String>,
    old: Vec<Option<Vec<u8>>>,
    new: Vec<Option<Vec<u8>>>,
    size: Vec<Option<i64>>,
    mtime: Vec<Option<DateTime<Utc>>>,
    prev: Vec<Vec<u8>>,
    hash: Vec<Vec<u8>>,
}

impl LogRows {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        seq: i64,
        path: &str,
        op: &str,
        old: Option<Hash>,
        new: Option<Hash>,
        size: Option<i64>,
        mtime: Option<DateTime<Utc>>,
        prev: Hash,
        hash: Hash,
    ) {
        self.seq.push(seq);
        self.path.push(path.to_string());
        self.op.push(op.to_string());
        self.old.push(old.map(|h| h.to_vec()));
        self.new.push(new.map(|h| h.to_vec()));
        self.size.push(size);
        self.mtime.push(mtime);
        self.prev.push(prev.to_vec());
        self.hash.push(hash.to_vec());
    }
}

#[derive(Default)]
struct FileRows {
    path: Vec<String>,
    hash: Vec<Vec<u8>>,
    size: Vec<i64>,
    mtime: Vec<DateTime<Utc>>,
    kind: Vec<String>,
    seq: Vec<i64>,
}

impl FileRows {
    fn push(&mut self, path: &str, hash: Hash, size: i64, mtime: DateTime<Utc>, seq: i64) {
        self.path.push(path.to_string());
        self.hash.push(hash.to_vec());
        self.size.push(size);
        self.mtime.push(mtime);
        self.kind.push(FileKind::of_path(path).as_str().to_string());
        self.seq.push(seq);
    }
}

#[derive(Default)]
struct KeptRows {
    id: Vec<Uuid>,
    path: Vec<String>,
    hash: Vec<Vec<u8>>,
    size: Vec<i64>,
    seq: Vec<i64>,
    deleted: Vec<bool>,
}

impl KeptRows {
    fn push(&mut self, path: &str, hash: Hash, size: i64, seq: i64, deleted: bool) {
        self.id.push(Uuid::now_v7());
        self.path.push(path.to_string());
        self.hash.push(hash.to_vec());
        self.size.push(size);
        self.seq.push(seq);
        self.deleted.push(deleted);
    }
}

/// What reconcile last imported from one plain object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileEntry {
    pub path: String,
    pub size: i64,
    pub modified: DateTime<Utc>,
    pub e_tag: Option<String>,
    pub hash: Hash,
}

impl TenantTx {
    pub async fn reconcile_state(&mut self, vault: Uuid) -> Result<Vec<ReconcileEntry>> {
        let rows = sqlx::query!(
            "SELECT path, size, modified, e_tag, blob_hash FROM reconcile_state WHERE tenant_id = $1 AND vault_id = $2",
            self.tenant,
            vault
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| ReconcileEntry {
                path: r.path,
                size: r.size,
                modified: r.modified,
                e_tag: r.e_tag,
                hash: to_hash(&r.blob_hash),
            })
            .collect())
    }

    pub async fn set_reconcile_state(&mut self, vault: Uuid, entry: &ReconcileEntry) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO reconcile_state (tenant_id, vault_id, path, size, modified, e_tag, blob_hash)
               VALUES ($1, $2, $3, $4, $5, $6, $7)
               ON CONFLICT (tenant_id, vault_id, path) DO UPDATE
                 SET size = EXCLUDED.size, modified = EXCLUDED.modified, e_tag = EXCLUDED.e_tag, blob_hash = EXCLUDED.blob_hash"#,
            self.tenant,
            vault,
            entry.path,
            entry.size,
            entry.modified,
            entry.e_tag,
            &entry.hash[..]
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    pub async fn clear_reconcile_state(&mut self, vault: Uuid, path: &str) -> Result<()> {
        sqlx::query!(
            "DELETE FROM reconcile_state WHERE tenant_id = $1 AND vault_id = $2 AND path = $3",
            self.tenant,
            vault,
            path
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }
}
