//! The sync API's side of the vault: the manifest, the change feed and content by hash as one
//! caller may see them, and the record of who uploaded what. Every query takes a [`Visible`]
//! (the caller's hidden folders and read ACL as regular expressions, the same text
//! `otc_vault::acl` matches in Rust), so a path the caller may not read never reaches a page, a
//! cursor or an answer about content.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::files::{ChangeRecord, ChangeRow, FileEntry, FileRow, Hash, to_hash};
use crate::{Result, TenantTx};

/// What one caller may see of a vault.
#[derive(Debug, Clone, Copy)]
pub struct Visible<'a> {
    /// A path this regular expression matches is never shown (the folders hidden from the
    /// caller's audience whatever the ACL says).
    pub hidden: &'a str,
    /// The read ACL as anchored regular expressions: a path must match one (None: any path).
    pub readable: Option<&'a [String]>,
}

impl TenantTx {
    /// Visible manifest rows in path order after `after` (exclusive), at most `limit`. Hidden
    /// rows are skipped by the query, so a page is short only at the end of the manifest.
    pub async fn visible_files(
        &mut self,
        vault: Uuid,
        after: Option<&str>,
        limit: i64,
        visible: Visible<'_>,
    ) -> Result<Vec<FileEntry>> {
        let rows = sqlx::query_as!(
            FileRow,
            r#"SELECT path, blob_hash, size, mtime, kind, seq FROM vault_files
                WHERE tenant_id = $1 AND vault_id = $2 AND ($3::text IS NULL OR path > $3)
                  AND path !~ $5 AND ($6::text[] IS NULL OR path ~ ANY($6))
                ORDER BY path LIMIT $4"#,
            self.tenant,
            vault,
            after,
            limit,
            visible.hidden,
            visible.readable
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(FileEntry::from).collect())
    }

    /// Visible change-log records with `since < seq <= until`, in order, at most `limit`.
    /// Records of hidden paths are skipped by the query; the caller bounds the scan with
    /// `until` (a head read first), so a page shorter than `limit` means nothing visible is
    /// left up to `until`.
    pub async fn visible_changes(
        &mut self,
        vault: Uuid,
        since: i64,
        until: i64,
        limit: i64,
        visible: Visible<'_>,
    ) -> Result<Vec<ChangeRecord>> {
        let rows = sqlx::query_as!(
            ChangeRow,
            r#"SELECT seq, commit_id, path, op, old_hash, new_hash, size, mtime, principal_id, tool, client_name,
                      client_model, origin, client_tool, committed_at, prev_hash, record_hash
                 FROM change_log
                WHERE tenant_id = $1 AND vault_id = $2 AND seq > $3 AND seq <= $4
                  AND path !~ $6 AND ($7::text[] IS NULL OR path ~ ANY($7))
                ORDER BY seq LIMIT $5"#,
            self.tenant,
            vault,
            since,
            until,
            limit,
            visible.hidden,
            visible.readable
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(ChangeRecord::from).collect())
    }

    /// Whether `vault` holds this content now at a visible path: the content the caller may
    /// download by hash. What only history (a deleted or replaced file, the trash) holds is not
    /// served by hash; snapshots are read through the tools, under their checks.
    pub async fn vault_references_blob(&mut self, vault: Uuid, hash: &Hash, visible: Visible<'_>) -> Result<bool> {
        Ok(sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM vault_files
                               WHERE tenant_id = $1 AND vault_id = $2 AND blob_hash = $3
                                 AND path !~ $4 AND ($5::text[] IS NULL OR path ~ ANY($5))) AS "e!""#,
            self.tenant,
            vault,
            &hash[..],
            visible.hidden,
            visible.readable
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// Notes that `principal` uploaded this content to `vault` (or refreshes the time it did).
    /// The blob's inventory row must be there already ([`TenantTx::record_blob`]).
    pub async fn record_upload(&mut self, vault: Uuid, principal: Uuid, hash: &Hash) -> Result<()> {
        sqlx::query!(
            "INSERT INTO blob_uploads (tenant_id, vault_id, principal_id, hash) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant_id, vault_id, principal_id, hash) DO UPDATE SET uploaded_at = now()",
            self.tenant,
            vault,
            principal,
            &hash[..]
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The sizes of those of `hashes` that `principal` may commit to `vault`: content it
    /// uploaded to that vault itself, or content the vault holds now at a visible path (what it
    /// could download anyway). Anything else, whether the tenant holds it elsewhere, in the
    /// vault's history or not at all, is simply missing from the answer. The inventory rows are
    /// locked FOR SHARE, as in [`TenantTx::blob_sizes`], so garbage collection leaves them to
    /// the commit.
    pub async fn committable_blob_sizes(
        &mut self,
        vault: Uuid,
        principal: Uuid,
        hashes: &[Hash],
        visible: Visible<'_>,
    ) -> Result<std::collections::HashMap<Hash, i64>> {
        let list: Vec<Vec<u8>> = hashes.iter().map(|h| h.to_vec()).collect();
        let rows = sqlx::query!(
            r#"SELECT b.hash, b.size FROM blobs b
                WHERE b.tenant_id = $1 AND b.hash = ANY($2)
                  AND (EXISTS (SELECT 1 FROM blob_uploads u
                                WHERE u.tenant_id = $1 AND u.vault_id = $3 AND u.principal_id = $4 AND u.hash = b.hash)
                       OR EXISTS (SELECT 1 FROM vault_files c
                                   WHERE c.tenant_id = $1 AND c.vault_id = $3 AND c.blob_hash = b.hash
                                     AND c.path !~ $5 AND ($6::text[] IS NULL OR c.path ~ ANY($6))))
                FOR SHARE OF b"#,
            self.tenant,
            &list,
            vault,
            principal,
            visible.hidden,
            visible.readable
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (to_hash(&r.hash), r.size)).collect())
    }

    /// Forgets upload records older than `before` (past the blobs' grace period, when unused
    /// content is collected anyway); returns how many went.
    pub async fn forget_uploads(&mut self, before: DateTime<Utc>) -> Result<u64> {
        Ok(sqlx::query!("DELETE FROM blob_uploads WHERE tenant_id = $1 AND uploaded_at < $2", self.tenant, before)
            .execute(&mut *self.tx)
            .await?
            .rows_affected())
    }
}
