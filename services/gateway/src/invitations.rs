//! `POST /v1/invitations/accept` `{code}` (no credential; limited per address like client
//! registration): a tenant's first admin accepts the invitation an operator made (`obsidian-tc
//! tenant create SLUG --invite EMAIL`, or `tenant invite`) and gets an admin API token for the
//! person it names, with which they configure the identity provider (`PUT /v1/idp`), prove the
//! organisation's domains (`/v1/admin/domains`) and make vaults. Once only, before it expires;
//! an unknown, used or expired code answers alike (404 not_found).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use otc_errors::{ErrorCode, ToolError};
use otc_store::invitations::INVITATION_PREFIX;
use otc_store::{NewToken, PrincipalKind, StoreError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ApiError, AppState};

/// POST /v1/invitations/accept
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInvitation {
    pub code: String,
}

/// The admin token the invitation became.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InvitationAccepted {
    pub tenant: String,
    pub principal: String,
    /// An API token (shown this once) with the invitation's scopes.
    pub token: String,
    pub scopes: Vec<String>,
    /// What an organisation's admin does next.
    pub next: Vec<String>,
}

fn gone() -> ApiError {
    ApiError::from_tool(ToolError::with_message(
        ErrorCode::NotFound,
        "no such invitation: it is unknown, used or expired; ask for a new one",
    ))
}

pub async fn accept(State(state): State<AppState>, bytes: Bytes) -> Result<Json<InvitationAccepted>, ApiError> {
    let input: AcceptInvitation = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, format!("the body: {e}"))))?;
    let presented = otc_auth::PresentedToken::parse_with(INVITATION_PREFIX, input.code.trim()).map_err(|_| gone())?;
    let store_err = |e: StoreError| ApiError::from_store(&e);
    let mut tx = state.store.begin(presented.tenant).await.map_err(store_err)?;
    let Some(tenant) = tx.tenant().await.map_err(store_err)? else { return Err(gone()) };
    let Some(accepted) = tx.accept_invitation(&presented.hash).await.map_err(store_err)? else { return Err(gone()) };
    let principal = tx.ensure_principal(PrincipalKind::User, &accepted.email).await.map_err(store_err)?;
    let issued = tx
        .issue_token(NewToken {
            principal_id: principal.id,
            name: "invitation".into(),
            scopes: accepted.scopes.clone(),
            vault_id: None,
            expires_at: None,
        })
        .await
        .map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    tracing::info!(tenant = %tenant.id, invitation = %accepted.id, "invitation accepted");
    // In the tenant's trail as the person it made an admin (there was no caller before).
    let audit = &state.dispatcher.services.audit;
    crate::v1_audit::record_open(audit, tenant.id, Some(principal.id), &accepted.email, "POST /v1/invitations/accept");
    Ok(Json(InvitationAccepted {
        tenant: tenant.slug,
        principal: accepted.email,
        token: issued.plaintext,
        scopes: accepted.scopes.iter().map(|s| s.as_str().to_string()).collect(),
        next: vec![
            "configure the identity provider: PUT /v1/idp".into(),
            "prove the organisation's email domains: POST /v1/admin/domains".into(),
            "make vaults: POST /v1/admin/vaults".into(),
        ],
    }))
}
