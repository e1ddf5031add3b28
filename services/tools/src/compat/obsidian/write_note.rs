//! obsidian_write_note: creates a note (refusing to clobber one unless overwrite), or replaces
//! one heading, block or frontmatter field of an existing note.

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{ContentType, Section, SectionOp, Target, Written, call, edit_existing, edit_section, resolve_target};
use otc_kernel::{CallContext, Tool};

pub struct ObsidianWriteNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    pub target: Target,
    /// The whole note, or with section the section's new body.
    pub content: String,
    /// Replace only this heading's body, block or frontmatter field.
    #[serde(default)]
    pub section: Option<Section>,
    /// json: content is a JSON literal (a typed frontmatter value).
    #[serde(default, rename = "contentType")]
    pub content_type: Option<ContentType>,
    /// Without section: replace an existing note whole (it is refused otherwise).
    #[serde(default)]
    pub overwrite: Option<bool>,
    /// When the server asks a person to confirm and your client cannot show the question: the
    /// token they minted for the details the refusal gave.
    #[serde(default)]
    pub elicit_token: Option<String>,
}

impl Tool for ObsidianWriteNote {
    type Input = Input;
    type Output = Written;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_write_note",
            "Write an Obsidian note",
            "Creates a note, refusing to clobber an existing one (file_exists) unless overwrite: true (a person \
             confirms; the old text goes to the trash). With section, replaces one heading's body, block or \
             frontmatter field and leaves the rest of the note as it was. Reports created and the size before and \
             after.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Written, ToolError> {
        let path = resolve_target(ctx, &input.vault, &input.target).await?;
        let kind = input.content_type.unwrap_or_default();
        if let Some(section) = &input.section {
            let edit = edit_existing(ctx, "patch_note", &input.vault, &path, |text| {
                edit_section(text, section, SectionOp::Replace, &input.content, kind, false, false)
            })
            .await?;
            return Ok(Written::section(edit));
        }
        let mode = if input.overwrite.unwrap_or(false) { "overwrite" } else { "create" };
        let mut args = json!({"vault": input.vault, "path": path, "content": input.content, "mode": mode, "response_format": "detailed"});
        if let Some(token) = input.elicit_token {
            args["elicit_token"] = json!(token);
        }
        let out = call(ctx, "write_note", args).await?;
        Ok(Written::whole(&out, &path, input.content.len() as i64))
    }
}
