//! Usage metering per tenant and day (UTC), in `tenant_usage_daily`: calls by rate-limit class
//! and outcome and uploads, counted by the audit writer in the transaction that writes their
//! records; with the embedding and model usage of their own tables and what the tenant holds
//! now, the report an admin and an operator read.

use std::collections::BTreeMap;

use chrono::{NaiveDate, Utc};
use serde::Serialize;

use crate::{Result, TenantTx};

/// The /v1 route of a blob upload, as the audit trail names it.
const UPLOAD_ACTION: &str = "PUT /v1/vaults/{vault}/blobs/{hash}";

/// One day of a tenant's usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageDay {
    pub day: NaiveDate,
    /// Calls by rate-limit class, then by outcome (`ok` or the error code answered).
    pub calls: BTreeMap<String, BTreeMap<String, i64>>,
    /// Calls refused by a rate limit (outcome `throttled`), every class.
    pub throttled: i64,
    /// Blobs uploaded through the sync API.
    pub uploads: i64,
    /// Texts embedded (cache misses) and the provider's tokens for them.
    pub embedding_texts: i64,
    pub embedding_tokens: i64,
    /// Tokens of the tenant's chat model (prompt and completion) and their cost.
    pub model_tokens: i64,
    pub model_cost_usd: f64,
}

/// A tenant's usage: what it holds now and what it did each day of the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageReport {
    pub storage_bytes: i64,
    pub notes: i64,
    /// Oldest first; days with nothing are left out.
    pub days: Vec<UsageDay>,
}

impl TenantTx {
    /// Adds a batch of audit records (the JSON array `record_audit` writes) to the tenant's
    /// counters.
    pub(crate) async fn meter_calls(&mut self, batch: &serde_json::Value) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO tenant_usage_daily (tenant_id, day, metric, key, value)
               SELECT $1, d.day, d.metric, d.key, d.n FROM (
                   SELECT (r.at AT TIME ZONE 'UTC')::date AS day, 'calls' AS metric,
                          coalesce(r.class, 'none') || ':' || r.outcome AS key, count(*) AS n
                     FROM jsonb_to_recordset($2) AS r(at timestamptz, class text, outcome text)
                    GROUP BY 1, 3
                   UNION ALL
                   SELECT (r.at AT TIME ZONE 'UTC')::date, 'uploads', '', count(*)
                     FROM jsonb_to_recordset($2) AS r(at timestamptz, action text, outcome text)
                    WHERE r.action = $3 AND r.outcome = 'ok'
                    GROUP BY 1) d
               ON CONFLICT (tenant_id, day, metric, key)
               DO UPDATE SET value = tenant_usage_daily.value + EXCLUDED.value"#,
            self.tenant,
            batch,
            UPLOAD_ACTION
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The tenant's usage over the last `days` days (today included).
    pub async fn usage_report(&mut self, days: u32) -> Result<UsageReport> {
        let since = Utc::now().date_naive() - chrono::Days::new(u64::from(days.clamp(1, 3660)) - 1);
        let held = self.usage().await?;
        let mut by_day: BTreeMap<NaiveDate, UsageDay> = BTreeMap::new();
        let counters =
            sqlx::query!("SELECT day, metric, key, value FROM tenant_usage_daily WHERE day >= $1 ORDER BY day", since)
                .fetch_all(&mut *self.tx)
                .await?;
        for row in counters {
            let entry = by_day.entry(row.day).or_insert_with(|| UsageDay { day: row.day, ..Default::default() });
            match row.metric.as_str() {
                "calls" => {
                    let (class, outcome) = row.key.split_once(':').unwrap_or((row.key.as_str(), ""));
                    if outcome == "throttled" {
                        entry.throttled += row.value;
                    }
                    *entry.calls.entry(class.to_string()).or_default().entry(outcome.to_string()).or_default() +=
                        row.value;
                }
                "uploads" => entry.uploads += row.value,
                _ => {}
            }
        }
        let embeddings = sqlx::query!(
            r#"SELECT day, sum(embedded)::bigint AS "texts!", sum(tokens)::bigint AS "tokens!"
                 FROM embedding_usage WHERE day >= $1 GROUP BY day"#,
            since
        )
        .fetch_all(&mut *self.tx)
        .await?;
        for row in embeddings {
            let entry = by_day.entry(row.day).or_insert_with(|| UsageDay { day: row.day, ..Default::default() });
            entry.embedding_texts += row.texts;
            entry.embedding_tokens += row.tokens;
        }
        let models = sqlx::query!(
            r#"SELECT day, sum(prompt_tokens + completion_tokens)::bigint AS "tokens!",
                      sum(cost_usd)::float8 AS "cost!"
                 FROM llm_usage WHERE day >= $1 GROUP BY day"#,
            since
        )
        .fetch_all(&mut *self.tx)
        .await?;
        for row in models {
            let entry = by_day.entry(row.day).or_insert_with(|| UsageDay { day: row.day, ..Default::default() });
            entry.model_tokens += row.tokens;
            entry.model_cost_usd += row.cost;
        }
        Ok(UsageReport { storage_bytes: held.storage_bytes, notes: held.notes, days: by_day.into_values().collect() })
    }
}
