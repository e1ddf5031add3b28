use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::workspace::periodic::{self, PeriodArg};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool};

pub struct FindOrCreatePeriodicNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub period: PeriodArg,
    /// YYYY-MM-DD in the period (default today, UTC).
    #[serde(default)]
    pub date: Option<String>,
    #[serde(default)]
    pub include_content: Option<bool>,
    /// Fill in template variables (default true).
    #[serde(default)]
    pub expand_template: Option<bool>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub date: String,
    pub path: String,
    /// True when this call created the note.
    pub created: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    pub content_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<PeriodArg>,
    /// The template a created note started from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

impl Tool for FindOrCreatePeriodicNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:periodic", "write:periodic"],
        scope_class: ScopeClass::Write,
        response_format: Format::Takes,
        core: false,
        ..ToolSpec::base(
            "find_or_create_periodic_note",
            "Open or create a periodic note",
            "Returns the daily, weekly or other periodic note for a date, created from its template if missing.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let resolved = periodic::resolve(ctx, &view, input.period, input.date.as_deref()).await?;
        view.readable_path(&resolved.path)?;
        let ensured = periodic::ensure(ctx, &view, &resolved, None, input.expand_template.unwrap_or(true), |text| {
            Ok(text.to_string())
        })
        .await?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        Ok(Output {
            vault: view.vault.name.clone(),
            date: resolved.date.to_string(),
            path: resolved.path,
            created: ensured.started.is_some(),
            content: input.include_content.unwrap_or(true).then_some(ensured.text),
            content_hash: hex::encode(ensured.content_hash),
            period: detailed.then_some(input.period),
            template: if detailed { ensured.started.and_then(|s| s.template) } else { None },
        })
    }
}
