//! `POST /v1/signup` `{slug, name?, email, access_code?}` (no credential; limited per address
//! like client registration): self-service sign-up, off unless the operator turns it on
//! (`[signup] enabled`). It makes the tenant and a single-use invitation for its first admin,
//! valid a day, which they accept at `POST /v1/invitations/accept` for their admin token. The
//! operator may admit only some email domains (`signup.email_domains`) and ask for a code
//! (`signup.access_code`); creating tenants otherwise stays the operator's (`tenant create`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use chrono::{DateTime, Utc};
use otc_errors::{ErrorCode, ToolError};
use otc_kernel::lifecycle::CreateError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ApiError, AppState};

/// How long a sign-up's invitation lasts.
const INVITATION_DAYS: u32 = 1;

/// POST /v1/signup
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignUp {
    /// The organisation's short name: lowercase letters, digits and dashes.
    pub slug: String,
    /// Its display name (the slug when left out).
    #[serde(default)]
    pub name: Option<String>,
    /// The first admin's email.
    pub email: String,
    /// The code the operator handed out, when sign-up asks for one.
    #[serde(default)]
    pub access_code: Option<String>,
}

/// The tenant made, and the invitation its first admin accepts.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SignedUp {
    pub tenant: String,
    /// Single use, shown this once: POST it to /v1/invitations/accept.
    pub invitation: String,
    pub expires_at: DateTime<Utc>,
    pub next: Vec<String>,
}

fn refuse(code: ErrorCode, message: &str) -> ApiError {
    ApiError::from_tool(ToolError::with_message(code, message))
}

pub async fn sign_up(State(state): State<AppState>, bytes: Bytes) -> Result<Json<SignedUp>, ApiError> {
    let services = &state.dispatcher.services;
    let settings = &services.config.signup;
    if !settings.enabled {
        return Err(refuse(ErrorCode::NotFound, "sign-up is off on this server: ask its operator for an organisation"));
    }
    let input: SignUp = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, format!("the body: {e}"))))?;
    if let Some(code) = &settings.access_code {
        let given = input.access_code.as_deref().unwrap_or("");
        // Digests compared, so the time taken says nothing of how much of the code matched.
        let digest = |text: &str| <sha2::Sha256 as sha2::Digest>::digest(text.as_bytes());
        if digest(given) != digest(code.expose()) {
            return Err(refuse(ErrorCode::Forbidden, "sign-up here needs the access code the operator hands out"));
        }
    }
    let email = input.email.trim().to_lowercase();
    let domain = email.rsplit_once('@').map(|(_, d)| d).unwrap_or("");
    if !settings.email_domains.is_empty() && !settings.email_domains.iter().any(|d| d.eq_ignore_ascii_case(domain)) {
        return Err(refuse(ErrorCode::Forbidden, "sign-up here is for other email domains: ask the operator"));
    }
    let name = input.name.clone().unwrap_or_else(|| input.slug.clone());
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(ApiError::from_tool(
            ToolError::with_message(ErrorCode::InvalidInput, "name: 1 to 200 printable characters")
                .detail("field", "name"),
        ));
    }
    let (tenant, invitation) =
        otc_kernel::lifecycle::create_tenant(&services.store, &input.slug, &name, Some((&email, INVITATION_DAYS)))
            .await
            .map_err(|e| match e {
                CreateError::Taken(_) => {
                    refuse(ErrorCode::Conflict, "an organisation has this short name: pick another")
                }
                CreateError::BadSlug => ApiError::from_tool(
                    ToolError::with_message(ErrorCode::InvalidInput, CreateError::BadSlug.to_string())
                        .detail("field", "slug"),
                ),
                CreateError::BadEmail(_) => ApiError::from_tool(
                    ToolError::with_message(ErrorCode::InvalidInput, "email: an email address")
                        .detail("field", "email"),
                ),
                CreateError::BadDays => ApiError::internal(),
                CreateError::Store(e) => ApiError::from_store(&e),
            })?;
    let invitation = invitation.expect("a sign-up invites its first admin");
    tracing::info!(tenant = %tenant.id, "a tenant signed up");
    // The tenant's trail starts with its sign-up.
    crate::v1_audit::record_open(&services.audit, tenant.id, None, &email, "POST /v1/signup");
    Ok(Json(SignedUp {
        tenant: tenant.slug,
        invitation: invitation.code,
        expires_at: invitation.expires_at,
        next: vec!["accept the invitation for an admin token: POST /v1/invitations/accept {\"code\": ...}".into()],
    }))
}
