//! Chunk vectors, the embedding cache, each vault's model sets, the embed jobs and the
//! tenant's embedding usage. Statements that carry vectors are built at run time (`sqlx::query`
//! with pgvector's type), since the query macros do not know the `vector` type.

use chrono::{DateTime, Utc};
use pgvector::Vector;
use serde_json::Value;
use sqlx::Row;
use uuid::Uuid;

use crate::{Hash, Result, TenantTx, Visible};

/// The job kind the indexer writes for the embedding workers: `{"paths": [...]}` (notes whose
/// chunks changed) or `{"model": M, "after": P}` (a model's backfill, from path P on).
pub const EMBED_JOB: &str = "embed";

/// HNSW indexes exist for these dimensions (migration 20261215000001); others are searched
/// exactly.
pub const INDEXED_DIMS: [i32; 5] = [384, 512, 768, 1024, 1536];

/// A model set a vault holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultModel {
    pub model: String,
    pub dims: i32,
    pub complete: bool,
    pub started_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

/// A chunk without a vector for a model, with what its embedding input is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkToEmbed {
    pub path: String,
    pub ord: i32,
    pub heading_path: String,
    pub start: i32,
    pub end: i32,
    /// The note's content when the chunk was indexed.
    pub blob: Hash,
}

/// A vector to store for a chunk, with the span it was made from.
#[derive(Debug, Clone)]
pub struct ChunkVector {
    pub path: String,
    pub ord: i32,
    pub start: i32,
    pub end: i32,
    pub embedding: Vec<f32>,
}

/// A chunk near a query vector: its note, its place and the cosine similarity.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorHit {
    pub path: String,
    pub ord: i32,
    pub score: f32,
}

/// Which chunks a vector search may return, besides its vault and model.
#[derive(Debug, Clone)]
pub struct VectorFilter<'a> {
    /// A path prefix ("" for the whole vault).
    pub prefix: &'a str,
    /// What the caller may see: the hidden folders and the read ACL.
    pub visible: Visible<'a>,
    /// Paths left out besides the Excluded files (which the query leaves out itself): the note
    /// a related-notes search starts from and what it links to.
    pub skip: &'a [String],
}

/// Where a chunk sits in its note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkSpan {
    pub path: String,
    pub ord: i32,
    pub heading_path: String,
    pub start: i32,
    pub end: i32,
    /// 0-based line of its start.
    pub line: i32,
}

/// A note the link graph puts near another: how many of that note's link targets it links to
/// too, and whether it links to that note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkNeighbour {
    pub path: String,
    pub shared_targets: i64,
    pub links_here: bool,
}

/// What get_index_status reports of a vault's embeddings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbeddingStatus {
    pub models: Vec<VaultModel>,
    /// Chunks of the vault, and how many have a vector for each model (in `models` order).
    pub chunks: i64,
    pub vectors: Vec<i64>,
    pub queued_jobs: i64,
    pub dead_jobs: i64,
    pub oldest_queued_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
}

/// A tenant's embedding usage for one model over a period.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbeddingUsage {
    pub model: String,
    pub requests: i64,
    pub tokens: i64,
    pub embedded: i64,
    pub cached: i64,
}

impl TenantTx {
    /// The model sets the vault holds, newest first.
    pub async fn vault_models(&mut self, vault: Uuid) -> Result<Vec<VaultModel>> {
        let rows = sqlx::query!(
            r#"SELECT model, dims, state, started_at, completed_at FROM vault_embeddings
                WHERE tenant_id = $1 AND vault_id = $2 ORDER BY started_at DESC, model"#,
            self.tenant,
            vault
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| VaultModel {
                model: r.model,
                dims: r.dims,
                complete: r.state == "complete",
                started_at: r.started_at,
                completed_at: r.completed_at,
            })
            .collect())
    }

    /// Starts `model`'s set for the vault unless it has one: the set is 'filling' and a
    /// backfill job walks every note. Returns whether it started one.
    pub async fn start_vault_model(&mut self, vault: Uuid, model: &str, dims: i32) -> Result<bool> {
        let started = sqlx::query!(
            r#"INSERT INTO vault_embeddings (tenant_id, vault_id, model, dims, state) VALUES ($1, $2, $3, $4, 'filling')
                ON CONFLICT DO NOTHING"#,
            self.tenant,
            vault,
            model,
            dims
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected()
            == 1;
        if started {
            self.queue_embed_job(vault, &serde_json::json!({ "model": model, "after": "" })).await?;
        }
        Ok(started)
    }

    /// `model`'s set for the vault is complete: every other model's set goes, vectors and all.
    pub async fn complete_vault_model(&mut self, vault: Uuid, model: &str) -> Result<()> {
        sqlx::query!(
            r#"WITH done AS (UPDATE vault_embeddings SET state = 'complete', completed_at = now()
                              WHERE tenant_id = $1 AND vault_id = $2 AND model = $3),
                    old AS (DELETE FROM vault_embeddings WHERE tenant_id = $1 AND vault_id = $2 AND model <> $3)
               DELETE FROM chunk_vectors WHERE tenant_id = $1 AND vault_id = $2 AND model <> $3"#,
            self.tenant,
            vault,
            model
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Drops `model`'s set from the vault, vectors and all (a set no longer configured, whose
    /// backfill must not retire the configured one).
    pub async fn drop_vault_model(&mut self, vault: Uuid, model: &str) -> Result<()> {
        sqlx::query!(
            r#"WITH gone AS (DELETE FROM vault_embeddings WHERE tenant_id = $1 AND vault_id = $2 AND model = $3)
               DELETE FROM chunk_vectors WHERE tenant_id = $1 AND vault_id = $2 AND model = $3"#,
            self.tenant,
            vault,
            model
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    pub async fn queue_embed_job(&mut self, vault: Uuid, payload: &Value) -> Result<i64> {
        let id = sqlx::query_scalar!(
            "INSERT INTO jobs (tenant_id, vault_id, kind, payload) VALUES ($1, $2, $3, $4) RETURNING id",
            self.tenant,
            vault,
            EMBED_JOB,
            payload
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(id)
    }

    /// Whether the vault has embed jobs queued (chunks changed and not embedded yet).
    pub async fn embedding_pending(&mut self, vault: Uuid) -> Result<bool> {
        Ok(sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM jobs WHERE tenant_id = $1 AND vault_id = $2 AND kind = $3 AND state = 'queued') AS "p!""#,
            self.tenant,
            vault,
            EMBED_JOB
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// Moves a backfill job on to the notes after `after`.
    pub async fn set_job_payload(&mut self, id: i64, payload: &Value) -> Result<()> {
        sqlx::query!("UPDATE jobs SET payload = $3 WHERE tenant_id = $1 AND id = $2", self.tenant, id, payload)
            .execute(&mut *self.tx)
            .await?;
        Ok(())
    }

    /// Up to `limit` note paths after `after`, in path order (a backfill's next notes).
    pub async fn note_paths_after(&mut self, vault: Uuid, after: &str, limit: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar!(
            r#"SELECT path FROM notes WHERE tenant_id = $1 AND vault_id = $2 AND path > $3 ORDER BY path LIMIT $4"#,
            self.tenant,
            vault,
            after,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Up to `limit` chunks of `paths` with no vector for `model`, in path order. Notes in the
    /// folders hidden from every tool (`.trash/`, `.obsidian/`, `.git/`) are never embedded: no
    /// search can return them. Each path is looked up by the chunks' key (a join over the
    /// unnested list, not `= ANY`, which Postgres tests row by row against the whole list).
    pub async fn chunks_to_embed(
        &mut self,
        vault: Uuid,
        model: &str,
        paths: &[String],
        limit: i64,
    ) -> Result<Vec<ChunkToEmbed>> {
        let rows = sqlx::query!(
            r#"SELECT c.path, c.ord, c.heading_path, c.start_offset, c.end_offset, f.blob_hash
                 FROM (SELECT DISTINCT p FROM UNNEST($3::text[]) AS u(p)) AS want
                 JOIN chunks c ON c.tenant_id = $1 AND c.vault_id = $2 AND c.path = want.p
                 JOIN index_files f ON f.tenant_id = $1 AND f.vault_id = $2 AND f.path = c.path
                WHERE c.path !~ '(^|/)\.'
                  AND NOT EXISTS (SELECT 1 FROM chunk_vectors v
                                   WHERE v.tenant_id = $1 AND v.vault_id = $2 AND v.model = $4
                                     AND v.path = c.path AND v.ord = c.ord)
                ORDER BY c.path, c.ord LIMIT $5"#,
            self.tenant,
            vault,
            paths,
            model,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| ChunkToEmbed {
                path: r.path,
                ord: r.ord,
                heading_path: r.heading_path,
                start: r.start_offset,
                end: r.end_offset,
                blob: crate::files::to_hash(&r.blob_hash),
            })
            .collect())
    }

    /// Vectors the cache holds for these text hashes, by hash (read without locking: two
    /// workers of a tenant may read the same rows; [`Self::cache_vectors`] marks them used).
    pub async fn cached_vectors(&mut self, model: &str, hashes: &[Vec<u8>]) -> Result<Vec<(Vec<u8>, Vec<f32>)>> {
        let rows = sqlx::query(
            "SELECT text_hash, embedding FROM embedding_cache WHERE tenant_id = $1 AND model = $2 AND text_hash = ANY($3)",
        )
        .bind(self.tenant)
        .bind(model)
        .bind(hashes)
        .fetch_all(&mut *self.tx)
        .await?;
        rows.into_iter().map(|r| Ok((r.try_get::<Vec<u8>, _>(0)?, r.try_get::<Vector, _>(1)?.to_vec()))).collect()
    }

    /// Keeps vectors in the cache by the hash of their text (marking a row used when it is
    /// there already). Rows are written in hash order, so two workers writing overlapping sets
    /// wait for each other instead of deadlocking.
    pub async fn cache_vectors(&mut self, model: &str, entries: &[(Vec<u8>, Vec<f32>)]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut sorted: Vec<&(Vec<u8>, Vec<f32>)> = entries.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        sorted.dedup_by(|a, b| a.0 == b.0);
        let hashes: Vec<Vec<u8>> = sorted.iter().map(|(h, _)| h.clone()).collect();
        let vectors: Vec<Vector> = sorted.iter().map(|(_, v)| Vector::from(v.clone())).collect();
        sqlx::query(
            r#"INSERT INTO embedding_cache (tenant_id, model, text_hash, embedding)
               SELECT $1, $2, h, e FROM UNNEST($3::bytea[], $4::vector[]) WITH ORDINALITY AS u(h, e, i) ORDER BY i
               ON CONFLICT (tenant_id, model, text_hash) DO UPDATE SET embedding = EXCLUDED.embedding, used_at = now()"#,
        )
        .bind(self.tenant)
        .bind(model)
        .bind(&hashes)
        .bind(&vectors)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Stores chunk vectors for `model`, each only while its note is still the content
    /// `blobs` names and its chunk still has the span it was made from (a note changed or
    /// re-chunked since it was read is embedded again by its own job). The caller holds the
    /// vault's index lock exclusively, so no indexer, rebuild batch included, changes the
    /// chunks meanwhile.
    /// Returns how many it stored.
    pub async fn put_chunk_vectors(
        &mut self,
        vault: Uuid,
        model: &str,
        dims: i32,
        vectors: &[ChunkVector],
        blobs: &[(String, Hash)],
    ) -> Result<u64> {
        if vectors.is_empty() {
            return Ok(0);
        }
        let paths: Vec<String> = vectors.iter().map(|v| v.path.clone()).collect();
        let ords: Vec<i32> = vectors.iter().map(|v| v.ord).collect();
        let starts: Vec<i32> = vectors.iter().map(|v| v.start).collect();
        let ends: Vec<i32> = vectors.iter().map(|v| v.end).collect();
        let embeddings: Vec<Vector> = vectors.iter().map(|v| Vector::from(v.embedding.clone())).collect();
        let blob_paths: Vec<String> = blobs.iter().map(|(p, _)| p.clone()).collect();
        let blob_hashes: Vec<Vec<u8>> = blobs.iter().map(|(_, h)| h.to_vec()).collect();
        let done = sqlx::query(
            r#"WITH current AS (
                   SELECT b.path FROM UNNEST($5::text[], $6::bytea[]) AS b(path, hash)
                     JOIN index_files f ON f.tenant_id = $1 AND f.vault_id = $2 AND f.path = b.path AND f.blob_hash = b.hash)
               INSERT INTO chunk_vectors (tenant_id, vault_id, model, path, ord, dims, embedding)
               SELECT $1, $2, $3, u.path, u.ord, $4, u.e
                 FROM UNNEST($7::text[], $8::int[], $9::vector[], $10::int[], $11::int[]) AS u(path, ord, e, s, t)
                WHERE u.path IN (SELECT path FROM current)
                  AND EXISTS (SELECT 1 FROM chunks c WHERE c.tenant_id = $1 AND c.vault_id = $2 AND c.path = u.path
                                 AND c.ord = u.ord AND c.start_offset = u.s AND c.end_offset = u.t)
               ON CONFLICT (tenant_id, vault_id, model, path, ord) DO UPDATE SET embedding = EXCLUDED.embedding, dims = EXCLUDED.dims"#,
        )
        .bind(self.tenant)
        .bind(vault)
        .bind(model)
        .bind(dims)
        .bind(&blob_paths)
        .bind(&blob_hashes)
        .bind(&paths)
        .bind(&ords)
        .bind(&embeddings)
        .bind(&starts)
        .bind(&ends)
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected())
    }

    /// The `limit` chunks nearest `query` (cosine) among the vault's vectors for `model` that
    /// `filter` lets through, nearest first. Uses the dimension's HNSW index when there is one,
    /// scanning on past filtered-out rows (iterative scan) so the filter does not starve it.
    pub async fn nearest_chunks(
        &mut self,
        vault: Uuid,
        model: &str,
        query: &[f32],
        filter: &VectorFilter<'_>,
        limit: i64,
    ) -> Result<Vec<VectorHit>> {
        let dims = query.len() as i32;
        sqlx::query("SET LOCAL hnsw.iterative_scan = relaxed_order").execute(&mut *self.tx).await?;
        sqlx::query("SET LOCAL hnsw.ef_search = 100").execute(&mut *self.tx).await?;
        // The index is shared by every vault of every tenant: a small vault's rows are few among
        // many, so the scan may pass over more than pgvector's default 20,000 before it has
        // enough.
        sqlx::query("SET LOCAL hnsw.max_scan_tuples = 100000").execute(&mut *self.tx).await?;
        // The cast's type and the dimension are written out, not bound: the planner matches a
        // partial index's predicate only against constants (a generic plan would not use it).
        let typed = if INDEXED_DIMS.contains(&dims) { format!("vector({dims})") } else { "vector".to_string() };
        let sql = format!(
            r#"SELECT path, ord, 1 - (embedding::{typed} <=> $4::{typed}) AS score FROM chunk_vectors
                WHERE tenant_id = $1 AND vault_id = $2 AND model = $3 AND dims = {dims}
                  AND starts_with(path, $5) AND path !~ $6 AND ($7::text[] IS NULL OR path ~ ANY($7))
                  AND path <> ALL($8)
                  AND NOT EXISTS (SELECT 1 FROM index_files f WHERE f.tenant_id = $1 AND f.vault_id = $2
                                     AND f.path = chunk_vectors.path AND f.excluded)
                ORDER BY embedding::{typed} <=> $4::{typed} LIMIT $9"#
        );
        let rows = sqlx::query(&sql)
            .bind(self.tenant)
            .bind(vault)
            .bind(model)
            .bind(Vector::from(query.to_vec()))
            .bind(filter.prefix)
            .bind(filter.visible.hidden)
            .bind(filter.visible.readable)
            .bind(filter.skip)
            .bind(limit)
            .fetch_all(&mut *self.tx)
            .await?;
        // The iterative scan returns rows only roughly in order (relaxed_order): sort them.
        let mut hits = rows
            .into_iter()
            .map(|r| Ok(VectorHit { path: r.try_get(0)?, ord: r.try_get(1)?, score: r.try_get::<f64, _>(2)? as f32 }))
            .collect::<Result<Vec<_>>>()?;
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.path.cmp(&b.path)).then(a.ord.cmp(&b.ord)));
        Ok(hits)
    }

    /// Where these chunks (path, ord) sit, in no particular order; a chunk gone since is left
    /// out.
    pub async fn chunk_spans(&mut self, vault: Uuid, keys: &[(String, i32)]) -> Result<Vec<ChunkSpan>> {
        let paths: Vec<String> = keys.iter().map(|(p, _)| p.clone()).collect();
        let ords: Vec<i32> = keys.iter().map(|(_, o)| *o).collect();
        let rows = sqlx::query!(
            r#"SELECT c.path, c.ord, c.heading_path, c.start_offset, c.end_offset, c.line
                 FROM UNNEST($3::text[], $4::int[]) AS k(path, ord)
                 JOIN chunks c ON c.tenant_id = $1 AND c.vault_id = $2 AND c.path = k.path AND c.ord = k.ord"#,
            self.tenant,
            vault,
            &paths,
            &ords
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| ChunkSpan {
                path: r.path,
                ord: r.ord,
                heading_path: r.heading_path,
                start: r.start_offset,
                end: r.end_offset,
                line: r.line,
            })
            .collect())
    }

    /// The notes `path` links to (resolved), whatever the caller may read: what a related-notes
    /// search leaves out.
    pub async fn link_targets(&mut self, vault: Uuid, path: &str) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar!(
            r#"SELECT DISTINCT resolved_path AS "p!" FROM links
                WHERE tenant_id = $1 AND vault_id = $2 AND source_path = $3 AND resolved_path IS NOT NULL"#,
            self.tenant,
            vault,
            path
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Notes the link graph puts near `path` that it does not link to yet, among those
    /// `visible` shows: notes linking to it, and notes linking to the same targets it does
    /// (most shared first; only targets `visible` shows count, so nothing depends on a note the
    /// caller cannot see). At most `limit`.
    pub async fn link_neighbours(
        &mut self,
        vault: Uuid,
        path: &str,
        visible: &Visible<'_>,
        limit: i64,
    ) -> Result<Vec<LinkNeighbour>> {
        let rows = sqlx::query!(
            r#"WITH mine AS (SELECT DISTINCT resolved_path AS p FROM links
                              WHERE tenant_id = $1 AND vault_id = $2 AND source_path = $3 AND resolved_path IS NOT NULL
                                AND resolved_path !~ $4 AND ($5::text[] IS NULL OR resolved_path ~ ANY($5))),
                    shared AS (SELECT l.source_path AS p, count(DISTINCT l.resolved_path) AS n
                                 FROM links l JOIN mine ON l.resolved_path = mine.p
                                WHERE l.tenant_id = $1 AND l.vault_id = $2 AND l.source_path <> $3 GROUP BY 1),
                    inbound AS (SELECT DISTINCT source_path AS p FROM links
                                 WHERE tenant_id = $1 AND vault_id = $2 AND resolved_path = $3 AND source_path <> $3)
               SELECT coalesce(s.p, i.p) AS "path!", coalesce(s.n, 0) AS "shared!", (i.p IS NOT NULL) AS "links_here!"
                 FROM shared s FULL JOIN inbound i ON s.p = i.p
                WHERE coalesce(s.p, i.p) NOT IN (SELECT p FROM mine)
                  AND coalesce(s.p, i.p) !~ $4 AND ($5::text[] IS NULL OR coalesce(s.p, i.p) ~ ANY($5))
                ORDER BY 3 DESC, 2 DESC, 1 LIMIT $6"#,
            self.tenant,
            vault,
            path,
            visible.hidden,
            visible.readable,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| LinkNeighbour { path: r.path, shared_targets: r.shared, links_here: r.links_here })
            .collect())
    }

    /// A note's chunk vectors for `model`, in chunk order.
    pub async fn note_vectors(&mut self, vault: Uuid, model: &str, path: &str) -> Result<Vec<Vec<f32>>> {
        let rows = sqlx::query(
            "SELECT embedding FROM chunk_vectors WHERE tenant_id = $1 AND vault_id = $2 AND model = $3 AND path = $4 ORDER BY ord",
        )
        .bind(self.tenant)
        .bind(vault)
        .bind(model)
        .bind(path)
        .fetch_all(&mut *self.tx)
        .await?;
        rows.into_iter().map(|r| Ok(r.try_get::<Vector, _>(0)?.to_vec())).collect()
    }

    /// Adds to the tenant's embedding usage for today.
    pub async fn record_embedding_usage(
        &mut self,
        model: &str,
        requests: i64,
        tokens: i64,
        embedded: i64,
        cached: i64,
    ) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO embedding_usage (tenant_id, model, day, requests, tokens, embedded, cached)
               VALUES ($1, $2, current_date, $3, $4, $5, $6)
               ON CONFLICT (tenant_id, model, day) DO UPDATE SET
                   requests = embedding_usage.requests + EXCLUDED.requests,
                   tokens = embedding_usage.tokens + EXCLUDED.tokens,
                   embedded = embedding_usage.embedded + EXCLUDED.embedded,
                   cached = embedding_usage.cached + EXCLUDED.cached"#,
            self.tenant,
            model,
            requests,
            tokens,
            embedded,
            cached
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The tenant's embedding usage per model since `since` (a date).
    pub async fn embedding_usage(&mut self, since: chrono::NaiveDate) -> Result<Vec<EmbeddingUsage>> {
        let rows = sqlx::query!(
            r#"SELECT model, sum(requests)::int8 AS "requests!", sum(tokens)::int8 AS "tokens!",
                      sum(embedded)::int8 AS "embedded!", sum(cached)::int8 AS "cached!"
                 FROM embedding_usage WHERE tenant_id = $1 AND day >= $2 GROUP BY model ORDER BY model"#,
            self.tenant,
            since
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| EmbeddingUsage {
                model: r.model,
                requests: r.requests,
                tokens: r.tokens,
                embedded: r.embedded,
                cached: r.cached,
            })
            .collect())
    }

    /// The vault's embedding state: its model sets with their vector counts, its chunks (those
    /// outside the hidden folders, which are never embedded), and
    /// its embed jobs (queued, dead, the oldest queued, the last error).
    pub async fn embedding_status(&mut self, vault: Uuid) -> Result<EmbeddingStatus> {
        let models = self.vault_models(vault).await?;
        let chunks = sqlx::query_scalar!(
            r#"SELECT count(*) AS "n!" FROM chunks
                WHERE tenant_id = $1 AND vault_id = $2 AND path !~ '(^|/)\.'"#,
            self.tenant,
            vault
        )
        .fetch_one(&mut *self.tx)
        .await?;
        let mut vectors = Vec::with_capacity(models.len());
        for m in &models {
            vectors.push(
                sqlx::query_scalar!(
                    r#"SELECT count(*) AS "n!" FROM chunk_vectors WHERE tenant_id = $1 AND vault_id = $2 AND model = $3"#,
                    self.tenant,
                    vault,
                    m.model
                )
                .fetch_one(&mut *self.tx)
                .await?,
            );
        }
        let jobs = sqlx::query!(
            r#"SELECT count(*) FILTER (WHERE state = 'queued') AS "queued!",
                      count(*) FILTER (WHERE state = 'dead') AS "dead!",
                      min(created_at) FILTER (WHERE state = 'queued') AS oldest,
                      (SELECT last_error FROM jobs j WHERE j.tenant_id = $1 AND j.vault_id = $2 AND j.kind = $3
                          AND j.last_error IS NOT NULL ORDER BY j.id DESC LIMIT 1) AS last_error
                 FROM jobs WHERE tenant_id = $1 AND vault_id = $2 AND kind = $3"#,
            self.tenant,
            vault,
            EMBED_JOB
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(EmbeddingStatus {
            models,
            chunks,
            vectors,
            queued_jobs: jobs.queued,
            dead_jobs: jobs.dead,
            oldest_queued_at: jobs.oldest,
            last_error: jobs.last_error,
        })
    }

    /// Gives dead embed jobs whose last attempt was before `before` another round of attempts
    /// (the provider outage that killed them is likely over). Returns how many.
    pub async fn revive_embed_jobs(&mut self, before: DateTime<Utc>) -> Result<u64> {
        Ok(sqlx::query!(
            r#"UPDATE jobs SET state = 'queued', attempts = 0, run_after = now()
                WHERE tenant_id = $1 AND kind = $2 AND state = 'dead' AND run_after < $3"#,
            self.tenant,
            EMBED_JOB,
            before
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected())
    }

    /// Forgets cached vectors unused since `before`. Returns how many went.
    pub async fn purge_embedding_cache(&mut self, before: DateTime<Utc>) -> Result<u64> {
        Ok(sqlx::query!("DELETE FROM embedding_cache WHERE tenant_id = $1 AND used_at < $2", self.tenant, before)
            .execute(&mut *self.tx)
            .await?
            .rows_affected())
    }
}
