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
    llm: &TenantLlm,
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

/// What an admin (the operator's CLI, the tenant's admin API) sets of the tenant's chat
/// endpoint: what is left out stays as it was (a new endpoint needs `base_url` and `model`).
#[derive(Debug, Clone, Default)]
pub struct ChatSettings {
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// Sealed under the deployment's secret key; left out, the stored key is kept only while
    /// the base URL stays the same (a key is for its host).
    pub api_key: Option<String>,
    pub daily_cap: Option<i32>,
    pub prompt_cost_per_mtok: Option<f64>,
    pub completion_cost_per_mtok: Option<f64>,
}

/// Why settings were refused.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{field}: {message}")]
    Invalid { field: &'static str, message: String },
    #[error(transparent)]
    Store(#[from] otc_store::StoreError),
}

/// What [`configure`] stored, and whether it dropped the stored key (a new host, no new key).
pub struct Configured {
    pub llm: TenantLlm,
    pub key_dropped: bool,
}

pub use otc_store::TenantLlm;

/// Checks `settings` and stores them as `tenant`'s chat endpoint. The server posts prompts and
/// the tenant's key there: a public https address, or one the deployment exempts
/// (`oauth.private_hosts`), as for identity providers.
pub async fn configure(
    store: &otc_store::Store,
    config: &otc_config::Config,
    sealer: Option<&otc_auth::seal::Sealer>,
    tenant: Uuid,
    settings: ChatSettings,
) -> Result<Configured, SettingsError> {
    let invalid = |field, message: &str| SettingsError::Invalid { field, message: message.to_string() };
    let mut tx = store.begin(tenant).await?;
    let current = tx.tenant_llm().await?;
    let same_host = settings.base_url.as_ref().is_none_or(|b| current.as_ref().is_some_and(|c| c.base_url == *b));
    let (base_url, model) = match (settings.base_url, settings.model, &current) {
        (Some(b), Some(m), _) => (b, m),
        (None, m, Some(c)) => (c.base_url.clone(), m.unwrap_or_else(|| c.model.clone())),
        (Some(b), None, Some(c)) => (b, c.model.clone()),
        _ => return Err(invalid("base_url", "the tenant has no chat endpoint yet: give base_url and model")),
    };
    check_base_url(config, &base_url).map_err(|e| invalid("base_url", &e))?;
    if model.trim().is_empty() || model.len() > 200 || model.chars().any(char::is_control) {
        return Err(invalid("model", "1 to 200 printable characters"));
    }
    let sealed_api_key = match settings.api_key {
        Some(key) => {
            if key.is_empty() || key.len() > 4096 {
                return Err(invalid("api_key", "1 to 4096 bytes"));
            }
            let sealer = sealer.ok_or_else(|| {
                invalid("api_key", "this server has no secret key (oauth.secret_key) to keep a key with")
            })?;
            Some(sealer.seal(key.as_bytes(), &key_aad(tenant)))
        }
        None if same_host => current.as_ref().and_then(|c| c.sealed_api_key.clone()),
        None => None,
    };
    let key_dropped =
        !same_host && sealed_api_key.is_none() && current.as_ref().is_some_and(|c| c.sealed_api_key.is_some());
    let daily_cap = settings.daily_cap.or(current.as_ref().map(|c| c.daily_cap)).unwrap_or(200);
    if !(0..=1_000_000).contains(&daily_cap) {
        return Err(invalid("daily_cap", "0 to 1000000 calls a day"));
    }
    let cost = |given: Option<f64>, kept: Option<f64>, field| match given.or(kept).unwrap_or(0.0) {
        c if c.is_finite() && (0.0..=1_000_000.0).contains(&c) => Ok(c),
        _ => Err(invalid(field, "US dollars per million tokens, 0 or more")),
    };
    let llm = TenantLlm {
        base_url,
        model,
        sealed_api_key,
        daily_cap,
        prompt_cost_per_mtok: cost(
            settings.prompt_cost_per_mtok,
            current.as_ref().map(|c| c.prompt_cost_per_mtok),
            "prompt_cost_per_mtok",
        )?,
        completion_cost_per_mtok: cost(
            settings.completion_cost_per_mtok,
            current.as_ref().map(|c| c.completion_cost_per_mtok),
            "completion_cost_per_mtok",
        )?,
    };
    tx.set_tenant_llm(&llm).await?;
    tx.commit().await?;
    Ok(Configured { llm, key_dropped })
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
