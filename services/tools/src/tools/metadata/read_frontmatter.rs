use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{Content, read_content};
use otc_kernel::{CallContext, Tool};

pub struct ReadFrontmatter;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// The properties (absent when the note has none or they do not parse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Map<String, Value>>,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_frontmatter: Option<bool>,
    /// Why the frontmatter does not parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter_error: Option<String>,
    pub content_hash: String,
}

impl Tool for ReadFrontmatter {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "read_frontmatter",
            "Read frontmatter",
            "Reads a note's frontmatter (YAML properties) as JSON, with its content_hash.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let Content { text, content_hash, .. } = read_content(ctx, &view, &input.path).await?;
        let note = otc_parser::parse_head(&text);
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let frontmatter = match note.frontmatter.as_ref().and_then(|f| f.value.clone()) {
            Some(Value::Object(map)) => Some(map),
            _ => None,
        };
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            has_frontmatter: detailed.then_some(frontmatter.is_some()),
            frontmatter,
            frontmatter_error: note.frontmatter.and_then(|f| f.error),
            content_hash,
        })
    }
}
