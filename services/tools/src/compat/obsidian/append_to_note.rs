//! obsidian_append_to_note: appends to a note, creating it when missing (an upsert), or appends
//! under one heading, block or frontmatter field of an existing note.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{ContentType, Section, SectionOp, Target, Written, call, edit_existing, edit_section, resolve_target};
use otc_kernel::{CallContext, Tool};

pub struct ObsidianAppendToNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    pub target: Target,
    pub content: String,
    /// Append under this heading, block or frontmatter field (the note must exist). A block's
    /// line is joined to content with no separator: start content with a newline for one.
    #[serde(default)]
    pub section: Option<Section>,
    /// json: content is a JSON literal (a typed frontmatter value).
    #[serde(default, rename = "contentType")]
    pub content_type: Option<ContentType>,
    /// With section: create the heading or field when the note lacks it.
    #[serde(default, rename = "createTargetIfMissing")]
    pub create_target_if_missing: Option<bool>,
}

impl Tool for ObsidianAppendToNote {
    type Input = Input;
    type Output = Written;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_append_to_note",
            "Append to an Obsidian note",
            "Appends content to a note, creating the note when it does not exist (created: true says so). With \
             section, appends under a heading, block or frontmatter field of an existing note (content already there \
             is refused as content_preexists); createTargetIfMissing adds the heading or field. Reports the size \
             before and after.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Written, ToolError> {
        let path = resolve_target(ctx, &input.vault, &input.target).await?;
        let kind = input.content_type.unwrap_or_default();
        if let Some(section) = &input.section {
            let create = input.create_target_if_missing.unwrap_or(false);
            let edit = edit_existing(ctx, "patch_note", &input.vault, &path, |text| {
                edit_section(text, section, SectionOp::Append, &input.content, kind, create, true)
            })
            .await?;
            return Ok(Written::section(edit));
        }
        let args = json!({
            "vault": input.vault, "path": path, "content": input.content, "ensure_newline": true,
            "response_format": "detailed",
        });
        let out = call(ctx, "append_note", args).await?;
        Ok(Written::whole(&out, &path, 0))
    }
}
