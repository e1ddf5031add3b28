//! list_contradictions: the open contradiction findings touching given notes.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::work;
use otc_kernel::{CallContext, Tool};

pub struct ListContradictions;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[schemars(length(min = 1, max = 100))]
    pub paths: Vec<String>,
    #[serde(default)]
    pub include_resolved: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Newest first.
    pub contradictions: Vec<Finding>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Finding {
    pub id: String,
    pub path_a: String,
    pub path_b: String,
    /// What each note says.
    pub statement_a: String,
    pub statement_b: String,
    /// Why they contradict.
    pub rationale: String,
    /// open or resolved.
    pub status: String,
    pub detected_at: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
}

impl Tool for ListContradictions {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: "the rationale is the product" },
        ..ToolSpec::base(
            "list_contradictions",
            "List contradictions",
            "Lists open contradiction findings touching the given notes (found by a configured model): what each \
             side says and why they conflict.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        if input.paths.is_empty() || input.paths.len() > 100 {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "paths holds 1 to 100 notes").detail("field", "paths")
            );
        }
        let view = ctx.view(&input.vault).await?;
        let mut paths = Vec::new();
        for p in &input.paths {
            view.readable_path(p).map_err(|e| e.detail("field", "paths"))?;
            paths.push(p.clone());
        }
        let store_err = work::store_err(ctx.tool);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
        let found = tx.contradictions(view.vault.id, &paths, input.include_resolved, 200).await.map_err(&store_err)?;
        tx.commit().await.map_err(&store_err)?;
        Ok(Output {
            vault: view.vault.name.clone(),
            // A finding quotes both notes: both must be readable.
            contradictions: found
                .into_iter()
                .filter(|c| view.can_read(&c.path_a) && view.can_read(&c.path_b))
                .map(|c| Finding {
                    id: c.id.to_string(),
                    path_a: c.path_a,
                    path_b: c.path_b,
                    statement_a: c.statement_a,
                    statement_b: c.statement_b,
                    rationale: c.rationale,
                    status: c.status,
                    detected_at: c.detected_at.to_rfc3339(),
                    model: c.model,
                    resolved_at: c.resolved_at.map(|t| t.to_rfc3339()),
                    resolution: c.resolution,
                })
                .collect(),
        })
    }
}
