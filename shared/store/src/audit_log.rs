//! The audit trail (`audit_log`): one record per tool call and /v1 request, written in batches,
//! read back by admins, summarised for get_metrics, and deleted past the tenant's retention.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::{Result, Store, TenantTx};

/// One call or request, as the audit trail keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct AuditRecord {
    pub id: Uuid,
    pub at: DateTime<Utc>,
    pub principal_id: Option<Uuid>,
    pub principal_name: Option<String>,
    pub client_name: Option<String>,
    pub surface: String,
    /// The call's rate-limit class, which usage is metered by (`tenant_usage_daily`); not kept
    /// in the trail, so None in a record read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    pub action: String,
    pub vault: Option<String>,
    pub paths: Vec<String>,
    pub outcome: String,
    pub duration_us: i64,
    /// What work memory would keep of the call: written to `agent_episodes` with the record when
    /// the caller had a work session open at the call's time (the writer's query decides), never
    /// read back into a record.
    #[serde(default, skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub episode: Option<crate::work::EpisodeFacts>,
}

/// Which records to read: newest first, before the cursor `before` (a record id).
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// A principal's name or id.
    pub principal: Option<String>,
    pub action: Option<String>,
    pub outcome: Option<String>,
    pub vault: Option<String>,
    pub before: Option<Uuid>,
    pub limit: i64,
    /// Leave out the records of episodes their caller forgot (work_forget).
    pub without_forgotten: bool,
}

/// Calls of one action over a window: how many, how many failed or were throttled, and their
/// latency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionMetrics {
    pub action: String,
    pub calls: i64,
    pub errors: i64,
    pub throttled: i64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Store {
    /// Writes `records` of one tenant in one statement.
    pub async fn record_audit(&self, tenant: Uuid, records: &[AuditRecord]) -> Result<()> {
        let batch = serde_json::to_value(records).expect("audit records serialize");
        let mut tx = self.begin(tenant).await?;
        // Records wait in the gateway's memory before this anyway: not waiting for the WAL flush
        // as well costs nothing a crash would not have cost, and spares the disk a flush per batch.
        sqlx::query("SET LOCAL synchronous_commit = off").execute(&mut *tx.tx).await?;
        sqlx::query!(
            r#"INSERT INTO audit_log (tenant_id, id, at, principal_id, principal_name, client_name, surface,
                                      action, vault, paths, outcome, duration_us)
               SELECT $1, r.id, r.at, r.principal_id, r.principal_name, r.client_name, r.surface,
                      r.action, r.vault, r.paths, r.outcome, r.duration_us
                 FROM jsonb_to_recordset($2) AS r(id uuid, at timestamptz, principal_id uuid,
                      principal_name text, client_name text, surface text, action text, vault text,
                      paths jsonb, outcome text, duration_us bigint)"#,
            tenant,
            batch
        )
        .execute(&mut *tx.tx)
        .await?;
        if records.iter().any(|r| r.episode.is_some()) {
            tx.record_episodes(&batch).await?;
        }
        tx.meter_calls(&batch).await?;
        tx.commit().await
    }
}

impl TenantTx {
    /// Records matching `filter`, newest first.
    pub async fn audit(&mut self, filter: &AuditFilter) -> Result<Vec<AuditRecord>> {
        let principal_id = filter.principal.as_deref().and_then(|p| Uuid::try_parse(p).ok());
        let rows = sqlx::query!(
            r#"SELECT id, at, principal_id, principal_name, client_name, surface, action, vault, paths,
                      outcome, duration_us
                 FROM audit_log
                WHERE ($1::timestamptz IS NULL OR at >= $1)
                  AND ($2::timestamptz IS NULL OR at < $2)
                  AND ($3::text IS NULL OR principal_name = $3 OR principal_id = $4)
                  AND ($5::text IS NULL OR action = $5)
                  AND ($6::text IS NULL OR outcome = $6)
                  AND ($7::text IS NULL OR vault = $7)
                  AND ($8::uuid IS NULL OR id < $8)
                  AND NOT ($10 AND EXISTS (SELECT 1 FROM agent_episodes e WHERE e.tenant_id = audit_log.tenant_id
                                              AND e.id = audit_log.id AND e.forgotten_at IS NOT NULL))
                ORDER BY id DESC
                LIMIT $9"#,
            filter.since,
            filter.until,
            filter.principal,
            principal_id,
            filter.action,
            filter.outcome,
            filter.vault,
            filter.before,
            filter.limit,
            filter.without_forgotten
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| AuditRecord {
                id: r.id,
                at: r.at,
                principal_id: r.principal_id,
                principal_name: r.principal_name,
                client_name: r.client_name,
                surface: r.surface,
                class: None,
                action: r.action,
                vault: r.vault,
                paths: serde_json::from_value(r.paths).unwrap_or_default(),
                outcome: r.outcome,
                duration_us: r.duration_us,
                episode: None,
            })
            .collect())
    }

    /// Per action since `since` (of one vault, or all): counts and latency percentiles.
    pub async fn audit_metrics(&mut self, since: DateTime<Utc>, vault: Option<&str>) -> Result<Vec<ActionMetrics>> {
        let rows = sqlx::query!(
            r#"SELECT action AS "action!", count(*) AS "calls!",
                      count(*) FILTER (WHERE outcome <> 'ok') AS "errors!",
                      count(*) FILTER (WHERE outcome = 'throttled') AS "throttled!",
                      percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_us) AS "p50!",
                      percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_us) AS "p95!",
                      percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_us) AS "p99!",
                      max(duration_us) AS "max!"
                 FROM audit_log
                WHERE at >= $1 AND ($2::text IS NULL OR vault = $2)
                GROUP BY action
                ORDER BY count(*) DESC, action"#,
            since,
            vault
        )
        .fetch_all(&mut *self.tx)
        .await?;
        let ms = |us: f64| (us / 10.0).round() / 100.0;
        Ok(rows
            .into_iter()
            .map(|r| ActionMetrics {
                action: r.action,
                calls: r.calls,
                errors: r.errors,
                throttled: r.throttled,
                p50_ms: ms(r.p50),
                p95_ms: ms(r.p95),
                p99_ms: ms(r.p99),
                max_ms: ms(r.max as f64),
            })
            .collect())
    }

    /// Deletes records older than the tenant's retention (its own, else `default_days`).
    pub async fn purge_audit(&mut self, default_days: i32) -> Result<u64> {
        let done = sqlx::query!(
            r#"DELETE FROM audit_log
                WHERE at < now() - make_interval(days => coalesce((SELECT audit_retention_days FROM tenants), $1))"#,
            default_days
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected())
    }

    /// The tenant's own retention in days (None: the deployment's).
    pub async fn audit_retention(&mut self) -> Result<Option<i32>> {
        Ok(sqlx::query_scalar!("SELECT audit_retention_days FROM tenants")
            .fetch_optional(&mut *self.tx)
            .await?
            .flatten())
    }

    pub async fn set_audit_retention(&mut self, days: Option<i32>) -> Result<()> {
        sqlx::query!("UPDATE tenants SET audit_retention_days = $1", days).execute(&mut *self.tx).await?;
        Ok(())
    }
}
