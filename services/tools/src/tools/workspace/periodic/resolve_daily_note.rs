use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::workspace::periodic::{self, PeriodArg};
use otc_kernel::{CallContext, Tool, writing};

pub struct ResolveDailyNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// YYYY-MM-DD (default today, UTC).
    #[serde(default)]
    pub date: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub date: String,
    /// Where the vault's Daily notes settings (or Obsidian's defaults) put the day's note.
    pub path: String,
    pub exists: bool,
}

impl Tool for ResolveDailyNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:daily-notes"],
        response_format: Format::Fixed { why: "a date, a path and whether it exists" },
        core: false,
        ..ToolSpec::base(
            "resolve_daily_note",
            "Where a daily note lives",
            "Gives the daily note's path for a date (per the Daily notes settings) and whether it exists.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let resolved = periodic::resolve(ctx, &view, PeriodArg::Daily, input.date.as_deref()).await?;
        view.readable_path(&resolved.path)?;
        let exists = writing::current(ctx, view.vault.id, &resolved.path).await?.is_some();
        Ok(Output { vault: view.vault.name.clone(), date: resolved.date.to_string(), path: resolved.path, exists })
    }
}
