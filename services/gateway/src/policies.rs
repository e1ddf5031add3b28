//! `GET|PUT /v1/policies` (`admin:confirm`): what the tenant's admin decides for the tenant:
//! - `confirm_in_client_clients`, the OAuth clients (client_id) whose own person may confirm a
//!   destructive call in the client, which the deployment lets none do by default
//!   (`mcp.confirm_in_client`);
//! - `egress_exclude_paths`, globs of notes whose text never leaves for a model (an embedding
//!   provider, the wiki judge, the tenant's chat endpoint), beside the deployment's
//!   `egress.exclude_paths` (`otc_kernel::egress`);
//! - `read_only`, the tenant's hold (maintenance, a legal hold): every write of the tenant,
//!   through MCP or /v1, answers `read_only` within `read_only.refresh_ms`, reads go on; one the
//!   operator put on is lifted only by the operator (403 `reason: operator_hold`).
//!
//! A credential bound to one vault sets none of it.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ApiError, AppState, Caller};

use crate::scopes::CONFIRM as SCOPE;

/// The tenant's policies.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Policies {
    /// The OAuth clients whose own confirmation prompt stands in for `elicit_required`.
    pub confirm_in_client_clients: Vec<String>,
    /// Globs of notes never sent to a model (the tenant's own).
    pub egress_exclude_paths: Vec<String>,
    /// The deployment's, which apply as well (read only).
    pub deployment_egress_exclude_paths: Vec<String>,
    /// The tenant's hold on writes, while it is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<crate::admin_vaults::ReadOnlyHold>,
}

/// PUT /v1/policies: each policy given replaces the tenant's; one left out stays.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyInput {
    /// At most 50 client ids.
    #[serde(default)]
    pub confirm_in_client_clients: Option<Vec<String>>,
    /// At most 100 globs (as in the ACLs: `*` within a folder, `**` across; a glob with no
    /// wildcard also covers what is under it).
    #[serde(default)]
    pub egress_exclude_paths: Option<Vec<String>>,
    /// true puts the tenant on hold (every write refused, reads go on); false lifts it.
    #[serde(default)]
    pub read_only: Option<bool>,
    /// Why, shown to every writer refused (up to 500 characters); with `read_only: true`.
    #[serde(default)]
    pub read_only_reason: Option<String>,
}

fn tenant_admin(caller: &Caller) -> Result<(), ApiError> {
    crate::auth::tenant_admin(caller, SCOPE, "set the tenant's policies")
}

async fn current(state: &AppState, caller: &Caller) -> Result<Policies, ApiError> {
    let services = &state.dispatcher.services;
    let mut tx = services.store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
    let clients = tx.confirm_in_client_clients().await.map_err(|e| ApiError::from_store(&e))?;
    let egress = tx.egress_exclude_paths().await.map_err(|e| ApiError::from_store(&e))?;
    let hold = tx.read_only_holds().await.map_err(|e| ApiError::from_store(&e))?.tenant;
    tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
    Ok(Policies {
        confirm_in_client_clients: clients,
        egress_exclude_paths: egress,
        deployment_egress_exclude_paths: services.config.egress.exclude_paths.clone(),
        read_only: hold.map(Into::into),
    })
}

pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Policies>, ApiError> {
    tenant_admin(&caller)?;
    Ok(Json(current(&state, &caller).await?))
}

fn invalid(field: &'static str, message: &str) -> ApiError {
    ApiError::from_tool(
        ToolError::with_message(ErrorCode::InvalidInput, format!("{field}: {message}")).detail("field", field),
    )
}

/// `PUT /v1/policies` `{confirm_in_client_clients?, egress_exclude_paths?, read_only?,
/// read_only_reason?}`: replaces what is given; every gateway applies a change of clients before the answer (the tenant's checked
/// tokens are dropped), and the egress exclusion is read by every call that would send text out.
pub async fn set(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Result<Json<Policies>, ApiError> {
    tenant_admin(&caller)?;
    let input: PolicyInput = serde_json::from_slice(&body)
        .map_err(|e| ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, format!("the body: {e}"))))?;
    let services = &state.dispatcher.services;
    let mut tx = services.store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
    // The store holds the lists' bounds.
    if let Some(mut clients) = input.confirm_in_client_clients.clone() {
        clients.sort();
        clients.dedup();
        tx.set_confirm_in_client_clients(&clients).await.map_err(|e| match e {
            otc_store::StoreError::Invalid { .. } => {
                invalid("confirm_in_client_clients", "at most 50 client ids of 1 to 2000 bytes")
            }
            other => ApiError::from_store(&other),
        })?;
    }
    if let Some(mut globs) = input.egress_exclude_paths {
        globs.iter_mut().for_each(|g| *g = g.trim().to_string());
        globs.sort();
        globs.dedup();
        if let Err(e) = otc_vault::egress::Exclusion::new(globs.iter().map(String::as_str)) {
            return Err(invalid("egress_exclude_paths", &format!("a glob does not compile: {e}")));
        }
        tx.set_egress_exclude_paths(&globs).await.map_err(|e| match e {
            otc_store::StoreError::Invalid { .. } => {
                invalid("egress_exclude_paths", "at most 100 globs of 1 to 1000 bytes")
            }
            other => ApiError::from_store(&other),
        })?;
    }
    if input.read_only_reason.is_some() && input.read_only != Some(true) {
        return Err(invalid("read_only_reason", "goes with read_only: true"));
    }
    if let Some(held) = input.read_only {
        let on = held.then_some(input.read_only_reason.as_deref());
        let by = otc_store::read_only::HoldBy::Tenant;
        let change = tx.set_tenant_read_only(on, by).await.map_err(|e| match e {
            otc_store::StoreError::Invalid { .. } => {
                invalid("read_only_reason", "at most 500 characters, with no control characters")
            }
            other => ApiError::from_store(&other),
        })?;
        // Putting on a hold the operator holds already leaves theirs; lifting it is refused.
        if change == otc_store::read_only::HoldChange::OperatorHold && !held {
            return Err(crate::admin_vaults::operator_hold());
        }
    }
    tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
    if input.read_only.is_some() {
        services.read_only.forget(caller.tenant_id);
    }
    if input.confirm_in_client_clients.is_some() {
        crate::auth_cache::revoked(&services.kv, caller.tenant_id).await.map_err(|e| {
            tracing::warn!(error = %crate::error_chain(&e), "could not move the tenant's token generation");
            ApiError::from_tool(ToolError::with_message(
                ErrorCode::Internal,
                "the policy was saved but the gateways could not be told; they apply it within the auth cache's age",
            ))
        })?;
    }
    Ok(Json(current(&state, &caller).await?))
}
