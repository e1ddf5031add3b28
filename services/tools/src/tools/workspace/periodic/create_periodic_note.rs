use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::workspace::periodic::{self, PeriodArg};
use otc_kernel::{CallContext, Tool, writing};

pub struct CreatePeriodicNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub period: PeriodArg,
    /// YYYY-MM-DD in the period (default today, UTC).
    #[serde(default)]
    pub date: Option<String>,
    /// A template path or name.
    #[serde(default)]
    pub template_override: Option<String>,
    /// Fill in {{date}} and other variables (default true).
    #[serde(default)]
    pub expand_template: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub date: String,
    pub path: String,
    /// The template the note started from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    pub template_expanded: bool,
    /// Template variables nothing filled in (left as written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_variables: Vec<String>,
    pub size: i64,
    pub content_hash: String,
}

impl Tool for CreatePeriodicNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:periodic"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the path, the template used and the hash" },
        core: false,
        ..ToolSpec::base(
            "create_periodic_note",
            "Create a periodic note",
            "Creates the daily, weekly, monthly, quarterly or yearly note for a date from its template; refused \
             if it exists.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let resolved = periodic::resolve(ctx, &view, input.period, input.date.as_deref()).await?;
        view.readable_path(&resolved.path)?;
        let exists = || {
            ToolError::with_message(
                ErrorCode::NoteExists,
                "the period's note already exists; find_or_create_periodic_note reads it and append_to_periodic_note \
                 adds to it",
            )
            .detail("path", resolved.path.clone())
        };
        if writing::current(ctx, view.vault.id, &resolved.path).await?.is_some() {
            return Err(exists());
        }
        let ensured = periodic::ensure(
            ctx,
            &view,
            &resolved,
            input.template_override.as_deref(),
            input.expand_template.unwrap_or(true),
            |text| Ok(text.to_string()),
        )
        .await?;
        // Another writer made it between the look and the write: this call created nothing.
        let started = ensured.started.ok_or_else(exists)?;
        Ok(Output {
            vault: view.vault.name.clone(),
            date: resolved.date.to_string(),
            path: resolved.path,
            template: started.template,
            template_expanded: started.expanded,
            unknown_variables: started.unknown,
            size: ensured.size,
            content_hash: hex::encode(ensured.content_hash),
        })
    }
}
