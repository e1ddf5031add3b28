//! The vault index: the rows the indexer derives from the manifest's notes, the outbox queries
//! the indexer claims its work with, and the index's own bookkeeping (how far it has got).
//!
//! Rows are written in bulk (one `UNNEST` insert per table for a whole batch of notes), so a
//! batch costs a handful of round trips whatever its size.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::files::Hash;
use crate::fulltext::Held;
use crate::{Result, TenantTx};

/// A file as the index knows it (notes and attachments alike: both are link targets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFile {
    pub path: String,
    /// The lower-cased file name links are looked up by.
    pub name_key: String,
    pub kind: String,
    pub hash: Hash,
    pub size: i64,
    pub mtime: DateTime<Utc>,
    pub excluded: bool,
}

/// Everything the index holds for one note.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteRecord {
    pub path: String,
    pub title: String,
    pub aliases: Vec<String>,
    pub frontmatter: Option<Value>,
    pub frontmatter_error: Option<String>,
    /// Distinct tags, inline and frontmatter, as first written.
    pub tags: Vec<String>,
    pub headings: Value,
    pub blocks: Value,
    /// The 0-based line where the body starts.
    pub body_line: i32,
    pub size: i64,
    pub mtime: DateTime<Utc>,
    pub content_hash: Hash,
    pub indexed_hash: Hash,
    pub warnings: Vec<String>,
    pub links: Vec<LinkRecord>,
    pub tag_occurrences: Vec<TagRecord>,
    pub properties: Vec<(String, Value)>,
    pub tasks: Vec<TaskRecord>,
    pub chunks: Vec<ChunkRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkRecord {
    /// body, embed or property.
    pub kind: String,
    pub wiki: bool,
    pub raw: String,
    pub target: String,
    pub name_key: String,
    pub resolved_path: Option<String>,
    /// heading or block.
    pub subpath_kind: Option<String>,
    pub subpath: Option<String>,
    pub alias: Option<String>,
    pub property: Option<String>,
    pub start: i32,
    pub end: i32,
    pub line: i32,
    pub col: i32,
}

/// A link row as (position, source, record).
pub(crate) fn link(r: LinkRow) -> (i32, String, LinkRecord) {
    (
        r.ord,
        r.source_path,
        LinkRecord {
            kind: r.kind,
            wiki: r.wiki,
            raw: r.raw,
            target: r.target,
            name_key: r.name_key,
            resolved_path: r.resolved_path,
            subpath_kind: r.subpath_kind,
            subpath: r.subpath,
            alias: r.alias,
            property: r.property,
            start: r.start_offset,
            end: r.end_offset,
            line: r.line,
            col: r.col,
        },
    )
}

pub(crate) struct LinkRow {
    pub(crate) ord: i32,
    pub(crate) source_path: String,
    pub(crate) kind: String,
    pub(crate) wiki: bool,
    pub(crate) raw: String,
    pub(crate) target: String,
    pub(crate) name_key: String,
    pub(crate) resolved_path: Option<String>,
    pub(crate) subpath_kind: Option<String>,
    pub(crate) subpath: Option<String>,
    pub(crate) alias: Option<String>,
    pub(crate) property: Option<String>,
    pub(crate) start_offset: i32,
    pub(crate) end_offset: i32,
    pub(crate) line: i32,
    pub(crate) col: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagRecord {
    pub tag: String,
    /// inline or frontmatter.
    pub source: String,
    pub start: Option<i32>,
    pub line: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub status: String,
    pub done: bool,
    pub text: String,
    pub line: i32,
    pub start: i32,
    pub end: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRecord {
    pub heading_path: String,
    pub start: i32,
    pub end: i32,
    pub line: i32,
    pub text: String,
}

/// An outbox job the indexer holds (locked until its transaction ends).
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedJob {
    pub id: i64,
    pub payload: Value,
    pub seq: Option<i64>,
    pub attempts: i32,
}

/// A stored link whose target may resolve differently now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLink {
    pub source_path: String,
    pub ord: i32,
    pub target: String,
    pub resolved_path: Option<String>,
}

/// What get_index_status reports for a vault.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexStatus {
    pub files: i64,
    pub notes: i64,
    pub excluded: i64,
    pub links: i64,
    pub embeds: i64,
    pub property_links: i64,
    pub unresolved: i64,
    pub tags: i64,
    pub tasks: i64,
    pub chunks: i64,
    pub frontmatter_errors: i64,
    pub indexed_seq: i64,
    pub head_seq: i64,
    pub queued_jobs: i64,
    pub dead_jobs: i64,
    pub oldest_queued_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub rebuilt_at: Option<DateTime<Utc>>,
}

/// The job kind commits write for the indexer.
pub const INDEX_JOB: &str = "index";

impl TenantTx {
    /// The vault's index lock key: an advisory lock, because Postgres queues those fairly (a
    /// waiting exclusive request holds back later shared ones, so a commit's indexing is not
    /// starved by a rebuild whose batches overlap). Two vaults colliding on the 64-bit key only
    /// wait for each other.
    fn index_lock_key(&self, vault: Uuid) -> i64 {
        use sha2::{Digest, Sha256};
        let digest = Sha256::new().chain_update(self.tenant.as_bytes()).chain_update(vault.as_bytes()).finalize();
        i64::from_be_bytes(digest[..8].try_into().expect("eight bytes"))
    }

    async fn ensure_index_state(&mut self, vault: Uuid) -> Result<()> {
        sqlx::query!(
            "INSERT INTO index_state (tenant_id, vault_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            self.tenant,
            vault
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Takes the vault's index lock, exclusively, for this transaction and returns how far the
    /// index has got. With `wait` false, a vault another indexer holds answers `None` at once.
    pub async fn lock_index(&mut self, vault: Uuid, wait: bool) -> Result<Option<i64>> {
        let key = self.index_lock_key(vault);
        if wait {
            sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(key).execute(&mut *self.tx).await?;
        } else {
            let got: bool =
                sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)").bind(key).fetch_one(&mut *self.tx).await?;
            if !got {
                return Ok(None);
            }
        }
        self.ensure_index_state(vault).await?;
        let seq = sqlx::query_scalar!(
            "SELECT indexed_seq FROM index_state WHERE tenant_id = $1 AND vault_id = $2",
            self.tenant,
            vault
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(Some(seq))
    }

    /// Takes the vault's lock for the work named `what` for this transaction, unless another
    /// transaction holds it (false then): one worker at a time does that work on the vault.
    pub async fn try_lock_vault_work(&mut self, vault: Uuid, what: &str) -> Result<bool> {
        use sha2::{Digest, Sha256};
        let digest = Sha256::new()
            .chain_update(self.tenant.as_bytes())
            .chain_update(vault.as_bytes())
            .chain_update(what.as_bytes())
            .finalize();
        let key = i64::from_be_bytes(digest[..8].try_into().expect("eight bytes"));
        Ok(sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)").bind(key).fetch_one(&mut *self.tx).await?)
    }

    /// Takes the vault's index lock shared for this transaction: other shared holders (the
    /// batches of one rebuild) proceed together; [`Self::lock_index`] waits for them, and
    /// shared requests made after it wait for it.
    pub async fn share_index_lock(&mut self, vault: Uuid) -> Result<()> {
        let key = self.index_lock_key(vault);
        sqlx::query("SELECT pg_advisory_xact_lock_shared($1)").bind(key).execute(&mut *self.tx).await?;
        self.ensure_index_state(vault).await
    }

    /// Makes this transaction's commit asynchronous: it returns before its WAL reaches the
    /// disk. Only for work a later synchronous commit seals: that commit's flush covers every
    /// earlier record, so a crash loses this one only if it also loses the one that would have
    /// used it (a rebuild's batches, sealed by the rebuild's last transaction).
    pub async fn set_asynchronous_commit(&mut self) -> Result<()> {
        sqlx::query("SET LOCAL synchronous_commit = off").execute(&mut *self.tx).await?;
        Ok(())
    }

    /// Vaults with jobs of `kind` due, oldest work first.
    pub async fn due_job_vaults(&mut self, kind: &str, limit: i64) -> Result<Vec<Uuid>> {
        let rows = sqlx::query_scalar!(
            r#"SELECT vault_id AS "vault_id!" FROM jobs
                WHERE tenant_id = $1 AND state = 'queued' AND kind = $2 AND run_after <= now() AND vault_id IS NOT NULL
                GROUP BY vault_id ORDER BY min(id) LIMIT $3"#,
            self.tenant,
            kind,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows)
    }

    /// Locks up to `limit` due jobs of `kind` of the vault, oldest first, skipping any another
    /// transaction holds. "Due" is judged by the clock now, not by `now()` (the transaction's
    /// start): a batch that waited for the index lock must see the jobs committed while it
    /// waited, or each waiting committer indexes its own job alone.
    pub async fn claim_jobs(&mut self, vault: Uuid, kind: &str, limit: i64) -> Result<Vec<ClaimedJob>> {
        let rows = sqlx::query!(
            r#"SELECT id, payload, seq, attempts FROM jobs
                WHERE tenant_id = $1 AND vault_id = $2 AND state = 'queued' AND kind = $3
                  AND run_after <= clock_timestamp()
                ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED"#,
            self.tenant,
            vault,
            kind,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| ClaimedJob { id: r.id, payload: r.payload, seq: r.seq, attempts: r.attempts })
            .collect())
    }

    /// Removes finished jobs.
    pub async fn finish_jobs(&mut self, ids: &[i64]) -> Result<()> {
        sqlx::query!("DELETE FROM jobs WHERE tenant_id = $1 AND id = ANY($2)", self.tenant, ids)
            .execute(&mut *self.tx)
            .await?;
        Ok(())
    }

    /// Records a failed attempt: the job runs again after an exponential back-off (capped at
    /// `max_backoff_secs`), or is dead-lettered, with its error kept, after `max_attempts`.
    pub async fn retry_jobs(
        &mut self,
        ids: &[i64],
        error: &str,
        max_attempts: i32,
        max_backoff_secs: f64,
    ) -> Result<()> {
        sqlx::query!(
            r#"UPDATE jobs SET attempts = attempts + 1, last_error = $3,
                   state = CASE WHEN attempts + 1 >= $4 THEN 'dead' ELSE 'queued' END,
                   run_after = now() + make_interval(secs => least($5::float8, power(2, attempts)::float8))
                WHERE tenant_id = $1 AND id = ANY($2)"#,
            self.tenant,
            ids,
            error,
            max_attempts,
            max_backoff_secs
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Queues a job outside a commit, due now.
    pub async fn queue_job(&mut self, vault: Uuid, job: &crate::NewJob) -> Result<i64> {
        let id = sqlx::query_scalar!(
            "INSERT INTO jobs (tenant_id, vault_id, kind, payload) VALUES ($1, $2, $3, $4) RETURNING id",
            self.tenant,
            vault,
            job.kind,
            job.payload
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(id)
    }

    /// Queues an index job outside a commit (a full rebuild's marker, or a retry by hand).
    pub async fn queue_index_job(&mut self, vault: Uuid, payload: &Value) -> Result<i64> {
        let seq = self.head_seq(vault).await?;
        let id = sqlx::query_scalar!(
            "INSERT INTO jobs (tenant_id, vault_id, kind, payload, seq) VALUES ($1, $2, $3, $4, $5) RETURNING id",
            self.tenant,
            vault,
            INDEX_JOB,
            payload,
            seq
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(id)
    }

    /// Sets how far the index has got: just before the oldest index job still queued, or the
    /// vault's head when none is. Dead jobs do not hold it back (they are reported as failures).
    pub async fn advance_indexed_seq(&mut self, vault: Uuid) -> Result<i64> {
        let seq = sqlx::query_scalar!(
            r#"UPDATE index_state SET updated_at = now(), indexed_seq = COALESCE(
                   (SELECT min(seq) - 1 FROM jobs
                     WHERE tenant_id = $1 AND vault_id = $2 AND kind = $3 AND state = 'queued' AND seq IS NOT NULL),
                   (SELECT seq FROM vault_heads WHERE tenant_id = $1 AND vault_id = $2), 0)
                WHERE tenant_id = $1 AND vault_id = $2 RETURNING indexed_seq"#,
            self.tenant,
            vault,
            INDEX_JOB
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(seq)
    }

    pub async fn mark_rebuilt(&mut self, vault: Uuid) -> Result<()> {
        sqlx::query!(
            "UPDATE index_state SET rebuilt_at = now() WHERE tenant_id = $1 AND vault_id = $2",
            self.tenant,
            vault
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The index's rows for `paths`.
    pub async fn index_files_at(&mut self, vault: Uuid, paths: &[String]) -> Result<Vec<IndexFile>> {
        let rows = sqlx::query!(
            r#"SELECT path, name_key, kind, blob_hash, size, mtime, excluded FROM index_files
                WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)"#,
            self.tenant,
            vault,
            paths
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| IndexFile {
                path: r.path,
                name_key: r.name_key,
                kind: r.kind,
                hash: crate::files::to_hash(&r.blob_hash),
                size: r.size,
                mtime: r.mtime,
                excluded: r.excluded,
            })
            .collect())
    }

    /// Index paths in order after `after`, at most `limit` (a rebuild's sweep for leftovers).
    pub async fn index_paths(&mut self, vault: Uuid, after: Option<&str>, limit: i64) -> Result<Vec<String>> {
        let rows = sqlx::query_scalar!(
            r#"SELECT path FROM index_files WHERE tenant_id = $1 AND vault_id = $2 AND ($3::text IS NULL OR path > $3)
                ORDER BY path LIMIT $4"#,
            self.tenant,
            vault,
            after,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows)
    }

    /// Paths of the files whose name key is one of `keys`: the candidates links with those
    /// names can resolve to.
    pub async fn paths_named(&mut self, vault: Uuid, keys: &[String]) -> Result<Vec<String>> {
        let rows = sqlx::query_scalar!(
            "SELECT path FROM index_files WHERE tenant_id = $1 AND vault_id = $2 AND name_key = ANY($3)",
            self.tenant,
            vault,
            keys
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows)
    }

    /// Inserts or replaces index file rows.
    pub async fn put_index_files(&mut self, vault: Uuid, files: &[IndexFile]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let col = |f: fn(&IndexFile) -> String| files.iter().map(f).collect::<Vec<_>>();
        let hashes: Vec<Vec<u8>> = files.iter().map(|f| f.hash.to_vec()).collect();
        let sizes: Vec<i64> = files.iter().map(|f| f.size).collect();
        let mtimes: Vec<DateTime<Utc>> = files.iter().map(|f| f.mtime).collect();
        let excluded: Vec<bool> = files.iter().map(|f| f.excluded).collect();
        sqlx::query!(
            r#"INSERT INTO index_files (tenant_id, vault_id, path, name_key, kind, blob_hash, size, mtime, excluded)
                SELECT $1, $2, * FROM UNNEST($3::text[], $4::text[], $5::text[], $6::bytea[], $7::int8[], $8::timestamptz[], $9::bool[])
                ON CONFLICT (tenant_id, vault_id, path) DO UPDATE SET name_key = EXCLUDED.name_key, kind = EXCLUDED.kind,
                    blob_hash = EXCLUDED.blob_hash, size = EXCLUDED.size, mtime = EXCLUDED.mtime, excluded = EXCLUDED.excluded"#,
            self.tenant,
            vault,
            &col(|f| f.path.clone()),
            &col(|f| f.name_key.clone()),
            &col(|f| f.kind.clone()),
            &hashes,
            &sizes,
            &mtimes,
            &excluded
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Removes paths from the index altogether: their file rows, notes, links, tags,
    /// properties, tasks, chunks and chunk vectors, and their place in the full-text segments.
    pub async fn drop_index_files(&mut self, vault: Uuid, paths: &[String]) -> Result<()> {
        if paths.is_empty() {
            return Ok(());
        }
        let retired = self.delete_note_rows(vault, paths).await?;
        sqlx::query!(
            "DELETE FROM index_files WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)",
            self.tenant,
            vault,
            paths
        )
        .execute(&mut *self.tx)
        .await?;
        self.fts_retire(vault, &retired).await?;
        Ok(())
    }

    /// Deletes these notes' rows and every row that hangs off them in one statement (the
    /// tables have no foreign keys among them: see migration 20261207000001). Returns which
    /// full-text segment held each deleted note, for [`Self::fts_retire`].
    async fn delete_note_rows(&mut self, vault: Uuid, paths: &[String]) -> Result<Held> {
        // Every data-modifying WITH runs to completion whether or not the query reads it.
        let rows = sqlx::query!(
            r#"WITH links AS (DELETE FROM links WHERE tenant_id = $1 AND vault_id = $2 AND source_path = ANY($3)),
                    tags AS (DELETE FROM note_tags WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)),
                    properties AS (DELETE FROM note_properties WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)),
                    tasks AS (DELETE FROM note_tasks WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)),
                    chunks AS (DELETE FROM chunks WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)),
                    vectors AS (DELETE FROM chunk_vectors WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)),
                    gone AS (DELETE FROM notes WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)
                             RETURNING fts_segment, path)
               SELECT fts_segment AS "segment!", path FROM gone WHERE fts_segment IS NOT NULL"#,
            self.tenant,
            vault,
            paths
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(Held {
            segments: rows.iter().map(|r| r.segment).collect(),
            paths: rows.into_iter().map(|r| r.path).collect(),
        })
    }

    /// Sets the excluded flag of every index file in the vault by `excluded`.
    pub async fn set_excluded(&mut self, vault: Uuid, excluded: &[String]) -> Result<()> {
        sqlx::query!(
            "UPDATE index_files SET excluded = (path = ANY($3)) WHERE tenant_id = $1 AND vault_id = $2 AND excluded <> (path = ANY($3))",
            self.tenant,
            vault,
            excluded
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Replaces the index rows of these notes (any earlier rows for the paths go first, and
    /// the full-text segments holding them let them go); `segment` is the full-text segment
    /// that holds their chunks now.
    pub async fn replace_notes(&mut self, vault: Uuid, notes: &[NoteRecord], segment: Option<i64>) -> Result<()> {
        if notes.is_empty() {
            return Ok(());
        }
        let tenant = self.tenant;
        let paths: Vec<String> = notes.iter().map(|n| n.path.clone()).collect();
        let started = std::time::Instant::now();
        let retired = self.delete_note_rows(vault, &paths).await?;
        let deleted = started.elapsed();

        sqlx::query!(
            r#"INSERT INTO notes (tenant_id, vault_id, path, title, aliases, frontmatter, frontmatter_error, tags, headings,
                                  blocks, size, mtime, content_hash, indexed_hash, warnings, body_line, fts_segment)
                SELECT $1, $2, u.path, u.title, ARRAY(SELECT jsonb_array_elements_text(u.aliases)),
                       NULLIF(u.frontmatter, 'null'::jsonb), u.fm_error,
                       ARRAY(SELECT jsonb_array_elements_text(u.tags)), u.headings, u.blocks, u.size, u.mtime, u.content_hash,
                       u.indexed_hash, ARRAY(SELECT jsonb_array_elements_text(u.warnings)), u.body_line, $17
                FROM UNNEST($3::text[], $4::text[], $5::jsonb[], $6::jsonb[], $7::text[], $8::jsonb[], $9::jsonb[], $10::jsonb[],
                            $11::int8[], $12::timestamptz[], $13::bytea[], $14::bytea[], $15::jsonb[], $16::int4[])
                     AS u(path, title, aliases, frontmatter, fm_error, tags, headings, blocks, size, mtime, content_hash,
                          indexed_hash, warnings, body_line)"#,
            tenant,
            vault,
            &paths,
            &notes.iter().map(|n| n.title.clone()).collect::<Vec<_>>(),
            &notes.iter().map(|n| Value::from(n.aliases.clone())).collect::<Vec<Value>>(),
            &notes.iter().map(|n| n.frontmatter.clone().unwrap_or(Value::Null)).collect::<Vec<Value>>(),
            &notes.iter().map(|n| n.frontmatter_error.clone()).collect::<Vec<_>>() as &[Option<String>],
            &notes.iter().map(|n| Value::from(n.tags.clone())).collect::<Vec<Value>>(),
            &notes.iter().map(|n| n.headings.clone()).collect::<Vec<Value>>(),
            &notes.iter().map(|n| n.blocks.clone()).collect::<Vec<Value>>(),
            &notes.iter().map(|n| n.size).collect::<Vec<i64>>(),
            &notes.iter().map(|n| n.mtime).collect::<Vec<_>>(),
            &notes.iter().map(|n| n.content_hash.to_vec()).collect::<Vec<Vec<u8>>>(),
            &notes.iter().map(|n| n.indexed_hash.to_vec()).collect::<Vec<Vec<u8>>>(),
            &notes.iter().map(|n| Value::from(n.warnings.clone())).collect::<Vec<Value>>(),
            &notes.iter().map(|n| n.body_line).collect::<Vec<i32>>(),
            segment,
        )
        .execute(&mut *self.tx)
        .await?;
        let inserted = started.elapsed();
        let sources: Vec<(&str, &[LinkRecord])> = notes.iter().map(|n| (n.path.as_str(), n.links.as_slice())).collect();
        self.insert_links(vault, &sources).await?;
        let linked = started.elapsed();
        self.insert_note_details(vault, notes).await?;
        let detailed = started.elapsed();
        // Last, so that the segment rows it locks are held only until the commit.
        self.fts_retire(vault, &retired).await?;
        tracing::debug!(
            notes = notes.len(),
            delete_ms = deleted.as_millis() as u64,
            notes_ms = (inserted - deleted).as_millis() as u64,
            links_ms = (linked - inserted).as_millis() as u64,
            details_ms = (detailed - linked).as_millis() as u64,
            retire_ms = (started.elapsed() - detailed).as_millis() as u64,
            "replaced index rows"
        );
        Ok(())
    }

    /// Replaces the link rows of files that are not notes but link (canvases: their file
    /// nodes and the links inside their text nodes), each file's links in order.
    pub async fn replace_file_links(&mut self, vault: Uuid, files: &[(String, Vec<LinkRecord>)]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let paths: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
        sqlx::query!(
            "DELETE FROM links WHERE tenant_id = $1 AND vault_id = $2 AND source_path = ANY($3)",
            self.tenant,
            vault,
            &paths
        )
        .execute(&mut *self.tx)
        .await?;
        let sources: Vec<(&str, &[LinkRecord])> = files.iter().map(|(p, l)| (p.as_str(), l.as_slice())).collect();
        self.insert_links(vault, &sources).await
    }

    async fn insert_links(&mut self, vault: Uuid, sources: &[(&str, &[LinkRecord])]) -> Result<()> {
        let links: Vec<(&str, i32, &LinkRecord)> = sources
            .iter()
            .flat_map(|(path, links)| links.iter().enumerate().map(move |(i, l)| (*path, i as i32, l)))
            .collect();
        if links.is_empty() {
            return Ok(());
        }
        macro_rules! col {
            ($f:expr) => {
                links.iter().map($f).collect::<Vec<_>>()
            };
        }
        sqlx::query!(
            r#"INSERT INTO links (tenant_id, vault_id, source_path, ord, kind, wiki, raw, target, name_key, resolved_path,
                                  subpath_kind, subpath, alias, property, start_offset, end_offset, line, col)
                SELECT $1, $2, * FROM UNNEST($3::text[], $4::int4[], $5::text[], $6::bool[], $7::text[], $8::text[], $9::text[],
                    $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::int4[], $16::int4[], $17::int4[], $18::int4[])"#,
            self.tenant,
            vault,
            &col!(|(p, _, _)| p.to_string()),
            &col!(|(_, i, _)| *i),
            &col!(|(_, _, l)| l.kind.clone()),
            &col!(|(_, _, l)| l.wiki),
            &col!(|(_, _, l)| l.raw.clone()),
            &col!(|(_, _, l)| l.target.clone()),
            &col!(|(_, _, l)| l.name_key.clone()),
            &col!(|(_, _, l)| l.resolved_path.clone()) as &[Option<String>],
            &col!(|(_, _, l)| l.subpath_kind.clone()) as &[Option<String>],
            &col!(|(_, _, l)| l.subpath.clone()) as &[Option<String>],
            &col!(|(_, _, l)| l.alias.clone()) as &[Option<String>],
            &col!(|(_, _, l)| l.property.clone()) as &[Option<String>],
            &col!(|(_, _, l)| l.start),
            &col!(|(_, _, l)| l.end),
            &col!(|(_, _, l)| l.line),
            &col!(|(_, _, l)| l.col),
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn insert_note_details(&mut self, vault: Uuid, notes: &[NoteRecord]) -> Result<()> {
        let tenant = self.tenant;
        let tags: Vec<(&str, i32, &TagRecord)> = notes
            .iter()
            .flat_map(|n| n.tag_occurrences.iter().enumerate().map(move |(i, t)| (n.path.as_str(), i as i32, t)))
            .collect();
        if !tags.is_empty() {
            sqlx::query!(
                r#"INSERT INTO note_tags (tenant_id, vault_id, path, ord, tag, tag_key, source, start_offset, line)
                    SELECT $1, $2, * FROM UNNEST($3::text[], $4::int4[], $5::text[], $9::text[], $6::text[], $7::int4[],
                                                 $8::int4[])"#,
                tenant,
                vault,
                &tags.iter().map(|(p, _, _)| p.to_string()).collect::<Vec<_>>(),
                &tags.iter().map(|(_, i, _)| *i).collect::<Vec<_>>(),
                &tags.iter().map(|(_, _, t)| t.tag.clone()).collect::<Vec<_>>(),
                &tags.iter().map(|(_, _, t)| t.source.clone()).collect::<Vec<_>>(),
                &tags.iter().map(|(_, _, t)| t.start).collect::<Vec<_>>() as &[Option<i32>],
                &tags.iter().map(|(_, _, t)| t.line).collect::<Vec<_>>() as &[Option<i32>],
                // Lower-cased here, as queries lower-case tags, whatever the database's locale.
                &tags.iter().map(|(_, _, t)| t.tag.to_lowercase()).collect::<Vec<_>>(),
            )
            .execute(&mut *self.tx)
            .await?;
        }
        let props: Vec<(&str, &(String, Value))> =
            notes.iter().flat_map(|n| n.properties.iter().map(move |p| (n.path.as_str(), p))).collect();
        if !props.is_empty() {
            sqlx::query!(
                r#"INSERT INTO note_properties (tenant_id, vault_id, path, key, value)
                    SELECT $1, $2, * FROM UNNEST($3::text[], $4::text[], $5::jsonb[])"#,
                tenant,
                vault,
                &props.iter().map(|(p, _)| p.to_string()).collect::<Vec<_>>(),
                &props.iter().map(|(_, (k, _))| k.clone()).collect::<Vec<_>>(),
                &props.iter().map(|(_, (_, v))| v.clone()).collect::<Vec<_>>(),
            )
            .execute(&mut *self.tx)
            .await?;
        }
        let tasks: Vec<(&str, i32, &TaskRecord)> = notes
            .iter()
            .flat_map(|n| n.tasks.iter().enumerate().map(move |(i, t)| (n.path.as_str(), i as i32, t)))
            .collect();
        if !tasks.is_empty() {
            sqlx::query!(
                r#"INSERT INTO note_tasks (tenant_id, vault_id, path, ord, status, done, text, line, start_offset, end_offset)
                    SELECT $1, $2, * FROM UNNEST($3::text[], $4::int4[], $5::text[], $6::bool[], $7::text[], $8::int4[],
                                                 $9::int4[], $10::int4[])"#,
                tenant,
                vault,
                &tasks.iter().map(|(p, _, _)| p.to_string()).collect::<Vec<_>>(),
                &tasks.iter().map(|(_, i, _)| *i).collect::<Vec<_>>(),
                &tasks.iter().map(|(_, _, t)| t.status.clone()).collect::<Vec<_>>(),
                &tasks.iter().map(|(_, _, t)| t.done).collect::<Vec<_>>(),
                &tasks.iter().map(|(_, _, t)| t.text.clone()).collect::<Vec<_>>(),
                &tasks.iter().map(|(_, _, t)| t.line).collect::<Vec<_>>(),
                &tasks.iter().map(|(_, _, t)| t.start).collect::<Vec<_>>(),
                &tasks.iter().map(|(_, _, t)| t.end).collect::<Vec<_>>(),
            )
            .execute(&mut *self.tx)
            .await?;
        }
        let chunks: Vec<(&str, i32, &ChunkRecord)> = notes
            .iter()
            .flat_map(|n| n.chunks.iter().enumerate().map(move |(i, c)| (n.path.as_str(), i as i32, c)))
            .collect();
        if !chunks.is_empty() {
            sqlx::query!(
                r#"INSERT INTO chunks (tenant_id, vault_id, path, ord, heading_path, start_offset, end_offset, line)
                    SELECT $1, $2, * FROM UNNEST($3::text[], $4::int4[], $5::text[], $6::int4[], $7::int4[], $8::int4[])"#,
                tenant,
                vault,
                &chunks.iter().map(|(p, _, _)| p.to_string()).collect::<Vec<_>>(),
                &chunks.iter().map(|(_, i, _)| *i).collect::<Vec<_>>(),
                &chunks.iter().map(|(_, _, c)| c.heading_path.clone()).collect::<Vec<_>>(),
                &chunks.iter().map(|(_, _, c)| c.start).collect::<Vec<_>>(),
                &chunks.iter().map(|(_, _, c)| c.end).collect::<Vec<_>>(),
                &chunks.iter().map(|(_, _, c)| c.line).collect::<Vec<_>>(),
            )
            .execute(&mut *self.tx)
            .await?;
        }
        Ok(())
    }

    /// Links whose target's name key is one of `keys`: those a file of that name appearing or
    /// disappearing can re-resolve.
    pub async fn links_named(&mut self, vault: Uuid, keys: &[String]) -> Result<Vec<StoredLink>> {
        let rows = sqlx::query!(
            r#"SELECT source_path, ord, target, resolved_path FROM links
                WHERE tenant_id = $1 AND vault_id = $2 AND name_key = ANY($3)"#,
            self.tenant,
            vault,
            keys
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| StoredLink {
                source_path: r.source_path,
                ord: r.ord,
                target: r.target,
                resolved_path: r.resolved_path,
            })
            .collect())
    }

    /// Sets where links now resolve to.
    pub async fn set_link_targets(&mut self, vault: Uuid, links: &[StoredLink]) -> Result<()> {
        if links.is_empty() {
            return Ok(());
        }
        sqlx::query!(
            r#"UPDATE links l SET resolved_path = u.resolved_path
                FROM UNNEST($3::text[], $4::int4[], $5::text[]) AS u(source_path, ord, resolved_path)
                WHERE l.tenant_id = $1 AND l.vault_id = $2 AND l.source_path = u.source_path AND l.ord = u.ord"#,
            self.tenant,
            vault,
            &links.iter().map(|l| l.source_path.clone()).collect::<Vec<_>>(),
            &links.iter().map(|l| l.ord).collect::<Vec<_>>(),
            &links.iter().map(|l| l.resolved_path.clone()).collect::<Vec<_>>() as &[Option<String>],
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// A vault's links in (source, position) order after `after` (exclusive), at most `limit`.
    pub async fn vault_links(
        &mut self,
        vault: Uuid,
        after: Option<(&str, i32)>,
        limit: i64,
    ) -> Result<Vec<(String, LinkRecord)>> {
        let (after_path, after_ord) = after.map_or((None, 0), |(p, o)| (Some(p), o));
        let rows = sqlx::query_as!(
            LinkRow,
            r#"SELECT ord, source_path, kind, wiki, raw, target, name_key, resolved_path, subpath_kind, subpath, alias,
                      property, start_offset, end_offset, line, col
                 FROM links WHERE tenant_id = $1 AND vault_id = $2
                  AND ($3::text IS NULL OR (source_path, ord) > ($3::text COLLATE "C", $4))
                ORDER BY source_path, ord LIMIT $5"#,
            self.tenant,
            vault,
            after_path,
            after_ord,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(link).map(|(_, source, record)| (source, record)).collect())
    }

    /// Whether the file is in Excluded files, per the index (`None` when not indexed).
    pub async fn is_excluded(&mut self, vault: Uuid, path: &str) -> Result<Option<bool>> {
        Ok(sqlx::query_scalar!(
            "SELECT excluded FROM index_files WHERE tenant_id = $1 AND vault_id = $2 AND path = $3",
            self.tenant,
            vault,
            path
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// (head sequence, indexed sequence): how far the vault and its index have got, without
    /// the counts of [`Self::index_status`].
    pub async fn index_progress(&mut self, vault: Uuid) -> Result<(i64, i64)> {
        let r = sqlx::query!(
            r#"SELECT (SELECT seq FROM vault_heads WHERE tenant_id = $1 AND vault_id = $2) AS head_seq,
                      (SELECT indexed_seq FROM index_state WHERE tenant_id = $1 AND vault_id = $2) AS indexed_seq"#,
            self.tenant,
            vault
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok((r.head_seq.unwrap_or(0), r.indexed_seq.unwrap_or(0)))
    }

    /// Counts, progress and failures of the vault's index.
    pub async fn index_status(&mut self, vault: Uuid) -> Result<IndexStatus> {
        let tenant = self.tenant;
        let r = sqlx::query!(
            r#"SELECT
                (SELECT count(*) FROM index_files WHERE tenant_id = $1 AND vault_id = $2) AS "files!",
                (SELECT count(*) FROM index_files WHERE tenant_id = $1 AND vault_id = $2 AND excluded) AS "excluded!",
                (SELECT count(*) FROM notes WHERE tenant_id = $1 AND vault_id = $2) AS "notes!",
                (SELECT count(*) FROM notes WHERE tenant_id = $1 AND vault_id = $2 AND frontmatter_error IS NOT NULL) AS "fm_errors!",
                (SELECT count(*) FROM links WHERE tenant_id = $1 AND vault_id = $2 AND kind = 'body') AS "links!",
                (SELECT count(*) FROM links WHERE tenant_id = $1 AND vault_id = $2 AND kind = 'embed') AS "embeds!",
                (SELECT count(*) FROM links WHERE tenant_id = $1 AND vault_id = $2 AND kind = 'property') AS "property_links!",
                (SELECT count(*) FROM links WHERE tenant_id = $1 AND vault_id = $2 AND resolved_path IS NULL) AS "unresolved!",
                (SELECT count(*) FROM note_tags WHERE tenant_id = $1 AND vault_id = $2) AS "tags!",
                (SELECT count(*) FROM note_tasks WHERE tenant_id = $1 AND vault_id = $2) AS "tasks!",
                (SELECT count(*) FROM chunks WHERE tenant_id = $1 AND vault_id = $2) AS "chunks!",
                (SELECT indexed_seq FROM index_state WHERE tenant_id = $1 AND vault_id = $2) AS indexed_seq,
                (SELECT rebuilt_at FROM index_state WHERE tenant_id = $1 AND vault_id = $2) AS rebuilt_at,
                (SELECT seq FROM vault_heads WHERE tenant_id = $1 AND vault_id = $2) AS head_seq,
                (SELECT count(*) FROM jobs WHERE tenant_id = $1 AND vault_id = $2 AND kind = $3 AND state = 'queued') AS "queued!",
                (SELECT count(*) FROM jobs WHERE tenant_id = $1 AND vault_id = $2 AND kind = $3 AND state = 'dead') AS "dead!",
                (SELECT min(created_at) FROM jobs WHERE tenant_id = $1 AND vault_id = $2 AND kind = $3 AND state = 'queued') AS oldest,
                (SELECT last_error FROM jobs WHERE tenant_id = $1 AND vault_id = $2 AND kind = $3 AND last_error IS NOT NULL
                  ORDER BY id DESC LIMIT 1) AS last_error"#,
            tenant,
            vault,
            INDEX_JOB
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(IndexStatus {
            files: r.files,
            notes: r.notes,
            excluded: r.excluded,
            links: r.links,
            embeds: r.embeds,
            property_links: r.property_links,
            unresolved: r.unresolved,
            tags: r.tags,
            tasks: r.tasks,
            chunks: r.chunks,
            frontmatter_errors: r.fm_errors,
            indexed_seq: r.indexed_seq.unwrap_or(0),
            head_seq: r.head_seq.unwrap_or(0),
            queued_jobs: r.queued,
            dead_jobs: r.dead,
            oldest_queued_at: r.oldest,
            last_error: r.last_error,
            rebuilt_at: r.rebuilt_at,
        })
    }
}
