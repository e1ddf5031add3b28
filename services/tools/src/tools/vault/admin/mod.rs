//! The vault administration the spec puts in tools, mapped onto the hosted model: a vault is
//! made in the tenant (not registered from a path), its "configuration" is what the gateways
//! cache of it, and its plugins are what this server does headless. Each needs `admin:vault`
//! and a credential bound to no one vault (as the admin API), except where it names its vault.

pub mod add_vault;
pub mod refresh_plugin_capabilities;
pub mod reload_vault;
pub mod reset_vault_cache;

use otc_errors::{ErrorCode, ToolError};
use otc_kernel::CallContext;
use otc_store::Vault;

/// Refuses a credential bound to one vault: administering vaults is the tenant admin's.
pub fn tenant_wide(ctx: &CallContext<'_>) -> Result<(), ToolError> {
    match ctx.caller.vault_id {
        None => Ok(()),
        Some(_) => Err(ToolError::with_message(
            ErrorCode::Forbidden,
            format!("{} needs a credential bound to no one vault (this one is bound to a vault)", ctx.tool),
        )
        .detail("reason", "vault_bound")),
    }
}

/// What the gateways cache of `vault`: every gateway's manifest rows and link graphs (the
/// vault's write generation moves on) and this gateway's vault lookups and read-only holds.
/// Returns the names of what was dropped.
pub async fn drop_cached(ctx: &CallContext<'_>, vault: &Vault) -> Result<Vec<&'static str>, ToolError> {
    let services = ctx.services();
    let tenant = ctx.caller.tenant_id;
    services.vault_cache.retain(|(t, _), (v, _, _)| !(*t == tenant && v.id == vault.id));
    services.read_only.forget(tenant);
    services
        .kv
        .bump_generation(otc_kv::Generation::Vault(vault.id))
        .await
        .map_err(|e| otc_kernel::redis_unavailable("telling the gateways to read the vault afresh", &e))?;
    Ok(vec!["vault lookups", "read-only holds", "manifest rows", "link graphs"])
}
