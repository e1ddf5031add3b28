//! obsidian_append_to_note: appends to a note, creating it when missing (an upsert), or appends
//! under one heading, block or frontmatter field of an existing note.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{ContentType, Section, SectionOp, Target, call, edit_existing, edit_section, resolve_target};
use crate::{CallContext, Tool};

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

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub path: String,
    pub section_targeted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_target: Option<String>,
    /// True when the note did not exist and the call created it.
    pub created: bool,
    pub previous_size_in_bytes: i64,
    pub current_size_in_bytes: i64,
}

impl Tool for ObsidianAppendToNote {
    type Input = Input;
    type Output = Output;
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

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let name = Self::SPEC.name;
        let path = resolve_target(ctx, name, &input.vault, &input.target).await?;
        let kind = input.content_type.unwrap_or_default();
        if let Some(section) = &input.section {
            let create = input.create_target_if_missing.unwrap_or(false);
            let edit = edit_existing(ctx, name, "patch_note", &input.vault, &path, |text| {
                edit_section(text, section, SectionOp::Append, &input.content, kind, create, true)
            })
            .await?;
            return Ok(Output {
                path: edit.path,
                section_targeted: true,
                section_target: Some(edit.extra),
                created: false,
                previous_size_in_bytes: edit.previous_size,
                current_size_in_bytes: edit.current_size,
            });
        }
        let args = json!({
            "vault": input.vault, "path": path, "content": input.content, "ensure_newline": true,
            "response_format": "detailed",
        });
        let out = call(ctx, "append_note", args).await?;
        Ok(Output {
            path: out["path"].as_str().unwrap_or(&path).to_string(),
            section_targeted: false,
            section_target: None,
            created: out["created"].as_bool().unwrap_or(false),
            previous_size_in_bytes: out["previous_size"].as_i64().unwrap_or(0),
            current_size_in_bytes: out["current_size"].as_i64().unwrap_or(0),
        })
    }
}
