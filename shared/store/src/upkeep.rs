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
/// A full merge of the full-text segments of a tenant's vaults that have too many: asked for
/// by the indexer when a batch leaves a vault past the threshold, not periodic.
pub const FTS_MERGE: &str = "fts_merge";
/// The tenant's embedding upkeep (sets for the configured model, dead jobs revived, the cache
/// trimmed): periodic, and asked for at once when a worker starts with a model a vault lacks.
pub const EMBEDDING: &str = "embedding";
/// The scheduled lint of the tenant's wikis (`[maintenance.wiki_lint]`).
pub const WIKI_LINT: &str = "wiki_lint";
/// The scheduled regeneration of the tenant's wikis' generated pages (`[maintenance.wiki_pages]`).
pub const WIKI_PAGES: &str = "wiki_pages";
/// The contradiction detector's pass over the tenant (`[maintenance.contradictions]`).
pub const CONTRADICTIONS: &str = "contradictions";

/// A duration as Postgres' interval.
pub(crate) fn interval(hold: Duration) -> sqlx::postgres::types::PgInterval {
    sqlx::postgres::types::PgInterval {
        months: 0,
        days: 0,
        microseconds: hold.as_micros().min(i64::MAX as u128) as i64,
    }
}

impl Store {
    /// Claims up to `limit` due items of the `kinds` for `hold` under the fresh id `claim`,
    /// oldest due first, none another claim holds: each claimed item's tenant and kind.
    pub async fn claim_upkeep(
        &self,
        kinds: &[&str],
        claim: Uuid,
        limit: i64,
        hold: Duration,
    ) -> Result<Vec<(Uuid, String)>> {
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        let mut tx = self.begin_untenanted().await?;
        let rows = sqlx::query!(
            r#"SELECT tenant_id AS "tenant_id!", kind AS "kind!" FROM otc_claim_upkeep_of($1, $2, $3, $4)"#,
            &kinds,
            claim,
            limit.clamp(0, i64::from(i32::MAX)) as i32,
            interval(hold)
        )
        .fetch_all(&mut *tx)
        .await?;
        crate::call_effects::commit(tx).await?;
        Ok(rows.into_iter().map(|r| (r.tenant_id, r.kind)).collect())
    }

    /// The vaults with outbox jobs of `kind` due now, across tenants, each once, the longest
    /// waiting first: one query however many tenants there are.
    pub async fn due_job_vaults(&self, kind: &str, limit: i64) -> Result<Vec<(Uuid, Uuid)>> {
        let mut tx = self.begin_untenanted().await?;
        let rows = sqlx::query!(
            r#"SELECT tenant_id AS "tenant_id!", vault_id AS "vault_id!" FROM otc_due_job_vaults($1, $2)"#,
            kind,
            limit.clamp(0, i64::from(i32::MAX)) as i32
        )
        .fetch_all(&mut *tx)
        .await?;
        crate::call_effects::commit(tx).await?;
        Ok(rows.into_iter().map(|r| (r.tenant_id, r.vault_id)).collect())
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

    /// Asks for this tenant's `kind` item to run now (an event's kind: made when missing); one
    /// running now runs once more after.
    pub async fn request_upkeep(&mut self, kind: &str) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO upkeep_items (tenant_id, kind, due_at) VALUES ($1, $2, clock_timestamp())
               ON CONFLICT (tenant_id, kind) DO UPDATE SET due_at = CASE
                   WHEN upkeep_items.claim IS NOT NULL THEN EXCLUDED.due_at
                   ELSE LEAST(upkeep_items.due_at, EXCLUDED.due_at) END"#,
            self.tenant,
            kind
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Hands this tenant's `kind` item back, due again at `next_due` (None: not until asked
    /// for), recording `error` (None after a run that went well); false when `claim` no longer
    /// holds it. An item asked for again while it ran stays due.
    pub async fn finish_upkeep(
        &mut self,
        kind: &str,
        claim: Uuid,
        next_due: Option<DateTime<Utc>>,
        error: Option<&str>,
    ) -> Result<bool> {
        let finished = sqlx::query!(
            r#"UPDATE upkeep_items SET claim = NULL, claimed_until = NULL,
                      due_at = CASE WHEN due_at > claimed_at THEN due_at
                                    ELSE COALESCE($3, 'infinity'::timestamptz) END,
                      runs = runs + 1, last_error = $4
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

    /// This tenant's `kind` item: when it is due (None: not until asked for) and how many
    /// times it ran.
    pub async fn upkeep_item(&mut self, kind: &str) -> Result<Option<(Option<DateTime<Utc>>, i64)>> {
        let row = sqlx::query!(
            r#"SELECT CASE WHEN due_at = 'infinity' THEN NULL ELSE due_at END AS due_at, runs
                 FROM upkeep_items WHERE tenant_id = $1 AND kind = $2"#,
            self.tenant,
            kind
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(row.map(|r| (r.due_at, r.runs)))
    }
}
