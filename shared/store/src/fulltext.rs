//! The full-text segments (otc-fts) as Postgres keeps them: one row per segment, which segment
//! holds each note (`notes.fts_segment`), and the paths each segment holds that are no longer
//! current there (`dead`).

use uuid::Uuid;

use crate::{Result, TenantTx};

/// A segment as the search side lists it (its bytes are fetched separately, and cached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentRef {
    pub id: i64,
    /// Notes written into it, and how many of them it still holds.
    pub notes: i32,
    pub live: i32,
    /// The byte size of its data.
    pub bytes: i64,
    pub dead: Vec<String>,
}

/// Deleted notes and the segment that held each: what a replace or drop retires.
#[derive(Debug, Default)]
pub(crate) struct Held {
    pub(crate) segments: Vec<i64>,
    pub(crate) paths: Vec<String>,
}

impl TenantTx {
    /// Marks the segments in `held` as no longer holding those notes; a segment left with no
    /// live note goes. It locks the segments' rows (in id order, so concurrent rebuild
    /// batches never deadlock), so call it last before the commit.
    pub(crate) async fn fts_retire(&mut self, vault: Uuid, held: &Held) -> Result<()> {
        if held.paths.is_empty() {
            return Ok(());
        }
        let mut ids = held.segments.clone();
        ids.sort_unstable();
        ids.dedup();
        sqlx::query!(
            "SELECT id FROM fts_segments WHERE tenant_id = $1 AND vault_id = $2 AND id = ANY($3) ORDER BY id FOR UPDATE",
            self.tenant,
            vault,
            &ids
        )
        .fetch_all(&mut *self.tx)
        .await?;
        sqlx::query!(
            r#"WITH old AS (
                   SELECT seg, array_agg(path) AS paths, count(*)::int AS n
                   FROM UNNEST($3::int8[], $4::text[]) AS u(seg, path) GROUP BY seg)
               UPDATE fts_segments s SET dead = s.dead || old.paths, live = s.live - old.n
               FROM old WHERE s.tenant_id = $1 AND s.vault_id = $2 AND s.id = old.seg"#,
            self.tenant,
            vault,
            &held.segments,
            &held.paths
        )
        .execute(&mut *self.tx)
        .await?;
        sqlx::query!(
            "DELETE FROM fts_segments WHERE tenant_id = $1 AND vault_id = $2 AND id = ANY($3) AND live <= 0",
            self.tenant,
            vault,
            &ids
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Stores a new segment holding `notes` notes; returns its id.
    pub async fn fts_put_segment(&mut self, vault: Uuid, data: &[u8], notes: i32) -> Result<i64> {
        Ok(sqlx::query_scalar!(
            "INSERT INTO fts_segments (tenant_id, vault_id, data, notes, live) VALUES ($1, $2, $3, $4, $4) RETURNING id",
            self.tenant,
            vault,
            data,
            notes
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// The vault's segments, oldest first.
    pub async fn fts_segments(&mut self, vault: Uuid) -> Result<Vec<SegmentRef>> {
        Ok(sqlx::query_as!(
            SegmentRef,
            r#"SELECT id, notes, live, octet_length(data)::int8 AS "bytes!", dead AS "dead: Vec<String>"
               FROM fts_segments WHERE tenant_id = $1 AND vault_id = $2 ORDER BY id"#,
            self.tenant,
            vault
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// The bytes of these segments (those that still exist).
    pub async fn fts_segment_data(&mut self, vault: Uuid, ids: &[i64]) -> Result<Vec<(i64, Vec<u8>)>> {
        let rows = sqlx::query!(
            "SELECT id, data FROM fts_segments WHERE tenant_id = $1 AND vault_id = $2 AND id = ANY($3)",
            self.tenant,
            vault,
            ids
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (r.id, r.data)).collect())
    }

    /// Replaces segments `old` with their merge (`None` when nothing in them was live): the
    /// notes they held live now point at the new one. Call under the vault's exclusive index
    /// lock, with the merge made from `old` as they are in this transaction.
    pub async fn fts_replace_segments(&mut self, vault: Uuid, old: &[i64], merged: Option<(&[u8], i32)>) -> Result<()> {
        if let Some((data, notes)) = merged {
            let id = self.fts_put_segment(vault, data, notes).await?;
            sqlx::query!(
                "UPDATE notes SET fts_segment = $4 WHERE tenant_id = $1 AND vault_id = $2 AND fts_segment = ANY($3)",
                self.tenant,
                vault,
                old,
                id
            )
            .execute(&mut *self.tx)
            .await?;
        }
        sqlx::query!(
            "DELETE FROM fts_segments WHERE tenant_id = $1 AND vault_id = $2 AND id = ANY($3)",
            self.tenant,
            vault,
            old
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Points these notes at the segment that holds their current chunks.
    pub async fn fts_assign(&mut self, vault: Uuid, paths: &[String], segment: i64) -> Result<()> {
        sqlx::query!(
            "UPDATE notes SET fts_segment = $4 WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)",
            self.tenant,
            vault,
            paths,
            segment
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The vault's files in Obsidian's Excluded files.
    pub async fn excluded_paths(&mut self, vault: Uuid) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar!(
            "SELECT path FROM index_files WHERE tenant_id = $1 AND vault_id = $2 AND excluded",
            self.tenant,
            vault
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// The notes that carry this tag or one nested under it (`tag` lower-cased, without `#`).
    pub async fn paths_tagged(&mut self, vault: Uuid, tag: &str) -> Result<Vec<String>> {
        // The range (every key starting with the tag and a byte below '0', '/' among them) lets
        // note_tags_key serve it; the condition after it is the exact one.
        Ok(sqlx::query_scalar!(
            r#"SELECT DISTINCT path AS "path!" FROM note_tags
               WHERE tenant_id = $1 AND vault_id = $2 AND tag_key >= $3 AND tag_key < $3 || '0' AND (tag_key = $3 OR starts_with(tag_key, $3 || '/'))"#,
            self.tenant,
            vault,
            tag
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }
}

impl TenantTx {
    /// The tenant's vaults holding more than `max` segments, or a mostly dead one.
    pub async fn fts_vaults_to_merge(&mut self, max: i64) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar!(
            r#"SELECT vault_id FROM fts_segments WHERE tenant_id = $1 GROUP BY vault_id
               HAVING count(*) > $2 OR bool_or(notes >= 8 AND live * 2 < notes)"#,
            self.tenant,
            max
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }
}
