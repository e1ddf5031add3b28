use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{Result, Store, StoreError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

/// One tenant's outbox jobs of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxStats {
    /// The tenant's slug.
    pub tenant: String,
    pub kind: String,
    pub queued: i64,
    pub dead: i64,
    pub oldest_queued: Option<DateTime<Utc>>,
}

/// One of a tenant's usage counters today ([`Store::usage_today`]).
#[derive(Debug, Clone, PartialEq)]
pub struct UsageToday {
    /// The tenant's slug.
    pub tenant: String,
    pub metric: String,
    pub key: String,
    pub value: f64,
}

/// A tenant's outbox jobs of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backlog {
    pub kind: String,
    pub queued: i64,
    pub dead: i64,
    pub oldest_queued: Option<DateTime<Utc>>,
}

impl Store {
    /// Creates a tenant. The insert itself runs in the new tenant's own context, so the
    /// row-level-security check applies to it like to every other write.
    pub async fn create_tenant(&self, slug: &str, name: &str) -> Result<Tenant> {
        let id = Uuid::now_v7();
        let mut tx = self.begin(id).await?;
        let tenant = sqlx::query_as!(
            Tenant,
            "INSERT INTO tenants (id, slug, name) VALUES ($1, $2, $3) RETURNING id, slug, name, created_at",
            id,
            slug,
            name
        )
        .fetch_one(&mut *tx.tx)
        .await?;
        tx.commit().await?;
        Ok(tenant)
    }

    /// The id of the tenant with this slug: the one lookup that is not confined to a tenant.
    pub async fn tenant_id_by_slug(&self, slug: &str) -> Result<Option<Uuid>> {
        let mut tx = self.begin_untenanted().await?;
        let id = sqlx::query_scalar!("SELECT otc_tenant_id_by_slug($1) AS \"id\"", slug).fetch_one(&mut *tx).await?;
        crate::call_effects::commit(tx).await?;
        Ok(id)
    }

    /// Every tenant's id, for periodic per-tenant work (each then runs in its own [`TenantTx`]).
    pub async fn tenant_ids(&self) -> Result<Vec<Uuid>> {
        let mut tx = self.begin_untenanted().await?;
        let ids = sqlx::query_scalar!("SELECT id AS \"id!\" FROM otc_tenant_ids() AS id").fetch_all(&mut *tx).await?;
        crate::call_effects::commit(tx).await?;
        Ok(ids)
    }

    /// Tenants with a vault that has no embedding set for `model` (ids only; asked when a
    /// worker starts, so their embedding upkeep runs at once).
    pub async fn tenants_lacking_model(&self, model: &str) -> Result<Vec<Uuid>> {
        let mut tx = self.begin_untenanted().await?;
        let ids = sqlx::query_scalar!("SELECT id AS \"id!\" FROM otc_tenants_lacking_model($1) AS id", model)
            .fetch_all(&mut *tx)
            .await?;
        crate::call_effects::commit(tx).await?;
        Ok(ids)
    }

    /// Every tenant's outbox work by kind, counts only (the workers' metrics).
    pub async fn outbox_stats(&self) -> Result<Vec<OutboxStats>> {
        let mut tx = self.begin_untenanted().await?;
        let rows = sqlx::query_as!(
            OutboxStats,
            r#"SELECT tenant AS "tenant!", kind AS "kind!", queued AS "queued!", dead AS "dead!", oldest_queued
                 FROM otc_outbox_stats()"#
        )
        .fetch_all(&mut *tx)
        .await?;
        crate::call_effects::commit(tx).await?;
        Ok(rows)
    }

    /// Today's (UTC) usage of every tenant that used anything today, by slug: `calls` by
    /// `class:outcome`, `uploads`, `embedding_texts`, `embedding_tokens`, `model_tokens`,
    /// `model_cost_usd`, and `storage_bytes` (what each of them stores now). For the metrics.
    pub async fn usage_today(&self) -> Result<Vec<UsageToday>> {
        let mut tx = self.begin_untenanted().await?;
        let rows = sqlx::query_as!(
            UsageToday,
            r#"SELECT tenant AS "tenant!", metric AS "metric!", key AS "key!", value AS "value!"
                 FROM otc_usage_today((now() AT TIME ZONE 'UTC')::date)"#
        )
        .fetch_all(&mut *tx)
        .await?;
        crate::call_effects::commit(tx).await?;
        Ok(rows)
    }

    /// A tenant named by its slug or its id.
    pub async fn resolve_tenant(&self, slug_or_id: &str) -> Result<Uuid> {
        if let Ok(id) = Uuid::try_parse(slug_or_id) {
            let mut tx = self.begin(id).await?;
            let found = tx.tenant().await?;
            tx.commit().await?;
            return found.map(|t| t.id).ok_or_else(|| StoreError::NotFound(format!("tenant {slug_or_id}")));
        }
        self.tenant_id_by_slug(slug_or_id).await?.ok_or_else(|| StoreError::NotFound(format!("tenant {slug_or_id}")))
    }
}

impl crate::TenantTx {
    /// This tenant's outbox work by kind (`index`, `embed`), counts only; of one vault's jobs
    /// when `vault` is given.
    pub async fn outbox_backlog(&mut self, vault: Option<uuid::Uuid>) -> Result<Vec<Backlog>> {
        Ok(sqlx::query_as!(
            Backlog,
            r#"SELECT kind AS "kind!",
                      count(*) FILTER (WHERE state = 'queued') AS "queued!",
                      count(*) FILTER (WHERE state = 'dead') AS "dead!",
                      min(created_at) FILTER (WHERE state = 'queued') AS oldest_queued
                 FROM jobs WHERE tenant_id = $1 AND state IN ('queued', 'dead')
                  AND ($2::uuid IS NULL OR vault_id = $2)
                GROUP BY kind ORDER BY kind"#,
            self.tenant,
            vault
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// The transaction's own tenant.
    pub async fn tenant(&mut self) -> Result<Option<Tenant>> {
        Ok(sqlx::query_as!(Tenant, "SELECT id, slug, name, created_at FROM tenants")
            .fetch_optional(&mut *self.tx)
            .await?)
    }
}
