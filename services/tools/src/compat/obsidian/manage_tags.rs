//! obsidian_manage_tags: adds, removes or lists a note's tags, in the frontmatter `tags` list
//! and/or inline.

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_edit::frontmatter::{TagLocation, add_tag, normalize_tag, remove_tag};
use otc_errors::{ErrorCode, ToolError};
use otc_parser::TagSource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Target, edit_existing, read, reason, refuse, resolve_target};
use otc_kernel::{CallContext, Tool};

pub struct ObsidianManageTags;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    Add,
    Remove,
    List,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    #[default]
    Frontmatter,
    Inline,
    Both,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    pub target: Target,
    pub operation: Operation,
    /// add and remove: the tags (a leading # is dropped).
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// frontmatter (default), inline or both.
    #[serde(default)]
    pub location: Option<Location>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub result: Outcome,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub operation: Operation,
    pub path: String,
    /// list: the tags by where they are; add and remove: every tag of the note after the change.
    pub tags: Tags,
    /// add and remove: the tags changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<Vec<String>>,
    /// add and remove: the tags already as asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_size_in_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_size_in_bytes: Option<i64>,
}

/// list: `{frontmatter, inline, all}`; add and remove: the note's tags as a list.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Tags {
    Split(Split),
    All(Vec<String>),
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Split {
    pub frontmatter: Vec<String>,
    pub inline: Vec<String>,
    /// Each once, frontmatter first.
    pub all: Vec<String>,
}

impl Tool for ObsidianManageTags {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_manage_tags",
            "Manage Obsidian note tags",
            "Adds, removes or lists a note's tags: location frontmatter (the tags list, default), inline (#tag in the \
             body) or both. add and remove answer the tags applied and those skipped as already so; nothing changed \
             writes nothing.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let path = resolve_target(ctx, &input.vault, &input.target).await?;
        if input.operation == Operation::List {
            let note = read(ctx, &input.vault, &path).await?;
            return Ok(Output {
                result: Outcome {
                    operation: Operation::List,
                    path: note.path,
                    tags: Tags::Split(split(&note.text)),
                    applied: None,
                    skipped: None,
                    previous_size_in_bytes: None,
                    current_size_in_bytes: None,
                },
            });
        }
        let wanted: Vec<String> = input.tags.clone().unwrap_or_default();
        if wanted.is_empty() {
            return Err(
                refuse(ErrorCode::ValidationError, "tags_required", "add and remove need tags").detail("field", "tags")
            );
        }
        let wanted: Vec<String> = wanted.iter().map(|t| normalize_tag(t)).collect::<Result<_, _>>()?;
        let locations: &[TagLocation] = match (input.operation, input.location.unwrap_or_default()) {
            (_, Location::Frontmatter) => &[TagLocation::Frontmatter],
            (_, Location::Inline) => &[TagLocation::Body],
            (Operation::Add, Location::Both) => &[TagLocation::Frontmatter, TagLocation::Body],
            (_, Location::Both) => &[TagLocation::Both],
        };
        let adding = input.operation == Operation::Add;
        let edit = edit_existing(ctx, if adding { "add_tag" } else { "remove_tag" }, &input.vault, &path, |text| {
            let mut text = text.to_string();
            let mut applied = Vec::new();
            for tag in &wanted {
                let mut changed = false;
                for location in locations {
                    let edit = if adding { add_tag(&text, tag, *location) } else { remove_tag(&text, tag, *location) };
                    let edit = edit.map_err(|e| reason(e, "frontmatter_invalid"))?;
                    changed |= edit.changed;
                    text = edit.text;
                }
                if changed {
                    applied.push(tag.clone());
                }
            }
            Ok((text.clone(), (applied, split(&text).all)))
        })
        .await?;
        let (applied, all) = edit.extra;
        let skipped = wanted.iter().filter(|t| !applied.contains(t)).cloned().collect();
        Ok(Output {
            result: Outcome {
                operation: input.operation,
                path: edit.path,
                tags: Tags::All(all),
                applied: Some(applied),
                skipped: Some(skipped),
                previous_size_in_bytes: Some(edit.previous_size),
                current_size_in_bytes: Some(edit.current_size),
            },
        })
    }
}

/// The note's tags by where they are, each once (case-insensitively) per list.
fn split(text: &str) -> Split {
    let note = otc_parser::parse(text);
    let mut out = Split { frontmatter: Vec::new(), inline: Vec::new(), all: Vec::new() };
    let push = |list: &mut Vec<String>, name: &str| {
        if !list.iter().any(|t| t.eq_ignore_ascii_case(name)) {
            list.push(name.to_string());
        }
    };
    for tag in &note.tags {
        match tag.source {
            TagSource::Frontmatter => push(&mut out.frontmatter, &tag.name),
            TagSource::Inline => push(&mut out.inline, &tag.name),
        }
    }
    for name in out.frontmatter.iter().chain(&out.inline) {
        push(&mut out.all, name);
    }
    out
}
