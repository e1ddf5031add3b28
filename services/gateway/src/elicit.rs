//! `POST /v1/elicit`: an admin confirms one destructive call, as `obsidian-tc elicit` does.
//! Body: `{tool, args_hash, vault?, principal?, ttl_secs?}` from the call's elicit_required
//! details (principal defaults to the admin's own); answers `{token, expires_at}`. Needs
//! admin:confirm, and mints only what the admin may itself administer: a credential bound to
//! one vault confirms calls on that vault only (it must name it), and a token naming a vault
//! confirms the call on that vault and no other.

use std::time::Duration;

use axum::Json;
use axum::extract::{Extension, State};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::require;
use crate::{ApiError, AppState, Caller};

/// `POST /v1/elicit`: a person's confirmation of one call (its tool and `args_hash`).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ElicitRequest {
    pub tool: String,
    pub args_hash: String,
    #[serde(default)]
    pub vault: Option<String>,
    #[serde(default)]
    pub principal: Option<uuid::Uuid>,
    #[serde(default)]
    pub ttl_secs: Option<u64>,
}

/// The confirmation token, for the call's `elicit_token`.
#[derive(Serialize, JsonSchema)]
pub struct Elicited {
    pub token: String,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub tool: String,
    pub args_hash: String,
    pub principal: uuid::Uuid,
    pub vault: Option<String>,
}

pub async fn mint(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    request: Result<Json<ElicitRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Elicited>, ApiError> {
    require(&caller, crate::scopes::CONFIRM)?;
    let Json(request) = request.map_err(|e| crate::error::body_rejection("elicit", e))?;
    let hash = &request.args_hash;
    otc_kernel::confirmation::check_args_hash(hash).map_err(ApiError::from_tool)?;
    if state.dispatcher.registry().get(&request.tool).is_none() {
        return Err(ApiError::from_tool(otc_kernel::unknown_tool(&otc_errors::echo(&request.tool))));
    }
    let services = &state.dispatcher.services;
    // What the admin may administer: a vault it reaches (the one it is bound to, if bound).
    match (&request.vault, caller.vault_id) {
        (None, Some(_)) => {
            return Err(forbidden(
                "a credential bound to one vault confirms calls on that vault only: name it in vault",
            ));
        }
        (None, None) => {}
        (Some(name), bound) => {
            let mut tx = services.store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
            let vault = tx.vault_by_name(name).await.map_err(|e| ApiError::from_store(&e))?;
            tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
            match vault {
                None => {
                    return Err(ApiError::from_tool(
                        ToolError::with_message(ErrorCode::VaultNotFound, "no such vault")
                            .detail("vault", name.clone()),
                    ));
                }
                Some(v) if bound.is_some_and(|b| b != v.id) => {
                    return Err(forbidden("this credential is bound to another vault"));
                }
                Some(_) => {}
            }
        }
    }
    let ttl = request.ttl_secs.unwrap_or(services.config.tools.confirmation_ttl_secs);
    let principal = request.principal.unwrap_or(caller.principal_id);
    let minted = otc_kernel::confirmation::mint(
        &services.store,
        caller.tenant_id,
        principal,
        &request.tool,
        hash,
        request.vault.as_deref(),
        Duration::from_secs(ttl),
    )
    .await
    .map_err(|e| ApiError::from_store(&e))?;
    Ok(Json(Elicited {
        token: minted.token,
        expires_at: minted.expires_at,
        tool: request.tool,
        args_hash: hash.to_string(),
        principal,
        vault: request.vault,
    }))
}

fn forbidden(message: &str) -> ApiError {
    ApiError::from_tool(ToolError::with_message(ErrorCode::Forbidden, message))
        .with_status(axum::http::StatusCode::FORBIDDEN)
}
