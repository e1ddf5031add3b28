//! `POST /v1/elicit`: an admin confirms one destructive call, as `obsidian-tc elicit` does.
//! Body: `{tool, args_hash, principal?, ttl_secs?}` from the call's elicit_required details
//! (principal defaults to the admin's own); answers `{token, expires_at}`. Needs admin:confirm.

use std::time::Duration;

use axum::Json;
use axum::extract::{Extension, State};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::sync::require;
use crate::{ApiError, AppState, Caller};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElicitRequest {
    tool: String,
    args_hash: String,
    #[serde(default)]
    principal: Option<uuid::Uuid>,
    #[serde(default)]
    ttl_secs: Option<u64>,
}

pub async fn mint(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    request: Result<Json<ElicitRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    require(&caller, "admin:confirm")?;
    let Json(request) = request.map_err(|e| crate::error::body_rejection("elicit", e))?;
    let hash = &request.args_hash;
    otc_tools::confirmation::check_args_hash(hash).map_err(ApiError::from_tool)?;
    if state.dispatcher.registry().get(&request.tool).is_none() {
        return Err(ApiError::from_tool(otc_tools::unknown_tool(&otc_errors::echo(&request.tool))));
    }
    let services = &state.dispatcher.services;
    let ttl = request.ttl_secs.unwrap_or(services.config.tools.confirmation_ttl_secs);
    let principal = request.principal.unwrap_or(caller.principal_id);
    let minted = otc_tools::confirmation::mint(
        &services.store,
        caller.tenant_id,
        principal,
        &request.tool,
        hash,
        Duration::from_secs(ttl),
    )
    .await
    .map_err(|e| ApiError::from_store(&e))?;
    Ok(Json(json!({
        "token": minted.token,
        "expires_at": minted.expires_at,
        "tool": request.tool,
        "args_hash": hash,
        "principal": principal,
    })))
}
