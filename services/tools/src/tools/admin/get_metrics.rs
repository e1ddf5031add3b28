use std::time::Duration;

use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use otc_store::ActionMetrics;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool, caller_vault};

pub struct GetMetrics;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Only calls to this vault.
    #[serde(default)]
    pub vault: Option<String>,
    /// Minutes back (default 60).
    #[serde(default)]
    #[schemars(range(min = 1, max = 43200))]
    pub window_minutes: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub since: String,
    pub window_minutes: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vault: Option<String>,
    pub totals: Totals,
    /// Per tool (or /v1 route), busiest first: calls, errors, throttled calls, latency in ms.
    pub actions: Vec<Action>,
    /// Index and embedding jobs waiting now: queued, dead, and the lag in seconds.
    pub backlog: Vec<super::server_health::BacklogReport>,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Totals {
    pub calls: i64,
    pub errors: i64,
    pub throttled: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Action {
    pub action: String,
    pub calls: i64,
    pub errors: i64,
    pub throttled: i64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl From<ActionMetrics> for Action {
    fn from(m: ActionMetrics) -> Self {
        Self {
            action: m.action,
            calls: m.calls,
            errors: m.errors,
            throttled: m.throttled,
            p50_ms: m.p50_ms,
            p95_ms: m.p95_ms,
            p99_ms: m.p99_ms,
            max_ms: m.max_ms,
        }
    }
}

impl Tool for GetMetrics {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["admin:metrics"],
        scope_class: ScopeClass::Admin,
        response_format: Format::Fixed { why: "the metric rows are the payload" },
        ..ToolSpec::base(
            "get_metrics",
            "Get call metrics",
            "Your tenant's calls, errors, throttling and latency per tool and /v1 route over a recent window, \
             plus the index backlog.",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let services = ctx.services();
        // A caller bound to one vault sees that vault's calls only.
        let vault = match (&input.vault, ctx.caller.vault_id) {
            (Some(v), _) => Some(caller_vault(ctx, v).await?.name),
            (None, Some(bound)) => Some(caller_vault(ctx, &bound.to_string()).await?.name),
            (None, None) => None,
        };
        let window = input.window_minutes.unwrap_or(60);
        let since = chrono::Utc::now() - chrono::Duration::minutes(i64::from(window));
        // What this gateway has queued so far counts too.
        services.audit.flush(Duration::from_secs(2)).await;
        let mut tx = ctx.begin().await?;
        let rows = tx.audit_metrics(since, vault.as_deref()).await?;
        tx.commit().await?;
        let mut totals = Totals::default();
        for r in &rows {
            totals.calls += r.calls;
            totals.errors += r.errors;
            totals.throttled += r.throttled;
        }
        Ok(Output {
            since: since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            window_minutes: window,
            vault,
            totals,
            actions: rows.into_iter().map(Action::from).collect(),
            backlog: super::server_health::backlog(ctx).await,
        })
    }
}
