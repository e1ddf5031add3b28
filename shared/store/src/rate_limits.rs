//! A tenant's own rate-limit tiers (`tenant_rate_limits`): per class of call, calls per minute
//! and burst, in place of the deployment's default for that class.

use crate::{Result, TenantTx};

/// One class's tier as the tenant set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateTier {
    /// read, write, delete, admin, execute or bulk.
    pub class: String,
    pub per_minute: u32,
    pub burst: u32,
}

impl TenantTx {
    /// The tiers this tenant set, by class.
    pub async fn rate_tiers(&mut self) -> Result<Vec<RateTier>> {
        let rows = sqlx::query!("SELECT class, per_minute, burst FROM tenant_rate_limits ORDER BY class")
            .fetch_all(&mut *self.tx)
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| RateTier { class: r.class, per_minute: r.per_minute as u32, burst: r.burst as u32 })
            .collect())
    }

    /// Sets (or replaces) the tenant's tier for one class.
    pub async fn set_rate_tier(&mut self, tier: &RateTier) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO tenant_rate_limits (tenant_id, class, per_minute, burst) VALUES ($1, $2, $3, $4)
               ON CONFLICT (tenant_id, class) DO UPDATE SET per_minute = EXCLUDED.per_minute, burst = EXCLUDED.burst"#,
            self.tenant,
            tier.class,
            tier.per_minute as i32,
            tier.burst as i32
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Drops the tenant's tier for one class (the deployment's default applies again).
    pub async fn clear_rate_tier(&mut self, class: &str) -> Result<bool> {
        let done =
            sqlx::query!("DELETE FROM tenant_rate_limits WHERE class = $1", class).execute(&mut *self.tx).await?;
        Ok(done.rows_affected() > 0)
    }
}
