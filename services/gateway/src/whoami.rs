use axum::Json;
use axum::extract::{Extension, State};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{ApiError, AppState, Caller};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WhoAmI {
    pub tenant: TenantInfo,
    pub principal: Named,
    pub token_id: Uuid,
    pub scopes: Vec<String>,
    /// The one vault this token may reach, when it is bound to one.
    pub vault: Option<Named>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TenantInfo {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Named {
    pub id: Uuid,
    pub name: String,
}

/// Who the bearer token speaks for: tenant, principal, scopes and vault binding.
pub async fn whoami(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<WhoAmI>, ApiError> {
    let fetch = async {
        let mut tx = state.store.begin(caller.tenant_id).await?;
        let tenant = tx.tenant().await?;
        let vault = match caller.vault_id {
            Some(id) => tx.vault(id).await?,
            None => None,
        };
        tx.commit().await?;
        Ok::<_, otc_store::StoreError>((tenant, vault))
    };
    let (tenant, vault) = fetch.await.map_err(|e| ApiError::from_store(&e))?;
    let tenant = tenant.ok_or_else(ApiError::invalid_token)?;
    Ok(Json(WhoAmI {
        tenant: TenantInfo { id: tenant.id, slug: tenant.slug, name: tenant.name },
        principal: Named { id: caller.principal_id, name: caller.principal_name.clone() },
        token_id: caller.token_id,
        scopes: caller.scopes.iter().map(|s| s.to_string()).collect(),
        vault: vault.map(|v| Named { id: v.id, name: v.name }),
    }))
}
