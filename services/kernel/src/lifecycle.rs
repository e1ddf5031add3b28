//! Deleting, restoring and purging vaults and tenants, for the operator's CLI and the tenant's
//! admin API alike: the change in Postgres, then word to every gateway (the vault's generation
//! and the tenant's token generation move on, so no cached manifest or token check outlives
//! it). Erasure itself is the worker's (`otc_worker::erasure`), when the grace period is over.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use otc_kv::{Generation, Kv};
use otc_store::{DeletedVault, Store, StoreError, TenantDeletion, Vault};
use uuid::Uuid;

/// Tells every gateway that what `tenant` could reach changed: cached token checks (a token
/// bound to a deleted vault, every token of a deleted tenant) and, for `vault`, cached files.
async fn announce(kv: &Arc<Kv>, tenant: Uuid, vault: Option<Uuid>) {
    if let Err(e) = kv.bump_generation(Generation::Tokens(tenant)).await {
        tracing::warn!(%tenant, error = %otc_errors::error_chain(&e), "deleted, but could not tell the gateways; cached token checks lapse within server.auth_cache_ttl_ms");
    }
    if let Some(vault) = vault {
        otc_kv::vault_changed(kv, vault).await;
    }
}

/// The scopes an invitation grants: the tenant's whole administration.
pub const INVITED_SCOPES: &str = "admin:*,read:*,write:*,delete:*";

/// Why a tenant or an invitation was not made.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("a tenant {0:?} exists already")]
    Taken(String),
    #[error("a tenant slug is 1 to 63 lowercase letters, digits and dashes, starting with a letter or digit")]
    BadSlug,
    #[error("{0:?} is not an email address")]
    BadEmail(String),
    #[error("an invitation lasts 1 to 90 days")]
    BadDays,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether an invitation for `email` lasting `days` may be made.
fn check_invitation(email: &str, days: u32) -> Result<(), CreateError> {
    if !email.contains('@') || email.len() > 320 || email.chars().any(char::is_control) {
        return Err(CreateError::BadEmail(email.to_string()));
    }
    if !(1..=90).contains(&days) {
        return Err(CreateError::BadDays);
    }
    Ok(())
}

/// Invites `email` to administer `tenant` for `days`: a single-use code, shown once.
pub async fn invite(
    store: &Store,
    tenant: Uuid,
    email: &str,
    days: u32,
) -> Result<otc_store::invitations::IssuedInvitation, CreateError> {
    check_invitation(email, days)?;
    let scopes = otc_auth::parse_scopes(INVITED_SCOPES).expect("the invitation's scopes parse");
    let expires_at = Utc::now() + chrono::Duration::days(i64::from(days));
    let mut tx = store.begin(tenant).await?;
    let issued = tx.invite(email, &scopes, expires_at).await?;
    tx.commit().await?;
    Ok(issued)
}

/// Makes a tenant, and an invitation for its first admin when `invite` names one (email, days).
pub async fn create_tenant(
    store: &Store,
    slug: &str,
    name: &str,
    first_admin: Option<(&str, u32)>,
) -> Result<(otc_store::Tenant, Option<otc_store::invitations::IssuedInvitation>), CreateError> {
    // Checked before the tenant is made, so a refused invitation leaves no tenant without one.
    if let Some((email, days)) = first_admin {
        check_invitation(email, days)?;
    }
    let tenant = store.create_tenant(slug, name).await.map_err(|e| match e {
        StoreError::Conflict { .. } => CreateError::Taken(slug.to_string()),
        StoreError::Invalid { .. } => CreateError::BadSlug,
        other => other.into(),
    })?;
    let invitation = match first_admin {
        Some((email, days)) => Some(invite(store, tenant.id, email, days).await?),
        None => None,
    };
    Ok((tenant, invitation))
}

/// Makes a vault named `name`.
pub async fn create_vault(store: &Store, tenant: Uuid, name: &str) -> Result<Vault, StoreError> {
    let mut tx = store.begin(tenant).await?;
    let vault = tx.create_vault(name).await?;
    tx.commit().await?;
    Ok(vault)
}

/// Renames the live vault named `name` (or with that id) to `to`; the gateways forget the old
/// name at once.
pub async fn rename_vault(
    store: &Store,
    kv: &Arc<Kv>,
    tenant: Uuid,
    name: &str,
    to: &str,
) -> Result<Vault, StoreError> {
    let mut tx = store.begin(tenant).await?;
    let vault = tx.vault_by_name_or_id(name).await?.ok_or_else(|| StoreError::NotFound(format!("vault {name}")))?;
    let renamed = tx.rename_vault(vault.id, to).await?;
    tx.commit().await?;
    announce(kv, tenant, Some(vault.id)).await;
    Ok(renamed)
}

/// Deletes the live vault named `name` (or with that id): gone now, erased after `grace`.
pub async fn delete_vault(
    store: &Store,
    kv: &Arc<Kv>,
    tenant: Uuid,
    name: &str,
    grace: Duration,
) -> Result<(Vault, DateTime<Utc>), StoreError> {
    let mut tx = store.begin(tenant).await?;
    let vault = tx.vault_by_name_or_id(name).await?.ok_or_else(|| StoreError::NotFound(format!("vault {name}")))?;
    let purge_after = tx.delete_vault(vault.id, grace).await?;
    tx.commit().await?;
    announce(kv, tenant, Some(vault.id)).await;
    Ok((vault, purge_after))
}

/// Brings back the deleted vault named `name` (or with that id) as it was.
pub async fn undelete_vault(store: &Store, kv: &Arc<Kv>, tenant: Uuid, name: &str) -> Result<Vault, StoreError> {
    let mut tx = store.begin(tenant).await?;
    let deleted = tx.deleted_vault(name).await?.ok_or_else(|| StoreError::NotFound(format!("deleted vault {name}")))?;
    let vault = tx.undelete_vault(deleted.id).await?;
    tx.commit().await?;
    announce(kv, tenant, Some(vault.id)).await;
    Ok(vault)
}

/// Ends the grace period of the deleted vault named `name` now: the next erase pass erases it.
pub async fn purge_vault(store: &Store, tenant: Uuid, name: &str) -> Result<DeletedVault, StoreError> {
    let mut tx = store.begin(tenant).await?;
    let deleted = tx.deleted_vault(name).await?.ok_or_else(|| StoreError::NotFound(format!("deleted vault {name}")))?;
    tx.purge_vault_now(deleted.id).await?;
    tx.commit().await?;
    Ok(deleted)
}

/// Deletes the whole tenant: every token stops now; erased after `grace`.
pub async fn delete_tenant(
    store: &Store,
    kv: &Arc<Kv>,
    tenant: Uuid,
    grace: Duration,
) -> Result<TenantDeletion, StoreError> {
    let mut tx = store.begin(tenant).await?;
    let deletion = tx.delete_tenant(grace).await?;
    tx.commit().await?;
    announce(kv, tenant, None).await;
    Ok(deletion)
}

/// Undoes the tenant's deletion before its erasure.
pub async fn undelete_tenant(store: &Store, kv: &Arc<Kv>, tenant: Uuid) -> Result<(), StoreError> {
    let mut tx = store.begin(tenant).await?;
    tx.undelete_tenant().await?;
    tx.commit().await?;
    announce(kv, tenant, None).await;
    Ok(())
}

/// Ends the deleted tenant's grace period now: the next erase pass erases it.
pub async fn purge_tenant(store: &Store, tenant: Uuid) -> Result<(), StoreError> {
    let mut tx = store.begin(tenant).await?;
    tx.purge_tenant_now().await?;
    tx.commit().await
}

/// Rows a transaction of the erasure deletes at most (cascades aside).
const ERASE_BATCH: i32 = 5_000;

/// Deletes the rows of `vault` (None: the whole tenant) in every table, batch by batch: how
/// many, and false when `deadline` came first (the next pass goes on).
pub async fn erase_rows(
    store: &Store,
    tenant: Uuid,
    vault: Option<Uuid>,
    deadline: Option<tokio::time::Instant>,
) -> Result<(i64, bool), StoreError> {
    let mut rows = 0;
    loop {
        let mut tx = store.begin(tenant).await?;
        let deleted = tx.erase_rows(vault, ERASE_BATCH).await?;
        tx.commit().await?;
        rows += deleted;
        if deleted == 0 {
            return Ok((rows, true));
        }
        if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            return Ok((rows, false));
        }
    }
}

/// Deletes a vault made for a moment (an import that failed, a rerun's sandbox) and erases it
/// now, so nothing of it is left and its name is free again.
pub async fn discard_vault(
    store: &Store,
    kv: &Arc<Kv>,
    tenant: Uuid,
    vault: Uuid,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut tx = store.begin(tenant).await?;
    tx.delete_vault(vault, Duration::ZERO).await?;
    tx.purge_vault_now(vault).await?;
    tx.commit().await?;
    otc_kv::vault_changed(kv, vault).await;
    erase_deleted_vault(store, kv, tenant, vault, None).await?;
    Ok(())
}

/// How far [`erase_deleted_vault`] got.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct VaultErasure {
    pub rows: i64,
    pub keys: u64,
    /// False when the deadline came first (the next pass goes on).
    pub finished: bool,
}

/// Erases the deleted vault `vault` of `tenant`: its rows in every table, in batches, then the
/// vault itself (the content only it held is swept as unreferenced by the next sweep), then
/// every Redis key naming it. Stops between batches once `deadline` is past.
pub async fn erase_deleted_vault(
    store: &Store,
    kv: &Kv,
    tenant: Uuid,
    vault: Uuid,
    deadline: Option<tokio::time::Instant>,
) -> Result<VaultErasure, Box<dyn std::error::Error + Send + Sync>> {
    let (rows, finished) = erase_rows(store, tenant, Some(vault), deadline).await?;
    if !finished {
        return Ok(VaultErasure { rows, keys: 0, finished });
    }
    let mut tx = store.begin(tenant).await?;
    tx.drop_deleted_vault(vault).await?;
    // Its blobs no other vault references go with the tenant's next sweep (after the blob
    // grace period), as any unreferenced blob does.
    tx.request_upkeep(otc_store::upkeep::SWEEP).await?;
    tx.commit().await?;
    let keys = kv.delete_naming(&vault.to_string()).await?;
    Ok(VaultErasure { rows, keys, finished: true })
}
