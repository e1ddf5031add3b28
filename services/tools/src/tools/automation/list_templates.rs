use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::workspace::periodic;
use otc_kernel::{CallContext, Tool};

pub struct ListTemplates;

/// The most templates one call lists.
const MAX_TEMPLATES: i64 = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// The templates folder the core Templates plugin's settings name (none: no folder is set,
    /// and templates are named by their path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    pub templates: Vec<Template>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Template {
    pub path: String,
    /// What execute_template's template argument may say: the name within the folder.
    pub name: String,
}

impl Tool for ListTemplates {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:templater"],
        response_format: Format::Fixed { why: "one {path, name} row per template: already minimal" },
        core: false,
        ..ToolSpec::base(
            "list_templates",
            "List templates",
            "Lists the notes in the vault's templates folder, for execute_template and periodic notes.",
            Domain::Automation,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let settings = periodic::template_settings(ctx, &view).await?;
        let Some(folder) = settings.folder else {
            return Ok(Output { vault: view.vault.name.clone(), folder: None, templates: Vec::new() });
        };
        let prefix = format!("{folder}/");
        let md = [".md".to_string()];
        let mut tx = ctx.begin().await?;
        let rows = tx.list_files(view.vault.id, &prefix, true, Some(&md), view.readable(), None, MAX_TEMPLATES).await?;
        tx.commit().await?;
        let templates = rows
            .into_iter()
            .map(|r| {
                let inner = r.path[prefix.len()..].to_string();
                Template { name: inner.strip_suffix(".md").unwrap_or(&inner).to_string(), path: r.path }
            })
            .collect();
        Ok(Output { vault: view.vault.name.clone(), folder: Some(folder), templates })
    }
}
