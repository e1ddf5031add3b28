//! `GET|PUT /v1/policies` (`admin:confirm`): what the tenant's admin decides for the tenant.
//! Today one policy: `confirm_in_client_clients`, the OAuth clients (client_id) whose own person
//! may confirm a destructive call in the client, which the deployment lets none do by default
//! (`mcp.confirm_in_client`). A credential bound to one vault sets none of it.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ApiError, AppState, Caller};

use crate::scopes::CONFIRM as SCOPE;

/// The tenant's policies: the OAuth clients whose own confirmation prompt stands in for
/// `elicit_required` (at most 50).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Policies {
    pub confirm_in_client_clients: Vec<String>,
}

fn tenant_admin(caller: &Caller) -> Result<(), ApiError> {
    crate::auth::tenant_admin(caller, SCOPE, "set the tenant's policies")
}

pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Policies>, ApiError> {
    tenant_admin(&caller)?;
    let store = &state.dispatcher.services.store;
    let mut tx = store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
    let clients = tx.confirm_in_client_clients().await.map_err(|e| ApiError::from_store(&e))?;
    tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
    Ok(Json(Policies { confirm_in_client_clients: clients }))
}

/// `PUT /v1/policies` `{confirm_in_client_clients: [client_id, ...]}` (at most 50): replaces the
/// list; every gateway applies it before the answer (the tenant's checked tokens are dropped).
pub async fn set(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Result<Json<Policies>, ApiError> {
    tenant_admin(&caller)?;
    let input: Policies = serde_json::from_slice(&body)
        .map_err(|e| ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, format!("the body: {e}"))))?;
    let mut clients = input.confirm_in_client_clients;
    clients.sort();
    clients.dedup();
    let services = &state.dispatcher.services;
    let mut tx = services.store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
    // The store holds the list's bounds.
    tx.set_confirm_in_client_clients(&clients).await.map_err(|e| match e {
        otc_store::StoreError::Invalid { .. } => ApiError::from_tool(
            ToolError::with_message(
                ErrorCode::InvalidInput,
                "confirm_in_client_clients: at most 50 client ids of 1 to 2000 bytes",
            )
            .detail("field", "confirm_in_client_clients"),
        ),
        other => ApiError::from_store(&other),
    })?;
    tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
    crate::auth_cache::revoked(&services.kv, caller.tenant_id).await.map_err(|e| {
        tracing::warn!(error = %crate::error_chain(&e), "could not move the tenant's token generation");
        ApiError::from_tool(ToolError::with_message(
            ErrorCode::Internal,
            "the policy was saved but the gateways could not be told; they apply it within the auth cache's age",
        ))
    })?;
    Ok(Json(Policies { confirm_in_client_clients: clients }))
}
