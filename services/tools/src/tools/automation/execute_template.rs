use std::collections::BTreeMap;

use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::workspace::periodic;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool};

pub struct ExecuteTemplate;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// A name from list_templates or a vault path.
    pub template: String,
    pub target: String,
    /// {"project": "Apollo"} fills {{project}}.
    #[serde(default)]
    pub args: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub overwrite: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// The template note used.
    pub template: String,
    /// False when an existing note was replaced.
    pub created: bool,
    /// Variables nothing filled in (left as written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_variables: Vec<String>,
    pub size: i64,
    pub content_hash: String,
}

impl Tool for ExecuteTemplate {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:templater"],
        scope_class: ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: "a write acknowledgement: the path, the template and the hash" },
        core: false,
        ..ToolSpec::base(
            "execute_template",
            "Write a note from a template",
            "Writes a note from a template, filling {{title}}, {{date}}, {{time}}, {{date:FORMAT}} and args.",
            Domain::Automation,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let target = if input.target.to_lowercase().ends_with(".md") {
            input.target.clone()
        } else {
            format!("{}.md", input.target)
        };
        writing::check_write(&view, &target, "target")?;
        let now = writing::current(ctx, view.vault.id, &target).await?;
        let overwrite = input.overwrite.unwrap_or(false);
        match &now {
            None => writing::check_new_name(ctx, &view, &target, "target").await?,
            Some(_) if !overwrite => {
                return Err(ToolError::with_message(
                    ErrorCode::NoteExists,
                    "a note already exists at target; send overwrite: true to replace it",
                )
                .detail("path", target));
            }
            Some(entry) => {
                view.readable_path(&target)?;
                writing::confirm(ctx, entry.size > 0, "it replaces the whole note").await?;
            }
        }
        let settings = periodic::template_settings(ctx, &view).await?;
        let (template, text) =
            periodic::find_template(ctx, &view, settings.folder.as_deref(), &input.template, "template").await?;
        let at = chrono::Utc::now().naive_utc();
        let args = input.args.unwrap_or_default();
        let (text, unknown) = periodic::fill_template(ctx.tool, &text, &target, at, &settings, &args, true)?;
        let edited = writing::edit_note(ctx, &view, &target, None, None, |current, _| match current {
            Some(_) if !overwrite => Err(ToolError::with_message(
                ErrorCode::NoteExists,
                "a note already exists at target; send overwrite: true to replace it",
            )
            .detail("path", target.clone())),
            current => Ok(Planned { text: text.clone(), extra: current.is_none(), trash_old: current.is_some() }),
        })
        .await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: target,
            template,
            created: edited.extra,
            unknown_variables: unknown,
            size: edited.size,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
