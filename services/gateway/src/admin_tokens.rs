//! The tenant admin API for API tokens (`admin:tokens`, a credential bound to no one vault):
//! - `GET /v1/admin/tokens`: every token of the tenant (never its secret).
//! - `POST /v1/admin/tokens` `{name, scopes, vault?, principal?, expires_in_days?}`: a service
//!   token, optionally bound to one vault; its text is in this answer only. It may carry only
//!   scopes the caller holds itself.
//! - `DELETE /v1/admin/tokens/{id}`: revokes one; every gateway refuses it from the answer on.
//!
//! Mutations take an `Idempotency-Key` header (a retried creation answers the same token);
//! every call is audited and rate-limited as each /v1 route is.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{NewToken, PrincipalKind, StoreError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::scopes::TOKENS as SCOPE;
use crate::{ApiError, AppState, Caller};

/// A token as the admin sees it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AdminToken {
    pub id: uuid::Uuid,
    pub name: String,
    /// The token's last characters, to tell it apart.
    pub hint: String,
    pub principal: String,
    pub scopes: Vec<String>,
    /// The one vault it reaches, when bound to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vault: Option<String>,
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<otc_store::TokenRecord> for AdminToken {
    fn from(t: otc_store::TokenRecord) -> Self {
        AdminToken {
            id: t.id,
            name: t.name,
            hint: t.hint,
            principal: t.principal_name,
            scopes: t.scopes,
            vault: t.vault_name,
            created_at: t.created_at,
            expires_at: t.expires_at,
            revoked_at: t.revoked_at,
            last_used_at: t.last_used_at,
        }
    }
}

/// GET /v1/admin/tokens
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AdminTokens {
    pub tokens: Vec<AdminToken>,
}

/// POST /v1/admin/tokens
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAdminToken {
    /// A label, 1 to 200 characters.
    pub name: String,
    /// Scopes, e.g. `["read:notes", "write:notes"]`; each one the caller holds itself.
    pub scopes: Vec<String>,
    /// Bind it to this vault (name or id): it reaches no other.
    #[serde(default)]
    pub vault: Option<String>,
    /// The service principal it acts as (made on first use); default: its name.
    #[serde(default)]
    pub principal: Option<String>,
    /// Days until it stops working (default: never).
    #[serde(default)]
    pub expires_in_days: Option<u32>,
}

/// The answer to POST /v1/admin/tokens: the token's text, shown this once.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IssuedAdminToken {
    pub id: uuid::Uuid,
    /// The token's text. Left out when this answers a retry under the same Idempotency-Key:
    /// the text is never kept; if it was lost, revoke the token and make another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub name: String,
    pub scopes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vault: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

/// DELETE /v1/admin/tokens/{id}
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RevokedToken {
    pub id: uuid::Uuid,
    pub revoked: bool,
}

fn tenant_admin(caller: &Caller) -> Result<(), ApiError> {
    crate::auth::tenant_admin(caller, SCOPE, "manage the tenant's tokens")
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, message).detail("field", field.to_string()))
}

pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<AdminTokens>, ApiError> {
    tenant_admin(&caller)?;
    let store = &state.dispatcher.services.store;
    let mut tx = store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
    let tokens = tx.list_tokens().await.map_err(|e| ApiError::from_store(&e))?;
    tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
    let tokens = tokens.into_iter().map(AdminToken::from).collect();
    Ok(Json(AdminTokens { tokens }))
}

pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    let input: NewAdminToken = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, format!("the body: {e}"))))?;
    let scopes = otc_auth::parse_scopes(&input.scopes.join(","))
        .map_err(|e| invalid("scopes", format!("scopes: {e}: name one or more, e.g. read:notes")))?;
    // No one hands out more than they hold.
    if let Some(beyond) = scopes.iter().find(|s| !caller.scopes.iter().any(|held| held.grants(s.as_str()))) {
        return Err(ApiError::from_tool(
            ToolError::with_message(ErrorCode::Forbidden, "a token may carry only scopes its maker holds")
                .detail("scope", beyond.as_str().to_string()),
        ));
    }
    let services = &state.dispatcher.services;
    let without_secret = |answer: &Value| {
        let mut kept = answer.clone();
        if let Some(fields) = kept.as_object_mut() {
            fields.remove("token");
        }
        kept
    };
    let input_value = json!(input);
    crate::idempotent::keyed_keeping(
        &state,
        &caller,
        &headers,
        "admin_token_create",
        input_value,
        without_secret,
        |_| async {
            let mut tx = services.store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
            let vault = match &input.vault {
                Some(name) => {
                    Some(tx.vault_by_name_or_id(name).await.map_err(|e| ApiError::from_store(&e))?.ok_or_else(
                        || ApiError::from_tool(ToolError::new(ErrorCode::VaultNotFound).echo("vault", name)),
                    )?)
                }
                None => None,
            };
            let principal_name = input.principal.clone().unwrap_or_else(|| input.name.clone());
            let principal =
                tx.ensure_principal(PrincipalKind::Service, &principal_name).await.map_err(|e| match e {
                    StoreError::Invalid { .. } => invalid("principal", "a principal name is 1 to 200 characters"),
                    other => ApiError::from_store(&other),
                })?;
            let expires_at = input.expires_in_days.map(|d| Utc::now() + chrono::Duration::days(i64::from(d.max(1))));
            let issued = tx
                .issue_token(NewToken {
                    principal_id: principal.id,
                    name: input.name.clone(),
                    scopes: scopes.clone(),
                    vault_id: vault.as_ref().map(|v| v.id),
                    expires_at,
                })
                .await
                .map_err(|e| match e {
                    StoreError::Invalid { .. } => invalid("name", "a token name is 1 to 200 characters"),
                    other => ApiError::from_store(&other),
                })?;
            tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
            Ok(serde_json::to_value(IssuedAdminToken {
                id: issued.id,
                token: Some(issued.plaintext),
                name: input.name.clone(),
                scopes: scopes.iter().map(|s| s.as_str().to_string()).collect(),
                vault: vault.map(|v| v.name),
                expires_at,
            })
            .expect("a wire type serializes"))
        },
    )
    .await
    .map(Json)
}

pub async fn revoke(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    let not_found =
        || ApiError::from_tool(ToolError::with_message(ErrorCode::NotFound, "no such token").echo("id", &id));
    let token = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
    let services = &state.dispatcher.services;
    let operation = format!("admin_token_revoke {token}");
    crate::idempotent::keyed(&state, &caller, &headers, &operation, Value::Null, |_| async {
        let mut tx = services.store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
        tx.revoke_token(token).await.map_err(|e| match e {
            StoreError::NotFound(_) => not_found(),
            other => ApiError::from_store(&other),
        })?;
        tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
        crate::auth_cache::announce_revoked(&services.kv, caller.tenant_id).await;
        Ok(serde_json::to_value(RevokedToken { id: token, revoked: true }).expect("a wire type serializes"))
    })
    .await
    .map(Json)
}
