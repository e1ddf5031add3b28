use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::workspace::periodic::{self, PeriodArg};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool, writing};

pub struct GetPeriodicNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub period: PeriodArg,
    /// YYYY-MM-DD, a day in the period (default today, UTC).
    #[serde(default)]
    pub date: Option<String>,
    /// Default true.
    #[serde(default)]
    pub include_content: Option<bool>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// The first day of the period.
    pub date: String,
    /// Where the vault's settings put the note.
    pub path: String,
    pub exists: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The expected hash for your next write, when the note exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<PeriodArg>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Map<String, Value>>,
}

impl Tool for GetPeriodicNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:periodic"],
        response_format: Format::Takes,
        core: false,
        ..ToolSpec::base(
            "get_periodic_note",
            "Read a periodic note",
            "Reads the daily, weekly, monthly, quarterly or yearly note for a date (per the vault's Daily notes \
             or Periodic Notes settings); creates nothing.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let resolved = periodic::resolve(ctx, &view, input.period, input.date.as_deref()).await?;
        view.readable_path(&resolved.path)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let now = writing::current_text(ctx, view.vault.id, &resolved.path).await?;
        let include = input.include_content.unwrap_or(true);
        let frontmatter = match (&now, detailed && include) {
            (Some((_, text)), true) => otc_kernel::reading::frontmatter_map(text),
            _ => None,
        };
        Ok(Output {
            vault: view.vault.name.clone(),
            date: resolved.date.to_string(),
            path: resolved.path,
            exists: now.is_some(),
            content_hash: now.as_ref().map(|(e, _)| hex::encode(e.hash)),
            content: now.filter(|_| include).map(|(_, text)| text),
            period: detailed.then_some(input.period),
            frontmatter,
        })
    }
}
