use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_formats::bases;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::reading::{Content, read_content};
use otc_kernel::{CallContext, Tool};

pub struct ReadBase;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// The whole base as JSON: filters, formulas, properties, summaries, views.
    pub base: Map<String, Value>,
    /// Its views' names and types, in order.
    pub views: Vec<ViewInfo>,
    /// What query_base would refuse or Obsidian would flag (expressions that do not parse,
    /// views without a type ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// The expected hash for your next write (prev_hash).
    pub content_hash: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ViewInfo {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// A `.base` path argument.
pub fn check_base_path(path: &str) -> Result<(), ToolError> {
    otc_kernel::reading::check_extension(path, ".base", "a base is a .base file", "path")
}

impl Tool for ReadBase {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:bases"],
        response_format: Format::Fixed {
            why: "the parsed document is the payload; content_hash is the next write's token",
        },
        core: false,
        ..ToolSpec::base(
            "read_base",
            "Read a base",
            "Reads an Obsidian Bases file (.base): filters, formulas, properties, views and any problems.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        check_base_path(&input.path)?;
        let Content { text, content_hash, .. } = read_content(ctx, &view, &input.path).await?;
        let base = bases::parse(&text)?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            views: base.views.iter().map(|v| ViewInfo { name: v.name.clone(), kind: v.kind.clone() }).collect(),
            problems: bases::validate(&base),
            base: base.raw.as_object().cloned().unwrap_or_default(),
            content_hash,
        })
    }
}
