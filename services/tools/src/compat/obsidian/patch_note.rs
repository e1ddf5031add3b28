//! obsidian_patch_note: appends, prepends or replaces at one heading, block or frontmatter field.

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ContentType, Section, SectionOp, Target, edit_existing, edit_section, resolve_target};
use otc_kernel::{CallContext, Tool};

pub struct ObsidianPatchNote;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    Append,
    Prepend,
    Replace,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchOptions {
    /// Create the heading or field when the note lacks it.
    #[serde(default, rename = "createTargetIfMissing")]
    pub create_target_if_missing: Option<bool>,
    /// Append or prepend even when the section already holds the content.
    #[serde(default, rename = "applyIfContentPreexists")]
    pub apply_if_content_preexists: Option<bool>,
    /// Accepted; whitespace around the target is always ignored here.
    #[serde(default, rename = "trimTargetWhitespace")]
    pub trim_target_whitespace: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    pub target: Target,
    pub section: Section,
    /// append (end of the section), prepend (its start) or replace (its body).
    pub operation: Operation,
    pub content: String,
    /// json: content is a JSON literal (a typed frontmatter value).
    #[serde(default, rename = "contentType")]
    pub content_type: Option<ContentType>,
    #[serde(default, rename = "patchOptions")]
    pub patch_options: Option<PatchOptions>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub path: String,
    /// The section, its target as resolved ("A::B" for a heading).
    pub section: Section,
    pub operation: Operation,
    pub previous_size_in_bytes: i64,
    pub current_size_in_bytes: i64,
}

impl Tool for ObsidianPatchNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_patch_note",
            "Patch an Obsidian note section",
            "Appends, prepends or replaces at one heading (\"A::B\" or a unique name), block or frontmatter field of \
             an existing note; the rest of the note stays as it was. An append or prepend of content the section \
             already holds is refused unless patchOptions.applyIfContentPreexists; createTargetIfMissing adds the \
             heading or field.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let path = resolve_target(ctx, &input.vault, &input.target).await?;
        let options = input.patch_options.unwrap_or_default();
        let create = options.create_target_if_missing.unwrap_or(false);
        let reject = !options.apply_if_content_preexists.unwrap_or(false);
        let op = match input.operation {
            Operation::Append => SectionOp::Append,
            Operation::Prepend => SectionOp::Prepend,
            Operation::Replace => SectionOp::Replace,
        };
        let kind = input.content_type.unwrap_or_default();
        let edit = edit_existing(ctx, "patch_note", &input.vault, &path, |text| {
            edit_section(text, &input.section, op, &input.content, kind, create, reject)
        })
        .await?;
        Ok(Output {
            path: edit.path,
            section: Section { kind: input.section.kind, target: edit.extra },
            operation: input.operation,
            previous_size_in_bytes: edit.previous_size,
            current_size_in_bytes: edit.current_size,
        })
    }
}
