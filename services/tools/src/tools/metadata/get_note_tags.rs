use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::not_found;
use otc_kernel::{CallContext, Tool};

pub struct GetNoteTags;

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
    /// Every tag once (case-insensitively), without #, frontmatter first.
    pub all: Vec<String>,
    /// Detailed only: the tags of the frontmatter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Vec<String>>,
    /// Detailed only: the inline #tags, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inline: Option<Vec<String>>,
}

impl Tool for GetNoteTags {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "get_note_tags",
            "Tags of a note",
            "Lists a note's tags, frontmatter and inline #tags.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        let mut tx = ctx.begin().await?;
        let meta = tx.note_meta(view.vault.id, &input.path, view.readable()).await?;
        let meta = meta.ok_or_else(|| not_found(&input.path))?;
        let tags = tx.note_tag_list(view.vault.id, &input.path).await?;
        tx.commit().await?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let of = |source: &str| tags.iter().filter(|(_, s)| s == source).map(|(t, _)| t.clone()).collect();
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            all: meta.tags,
            frontmatter: detailed.then(|| of("frontmatter")),
            inline: detailed.then(|| of("inline")),
        })
    }
}
