use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_edit::anchor::{Op, Target};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::not_found;
use otc_kernel::writing::Anchor;
use otc_kernel::writing::{self, AnchorAt, Planned};
use otc_kernel::{CallContext, Tool};

pub struct PatchNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// replace_text takes old_string and new_string; the others take content.
    pub operation: Operation,
    /// Shorthand for a heading anchor.
    #[serde(default)]
    pub target_heading: Option<String>,
    /// type frontmatter without field: the text above the first heading.
    #[serde(default)]
    pub anchor: Option<Anchor>,
    /// replace swaps a heading's section or a block's line (keeping its ^id).
    #[serde(default)]
    pub content: Option<String>,
    /// Exact text occurring once inside the anchor.
    #[serde(default)]
    pub old_string: Option<String>,
    #[serde(default)]
    pub new_string: Option<String>,
    #[serde(default)]
    pub prev_hash: Option<String>,
    /// Allows a heading replace to discard over 20 lines and half the body.
    #[serde(default)]
    pub confirm_replace: Option<bool>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Append,
    Prepend,
    Replace,
    ReplaceText,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Append => "append",
            Operation::Prepend => "prepend",
            Operation::Replace => "replace",
            Operation::ReplaceText => "replace_text",
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub content_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
    /// What the patch took out (0 for append and prepend). Concise keeps them when non-zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_removed: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_removed: Option<usize>,
}

fn rule(operation: Operation, field: &str, message: &str) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, format!("patch_note {}: {message}", operation.as_str()))
        .detail("field", field.to_string())
        .detail("operation", operation.as_str())
}

/// The spec's cross-field rules, each refusal naming the operation and the field.
fn check_fields(input: &Input) -> Result<(), ToolError> {
    let op = input.operation;
    if input.anchor.is_none() && input.target_heading.is_none() {
        return Err(rule(
            op,
            "anchor",
            "either anchor or target_heading is required, e.g. anchor {type: heading, heading: Notes}, {type: block, \
             block_id: abc} or {type: frontmatter}; to add at the end of a note use append_note",
        ));
    }
    if input.anchor.is_some() && input.target_heading.is_some() {
        return Err(rule(op, "target_heading", "give anchor or target_heading, not both"));
    }
    if op == Operation::ReplaceText {
        if input.old_string.is_none() {
            return Err(rule(op, "old_string", "old_string is required when operation is replace_text"));
        }
        if input.new_string.is_none() {
            return Err(rule(op, "new_string", "new_string is required when operation is replace_text"));
        }
        if input.content.is_some() {
            return Err(rule(
                op,
                "content",
                "content must not be set when operation is replace_text; use old_string/new_string",
            ));
        }
    } else {
        if input.content.is_none() {
            return Err(rule(op, "content", "content is required unless operation is replace_text"));
        }
        if input.old_string.is_some() {
            return Err(rule(op, "old_string", "old_string is only valid when operation is replace_text"));
        }
        if input.new_string.is_some() {
            return Err(rule(op, "new_string", "new_string is only valid when operation is replace_text"));
        }
    }
    Ok(())
}

/// A patch of one frontmatter field.
fn patch_field(text: &str, field: &str, op: Op<'_>) -> Result<(String, usize, usize), ToolError> {
    let head = otc_parser::parse_head(text);
    let current =
        head.frontmatter.as_ref().and_then(|f| f.value.as_ref()).and_then(|v| v.get(field)).cloned().ok_or_else(
            || {
                ToolError::with_message(ErrorCode::InvalidInput, "frontmatter field not found")
                    .detail("field", "anchor.field")
            },
        )?;
    let old_text = match &current {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let (value, removed) = match (op, current) {
        (Op::Replace(content), _) => (writing::field_value(content), old_text.clone()),
        (Op::Append(content), Value::Array(mut items)) => {
            items.push(writing::field_value(content));
            (Value::Array(items), String::new())
        }
        (Op::Prepend(content), Value::Array(mut items)) => {
            items.insert(0, writing::field_value(content));
            (Value::Array(items), String::new())
        }
        (Op::Append(content), Value::String(s)) => (Value::String(format!("{s}{content}")), String::new()),
        (Op::Prepend(content), Value::String(s)) => (Value::String(format!("{content}{s}")), String::new()),
        (Op::ReplaceText { old, new }, Value::String(s)) => {
            let n = s.matches(old).count();
            if n != 1 || old.is_empty() {
                return Err(ToolError::with_message(
                    ErrorCode::InvalidInput,
                    format!("replace_text: old_string must occur exactly once in the field; it occurs {n} times"),
                )
                .detail("field", "old_string")
                .detail("occurrences", n));
            }
            (Value::String(s.replacen(old, new, 1)), old.to_string())
        }
        (_, other) => {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("this operation needs a list or text field; the field holds {other}"),
            )
            .detail("field", "anchor.field"));
        }
    };
    let edit = otc_edit::frontmatter::FrontmatterOp::Set { key: field, value: &value, nested: false };
    let edited = otc_edit::frontmatter::edit_frontmatter(text, edit)?;
    let lines = if removed.is_empty() { 0 } else { removed.lines().count().max(1) };
    Ok((edited.text, lines, removed.len()))
}

impl Tool for PatchNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "patch_note",
            "Patch part of a note",
            "Edits part of a note: append, prepend, replace or replace_text at a heading, a ^block, the preamble \
             or a frontmatter field.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        check_fields(&input)?;
        let view = ctx.view(&input.vault).await?;
        let path = input.path.clone();
        writing::check_write(&view, &path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let at = match (&input.anchor, &input.target_heading) {
            (Some(anchor), _) => AnchorAt::of(anchor)?,
            (None, Some(heading)) => AnchorAt::Text(Target::Heading { heading: heading.clone(), occurrence: None }),
            (None, None) => unreachable!("checked above"),
        };
        let operation = input.operation;
        let op = match operation {
            Operation::Append => Op::Append(input.content.as_deref().unwrap_or_default()),
            Operation::Prepend => Op::Prepend(input.content.as_deref().unwrap_or_default()),
            Operation::Replace => Op::Replace(input.content.as_deref().unwrap_or_default()),
            Operation::ReplaceText => Op::ReplaceText {
                old: input.old_string.as_deref().unwrap_or_default(),
                new: input.new_string.as_deref().unwrap_or_default(),
            },
        };
        let confirmed = input.confirm_replace.unwrap_or(false);
        let edited = writing::edit_note(ctx, &view, &path, prev, None, |now, _| {
            let text = now.ok_or_else(|| not_found(&path))?;
            let (new_text, lines, bytes) = match &at {
                AnchorAt::Field(field) => patch_field(text, field, op)?,
                AnchorAt::Text(target) => {
                    let note = otc_kernel::memory::parse_note(text)?;
                    let patched = otc_edit::anchor::patch(text, &note, target, op)?;
                    let body_lines = text[note.body_start..].lines().count();
                    if operation == Operation::Replace
                        && matches!(target, Target::Heading { .. })
                        && patched.lines_removed > 20
                        && patched.lines_removed * 2 > body_lines
                        && !confirmed
                    {
                        return Err(ToolError::with_message(
                            ErrorCode::InvalidInput,
                            format!(
                                "patch_note replace: this would discard {} of the note's {body_lines} body lines; pass \
                                 confirm_replace: true if that is intended",
                                patched.lines_removed
                            ),
                        )
                        .detail("field", "confirm_replace")
                        .detail("operation", "replace")
                        .detail("lines_removed", patched.lines_removed));
                    }
                    (patched.text, patched.lines_removed, patched.bytes_removed)
                }
            };
            Ok(Planned { text: new_text, extra: (lines, bytes), trash_old: false })
        })
        .await?;
        let (lines, bytes) = edited.extra;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        Ok(Output {
            vault: view.vault.name.clone(),
            path,
            content_hash: hex::encode(edited.content_hash),
            operation: detailed.then_some(operation),
            prev_hash: detailed.then(|| edited.before.as_ref().map(|e| hex::encode(e.hash))).flatten(),
            lines_removed: (detailed || lines > 0).then_some(lines),
            bytes_removed: (detailed || bytes > 0).then_some(bytes),
        })
    }
}
