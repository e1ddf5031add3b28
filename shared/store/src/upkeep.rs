//! Background upkeep as claimable units (`upkeep_items`): one item per tenant and kind of
//! periodic work. A worker claims due items across tenants in one indexed query, renews its
//! claim while it works, and hands each back with its next due time; a claim not renewed lapses
//! and another worker takes the item. A claim is a fresh id, so a worker whose claim lapsed and
//! was taken can neither renew nor finish it.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{Result, Store, TenantTx};

/// The periodic sweep of a tenant (tokens, secrets, audit, snapshots, uploads, blobs).
pub const SWEEP: &str = "sweep";

fn interval(hold: Duration) -> sqlx::postgres::types::PgInterval {
    sqlx::postgres::types::PgInterval {
        months: 0,
        days: 0,
        microseconds: hold.as_micros().min(i64::MAX as u128) as i64,
    }
}

impl Store {
    /// Claims up to `limit` due items of `kind` for `hold` under the fresh id `claim`, oldest
    /// due first, none another claim holds: the tenants whose items were claimed.
    pub async fn claim_upkeep(&self, kind: &str, claim: Uuid, limit: i64, hold: Duration) -> Result<Vec<Uuid>> {
        let mut tx = self.begin_untenanted().await?;
        let tenants = sqlx::query_scalar!(
            r#"SELECT id AS "id!" FROM otc_claim_upkeep($1, $2, $3, $4) AS id"#,
            kind,
            claim,
            limit.clamp(0, i64::from(i32::MAX)) as i32,
            interval(hold)
        )
        .fetch_all(&mut *tx)
        .await?;
        crate::call_effects::commit(tx).await?;
        Ok(tenants)
    }
}

impl TenantTx {
    /// Holds this tenant's `kind` item under `claim` for `hold` more; false when the claim is no
    /// longer this one (it lapsed and was taken, or the item was handed back).
    pub async fn renew_upkeep(&mut self, kind: &str, claim: Uuid, hold: Duration) -> Result<bool> {
        let renewed = sqlx::query!(
            "UPDATE upkeep_items SET claimed_until = now() + $3 WHERE tenant_id = $1 AND kind = $2 AND claim = $4",
            self.tenant,
            kind,
            interval(hold),
            claim
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(renewed.rows_affected() == 1)
    }

    /// Hands this tenant's `kind` item back, due again at `next_due`, recording `error` (None
    /// after a run that went well); false when `claim` no longer holds it.
    pub async fn finish_upkeep(
        &mut self,
        kind: &str,
        claim: Uuid,
        next_due: DateTime<Utc>,
        error: Option<&str>,
    ) -> Result<bool> {
        let finished = sqlx::query!(
            r#"UPDATE upkeep_items SET claim = NULL, claimed_until = NULL, due_at = $3, runs = runs + 1, last_error = $4
                WHERE tenant_id = $1 AND kind = $2 AND claim = $5"#,
            self.tenant,
            kind,
            next_due,
            error,
            claim
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(finished.rows_affected() == 1)
    }

    /// Gives this tenant's `kind` item back unrun (the worker is stopping), due as it was.
    pub async fn release_upkeep(&mut self, kind: &str, claim: Uuid) -> Result<bool> {
        let released = sqlx::query!(
            "UPDATE upkeep_items SET claim = NULL, claimed_until = NULL WHERE tenant_id = $1 AND kind = $2 AND claim = $3",
            self.tenant,
            kind,
            claim
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(released.rows_affected() == 1)
    }

    /// This tenant's `kind` item: when it is due and how many times it ran.
    pub async fn upkeep_item(&mut self, kind: &str) -> Result<Option<(DateTime<Utc>, i64)>> {
        let row =
            sqlx::query!("SELECT due_at, runs FROM upkeep_items WHERE tenant_id = $1 AND kind = $2", self.tenant, kind)
                .fetch_optional(&mut *self.tx)
                .await?;
        Ok(row.map(|r| (r.due_at, r.runs)))
    }
}
