//! A vault's past: the snapshots kept for restore, a path's change history (provenance), and the
//! manifest as it stood at an earlier point of the change log (vault restore).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::files::{ChangeRow, to_hash};
use crate::{ChangeRecord, Hash, Result, TenantTx};

/// A kept copy of a note's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub id: Uuid,
    pub path: String,
    pub hash: Hash,
    pub size: i64,
    /// The change that replaced or removed this content (for a manual snapshot: the change
    /// that put it there).
    pub seq: i64,
    /// update, delete or manual.
    pub op: String,
    pub created_at: DateTime<Utc>,
}

struct SnapshotRow {
    id: Uuid,
    path: String,
    blob_hash: Vec<u8>,
    size: i64,
    seq: i64,
    op: String,
    created_at: DateTime<Utc>,
}

impl From<SnapshotRow> for Snapshot {
    fn from(r: SnapshotRow) -> Self {
        Snapshot {
            id: r.id,
            path: r.path,
            hash: to_hash(&r.blob_hash),
            size: r.size,
            seq: r.seq,
            op: r.op,
            created_at: r.created_at,
        }
    }
}

/// A path's state at a point of the change log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastFile {
    pub path: String,
    pub hash: Hash,
    pub size: i64,
}

/// One change-log record as a wiki's log.md shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub seq: i64,
    /// The commit it was part of (one write: a tool call, a sync commit, a restore).
    pub commit_id: Uuid,
    pub committed_at: DateTime<Utc>,
    pub op: String,
    pub path: String,
    /// The principal's name, when the change had one (a worker's has none).
    pub principal: Option<String>,
    pub tool: Option<String>,
    pub client_name: Option<String>,
    pub client_model: Option<String>,
}

impl TenantTx {
    /// The change-log records of the paths under `prefix` after sequence `after`, oldest first,
    /// at most `limit`, with their principals' names.
    pub async fn changes_under(&mut self, vault: Uuid, prefix: &str, after: i64, limit: i64) -> Result<Vec<LogLine>> {
        Ok(sqlx::query_as!(
            LogLine,
            r#"SELECT c.seq, c.commit_id, c.committed_at, c.op, c.path, p.name AS "principal?", c.tool, c.client_name,
                      c.client_model
                 FROM change_log c
                 LEFT JOIN principals p ON p.tenant_id = c.tenant_id AND p.id = c.principal_id
                WHERE c.tenant_id = $1 AND c.vault_id = $2 AND c.seq > $3 AND starts_with(c.path, $4)
                ORDER BY c.seq LIMIT $5"#,
            self.tenant,
            vault,
            after,
            prefix,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// The snapshots of `path`, newest first, at most `limit`.
    pub async fn snapshots(&mut self, vault: Uuid, path: &str, limit: i64) -> Result<Vec<Snapshot>> {
        let rows = sqlx::query_as!(
            SnapshotRow,
            r#"SELECT id, path, blob_hash, size, seq, op, created_at FROM snapshots
                WHERE tenant_id = $1 AND vault_id = $2 AND path = $3
                ORDER BY created_at DESC, seq DESC LIMIT $4"#,
            self.tenant,
            vault,
            path,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(Snapshot::from).collect())
    }

    /// One snapshot by id.
    pub async fn snapshot(&mut self, vault: Uuid, id: Uuid) -> Result<Option<Snapshot>> {
        let row = sqlx::query_as!(
            SnapshotRow,
            "SELECT id, path, blob_hash, size, seq, op, created_at FROM snapshots WHERE tenant_id = $1 AND vault_id = $2 AND id = $3",
            self.tenant,
            vault,
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(row.map(Snapshot::from))
    }

    /// Keeps the content now at `path` as a manual snapshot.
    pub async fn add_snapshot(
        &mut self,
        vault: Uuid,
        path: &str,
        hash: &Hash,
        size: i64,
        seq: i64,
    ) -> Result<Snapshot> {
        let row = sqlx::query_as!(
            SnapshotRow,
            r#"INSERT INTO snapshots (tenant_id, vault_id, id, path, blob_hash, size, seq, op)
               VALUES ($1, $2, $3, $4, $5, $6, $7, 'manual')
               RETURNING id, path, blob_hash, size, seq, op, created_at"#,
            self.tenant,
            vault,
            Uuid::now_v7(),
            path,
            &hash[..],
            size,
            seq
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(row.into())
    }

    /// The change-log records of `path` before sequence `before` (all when None), newest
    /// first, at most `limit`.
    pub async fn path_history(
        &mut self,
        vault: Uuid,
        path: &str,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<ChangeRecord>> {
        let rows = sqlx::query_as!(
            ChangeRow,
            r#"SELECT seq, commit_id, path, op, old_hash, new_hash, size, mtime, principal_id, tool, client_name,
                      client_model, origin, client_tool, committed_at, prev_hash, record_hash
                 FROM change_log WHERE tenant_id = $1 AND vault_id = $2 AND path = $3 AND ($4::bigint IS NULL OR seq < $4)
                ORDER BY seq DESC LIMIT $5"#,
            self.tenant,
            vault,
            path,
            before,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(ChangeRecord::from).collect())
    }

    /// The records of one commit, in order.
    pub async fn commit_records(&mut self, vault: Uuid, commit: Uuid) -> Result<Vec<ChangeRecord>> {
        let rows = sqlx::query_as!(
            ChangeRow,
            r#"SELECT seq, commit_id, path, op, old_hash, new_hash, size, mtime, principal_id, tool, client_name,
                      client_model, origin, client_tool, committed_at, prev_hash, record_hash
                 FROM change_log WHERE tenant_id = $1 AND vault_id = $2 AND commit_id = $3 ORDER BY seq"#,
            self.tenant,
            vault,
            commit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(ChangeRecord::from).collect())
    }

    /// The last sequence committed at or before `at` (0 when none was).
    pub async fn seq_at(&mut self, vault: Uuid, at: DateTime<Utc>) -> Result<i64> {
        Ok(sqlx::query_scalar!(
            r#"SELECT COALESCE(max(seq), 0) AS "seq!" FROM change_log
                WHERE tenant_id = $1 AND vault_id = $2 AND committed_at <= $3"#,
            self.tenant,
            vault,
            at
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// The files under `prefix` ("" for all) as they stood right after sequence `seq` (at most
    /// `limit`, by path): for each path, its last record at or before `seq`, unless that record
    /// deleted it.
    pub async fn files_at_seq(&mut self, vault: Uuid, seq: i64, prefix: &str, limit: i64) -> Result<Vec<PastFile>> {
        let rows = sqlx::query!(
            r#"SELECT path AS "path!", new_hash, size FROM (
                   SELECT DISTINCT ON (path) path, op, new_hash, size FROM change_log
                    WHERE tenant_id = $1 AND vault_id = $2 AND seq <= $3 AND starts_with(path, $4)
                    ORDER BY path, seq DESC) last
                WHERE op <> 'delete' LIMIT $5"#,
            self.tenant,
            vault,
            seq,
            prefix,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|r| Some(PastFile { path: r.path, hash: to_hash(&r.new_hash?), size: r.size? }))
            .collect())
    }

    /// The manifest under `prefix` now, as (path, hash) pairs.
    pub async fn files_under(&mut self, vault: Uuid, prefix: &str) -> Result<Vec<PastFile>> {
        let rows = sqlx::query!(
            r#"SELECT path, blob_hash, size FROM vault_files
                WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(path, $3)"#,
            self.tenant,
            vault,
            prefix
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| PastFile { path: r.path, hash: to_hash(&r.blob_hash), size: r.size }).collect())
    }
}
