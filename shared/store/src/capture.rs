//! The capture inbox (`capture_queue`): captured material waiting for review before it becomes
//! a note. A commit claims its row first (queued -> committing, one committer wins), so a
//! capture is written at most once.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{Result, TenantTx};

/// One capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    pub id: Uuid,
    pub content: String,
    pub title: Option<String>,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub target_path_hint: Option<String>,
    /// queued, committing or committed.
    pub status: String,
    /// none, suspect or poisoned.
    pub poison_assessment: String,
    pub poison_signals: Vec<String>,
    pub redactions: Vec<String>,
    pub content_hash: String,
    pub committed_path: Option<String>,
    pub committed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// A capture to queue (already screened).
#[derive(Debug, Clone)]
pub struct NewCapture {
    pub content: String,
    pub title: Option<String>,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub target_path_hint: Option<String>,
    pub poison_assessment: String,
    pub poison_signals: Vec<String>,
    pub redactions: Vec<String>,
    pub content_hash: String,
}

impl TenantTx {
    /// Queues a capture.
    pub async fn enqueue_capture(&mut self, vault: Uuid, new: &NewCapture, by: Option<Uuid>) -> Result<Capture> {
        Ok(sqlx::query_as!(
            Capture,
            r#"INSERT INTO capture_queue (tenant_id, vault_id, id, content, title, tags, source, target_path_hint,
                                          poison_assessment, poison_signals, redactions, content_hash, created_by)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
               RETURNING id, content, title, tags, source, target_path_hint, status, poison_assessment, poison_signals,
                         redactions, content_hash, committed_path, committed_at, created_at"#,
            self.tenant,
            vault,
            Uuid::new_v4(),
            new.content,
            new.title,
            &new.tags,
            new.source,
            new.target_path_hint,
            new.poison_assessment,
            &new.poison_signals,
            &new.redactions,
            new.content_hash,
            by
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// One capture of the vault.
    pub async fn capture(&mut self, vault: Uuid, id: Uuid) -> Result<Option<Capture>> {
        Ok(sqlx::query_as!(
            Capture,
            r#"SELECT id, content, title, tags, source, target_path_hint, status, poison_assessment, poison_signals,
                      redactions, content_hash, committed_path, committed_at, created_at
                 FROM capture_queue WHERE tenant_id = $1 AND vault_id = $2 AND id = $3"#,
            self.tenant,
            vault,
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// The vault's captures, newest first after `before` (created_at, id), at most `limit`:
    /// the committed ones or the others, from `source` when given.
    pub async fn captures(
        &mut self,
        vault: Uuid,
        committed: bool,
        source: Option<&str>,
        before: Option<(DateTime<Utc>, Uuid)>,
        limit: i64,
    ) -> Result<Vec<Capture>> {
        let (at, id) = before.map_or((None, None), |(a, i)| (Some(a), Some(i)));
        Ok(sqlx::query_as!(
            Capture,
            r#"SELECT id, content, title, tags, source, target_path_hint, status, poison_assessment, poison_signals,
                      redactions, content_hash, committed_path, committed_at, created_at
                 FROM capture_queue
                WHERE tenant_id = $1 AND vault_id = $2 AND (status = 'committed') = $3
                  AND ($4::text IS NULL OR source = $4)
                  AND ($5::timestamptz IS NULL OR (created_at, id) < ($5, $6))
                ORDER BY created_at DESC, id DESC LIMIT $7"#,
            self.tenant,
            vault,
            committed,
            source,
            at,
            id,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Claims a queued capture for a commit, if it still holds `content_hash`: true when this
    /// caller won it. A claim older than two minutes (its committer is gone) may be taken again.
    pub async fn claim_capture(&mut self, vault: Uuid, id: Uuid, content_hash: &str) -> Result<bool> {
        Ok(sqlx::query!(
            r#"UPDATE capture_queue SET status = 'committing', claimed_at = now()
                WHERE tenant_id = $1 AND vault_id = $2 AND id = $3 AND content_hash = $4
                  AND (status = 'queued' OR (status = 'committing' AND claimed_at < now() - interval '2 minutes'))"#,
            self.tenant,
            vault,
            id,
            content_hash
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected()
            == 1)
    }

    /// Ends a claimed commit: committed at `path` (or removed from the queue), or back to queued
    /// when `path` is None (the write failed).
    pub async fn finish_capture(&mut self, vault: Uuid, id: Uuid, path: Option<&str>, remove: bool) -> Result<()> {
        match (path, remove) {
            (Some(_), true) => {
                sqlx::query!(
                    "DELETE FROM capture_queue WHERE tenant_id = $1 AND vault_id = $2 AND id = $3 AND status = 'committing'",
                    self.tenant,
                    vault,
                    id
                )
                .execute(&mut *self.tx)
                .await?;
            }
            (Some(path), false) => {
                sqlx::query!(
                    r#"UPDATE capture_queue SET status = 'committed', committed_path = $4, committed_at = now()
                        WHERE tenant_id = $1 AND vault_id = $2 AND id = $3 AND status = 'committing'"#,
                    self.tenant,
                    vault,
                    id,
                    path
                )
                .execute(&mut *self.tx)
                .await?;
            }
            (None, _) => {
                sqlx::query!(
                    "UPDATE capture_queue SET status = 'queued' WHERE tenant_id = $1 AND vault_id = $2 AND id = $3 AND status = 'committing'",
                    self.tenant,
                    vault,
                    id
                )
                .execute(&mut *self.tx)
                .await?;
            }
        }
        Ok(())
    }
}
