//! Egress exclusion for a call: the deployment's `egress.exclude_paths` and the tenant's own
//! (`/v1/policies`), compiled. The model-backed tools (reflect, knowledge_challenge, the
//! contradiction detector, lint_wiki's judge) leave excluded notes out of what they send and
//! list them as skipped; the embedding queue leaves their chunks unembedded
//! (`otc_indexer::embedding`).

use otc_errors::{ErrorCode, ToolError};
pub use otc_vault::egress::Exclusion;
use uuid::Uuid;

use crate::CallContext;

/// The exclusion in force for `tenant`.
pub async fn for_tenant(
    store: &otc_store::Store,
    config: &otc_config::Config,
    tenant: Uuid,
) -> Result<Exclusion, otc_store::StoreError> {
    let mut tx = store.begin(tenant).await?;
    let own = tx.egress_exclude_paths().await?;
    tx.commit().await?;
    Ok(Exclusion::of(&config.egress.exclude_paths, &own))
}

/// The exclusion in force for the caller's tenant.
pub async fn for_call(ctx: &CallContext<'_>) -> Result<Exclusion, ToolError> {
    let services = ctx.services();
    for_tenant(&services.store, &services.config, ctx.caller.tenant_id).await.map_err(|e| {
        tracing::warn!(error = %otc_errors::error_chain(&e), "reading the egress exclusion");
        ToolError::with_message(ErrorCode::ServiceUnavailable, "the organisation's egress policy could not be read")
    })
}

/// The error for a call whose every source is excluded.
pub fn all_excluded(tool: &str, skipped: usize) -> ToolError {
    ToolError::with_message(
        ErrorCode::EgressExcluded,
        format!("{tool}: the {skipped} note(s) it would send to the model are excluded from egress"),
    )
    .detail("skipped", skipped)
}
