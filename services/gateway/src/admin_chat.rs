//! `GET|PUT|DELETE /v1/admin/chat` (`admin:chat`, a credential bound to no one vault): the
//! tenant's own OpenAI-compatible chat endpoint for the model-backed tools (reflect,
//! knowledge_challenge, the contradiction detector), its key sealed under the deployment's
//! secret key and never shown again, and the last week's calls and costs. The operator's
//! `obsidian-tc tenant llm` sets the same (`otc_kernel::chat::configure`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use chrono::NaiveDate;
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::scopes::CHAT as SCOPE;
use crate::{ApiError, AppState, Caller};

/// The endpoint as the admin sees it (never its key).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChatEndpoint {
    /// The API base, before /chat/completions.
    pub base_url: String,
    pub model: String,
    pub has_api_key: bool,
    /// Model calls a day at most, over every purpose.
    pub daily_cap: i32,
    /// US dollars per million tokens, for the cost counters.
    pub prompt_cost_per_mtok: f64,
    pub completion_cost_per_mtok: f64,
}

/// One day's model calls of one purpose.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChatDay {
    pub day: NaiveDate,
    pub purpose: String,
    pub calls: i32,
    pub failed: i32,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost_usd: f64,
}

/// GET|PUT /v1/admin/chat
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Chat {
    /// None when the tenant has no endpoint (the model-backed tools answer plugin_unavailable).
    pub chat: Option<ChatEndpoint>,
    /// The last 7 days (UTC), newest first.
    pub usage: Vec<ChatDay>,
    /// Set when a new base URL dropped the stored key (give api_key for the new host).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub key_dropped: bool,
}

/// PUT /v1/admin/chat: what is left out stays as it was; a first endpoint needs base_url and
/// model.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatInput {
    /// https to a public host (or one the deployment exempts); no credentials in it.
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// Sent as a bearer token; kept sealed, never shown. Left out, the stored key stays while
    /// the base URL does.
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub daily_cap: Option<i32>,
    #[serde(default)]
    pub prompt_cost_per_mtok: Option<f64>,
    #[serde(default)]
    pub completion_cost_per_mtok: Option<f64>,
}

/// DELETE /v1/admin/chat
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChatRemoved {
    pub removed: bool,
}

fn tenant_admin(caller: &Caller) -> Result<(), ApiError> {
    crate::auth::tenant_admin(caller, SCOPE, "manage the tenant's chat endpoint")
}

fn store_err(e: otc_store::StoreError) -> ApiError {
    ApiError::from_store(&e)
}

/// The tenant's endpoint and its last week.
async fn current(state: &AppState, caller: &Caller, key_dropped: bool) -> Result<Chat, ApiError> {
    let mut tx = state.dispatcher.services.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let llm = tx.tenant_llm().await.map_err(store_err)?;
    let usage = tx.llm_usage(chrono::Utc::now().date_naive() - chrono::Days::new(6)).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    Ok(Chat {
        chat: llm.map(|l| ChatEndpoint {
            base_url: l.base_url,
            model: l.model,
            has_api_key: l.sealed_api_key.is_some(),
            daily_cap: l.daily_cap,
            prompt_cost_per_mtok: l.prompt_cost_per_mtok,
            completion_cost_per_mtok: l.completion_cost_per_mtok,
        }),
        usage: usage
            .into_iter()
            .map(|u| ChatDay {
                day: u.day,
                purpose: u.purpose,
                calls: u.calls,
                failed: u.failed,
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
                cost_usd: u.cost_usd,
            })
            .collect(),
        key_dropped,
    })
}

pub async fn get(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> Result<Json<Chat>, ApiError> {
    tenant_admin(&caller)?;
    Ok(Json(current(&state, &caller, false).await?))
}

pub async fn set(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    let input: ChatInput = serde_json::from_slice(&body)
        .map_err(|e| ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, format!("the body: {e}"))))?;
    // The key is in the fingerprint as its hash only, and never in a kept answer.
    let fingerprint = json!({
        "base_url": input.base_url, "model": input.model, "daily_cap": input.daily_cap,
        "prompt_cost_per_mtok": input.prompt_cost_per_mtok, "completion_cost_per_mtok": input.completion_cost_per_mtok,
        "api_key": input.api_key.as_deref().map(|k| hex::encode(<sha2::Sha256 as sha2::Digest>::digest(k))),
    });
    let services = &state.dispatcher.services;
    crate::idempotent::keyed(&state, &caller, &headers, "admin_chat_set", fingerprint, |_| async {
        let settings = otc_kernel::chat::ChatSettings {
            base_url: input.base_url,
            model: input.model,
            api_key: input.api_key,
            daily_cap: input.daily_cap,
            prompt_cost_per_mtok: input.prompt_cost_per_mtok,
            completion_cost_per_mtok: input.completion_cost_per_mtok,
        };
        let configured = otc_kernel::chat::configure(
            &services.store,
            &services.config,
            services.sealer.as_deref(),
            caller.tenant_id,
            settings,
        )
        .await
        .map_err(|e| match e {
            otc_kernel::chat::SettingsError::Invalid { field, message } => ApiError::from_tool(
                ToolError::with_message(ErrorCode::InvalidInput, format!("{field}: {message}")).detail("field", field),
            ),
            otc_kernel::chat::SettingsError::Store(e) => store_err(e),
        })?;
        Ok(serde_json::to_value(current(&state, &caller, configured.key_dropped).await?)
            .expect("a wire type serializes"))
    })
    .await
    .map(Json)
}

pub async fn remove(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<ChatRemoved>, ApiError> {
    tenant_admin(&caller)?;
    let mut tx = state.dispatcher.services.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let removed = tx.clear_tenant_llm().await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    if !removed {
        return Err(ApiError::from_tool(ToolError::with_message(
            ErrorCode::NotFound,
            "the tenant has no chat endpoint",
        )));
    }
    Ok(Json(ChatRemoved { removed }))
}
