//! Deleting a vault or a whole tenant, undoing it within the grace period, and erasing what is
//! due. A deleted vault is out of every lookup at once (tools, tokens bound to it, the job
//! queue); a deleted tenant's tokens all stop and its periodic upkeep waits. Erasure runs as
//! the tenant's `erase` upkeep item, due at the earliest `purge_after` among what it deleted.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::upkeep::interval;
use crate::{Result, StoreError, TenantTx, Vault};

/// The upkeep kind that erases a tenant's deleted vaults, or the tenant, once their grace ends.
pub const ERASE: &str = "erase";

/// A deleted vault, until it is erased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedVault {
    pub id: Uuid,
    pub name: String,
    pub deleted_at: DateTime<Utc>,
    /// When it is erased (from then on, at the erase item's next run).
    pub purge_after: DateTime<Utc>,
}

/// A tenant's deletion: when it was asked for and when the tenant is erased.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantDeletion {
    pub deleted_at: DateTime<Utc>,
    pub purge_after: DateTime<Utc>,
}

/// What an erase pass finds due in a tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErasureDue {
    /// The whole tenant.
    pub tenant: bool,
    /// Deleted vaults whose grace has ended (when the tenant is not due).
    pub vaults: Vec<Uuid>,
}

impl TenantTx {
    /// Deletes the live vault `id`: gone from every lookup now, erased after `grace`. Answers
    /// when. NotFound when there is no such live vault.
    pub async fn delete_vault(&mut self, id: Uuid, grace: Duration) -> Result<DateTime<Utc>> {
        let purge_after = sqlx::query_scalar!(
            r#"UPDATE vaults SET deleted_at = now(), purge_after = now() + $2
                WHERE id = $1 AND deleted_at IS NULL RETURNING purge_after AS "purge_after!""#,
            id,
            interval(grace)
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("vault {id}")))?;
        self.erase_at(purge_after).await?;
        Ok(purge_after)
    }

    /// Undoes the deletion of vault `id` (before its erasure): it answers again as it was.
    /// NotFound when no deleted vault has that id (never deleted, or already erased).
    pub async fn undelete_vault(&mut self, id: Uuid) -> Result<Vault> {
        sqlx::query_as!(
            Vault,
            "UPDATE vaults SET deleted_at = NULL, purge_after = NULL
              WHERE id = $1 AND deleted_at IS NOT NULL RETURNING id, name, created_at",
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("deleted vault {id}")))
    }

    /// Erases the deleted vault `id` at the next erase pass instead of at the end of its grace.
    pub async fn purge_vault_now(&mut self, id: Uuid) -> Result<()> {
        sqlx::query_scalar!(
            "UPDATE vaults SET purge_after = now() WHERE id = $1 AND deleted_at IS NOT NULL RETURNING id",
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("deleted vault {id}")))?;
        self.erase_at(Utc::now()).await
    }

    /// The tenant's deleted vaults not erased yet, the soonest erased first.
    pub async fn deleted_vaults(&mut self) -> Result<Vec<DeletedVault>> {
        Ok(sqlx::query_as!(
            DeletedVault,
            r#"SELECT id, name, deleted_at AS "deleted_at!", purge_after AS "purge_after!"
                 FROM vaults WHERE deleted_at IS NOT NULL ORDER BY purge_after, name"#
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// The deleted vault named `name` or with that id, if it is not erased yet.
    pub async fn deleted_vault(&mut self, name_or_id: &str) -> Result<Option<DeletedVault>> {
        let id = Uuid::try_parse(name_or_id).ok();
        Ok(self.deleted_vaults().await?.into_iter().find(|v| v.name == name_or_id || Some(v.id) == id))
    }

    /// Deletes the whole tenant: every token stops now, its periodic upkeep waits, and it is
    /// erased after `grace`. Deleting it again keeps the first deletion.
    pub async fn delete_tenant(&mut self, grace: Duration) -> Result<TenantDeletion> {
        let row = sqlx::query!(
            r#"UPDATE tenants SET deleted_at = coalesce(deleted_at, now()),
                      purge_after = coalesce(purge_after, now() + $1)
                RETURNING deleted_at AS "deleted_at!", purge_after AS "purge_after!""#,
            interval(grace)
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("tenant {}", self.tenant)))?;
        sqlx::query!("UPDATE upkeep_items SET due_at = 'infinity' WHERE kind <> $1", ERASE)
            .execute(&mut *self.tx)
            .await?;
        self.erase_at(row.purge_after).await?;
        Ok(TenantDeletion { deleted_at: row.deleted_at, purge_after: row.purge_after })
    }

    /// Undoes the tenant's deletion (before its erasure): tokens work again and its periodic
    /// upkeep is due at once. NotFound when the tenant is not deleted.
    pub async fn undelete_tenant(&mut self) -> Result<()> {
        sqlx::query_scalar!(
            "UPDATE tenants SET deleted_at = NULL, purge_after = NULL WHERE deleted_at IS NOT NULL RETURNING id"
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("deleted tenant {}", self.tenant)))?;
        sqlx::query!("UPDATE upkeep_items SET due_at = now() WHERE kind <> $1 AND due_at = 'infinity'", ERASE)
            .execute(&mut *self.tx)
            .await?;
        // The item still runs for any deleted vaults; with none it finds nothing due.
        Ok(())
    }

    /// Erases the deleted tenant at the next erase pass instead of at the end of its grace.
    pub async fn purge_tenant_now(&mut self) -> Result<()> {
        sqlx::query_scalar!("UPDATE tenants SET purge_after = now() WHERE deleted_at IS NOT NULL RETURNING id")
            .fetch_optional(&mut *self.tx)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("deleted tenant {}", self.tenant)))?;
        self.erase_at(Utc::now()).await
    }

    /// The tenant's deletion, if it is deleted.
    pub async fn tenant_deletion(&mut self) -> Result<Option<TenantDeletion>> {
        let row = sqlx::query!("SELECT deleted_at, purge_after FROM tenants").fetch_optional(&mut *self.tx).await?;
        Ok(row.and_then(|r| Some(TenantDeletion { deleted_at: r.deleted_at?, purge_after: r.purge_after? })))
    }

    /// What is due for erasure now.
    pub async fn erasure_due(&mut self) -> Result<ErasureDue> {
        let tenant =
            sqlx::query_scalar!(r#"SELECT purge_after <= now() AS "due!" FROM tenants WHERE deleted_at IS NOT NULL"#)
                .fetch_optional(&mut *self.tx)
                .await?
                .unwrap_or(false);
        let vaults = if tenant {
            Vec::new()
        } else {
            sqlx::query_scalar!("SELECT id FROM vaults WHERE purge_after <= now() ORDER BY purge_after")
                .fetch_all(&mut *self.tx)
                .await?
        };
        Ok(ErasureDue { tenant, vaults })
    }

    /// When the next erasure falls due (the earliest purge_after of what is deleted), if any.
    pub async fn next_erasure(&mut self) -> Result<Option<DateTime<Utc>>> {
        Ok(sqlx::query_scalar!(
            r#"SELECT least((SELECT purge_after FROM tenants), (SELECT min(purge_after) FROM vaults)) AS "next""#
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// Deletes up to about `limit` rows of the deleted vault `vault` (None: of the whole
    /// tenant) from every table that holds them but `vaults`, `tenants` and `upkeep_items`; the
    /// rows deleted.
    /// Zero means none is left.
    pub async fn erase_rows(&mut self, vault: Option<Uuid>, limit: i32) -> Result<i64> {
        Ok(sqlx::query_scalar!(r#"SELECT otc_erase_rows($1, $2) AS "n!""#, vault, limit.max(1))
            .fetch_one(&mut *self.tx)
            .await?)
    }

    /// Removes the deleted vault's own row, once [`erase_rows`](Self::erase_rows) left nothing.
    pub async fn drop_deleted_vault(&mut self, id: Uuid) -> Result<()> {
        sqlx::query!("DELETE FROM vaults WHERE id = $1 AND deleted_at IS NOT NULL", id).execute(&mut *self.tx).await?;
        Ok(())
    }

    /// Removes the deleted tenant's own row (and with it its vaults and upkeep items), once
    /// [`erase_rows`](Self::erase_rows) left nothing.
    pub async fn drop_deleted_tenant(&mut self) -> Result<()> {
        sqlx::query!("DELETE FROM vaults").execute(&mut *self.tx).await?;
        sqlx::query!("DELETE FROM tenants WHERE deleted_at IS NOT NULL").execute(&mut *self.tx).await?;
        Ok(())
    }

    /// After an erase pass: the erase item is next due at the next erasure (kept when the item
    /// is handed back, as an item asked for while it ran is), or not until asked for.
    pub async fn schedule_next_erasure(&mut self) -> Result<Option<DateTime<Utc>>> {
        let next = self.next_erasure().await?;
        if let Some(at) = next {
            sqlx::query!(
                "UPDATE upkeep_items SET due_at = $2 WHERE tenant_id = $1 AND kind = $3",
                self.tenant,
                at,
                ERASE
            )
            .execute(&mut *self.tx)
            .await?;
        }
        Ok(next)
    }

    /// Makes the tenant's erase item due at `at` at the latest.
    async fn erase_at(&mut self, at: DateTime<Utc>) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO upkeep_items (tenant_id, kind, due_at) VALUES ($1, $2, $3)
               ON CONFLICT (tenant_id, kind) DO UPDATE SET due_at = LEAST(upkeep_items.due_at, EXCLUDED.due_at)"#,
            self.tenant,
            ERASE,
            at
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }
}
