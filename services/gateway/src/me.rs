//! Member self-service under `/v1/me` (any credential, no admin scope): a person sees and ends
//! what is theirs, and gets what to paste into their AI client.
//! - `GET /v1/me/vaults`: the vaults they can reach.
//! - `GET /v1/me/tokens`, `DELETE /v1/me/tokens/{id}`: their own API tokens.
//! - `GET /v1/me/grants`, `DELETE /v1/me/grants/{id}`: the OAuth grants they gave clients.
//! - `GET /v1/me/clients`: ready-to-paste configurations (Claude Code, Cursor, VS Code, Codex,
//!   a ChatGPT connector) for this server's MCP endpoint.
//!
//! Another person's token or grant answers as a missing one; revocations hold on every gateway
//! before the answer.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ApiError, AppState, Caller};

/// A vault the caller can reach.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MyVault {
    pub id: uuid::Uuid,
    pub name: String,
}

/// GET /v1/me/vaults
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MyVaults {
    pub vaults: Vec<MyVault>,
}

/// GET /v1/me/tokens: the caller's own API tokens, as an admin sees them.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MyTokens {
    pub tokens: Vec<crate::admin_tokens::AdminToken>,
}

/// One OAuth grant the caller gave a client.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MyGrant {
    pub id: uuid::Uuid,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    pub scopes: Vec<String>,
    pub resource: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: DateTime<Utc>,
}

/// GET /v1/me/grants (the live ones)
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MyGrants {
    pub grants: Vec<MyGrant>,
}

/// DELETE /v1/me/tokens/{id} and /v1/me/grants/{id}
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ended {
    pub id: uuid::Uuid,
    pub revoked: bool,
}

/// How to connect one client.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ClientSetup {
    pub client: String,
    /// Where it goes (a file, a command line, a settings page).
    #[serde(rename = "where")]
    pub place: String,
    /// What to paste or run.
    pub text: String,
}

/// GET /v1/me/clients
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MyClients {
    /// The MCP endpoint; clients sign in through the tenant's identity provider (OAuth).
    pub url: String,
    /// The vaults to name in tool calls.
    pub vaults: Vec<String>,
    pub clients: Vec<ClientSetup>,
}

fn store_err(e: StoreError) -> ApiError {
    ApiError::from_store(&e)
}

/// The vaults `caller` can reach: the bound one, else every live vault of the tenant.
async fn reachable(state: &AppState, caller: &Caller) -> Result<Vec<otc_store::Vault>, ApiError> {
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let vaults = match caller.vault_id {
        Some(id) => tx.vault(id).await.map_err(store_err)?.into_iter().collect(),
        None => tx.list_vaults().await.map_err(store_err)?,
    };
    tx.commit().await.map_err(store_err)?;
    Ok(vaults)
}

pub async fn vaults(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<MyVaults>, ApiError> {
    let vaults = reachable(&state, &caller).await?;
    Ok(Json(MyVaults { vaults: vaults.into_iter().map(|v| MyVault { id: v.id, name: v.name }).collect() }))
}

pub async fn tokens(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<MyTokens>, ApiError> {
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let tokens = tx.tokens_of(caller.principal_id).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    let tokens = tokens.into_iter().map(crate::admin_tokens::AdminToken::from).collect();
    Ok(Json(MyTokens { tokens }))
}

fn missing(what: &str, id: &str) -> ApiError {
    ApiError::from_tool(ToolError::with_message(ErrorCode::NotFound, format!("no such {what} of yours")).echo("id", id))
}

pub async fn revoke_token(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Ended>, ApiError> {
    let token = uuid::Uuid::try_parse(&id).map_err(|_| missing("token", &id))?;
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    tx.revoke_token_of(token, caller.principal_id).await.map_err(|e| match e {
        StoreError::NotFound(_) => missing("token", &id),
        other => store_err(other),
    })?;
    tx.commit().await.map_err(store_err)?;
    crate::auth_cache::announce_revoked(&state.kv, caller.tenant_id).await;
    Ok(Json(Ended { id: token, revoked: true }))
}

pub async fn grants(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<MyGrants>, ApiError> {
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let grants = tx.grants(Some(caller.principal_id), false).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    let grants = grants
        .into_iter()
        .map(|g| MyGrant {
            id: g.id,
            client_id: g.client_id,
            client_name: g.client_name,
            scopes: g.scopes,
            resource: g.resource,
            created_at: g.created_at,
            last_used_at: g.last_used_at,
        })
        .collect();
    Ok(Json(MyGrants { grants }))
}

pub async fn revoke_grant(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Ended>, ApiError> {
    let grant = uuid::Uuid::try_parse(&id).map_err(|_| missing("grant", &id))?;
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let found = tx.grant(grant).await.map_err(store_err)?;
    if found.is_none_or(|g| g.principal_id != caller.principal_id) {
        return Err(missing("grant", &id));
    }
    let revoked = tx.revoke_grant(grant, "revoked by its person").await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    crate::auth_cache::announce_revoked(&state.kv, caller.tenant_id).await;
    Ok(Json(Ended { id: grant, revoked }))
}

pub async fn clients(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Result<Json<MyClients>, ApiError> {
    let vaults = reachable(&state, &caller).await?;
    let url = format!("{}/mcp", crate::oauth::base_url(&state.oauth, &headers).trim_end_matches('/'));
    let setup =
        |client: &str, place: &str, text: String| ClientSetup { client: client.into(), place: place.into(), text };
    let json = |value: serde_json::Value| serde_json::to_string_pretty(&value).expect("JSON serializes");
    let clients = vec![
        setup("Claude Code", "a terminal", format!("claude mcp add --transport http obsidian-tc {url}")),
        setup("Cursor", "~/.cursor/mcp.json", json(serde_json::json!({"mcpServers": {"obsidian-tc": {"url": url}}}))),
        setup(
            "VS Code",
            ".vscode/mcp.json",
            json(serde_json::json!({"servers": {"obsidian-tc": {"type": "http", "url": url}}})),
        ),
        setup("Codex", "~/.codex/config.toml", format!("[mcp_servers.obsidian-tc]\nurl = \"{url}\"\n")),
        setup("ChatGPT", "Settings → Connectors → Create (MCP server URL, OAuth)", url.clone()),
    ];
    Ok(Json(MyClients { url, vaults: vaults.into_iter().map(|v| v.name).collect(), clients }))
}
