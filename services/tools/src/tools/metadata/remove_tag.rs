use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_edit::frontmatter::normalize_tag;
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::metadata::add_tag::Location;
use otc_kernel::reading::not_found;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool};

pub struct RemoveTag;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// With or without #.
    pub tag: String,
    /// Default both.
    #[serde(default)]
    pub location: Option<Location>,
    /// The content_hash you read: refused if the note changed since.
    #[serde(default)]
    pub prev_hash: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub tag: String,
    /// Whether the tags property changed.
    pub removed_from_frontmatter: bool,
    /// Inline occurrences removed from the body.
    pub removed_from_body: usize,
    pub content_hash: String,
}

impl Tool for RemoveTag {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: where the tag was removed, the hash" },
        ..ToolSpec::base(
            "remove_tag",
            "Remove a tag",
            "Removes a tag from a note's tags property and its body's #tags; code, links and nested tags \
             (tag/child) are left alone.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let tag = normalize_tag(&input.tag)?;
        let view = ctx.view(&input.vault).await?;
        writing::check_write(&view, &input.path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let location = input.location.unwrap_or(Location::Both).edit();
        let edited = writing::edit_note(ctx, &view, &input.path, prev, None, |now, _| {
            let text = now.ok_or_else(|| not_found(&input.path))?;
            let edit = otc_edit::frontmatter::remove_tag(text, &tag, location)?;
            Ok(Planned { text: edit.text, extra: (edit.frontmatter_changed, edit.body_changed), trash_old: false })
        })
        .await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            tag,
            removed_from_frontmatter: edited.extra.0,
            removed_from_body: edited.extra.1,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
