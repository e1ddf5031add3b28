use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::not_found;
use otc_kernel::writing::Anchor;
use otc_kernel::writing::{self, AnchorAt, Origin, Planned};
use otc_kernel::{CallContext, Tool};

pub struct AppendNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    pub content: String,
    /// To a frontmatter field: a list gains an item, text is extended.
    #[serde(default)]
    pub anchor: Option<Anchor>,
    /// Create a missing anchor heading or field.
    #[serde(default)]
    pub create_if_missing: Option<bool>,
    /// Default true: start on a new line.
    #[serde(default)]
    pub ensure_newline: Option<bool>,
    #[serde(default)]
    pub prev_hash: Option<String>,
    #[serde(default)]
    pub provenance: Option<Origin>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub content_hash: String,
    /// True when the note did not exist and the call created it.
    pub created: bool,
    /// With anchor and create_if_missing: whether the heading or field was created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section_created: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_written: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_size: Option<i64>,
}

/// `text` with `content` added at its end.
pub(crate) fn append_end(text: &str, content: &str, ensure_newline: bool) -> String {
    let mut out = String::with_capacity(text.len() + content.len() + 2);
    out.push_str(text);
    if ensure_newline && !text.is_empty() && !text.ends_with('\n') {
        out.push_str(otc_edit::anchor::line_break(text));
    }
    out.push_str(content);
    out
}

/// A frontmatter field with `content` appended: a list gains it as an item; text is extended;
/// a missing field is created when allowed.
fn append_field(text: &str, field: &str, content: &str, create: bool) -> Result<(String, bool), ToolError> {
    let head = otc_parser::parse_head(text);
    let current = head.frontmatter.as_ref().and_then(|f| f.value.as_ref()).and_then(|v| v.get(field)).cloned();
    let added = writing::field_value(content);
    let (value, created) = match current {
        Some(Value::Array(mut items)) => {
            items.push(added);
            (Value::Array(items), false)
        }
        Some(Value::String(s)) => (Value::String(format!("{s}{content}")), false),
        Some(Value::Null) => (added, false),
        Some(other) => {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("the field holds a {}, which cannot be appended to; use update_frontmatter", kind(&other)),
            )
            .detail("field", "anchor.field"));
        }
        None if create => (added, true),
        None => {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                "frontmatter field not found; pass create_if_missing to create it",
            )
            .detail("field", "anchor.field"));
        }
    };
    let op = otc_edit::frontmatter::FrontmatterOp::Set { key: field, value: &value, nested: false };
    Ok((otc_edit::frontmatter::edit_frontmatter(text, op)?.text, created))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::Object(_) => "mapping",
        _ => "value",
    }
}

impl Tool for AppendNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "append_note",
            "Append to a note",
            "Appends text to a note, creating it if missing; with anchor, under a heading, after a block or to a \
             frontmatter field of an existing note.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let path = input.path.clone();
        writing::check_write(&view, &path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let anchor = input.anchor.as_ref().map(AnchorAt::of).transpose()?;
        let create = input.create_if_missing.unwrap_or(false);
        let ensure_newline = input.ensure_newline.unwrap_or(true);
        if anchor.is_none() && writing::current(ctx, view.vault.id, &path).await?.is_none() {
            writing::check_new_name(ctx, &view, &path, "path").await?;
        }
        let content = input.content.as_str();
        let edited = writing::edit_note(ctx, &view, &path, prev, input.provenance.map(Origin::as_str), |now, _| {
            let (text, section_created) = match (&anchor, now) {
                (None, None) => (content.to_string(), None),
                (None, Some(text)) => (append_end(text, content, ensure_newline), None),
                (Some(_), None) => return Err(not_found(&path)),
                (Some(AnchorAt::Field(field)), Some(text)) => {
                    let (text, created) = append_field(text, field, content, create)?;
                    (text, Some(created))
                }
                (Some(AnchorAt::Text(otc_edit::anchor::Target::Heading { heading, occurrence })), Some(text)) => {
                    let note = otc_kernel::memory::parse_note(text)?;
                    let (patched, created) =
                        otc_edit::anchor::append_under_heading(text, &note, heading, *occurrence, content, create)?;
                    (patched.text, Some(created))
                }
                (Some(AnchorAt::Text(target)), Some(text)) => {
                    let note = otc_kernel::memory::parse_note(text)?;
                    (otc_edit::anchor::patch(text, &note, target, otc_edit::anchor::Op::Append(content))?.text, None)
                }
            };
            Ok(Planned { text, extra: (now.is_none(), section_created), trash_old: false })
        })
        .await?;
        let (created, section_created) = edited.extra;
        let mut out = Output {
            vault: view.vault.name.clone(),
            path,
            content_hash: hex::encode(edited.content_hash),
            created,
            section_created: None,
            prev_hash: None,
            bytes_written: None,
            previous_size: None,
            current_size: None,
        };
        if format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed {
            let before = edited.before.as_ref().map_or(0, |e| e.size);
            out.section_created = section_created;
            out.prev_hash = edited.before.as_ref().map(|e| hex::encode(e.hash));
            out.bytes_written = Some(edited.size - before);
            out.previous_size = Some(before);
            out.current_size = Some(edited.size);
        }
        Ok(out)
    }
}
