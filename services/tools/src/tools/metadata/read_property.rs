use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::read_content;
use otc_kernel::{CallContext, Tool};

pub struct ReadProperty;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    pub key: String,
    /// Read key as a dotted path (meta.author.name).
    #[serde(default)]
    pub nested: Option<bool>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub found: bool,
    /// The value as JSON text (absent when not found).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nested: Option<bool>,
}

/// The value at `key` (a dotted path when `nested`).
pub fn lookup<'a>(frontmatter: &'a Value, key: &str, nested: bool) -> Option<&'a Value> {
    if !nested {
        return frontmatter.get(key);
    }
    key.split('.').try_fold(frontmatter, |v, part| v.get(part))
}

impl Tool for ReadProperty {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "read_property",
            "Read a property",
            "Reads one frontmatter property of a note.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let text = read_content(ctx, &view, &input.path).await?.text;
        let note = otc_parser::parse_head(&text);
        let nested = input.nested.unwrap_or(false);
        let value = note
            .frontmatter
            .as_ref()
            .and_then(|f| f.value.as_ref())
            .and_then(|fm| lookup(fm, &input.key, nested))
            .map(|v| v.to_string());
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            found: value.is_some(),
            value,
            key: detailed.then_some(input.key),
            nested: detailed.then_some(nested),
        })
    }
}
