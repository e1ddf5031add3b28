//! gap_report: the gap detector's latest findings.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::knowledge::work;
use otc_kernel::format::{ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool};

pub struct GapReport;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Only poorly answered queries.
    #[serde(default)]
    pub gaps_only: bool,
    /// Default 20.
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Latest first.
    pub queries: Vec<GapOut>,
    pub total_queries: i64,
    pub total_gaps: i64,
    /// own (the queries you asked) or vault (everyone's, with admin:workspace).
    pub scope: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GapOut {
    pub id: String,
    pub query: String,
    /// The best direct hit's score: cosine similarity with an embedding provider, else BM25.
    pub top_score: Option<f64>,
    /// No chunk answered it directly, or only weakly by meaning.
    pub gap: bool,
    /// Detailed only: the notes that answered it, or the nearest ones to a gap (those you can
    /// read), how often it was asked and when last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nearest: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_at: Option<String>,
}

impl Tool for GapReport {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Scan),
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "gap_report",
            "Report knowledge gaps",
            "Knowledge gaps: your queries to vault_graph_search, vault_context and knowledge_search (everyone's with \
             admin:workspace), with top score and whether the vault answers them poorly.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let detailed = work::detailed(ctx, input.response_format, input.verbosity);
        let limit = otc_kernel::reading::bounded(input.limit, 20, 1..=200, "limit")?;
        let view = ctx.view(&input.vault).await?;
        let store_err = work::store_err(ctx.tool);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
        let everyone = ctx.caller.scopes.iter().any(|s| s.grants(work::ANY_CALLER_SCOPE));
        let whose = (!everyone).then_some(ctx.caller.principal_id);
        let gaps = tx.gaps(view.vault.id, whose, input.gaps_only, limit as i64).await.map_err(&store_err)?;
        let (total_queries, total_gaps) = tx.gap_totals(view.vault.id, whose).await.map_err(&store_err)?;
        tx.commit().await.map_err(&store_err)?;
        let readable = |v: &Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter(|p| view.can_read(p))
                .map(str::to_string)
                .collect()
        };
        Ok(Output {
            vault: view.vault.name.clone(),
            queries: gaps
                .into_iter()
                .map(|g| GapOut {
                    id: g.id.to_string(),
                    top_score: g.top_score.map(|s| (s * 1000.0).round() / 1000.0),
                    gap: g.gap,
                    results: detailed.then(|| readable(&g.results)),
                    nearest: detailed.then(|| readable(&g.nearest)),
                    runs: detailed.then_some(g.runs),
                    last_at: detailed.then(|| g.last_at.to_rfc3339()),
                    query: g.query,
                })
                .collect(),
            total_queries,
            total_gaps,
            scope: if everyone { "vault" } else { "own" }.into(),
        })
    }
}
