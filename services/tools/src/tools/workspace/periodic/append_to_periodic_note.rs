use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::notes::append_note::append_end;
use crate::tools::workspace::periodic::{self, PeriodArg};
use otc_kernel::{CallContext, Tool};

pub struct AppendToPeriodicNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub period: PeriodArg,
    /// YYYY-MM-DD in the period (default today, UTC).
    #[serde(default)]
    pub date: Option<String>,
    pub content: String,
    #[serde(default)]
    pub ensure_newline: Option<bool>,
    /// Append under it (created if missing).
    #[serde(default)]
    pub heading: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub date: String,
    pub path: String,
    /// True when the note did not exist and was created from its template first.
    pub created: bool,
    /// Whether a created note's template had its variables filled in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_expanded: Option<bool>,
    pub bytes_appended: usize,
    pub content_hash: String,
}

impl Tool for AppendToPeriodicNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:periodic"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the path, bytes appended and the hash" },
        core: false,
        ..ToolSpec::base(
            "append_to_periodic_note",
            "Append to a periodic note",
            "Appends to the periodic note (daily to yearly) for a date, created from its template if missing.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let resolved = periodic::resolve(ctx, &view, input.period, input.date.as_deref()).await?;
        view.readable_path(&resolved.path)?;
        let ensure_newline = input.ensure_newline.unwrap_or(true);
        let content = input.content.as_str();
        let appended = std::sync::atomic::AtomicUsize::new(0);
        let ensured = periodic::ensure(ctx, &view, &resolved, None, true, |text| {
            let out = match input.heading.as_deref() {
                Some(heading) => {
                    let note = otc_kernel::memory::parse_note(text)?;
                    otc_edit::anchor::append_under_heading(text, &note, heading, None, content, true)?.0.text
                }
                None => append_end(text, content, ensure_newline),
            };
            appended.store(out.len().saturating_sub(text.len()), std::sync::atomic::Ordering::Relaxed);
            Ok(out)
        })
        .await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            date: resolved.date.to_string(),
            path: resolved.path,
            created: ensured.started.is_some(),
            template_expanded: ensured.started.as_ref().map(|s| s.expanded),
            bytes_appended: appended.into_inner(),
            content_hash: hex::encode(ensured.content_hash),
        })
    }
}
