//! The PLUR proxy: the plur_* tools forward to an external engram store (`[memory.plur]`) and
//! hand back its answer as it came. Each request names the caller's tenant (`X-OTC-Tenant`)
//! and principal (`X-OTC-Principal`), so a store shared by tenants can keep them apart; nothing
//! of a vault is sent. Without a configured store the tools answer plugin_unavailable.
//!
//! The store's routes: `GET /engrams/{id}`, `POST /recall` (`{query, k, scope}`),
//! `POST /recall/hybrid` (adds `bm25_weight`) and `POST /similarity` (adds `min_score`).

pub mod plur_get;
pub mod plur_recall;
pub mod plur_recall_hybrid;
pub mod plur_similarity_search;

use std::time::Duration;

use otc_errors::{ErrorCode, Hint, ToolError};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use otc_kernel::CallContext;

const UNCONFIGURED_HINTS: &[Hint] = &[
    Hint {
        text: "This server's own entity memory answers without PLUR: query_entity_graph and get_entity.",
        tools: &["query_entity_graph", "get_entity"],
    },
    Hint { text: "Ask an administrator to configure [memory.plur].", tools: &[] },
];

/// The largest answer read from the store.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

pub struct Plur {
    client: reqwest::Client,
    base: String,
    api_key: Option<String>,
}

impl Plur {
    /// The configured store, if `[memory.plur]` names one.
    pub fn from_config(config: &otc_config::PlurConfig) -> Result<Option<Plur>, reqwest::Error> {
        let Some(base) = &config.base_url else { return Ok(None) };
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Some(Plur {
            client,
            base: base.trim_end_matches('/').to_string(),
            api_key: config.api_key.as_ref().map(|k| k.expose().to_string()),
        }))
    }
}

/// The store's answer to `GET path` (body None) or `POST path` with `body`, for `tool`: its
/// JSON object as it came.
pub async fn forward(ctx: &CallContext<'_>, path: &str, body: Option<Value>) -> Result<Map<String, Value>, ToolError> {
    let tool = ctx.tool;
    let Some(plur) = ctx.services().features.get::<Plur>() else {
        return Err(ToolError::with_message(
            ErrorCode::PluginUnavailable,
            "no PLUR engram store is configured: set [memory.plur] base_url in the server configuration",
        )
        .detail("reason", "not_configured")
        .with_hints(UNCONFIGURED_HINTS));
    };
    let url = format!("{}{path}", plur.base);
    let mut request = match &body {
        Some(body) => plur.client.post(&url).json(body),
        None => plur.client.get(&url),
    };
    request = request
        .header("X-OTC-Tenant", ctx.caller.tenant_id.to_string())
        .header("X-OTC-Principal", ctx.caller.principal_id.to_string());
    if let Some(key) = &plur.api_key {
        request = request.bearer_auth(key);
    }
    let unreachable = |why: String| {
        tracing::warn!(tool, error = %why, "the PLUR store failed");
        ToolError::with_message(ErrorCode::PluginUnreachable, "the PLUR engram store did not answer")
            .detail("reason", "upstream_failed")
    };
    let response = request.send().await.map_err(|e| unreachable(otc_errors::error_chain(&e)))?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Err(ToolError::with_message(ErrorCode::NotFound, "the PLUR store has no such engram"));
    }
    if !status.is_success() {
        return Err(unreachable(format!("status {status}")));
    }
    let bytes = response.bytes().await.map_err(|e| unreachable(otc_errors::error_chain(&e)))?;
    if bytes.len() > MAX_ANSWER_BYTES {
        return Err(unreachable(format!("an answer of {} bytes", bytes.len())));
    }
    match serde_json::from_slice(&bytes).map_err(|e| unreachable(format!("an answer that is not JSON: {e}")))? {
        Value::Object(answer) => Ok(answer),
        // A bare list (or value) is kept under `items`.
        other => Ok(Map::from_iter([("items".to_string(), other)])),
    }
}

/// `query`, which must not be blank.
fn query(text: &str) -> Result<&str, ToolError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(ToolError::with_message(ErrorCode::InvalidInput, "query is empty").detail("field", "query"));
    }
    Ok(text)
}

/// `value` of `field`, which must lie in 0..=1.
fn unit(value: f64, field: &str) -> Result<f64, ToolError> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(ToolError::with_message(ErrorCode::InvalidInput, format!("{field} is between 0 and 1"))
            .detail("field", field))
    }
}

// What a recall answers (no doc comment: it would be advertised as the schema's description).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Recalled {
    /// The store's answer as it came.
    pub results: Map<String, Value>,
}

/// A recall from the store's `route` for `tool`: `query` (not blank), `k` (default 10, 1 to 100)
/// and `scope` sent with `extra`, a named share or floor that must lie in 0..=1.
pub async fn recall(
    ctx: &CallContext<'_>,
    route: &str,
    query: &str,
    k: Option<u32>,
    scope: Option<String>,
    extra: Option<(&str, f64)>,
) -> Result<Recalled, ToolError> {
    let query = self::query(query)?;
    let k = otc_kernel::reading::bounded(k, 10, 1..=100, "k")?;
    let mut body = serde_json::json!({"query": query, "k": k, "scope": scope});
    if let Some((field, value)) = extra {
        body[field] = serde_json::json!(unit(value, field)?);
    }
    Ok(Recalled { results: forward(ctx, route, Some(body)).await? })
}
