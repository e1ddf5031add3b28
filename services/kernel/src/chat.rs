//! The model-backed tools' chat: each tenant's own OpenAI-compatible `/chat/completions`
//! endpoint (`obsidian-tc tenant llm`), its key sealed under the deployment's secret key. Every
//! call is counted against the tenant's daily cap before it is sent (a failed one too, in
//! Postgres, so the cap holds across gateways and workers), and what it used (tokens, dollars)
//! is recorded per day and purpose. Text inside notes is material, never instructions: the
//! system prompt says so, and the caller sends only what the asker may read.

use std::time::Duration;

use chrono::Utc;
use otc_errors::{ErrorCode, Hint, ToolError};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::{CallContext, Services};

/// The largest answer read.
const MAX_ANSWER_BYTES: usize = 512 * 1024;

/// What a model answered.
#[derive(Debug, Clone)]
pub struct Reply {
    pub text: String,
    pub model: String,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost_usd: f64,
}

/// Why there is no answer.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("the tenant has no chat endpoint")]
    NotConfigured,
    #[error("the tenant's daily model calls are spent ({0})")]
    OverCap(i32),
    #[error("the endpoint's key does not open: {0}")]
    Key(String),
    #[error("the chat endpoint failed: {0}")]
    Endpoint(String),
    #[error("the chat endpoint answered without a message")]
    Unreadable,
    #[error("counting the call: {0}")]
    Store(#[from] otc_store::StoreError),
}

/// The sealed key's binding to its tenant.
pub fn key_aad(tenant: Uuid) -> String {
    format!("tenant_llm:{tenant}")
}

const NOT_CONFIGURED_HINTS: &[Hint] = &[
    Hint {
        text: "vault_context and vault_graph_search gather the same sources without a model.",
        tools: &["vault_context"],
    },
    Hint { text: "Ask an administrator to configure a model: obsidian-tc tenant llm.", tools: &[] },
];

/// `system` and `user` sent for `purpose` on behalf of the caller's tenant, as a tool's answer.
pub async fn complete(
    ctx: &CallContext<'_>,
    purpose: &str,
    system: &str,
    user: &str,
    max_tokens: u32,
) -> Result<Reply, ToolError> {
    let tool = ctx.tool;
    complete_for(ctx.services(), ctx.caller.tenant_id, purpose, system, user, max_tokens).await.map_err(|e| match e {
        ChatError::NotConfigured => ToolError::with_message(
            ErrorCode::PluginUnavailable,
            format!("{tool} needs a chat model, and this organisation has none configured"),
        )
        .detail("reason", "llm_not_configured")
        .with_hints(NOT_CONFIGURED_HINTS),
        ChatError::OverCap(cap) => ToolError::with_message(
            ErrorCode::Throttled,
            format!("the organisation's {cap} model calls for today are spent"),
        )
        .detail("reason", "daily_cap")
        .detail("cap", cap),
        other => {
            tracing::warn!(tool, error = %otc_errors::error_chain(&other), "a model call failed");
            ToolError::with_message(ErrorCode::PluginUnreachable, "the organisation's chat model did not answer")
                .detail("reason", "llm_failed")
        }
    })
}

/// [`complete`] for `tenant`, for a worker as for a tool.
pub async fn complete_for(
    services: &Services,
    tenant: Uuid,
    purpose: &str,
    system: &str,
    user: &str,
    max_tokens: u32,
) -> Result<Reply, ChatError> {
    let day = Utc::now().date_naive();
    let mut tx = services.store.begin(tenant).await?;
    let Some(llm) = tx.tenant_llm().await? else {
        tx.commit().await?;
        return Err(ChatError::NotConfigured);
    };
    let counted = tx.count_llm_call(day, purpose, llm.daily_cap).await?;
    tx.commit().await?;
    if counted.is_none() {
        return Err(ChatError::OverCap(llm.daily_cap));
    }
    let outcome = send(services, tenant, &llm, system, user, max_tokens).await;
    let (prompt, completion, cost) = match &outcome {
        Ok(r) => (r.prompt_tokens, r.completion_tokens, r.cost_usd),
        Err(_) => (0, 0, 0.0),
    };
    let mut tx = services.store.begin(tenant).await?;
    tx.record_llm_usage(day, purpose, prompt, completion, cost, outcome.is_err()).await?;
    tx.commit().await?;
    outcome
}

async fn send(
    services: &Services,
    tenant: Uuid,
    llm: &otc_store::TenantLlm,
    system: &str,
    user: &str,
    max_tokens: u32,
) -> Result<Reply, ChatError> {
    let key = match &llm.sealed_api_key {
        Some(sealed) => {
            let sealer =
                services.sealer.as_ref().ok_or_else(|| ChatError::Key("oauth.secret_key is not set".into()))?;
            let plain = sealer.open(sealed, &key_aad(tenant)).map_err(|e| ChatError::Key(e.to_string()))?;
            Some(String::from_utf8(plain).map_err(|_| ChatError::Key("not text".into()))?)
        }
        None => None,
    };
    let url = chat_url(&llm.base_url).map_err(ChatError::Endpoint)?;
    // Checked on every call, not only when it was set: the deployment's exemptions may have
    // changed, and the resolver refuses a name that now points inside.
    services.chat.check(&url).map_err(|e| ChatError::Endpoint(e.to_string()))?;
    let client = services.chat.client();
    let body = json!({
        "model": llm.model,
        "temperature": 0,
        "max_tokens": max_tokens,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
    });
    let mut request = client.post(url).json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| ChatError::Endpoint(otc_egress::describe(&e).to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(ChatError::Endpoint(format!("status {status}")));
    }
    let bytes = response.bytes().await.map_err(|e| ChatError::Endpoint(otc_errors::error_chain(&e)))?;
    if bytes.len() > MAX_ANSWER_BYTES {
        return Err(ChatError::Endpoint(format!("an answer of {} bytes", bytes.len())));
    }
    let answer: Value = serde_json::from_slice(&bytes).map_err(|_| ChatError::Unreadable)?;
    let text = answer["choices"][0]["message"]["content"].as_str().ok_or(ChatError::Unreadable)?.to_string();
    let prompt_tokens = answer["usage"]["prompt_tokens"].as_i64().unwrap_or(0);
    let completion_tokens = answer["usage"]["completion_tokens"].as_i64().unwrap_or(0);
    let cost_usd = (prompt_tokens as f64 * llm.prompt_cost_per_mtok
        + completion_tokens as f64 * llm.completion_cost_per_mtok)
        / 1_000_000.0;
    Ok(Reply { text, model: llm.model.clone(), prompt_tokens, completion_tokens, cost_usd })
}

/// The client every tenant's chat endpoint is called with: one per process, so connections are
/// reused across calls (only the URL differs per tenant); no redirects, the configured timeout,
/// and only public addresses (or those `oauth.private_hosts` exempts), as for identity providers.
pub fn client(config: &otc_config::Config) -> otc_egress::Outbound {
    otc_egress::Outbound::new(
        config.oauth.private_hosts.clone(),
        Duration::from_millis(config.knowledge.llm_timeout_ms.max(1)),
    )
}

/// `<base_url>/chat/completions`, when the base URL is an absolute URL.
fn chat_url(base_url: &str) -> Result<url::Url, String> {
    url::Url::parse(&format!("{}/chat/completions", base_url.trim_end_matches('/')))
        .map_err(|_| "the base URL is not an absolute URL".to_string())
}

/// Whether a tenant may set `base_url` as its chat endpoint: https to a public host (or an
/// address `oauth.private_hosts` exempts), no credentials in it.
pub fn check_base_url(config: &otc_config::Config, base_url: &str) -> Result<(), String> {
    let url = chat_url(base_url)?;
    client(config).check(&url).map_err(|e| e.to_string())
}

/// The JSON object a model answered, found in its text (a fenced block or the first `{` to the
/// last `}`).
pub fn json_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    match serde_json::from_str(text.get(start..=end)?) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}
