//! Knowledge upkeep: the gap detector's findings (`knowledge_gaps`) and contradiction findings
//! (`contradictions`).

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::{Result, TenantTx};

/// One query as the gap detector last saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    pub id: Uuid,
    pub query: String,
    pub top_score: Option<f64>,
    pub gap: bool,
    pub results: Value,
    pub nearest: Value,
    pub runs: i32,
    pub last_at: DateTime<Utc>,
}

/// One contradiction finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Contradiction {
    pub id: Uuid,
    pub path_a: String,
    pub path_b: String,
    pub hash_a: String,
    pub hash_b: String,
    pub statement_a: String,
    pub statement_b: String,
    pub rationale: String,
    pub model: String,
    pub status: String,
    pub detected_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
    pub resolution: Option<String>,
}

/// A finding to keep.
#[derive(Debug, Clone)]
pub struct NewContradiction<'a> {
    pub path_a: &'a str,
    pub path_b: &'a str,
    pub hash_a: &'a str,
    pub hash_b: &'a str,
    pub statement_a: &'a str,
    pub statement_b: &'a str,
    pub rationale: &'a str,
    pub model: &'a str,
}

impl TenantTx {
    /// Records what a retrieval of `query` found (keyed by its normalised form).
    #[allow(clippy::too_many_arguments)]
    pub async fn record_gap(
        &mut self,
        vault: Uuid,
        principal: Uuid,
        query_norm: &str,
        query: &str,
        top_score: Option<f64>,
        gap: bool,
        results: &Value,
        nearest: &Value,
    ) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO knowledge_gaps (tenant_id, vault_id, id, query_norm, query, top_score, gap, results, nearest,
                                           principal_id)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
               ON CONFLICT (tenant_id, vault_id, principal_id, query_norm) DO UPDATE
                  SET query = EXCLUDED.query, top_score = EXCLUDED.top_score, gap = EXCLUDED.gap,
                      results = EXCLUDED.results, nearest = EXCLUDED.nearest,
                      runs = knowledge_gaps.runs + 1, last_at = now()"#,
            self.tenant,
            vault,
            Uuid::new_v4(),
            query_norm,
            query,
            top_score,
            gap,
            results,
            nearest,
            principal
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The vault's latest gap findings (`principal`'s, or everyone's; only gaps when
    /// `gaps_only`), newest first.
    pub async fn gaps(
        &mut self,
        vault: Uuid,
        principal: Option<Uuid>,
        gaps_only: bool,
        limit: i64,
    ) -> Result<Vec<Gap>> {
        Ok(sqlx::query_as!(
            Gap,
            r#"SELECT id, query, top_score, gap, results, nearest, runs, last_at FROM knowledge_gaps
                WHERE tenant_id = $1 AND vault_id = $2 AND (NOT $3 OR gap) AND ($5::uuid IS NULL OR principal_id = $5)
                ORDER BY last_at DESC, id LIMIT $4"#,
            self.tenant,
            vault,
            gaps_only,
            limit,
            principal
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Counts of the vault's findings (`principal`'s, or everyone's): (queries, gaps).
    pub async fn gap_totals(&mut self, vault: Uuid, principal: Option<Uuid>) -> Result<(i64, i64)> {
        let row = sqlx::query!(
            r#"SELECT count(*) AS "queries!", count(*) FILTER (WHERE gap) AS "gaps!" FROM knowledge_gaps
                WHERE tenant_id = $1 AND vault_id = $2 AND ($3::uuid IS NULL OR principal_id = $3)"#,
            self.tenant,
            vault,
            principal
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok((row.queries, row.gaps))
    }

    /// Keeps a finding, unless an open one of the same two notes' same contents exists.
    pub async fn add_contradiction(&mut self, vault: Uuid, c: &NewContradiction<'_>) -> Result<bool> {
        Ok(sqlx::query!(
            r#"INSERT INTO contradictions (tenant_id, vault_id, id, path_a, path_b, hash_a, hash_b, statement_a,
                      statement_b, rationale, model)
               SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11
                WHERE NOT EXISTS (SELECT 1 FROM contradictions
                                   WHERE tenant_id = $1 AND vault_id = $2 AND status = 'open'
                                     AND path_a = $4 AND path_b = $5 AND hash_a = $6 AND hash_b = $7)"#,
            self.tenant,
            vault,
            Uuid::new_v4(),
            c.path_a,
            c.path_b,
            c.hash_a,
            c.hash_b,
            c.statement_a,
            c.statement_b,
            c.rationale,
            c.model
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected()
            == 1)
    }

    /// The vault's findings touching any of `paths` (every one when empty), open ones only
    /// unless `include_resolved`, newest first.
    pub async fn contradictions(
        &mut self,
        vault: Uuid,
        paths: &[String],
        include_resolved: bool,
        limit: i64,
    ) -> Result<Vec<Contradiction>> {
        Ok(sqlx::query_as!(
            Contradiction,
            r#"SELECT id, path_a, path_b, hash_a, hash_b, statement_a, statement_b, rationale, model, status,
                      detected_at, resolved_at, resolution
                 FROM contradictions
                WHERE tenant_id = $1 AND vault_id = $2 AND ($3 OR status = 'open')
                  AND (cardinality($4::text[]) = 0 OR path_a = ANY($4) OR path_b = ANY($4))
                ORDER BY detected_at DESC, id LIMIT $5"#,
            self.tenant,
            vault,
            include_resolved,
            paths,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Resolves an open finding with why.
    pub async fn resolve_contradiction(&mut self, vault: Uuid, id: Uuid, resolution: &str) -> Result<bool> {
        Ok(sqlx::query!(
            r#"UPDATE contradictions SET status = 'resolved', resolved_at = now(), resolution = $4
                WHERE tenant_id = $1 AND vault_id = $2 AND id = $3 AND status = 'open'"#,
            self.tenant,
            vault,
            id,
            resolution
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected()
            == 1)
    }
}

/// The tables a memory export reads, each with whether its rows belong to one vault. Their order
/// is the export's: what a row refers to comes before it.
pub const MEMORY_TABLES: [(&str, bool); 11] = [
    ("memory_entities", true),
    ("memory_observations", true),
    ("memory_relations", true),
    ("capture_queue", true),
    ("work_sessions", true),
    ("goals", true),
    ("agent_episodes", false),
    ("episode_retrievals", false),
    ("knowledge_gaps", true),
    ("contradictions", true),
    ("llm_usage", false),
];

impl TenantTx {
    /// Every row of memory table `table` (one of [`MEMORY_TABLES`]) as JSON, without the tenant
    /// column; a vault's rows only when `vault` is given and the table is per vault (the others,
    /// a principal's across vaults, come whole). Forgotten episodes are exported as the
    /// tombstones they are (no content).
    pub async fn memory_rows(&mut self, table: &str, vault: Option<uuid::Uuid>) -> Result<Vec<Value>> {
        let Some(&(table, per_vault)) = MEMORY_TABLES.iter().find(|(t, _)| *t == table) else {
            return Err(crate::StoreError::NotFound(format!("no memory table {table}")));
        };
        // The table name is one of a fixed list, never the caller's text.
        let query = if per_vault {
            format!(
                "SELECT to_jsonb(t) - 'tenant_id' FROM {table} t WHERE tenant_id = $1 AND ($2::uuid IS NULL OR vault_id = $2)"
            )
        } else {
            format!("SELECT to_jsonb(t) - 'tenant_id' FROM {table} t WHERE tenant_id = $1")
        };
        let mut rows = sqlx::query_scalar(&query).bind(self.tenant);
        if per_vault {
            rows = rows.bind(vault);
        }
        Ok(rows.fetch_all(&mut *self.tx).await?)
    }
}
