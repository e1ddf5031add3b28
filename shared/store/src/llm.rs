//! Each tenant's chat endpoint for the model-backed tools (`tenant_llm`) and what its calls
//! cost (`llm_usage`).

use chrono::NaiveDate;

use crate::{Result, TenantTx};

/// A tenant's endpoint, its key still sealed.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantLlm {
    pub base_url: String,
    pub model: String,
    pub sealed_api_key: Option<Vec<u8>>,
    pub daily_cap: i32,
    pub prompt_cost_per_mtok: f64,
    pub completion_cost_per_mtok: f64,
}

/// One day's calls of one purpose.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmUsage {
    pub day: NaiveDate,
    pub purpose: String,
    pub calls: i32,
    pub failed: i32,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost_usd: f64,
}

impl TenantTx {
    pub async fn tenant_llm(&mut self) -> Result<Option<TenantLlm>> {
        Ok(sqlx::query_as!(
            TenantLlm,
            r#"SELECT base_url, model, sealed_api_key, daily_cap, prompt_cost_per_mtok, completion_cost_per_mtok
                 FROM tenant_llm WHERE tenant_id = $1"#,
            self.tenant
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    pub async fn set_tenant_llm(&mut self, llm: &TenantLlm) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO tenant_llm (tenant_id, base_url, model, sealed_api_key, daily_cap, prompt_cost_per_mtok,
                                       completion_cost_per_mtok)
               VALUES ($1, $2, $3, $4, $5, $6, $7)
               ON CONFLICT (tenant_id) DO UPDATE
                  SET base_url = EXCLUDED.base_url, model = EXCLUDED.model, sealed_api_key = EXCLUDED.sealed_api_key,
                      daily_cap = EXCLUDED.daily_cap, prompt_cost_per_mtok = EXCLUDED.prompt_cost_per_mtok,
                      completion_cost_per_mtok = EXCLUDED.completion_cost_per_mtok, updated_at = now()"#,
            self.tenant,
            llm.base_url,
            llm.model,
            llm.sealed_api_key,
            llm.daily_cap,
            llm.prompt_cost_per_mtok,
            llm.completion_cost_per_mtok
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Removes the tenant's endpoint; false when it had none.
    pub async fn clear_tenant_llm(&mut self) -> Result<bool> {
        Ok(sqlx::query!("DELETE FROM tenant_llm WHERE tenant_id = $1", self.tenant)
            .execute(&mut *self.tx)
            .await?
            .rows_affected()
            == 1)
    }

    /// Counts one call of `purpose` on `day` unless the day's calls have reached `cap` (the
    /// endpoint's row is locked meanwhile, so concurrent calls count one at a time): the day's
    /// calls after this one, or None when the cap is reached.
    pub async fn count_llm_call(&mut self, day: NaiveDate, purpose: &str, cap: i32) -> Result<Option<i64>> {
        sqlx::query!("SELECT 1 AS one FROM tenant_llm WHERE tenant_id = $1 FOR UPDATE", self.tenant)
            .fetch_optional(&mut *self.tx)
            .await?;
        let so_far = sqlx::query_scalar!(
            r#"SELECT coalesce(sum(calls), 0)::bigint AS "n!" FROM llm_usage WHERE tenant_id = $1 AND day = $2"#,
            self.tenant,
            day
        )
        .fetch_one(&mut *self.tx)
        .await?;
        if so_far >= i64::from(cap) {
            return Ok(None);
        }
        sqlx::query!(
            r#"INSERT INTO llm_usage (tenant_id, day, purpose, calls) VALUES ($1, $2, $3, 1)
               ON CONFLICT (tenant_id, day, purpose) DO UPDATE SET calls = llm_usage.calls + 1"#,
            self.tenant,
            day,
            purpose
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(Some(so_far + 1))
    }

    /// Adds what a counted call used (or that it failed).
    pub async fn record_llm_usage(
        &mut self,
        day: NaiveDate,
        purpose: &str,
        prompt_tokens: i64,
        completion_tokens: i64,
        cost_usd: f64,
        failed: bool,
    ) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO llm_usage (tenant_id, day, purpose, failed, prompt_tokens, completion_tokens, cost_usd)
               VALUES ($1, $2, $3, $4, $5, $6, $7)
               ON CONFLICT (tenant_id, day, purpose) DO UPDATE
                  SET failed = llm_usage.failed + EXCLUDED.failed,
                      prompt_tokens = llm_usage.prompt_tokens + EXCLUDED.prompt_tokens,
                      completion_tokens = llm_usage.completion_tokens + EXCLUDED.completion_tokens,
                      cost_usd = llm_usage.cost_usd + EXCLUDED.cost_usd"#,
            self.tenant,
            day,
            purpose,
            i32::from(failed),
            prompt_tokens,
            completion_tokens,
            cost_usd
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The tenant's usage from `since` on, newest day first.
    pub async fn llm_usage(&mut self, since: NaiveDate) -> Result<Vec<LlmUsage>> {
        Ok(sqlx::query_as!(
            LlmUsage,
            r#"SELECT day, purpose, calls, failed, prompt_tokens, completion_tokens, cost_usd FROM llm_usage
                WHERE tenant_id = $1 AND day >= $2 ORDER BY day DESC, purpose"#,
            self.tenant,
            since
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }
}
