use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{Result, TenantTx};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vault {
    pub id: Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

/// The longest vault name (the `vaults.name` check: 1 to 100 ASCII characters).
pub const MAX_VAULT_NAME_BYTES: usize = 100;

impl TenantTx {
    pub async fn create_vault(&mut self, name: &str) -> Result<Vault> {
        Ok(sqlx::query_as!(
            Vault,
            "INSERT INTO vaults (tenant_id, id, name) VALUES ($1, $2, $3) RETURNING id, name, created_at",
            self.tenant,
            Uuid::now_v7(),
            name
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    pub async fn vault_by_name(&mut self, name: &str) -> Result<Option<Vault>> {
        Ok(sqlx::query_as!(
            Vault,
            "SELECT id, name, created_at FROM vaults WHERE name = $1 AND deleted_at IS NULL",
            name
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// The vault named `name`, else the one whose id it is (the id list_vaults shows).
    pub async fn vault_by_name_or_id(&mut self, name: &str) -> Result<Option<Vault>> {
        match self.vault_by_name(name).await? {
            Some(vault) => Ok(Some(vault)),
            None => match Uuid::try_parse(name) {
                Ok(id) => self.vault(id).await,
                Err(_) => Ok(None),
            },
        }
    }

    pub async fn vault(&mut self, id: Uuid) -> Result<Option<Vault>> {
        Ok(sqlx::query_as!(Vault, "SELECT id, name, created_at FROM vaults WHERE id = $1 AND deleted_at IS NULL", id)
            .fetch_optional(&mut *self.tx)
            .await?)
    }

    /// Renames the live vault `id`; Conflict when another vault (live or deleted) has the name,
    /// Invalid when the name breaks the rule, NotFound when there is no such live vault.
    pub async fn rename_vault(&mut self, id: Uuid, name: &str) -> Result<Vault> {
        sqlx::query_as!(
            Vault,
            "UPDATE vaults SET name = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING id, name, created_at",
            id,
            name
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .ok_or_else(|| crate::StoreError::NotFound(format!("vault {id}")))
    }

    pub async fn list_vaults(&mut self) -> Result<Vec<Vault>> {
        Ok(sqlx::query_as!(Vault, "SELECT id, name, created_at FROM vaults WHERE deleted_at IS NULL ORDER BY name")
            .fetch_all(&mut *self.tx)
            .await?)
    }
}
