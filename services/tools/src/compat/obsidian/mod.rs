//! `/mcp/compat/obsidian`: the fourteen `obsidian_*` tools of the 14-tool Obsidian server
//! (cyanheads/obsidian-mcp-server), with its parameter names and output fields, served from the
//! vault's files. Each tool calls catalogue tools through the dispatcher, so scopes, the folder
//! ACL, rate limits, provenance and the clobber guard hold as on every other surface.
//!
//! Where the two differ, the differences are these: errors carry this server's catalogue code
//! with the other server's reason in `details.reason` (`file_exists`, `note_missing`,
//! `section_target_missing`, ...); a deleted note goes to the vault's trash (restorable) instead
//! of being removed outright; the active file, opening a note in the app and the command palette
//! need a running Obsidian and answer plugin_unavailable (hidden from the listing, like every
//! live-app tool, unless `tool_visibility.show_live_app_tools`).

pub mod append_to_note;
pub mod delete_note;
pub mod execute_command;
pub mod get_note;
pub mod list_commands;
pub mod list_notes;
pub mod list_tags;
pub mod manage_frontmatter;
pub mod manage_tags;
pub mod open_in_ui;
pub mod patch_note;
pub mod replace_in_note;
pub mod search_notes;
pub mod write_note;

use otc_errors::{ErrorCode, Hint, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tools::workspace::periodic::PeriodArg;
use otc_kernel::reading::View;
use otc_kernel::{CallContext, ToolEntry, entry};

/// The surface's tools, in the other server's order.
pub fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<get_note::ObsidianGetNote>(),
        entry::<list_notes::ObsidianListNotes>(),
        entry::<list_tags::ObsidianListTags>(),
        entry::<search_notes::ObsidianSearchNotes>(),
        entry::<write_note::ObsidianWriteNote>(),
        entry::<append_to_note::ObsidianAppendToNote>(),
        entry::<patch_note::ObsidianPatchNote>(),
        entry::<replace_in_note::ObsidianReplaceInNote>(),
        entry::<manage_frontmatter::ObsidianManageFrontmatter>(),
        entry::<manage_tags::ObsidianManageTags>(),
        entry::<delete_note::ObsidianDeleteNote>(),
        entry::<open_in_ui::ObsidianOpenInUi>(),
        entry::<list_commands::ObsidianListCommands>(),
        entry::<execute_command::ObsidianExecuteCommand>(),
    ]
}

/// The server instructions on this surface.
pub const INSTRUCTIONS: &str = "The obsidian_* tools, served by obsidian-tc from the vault's files with the parameters and \
output fields of the 14-tool Obsidian server. Address a note with target {\"type\": \"path\", \"path\": ...} or \
{\"type\": \"periodic\", \"period\": ...}; read obsidian_get_note's document-map to find section targets before editing. \
No Obsidian app runs here: the active file and commands answer plugin_unavailable.";

/// Why these tools take no response_format: they answer the other server's fields.
pub const FIXED: &str = "answers the 14-tool server's own output fields";

/// Where a note lives: `{type: "path", path}`, `{type: "periodic", period, date?}` or
/// `{type: "active"}` (which needs a running app).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// path, periodic or active.
    #[serde(rename = "type")]
    pub kind: TargetKind,
    /// type path: vault-relative, extension included ("Projects/foo.md").
    #[serde(default)]
    pub path: Option<String>,
    /// type periodic.
    #[serde(default)]
    pub period: Option<PeriodArg>,
    /// type periodic: YYYY-MM-DD (default: the current period).
    #[serde(default)]
    pub date: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    Path,
    Active,
    Periodic,
}

/// A heading, block or frontmatter field of a note.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// heading, block or frontmatter.
    #[serde(rename = "type")]
    pub kind: SectionKind,
    /// heading: "Parent::Child" as document-map lists it, or a leaf name found at any depth;
    /// block: the id without ^; frontmatter: the field name.
    pub target: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SectionKind {
    Heading,
    Block,
    Frontmatter,
}

/// How `content` is read: markdown text, or a JSON literal (typed frontmatter values).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContentType {
    #[default]
    Markdown,
    Json,
}

/// `err` with the other server's reason for it in `details.reason`.
pub fn reason(err: ToolError, reason: &'static str) -> ToolError {
    err.detail("reason", reason)
}

/// A refusal of this surface's own, with the other server's reason.
pub fn refuse(code: ErrorCode, reason_name: &'static str, message: impl Into<String>) -> ToolError {
    reason(ToolError::with_message(code, message.into()), reason_name)
}

const NOTE_MISSING_HINTS: &[Hint] = &[
    Hint {
        text: "Check the path (extension included) with obsidian_list_notes, or create the note with obsidian_write_note.",
        tools: &["obsidian_list_notes", "obsidian_write_note"],
    },
    Hint { text: "Check the path, extension included.", tools: &[] },
];
const FILE_EXISTS_HINTS: &[Hint] = &[
    Hint {
        text: "The note exists. Edit it in place with obsidian_patch_note, obsidian_append_to_note or obsidian_replace_in_note, or pass overwrite: true to replace it whole.",
        tools: &["obsidian_patch_note", "obsidian_append_to_note", "obsidian_replace_in_note"],
    },
    Hint { text: "The note exists; pass overwrite: true to replace it whole.", tools: &[] },
];
pub(crate) const SECTION_HINTS: &[Hint] = &[
    Hint {
        text: "Read the note's headings, blocks and fields with obsidian_get_note format document-map and pass one of them.",
        tools: &["obsidian_get_note"],
    },
    Hint { text: "Pass a heading, block or field the note has.", tools: &[] },
];
const STALE_HINTS: &[Hint] = &[Hint { text: "The note changed while the call ran; call again.", tools: &[] }];

/// An error from a catalogue tool this surface called, in this surface's terms: the other
/// server's reason in details, hints that name this surface's tools (or none).
pub fn upstream(err: ToolError) -> ToolError {
    let (name, hints): (&'static str, &'static [Hint]) = match err.code {
        ErrorCode::NoteNotFound => ("note_missing", NOTE_MISSING_HINTS),
        ErrorCode::NoteExists => ("file_exists", FILE_EXISTS_HINTS),
        ErrorCode::AclDenied => ("path_forbidden", last_hint(err.code)),
        ErrorCode::ReadOnly | ErrorCode::ReadOnlyMode => ("path_forbidden", last_hint(err.code)),
        ErrorCode::ConcurrentModification => ("concurrent_modification", STALE_HINTS),
        ErrorCode::PathInvalid => ("path_invalid", last_hint(err.code)),
        ErrorCode::PluginUnavailable => ("plugin_unavailable", last_hint(err.code)),
        _ => {
            let hints = last_hint(err.code);
            return err.with_hints(hints);
        }
    };
    let err = if err.details.contains_key("reason") { err } else { reason(err, name) };
    err.with_hints(hints)
}

/// The code's own hint that names no tool.
fn last_hint(code: ErrorCode) -> &'static [Hint] {
    let hints = code.info().hints;
    &hints[hints.len().saturating_sub(1)..]
}

/// Calls catalogue tool `tool` with `args` (an object) for this caller: the same pipeline as
/// any call, except the rate limit, which the compat call already spent from. Its errors come
/// back in this surface's terms.
pub async fn call(ctx: &CallContext<'_>, tool: &str, args: Value) -> Result<Value, ToolError> {
    let Value::Object(args) = args else {
        return Err(ToolError::new(ErrorCode::InternalError));
    };
    ctx.call_part(tool, args).await.map_err(upstream)
}

/// The vault path a target names. A `.` or `..` segment is refused before anything is read
/// (`path_traversal`); the active file needs a running app.
pub async fn resolve_target(ctx: &CallContext<'_>, vault: &str, target: &Target) -> Result<String, ToolError> {
    match target.kind {
        TargetKind::Path => {
            let path = target.path.as_deref().map(str::trim).filter(|p| !p.is_empty()).ok_or_else(|| {
                refuse(ErrorCode::ValidationError, "invalid_arguments", "target.path is required for a path target")
                    .detail("field", "target.path")
            })?;
            check_segments(path)?;
            Ok(path.trim_start_matches('/').to_string())
        }
        TargetKind::Periodic => {
            let period = target.period.ok_or_else(|| {
                refuse(
                    ErrorCode::ValidationError,
                    "invalid_arguments",
                    "target.period is required for a periodic target",
                )
                .detail("field", "target.period")
            })?;
            let view = View::open(ctx, vault).await?;
            let resolved = crate::tools::workspace::periodic::resolve(ctx, &view, period, target.date.as_deref())
                .await
                .map_err(|e| {
                    let why = if e.details.get("field").is_some_and(|f| f == "date") {
                        "invalid_arguments"
                    } else {
                        "periodic_disabled"
                    };
                    reason(e, why)
                })?;
            Ok(resolved.path)
        }
        TargetKind::Active => Err(no_active_file(ctx, vault).await),
    }
}

/// A path with a `.` or `..` segment (either separator) is refused as the other server does.
pub fn check_segments(path: &str) -> Result<(), ToolError> {
    if path.split(['/', '\\']).any(|s| s == "." || s == "..") {
        return Err(refuse(ErrorCode::PathInvalid, "path_traversal", "the path may not contain . or .. segments")
            .echo("path", path));
    }
    Ok(())
}

const ACTIVE_HINTS: &[Hint] = &[
    Hint {
        text: "No Obsidian app runs here, so there is no active file. Address the note by path: target {\"type\": \"path\", \"path\": ...}; obsidian_list_notes lists them.",
        tools: &["obsidian_list_notes"],
    },
    Hint { text: "No Obsidian app runs here, so there is no active file. Address the note by path.", tools: &[] },
];

async fn no_active_file(ctx: &CallContext<'_>, vault: &str) -> ToolError {
    if let Err(err) = View::open(ctx, vault).await {
        return err;
    }
    refuse(
        ErrorCode::PluginUnavailable,
        "no_active_file",
        "the active file needs a running Obsidian; this vault is served from its files",
    )
    .detail("needs", "the active file")
    .with_hints(ACTIVE_HINTS)
}

/// A note as read for an edit: its text, the hash a write compares against, its size in bytes.
pub struct Read {
    pub path: String,
    pub text: String,
    pub hash: String,
}

impl Read {
    pub fn size(&self) -> usize {
        self.text.len()
    }
}

/// The note at `path`, or None when there is none.
pub async fn read_opt(ctx: &CallContext<'_>, vault: &str, path: &str) -> Result<Option<Read>, ToolError> {
    let args = json!({"vault": vault, "path": path, "format": "content", "response_format": "detailed"});
    match call(ctx, "read_note", args).await {
        Ok(out) => Ok(Some(Read {
            path: out["path"].as_str().unwrap_or(path).to_string(),
            text: out["content"].as_str().unwrap_or_default().to_string(),
            hash: out["content_hash"].as_str().unwrap_or_default().to_string(),
        })),
        Err(err) if err.code == ErrorCode::NoteNotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// The note at `path`; note_missing when there is none.
pub async fn read(ctx: &CallContext<'_>, vault: &str, path: &str) -> Result<Read, ToolError> {
    read_opt(ctx, vault, path).await?.ok_or_else(|| note_missing(path))
}

pub fn note_missing(path: &str) -> ToolError {
    refuse(ErrorCode::NoteNotFound, "note_missing", "the note does not exist")
        .echo("path", path)
        .with_hints(NOTE_MISSING_HINTS)
}

/// A heading the note has, as the other server names it: its full path ("A::B").
pub struct HeadingPath {
    pub path: String,
    pub text: String,
    pub level: u8,
    /// Which of the note's headings with this text it is (1-based), for the catalogue's anchor.
    pub occurrence: u32,
}

/// Every heading of `text` with its full path, in document order.
pub fn heading_paths(note: &otc_parser::Note) -> Vec<HeadingPath> {
    let mut out: Vec<HeadingPath> = Vec::new();
    let mut stack: Vec<(u8, String)> = Vec::new();
    for heading in &note.headings {
        while stack.last().is_some_and(|(level, _)| *level >= heading.level) {
            stack.pop();
        }
        stack.push((heading.level, heading.text.clone()));
        let occurrence = 1 + out.iter().filter(|h| h.text.to_lowercase() == heading.text.to_lowercase()).count() as u32;
        out.push(HeadingPath {
            path: stack.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join("::"),
            text: heading.text.clone(),
            level: heading.level,
            occurrence,
        });
    }
    out
}

/// How a heading target resolved.
pub enum HeadingMatch<'h> {
    One(&'h HeadingPath),
    /// Several: their full paths.
    Ambiguous(Vec<String>),
    Missing,
}

/// The heading `target` names: a full "A::B" path, or a leaf matched at any depth (several
/// leaves resolve to the one top-level heading among them, if exactly one is).
pub fn find_heading<'h>(headings: &'h [HeadingPath], target: &str) -> HeadingMatch<'h> {
    let target = target.trim().trim_start_matches('#').trim();
    let pick = |found: Vec<&'h HeadingPath>| match found.as_slice() {
        [] => HeadingMatch::Missing,
        [one] => HeadingMatch::One(one),
        several => HeadingMatch::Ambiguous(several.iter().map(|h| h.path.clone()).collect()),
    };
    if target.contains("::") {
        let exact: Vec<&HeadingPath> = headings.iter().filter(|h| h.path == target).collect();
        if !exact.is_empty() {
            return pick(exact);
        }
        let lower = target.to_lowercase();
        return pick(headings.iter().filter(|h| h.path.to_lowercase() == lower).collect());
    }
    let lower = target.to_lowercase();
    let leaves: Vec<&HeadingPath> = headings.iter().filter(|h| h.text.to_lowercase() == lower).collect();
    if leaves.len() > 1 {
        let top: Vec<&HeadingPath> = leaves.iter().copied().filter(|h| !h.path.contains("::")).collect();
        if top.len() == 1 {
            return HeadingMatch::One(top[0]);
        }
    }
    pick(leaves)
}

/// The catalogue anchor for a section of `text`, with the resolved target the other server
/// reports ("A::B" for a heading). `allow_missing` passes a missing heading or field through
/// (for create-if-missing); a missing block is always refused.
pub fn anchor_for(text: &str, section: &Section, allow_missing: bool) -> Result<(Value, String), ToolError> {
    match section.kind {
        SectionKind::Heading => {
            let note = otc_parser::parse(text);
            let headings = heading_paths(&note);
            match find_heading(&headings, &section.target) {
                HeadingMatch::One(h) => {
                    Ok((json!({"type": "heading", "heading": h.text, "occurrence": h.occurrence}), h.path.clone()))
                }
                HeadingMatch::Ambiguous(candidates) => Err(refuse(
                    ErrorCode::InvalidInput,
                    "ambiguous_section",
                    "several headings match; pass the full path (\"Parent::Child\") of one",
                )
                .detail("candidates", candidates)
                .detail("field", "section.target")
                .with_hints(SECTION_HINTS)),
                HeadingMatch::Missing if allow_missing => {
                    let leaf = section.target.rsplit("::").next().unwrap_or(&section.target).trim().to_string();
                    Ok((json!({"type": "heading", "heading": leaf}), section.target.clone()))
                }
                HeadingMatch::Missing => Err(section_missing(section)),
            }
        }
        SectionKind::Block => {
            let id = section.target.trim().trim_start_matches('^').to_string();
            let note = otc_parser::parse(text);
            if !note.blocks.iter().any(|b| b.id == id) {
                return Err(section_missing(section));
            }
            Ok((json!({"type": "block", "block_id": id}), id))
        }
        SectionKind::Frontmatter => {
            let field = section.target.trim().to_string();
            if !allow_missing && !otc_kernel::reading::frontmatter_map(text).is_some_and(|f| f.contains_key(&field)) {
                return Err(section_missing(section));
            }
            Ok((json!({"type": "frontmatter", "field": field}), field))
        }
    }
}

/// The refusal of a section the note does not have.
pub fn section_missing(section: &Section) -> ToolError {
    refuse(ErrorCode::InvalidInput, "section_target_missing", "the note has no such section")
        .detail("field", "section.target")
        .echo("target", &section.target)
        .with_hints(SECTION_HINTS)
}

/// `content` as the catalogue's write tools take it: JSON content parsed (a typed frontmatter
/// value), markdown as text.
pub fn content_value(content: &str, kind: ContentType) -> Result<Value, ToolError> {
    match kind {
        ContentType::Markdown => Ok(Value::String(content.to_string())),
        ContentType::Json => serde_json::from_str(content).map_err(|e| {
            refuse(ErrorCode::ValidationError, "invalid_arguments", format!("content is not a JSON literal: {e}"))
                .detail("field", "content")
        }),
    }
}

/// `value` as text for a heading or block edit (a JSON string is its text).
pub fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// What an in-place edit did, in the other server's terms.
pub struct Edit<T> {
    pub path: String,
    pub previous_size: i64,
    pub current_size: i64,
    pub extra: T,
}

/// Edits the existing note at `path` in place: `edit` gets its text and returns the new text
/// and what to report. A compare-and-swap on what was read; a concurrent writer's change is
/// read again and the edit redone, never lost. `like` is the catalogue tool that makes such
/// an edit: a deployment that disabled it (or a caller without its scopes) gets its answer.
pub async fn edit_existing<T, F>(
    ctx: &CallContext<'_>,
    like: &str,
    vault: &str,
    path: &str,
    mut edit: F,
) -> Result<Edit<T>, ToolError>
where
    F: FnMut(&str) -> Result<(String, T), ToolError>,
{
    // This surface's own refusals keep their reason and hints; the catalogue's are translated.
    let mut own: Option<ToolError> = None;
    let run = async {
        ctx.dispatcher.resolve(ctx.caller, like)?;
        let view = View::open(ctx, vault).await?;
        otc_kernel::writing::check_write(&view, path, "target.path")?;
        let edited = otc_kernel::writing::edit_note(ctx, &view, path, None, None, |now, _| {
            let text = now.ok_or_else(|| note_missing(path))?;
            let (text, extra) = edit(text).inspect_err(|e| own = Some(e.clone()))?;
            Ok(otc_kernel::writing::Planned { text, extra, trash_old: false })
        })
        .await?;
        Ok::<_, ToolError>(Edit {
            path: path.to_string(),
            previous_size: edited.before.as_ref().map_or(0, |e| e.size),
            current_size: edited.size,
            extra: edited.extra,
        })
    };
    let outcome = run.await;
    outcome.map_err(|e| own.take().unwrap_or_else(|| upstream(e)))
}

/// What obsidian_write_note and obsidian_append_to_note answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Written {
    pub path: String,
    pub section_targeted: bool,
    /// With section: the target as resolved ("A::B" for a heading).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_target: Option<String>,
    /// Whether the call brought the note into existence.
    pub created: bool,
    pub previous_size_in_bytes: i64,
    pub current_size_in_bytes: i64,
}

impl Written {
    /// A section edit of an existing note.
    pub fn section(edit: Edit<String>) -> Self {
        Self {
            path: edit.path,
            section_targeted: true,
            section_target: Some(edit.extra),
            created: false,
            previous_size_in_bytes: edit.previous_size,
            current_size_in_bytes: edit.current_size,
        }
    }

    /// A whole-note write, from the catalogue tool's detailed answer `out` (`path` as asked;
    /// `size` when the answer names none).
    pub fn whole(out: &Value, path: &str, size: i64) -> Self {
        Self {
            path: out["path"].as_str().unwrap_or(path).to_string(),
            section_targeted: false,
            section_target: None,
            created: out["created"].as_bool().unwrap_or(false),
            previous_size_in_bytes: out["previous_size"].as_i64().unwrap_or(0),
            current_size_in_bytes: out["current_size"].as_i64().unwrap_or(size),
        }
    }
}

/// How a section edit treats what it targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionOp {
    Append,
    Prepend,
    Replace,
}

/// The section edit the write tools share. `create` brings a missing heading or field into being;
/// `reject_present` refuses an append or prepend whose content the section already holds
/// (`content_preexists`). Returns the new text and the resolved target.
pub fn edit_section(
    text: &str,
    section: &Section,
    op: SectionOp,
    content: &str,
    content_type: ContentType,
    create: bool,
    reject_present: bool,
) -> Result<(String, String), ToolError> {
    use otc_edit::anchor::{Op, Target, locate, patch};
    let value = content_value(content, content_type)?;
    let (anchor, resolved) = anchor_for(text, section, create)?;
    let note = otc_parser::parse(text);
    let present = || {
        refuse(
            ErrorCode::InvalidInput,
            "content_preexists",
            "the section already holds this content; nothing was written",
        )
        .detail("field", "content")
    };
    let check = reject_present && op != SectionOp::Replace;
    // A text section: the content (trimmed) inside the section's text.
    let preexists = |held: &str| {
        let wanted = as_text(&value);
        let wanted = wanted.trim();
        if check && !wanted.is_empty() && held.contains(wanted) {
            return Err(present());
        }
        Ok(())
    };
    match section.kind {
        SectionKind::Heading => {
            let heading = anchor["heading"].as_str().unwrap_or_default().to_string();
            let occurrence = anchor["occurrence"].as_u64().map(|o| o as u32);
            let body = as_text(&value);
            let target = Target::Heading { heading: heading.clone(), occurrence };
            if occurrence.is_none() {
                // Missing, and create is set: the heading path's missing levels, with the content.
                return Ok((create_heading_path(text, &note, &section.target, &body), resolved));
            }
            let at = locate(text, &note, &target)?;
            preexists(&text[at.inner.clone()])?;
            let body = match op {
                SectionOp::Replace => strip_own_heading(&body, &heading),
                _ => body,
            };
            let op = match op {
                SectionOp::Append => Op::Append(&body),
                SectionOp::Prepend => Op::Prepend(&body),
                SectionOp::Replace => Op::Replace(&body),
            };
            Ok((patch(text, &note, &target, op)?.text, resolved))
        }
        SectionKind::Block => {
            let target = Target::Block { id: resolved.clone() };
            let at = locate(text, &note, &target)?;
            preexists(&text[at.range.clone()])?;
            let body = as_text(&value);
            let new = match op {
                // Joined to the block's text with no separator, as the other server does; the
                // ` ^id` stays at the end of the line, so the block keeps its id.
                SectionOp::Append => {
                    let line = text[at.range.clone()].trim_end_matches(['\n', '\r']).trim_end();
                    let marker = format!("^{resolved}");
                    let kept = line.strip_suffix(marker.as_str()).map_or(line, str::trim_end);
                    let end = at.range.start + kept.len();
                    format!("{}{body}{}", &text[..end], &text[end..])
                }
                SectionOp::Prepend => patch(text, &note, &target, Op::Prepend(&body))?.text,
                SectionOp::Replace => patch(text, &note, &target, Op::Replace(&body))?.text,
            };
            Ok((new, resolved))
        }
        SectionKind::Frontmatter => {
            let field = resolved.clone();
            let current = otc_kernel::reading::frontmatter_map(text).and_then(|f| f.get(&field).cloned());
            // A list holds it as an item, text as a substring, anything else as its value.
            let already = match &current {
                Some(Value::Array(items)) => items.contains(&value),
                Some(Value::String(held)) => {
                    value.as_str().is_some_and(|v| !v.trim().is_empty() && held.contains(v.trim()))
                }
                Some(held) => *held == value,
                None => false,
            };
            if check && already {
                return Err(present());
            }
            let new_value = match (op, current) {
                (SectionOp::Replace, _) | (_, None) => value,
                (SectionOp::Append, Some(Value::Array(mut items))) => {
                    items.push(value);
                    Value::Array(items)
                }
                (SectionOp::Prepend, Some(Value::Array(mut items))) => {
                    items.insert(0, value);
                    Value::Array(items)
                }
                (SectionOp::Append, Some(Value::String(held))) => Value::String(format!("{held}{}", as_text(&value))),
                (SectionOp::Prepend, Some(Value::String(held))) => Value::String(format!("{}{held}", as_text(&value))),
                (_, Some(other)) => {
                    return Err(refuse(
                        ErrorCode::InvalidInput,
                        "patch_rejected",
                        format!("append and prepend need a list or text field; {field} holds {other}"),
                    )
                    .detail("field", "section.target"));
                }
            };
            let op = otc_edit::frontmatter::FrontmatterOp::Set { key: &field, value: &new_value, nested: false };
            let edited =
                otc_edit::frontmatter::edit_frontmatter(text, op).map_err(|e| reason(e, "frontmatter_invalid"))?;
            Ok((edited.text, resolved))
        }
    }
}

/// `body` without a first line that repeats the heading it goes under (and one blank line
/// after it), so a replace does not write the heading twice.
fn strip_own_heading(body: &str, heading: &str) -> String {
    let first = body.lines().next().unwrap_or_default();
    let text = first.trim_start_matches('#');
    if text.len() < first.len() && text.starts_with(' ') && text.trim().eq_ignore_ascii_case(heading.trim()) {
        let rest = body[first.len()..].strip_prefix("\r\n").or_else(|| body[first.len()..].strip_prefix('\n'));
        let rest = rest.unwrap_or("");
        let rest = rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n')).unwrap_or(rest);
        return rest.to_string();
    }
    body.to_string()
}

/// The note's frontmatter keys in the order the YAML writes them (the parsed map is sorted).
pub fn frontmatter_keys(text: &str) -> Vec<String> {
    let Some(map) = otc_kernel::reading::frontmatter_map(text) else { return Vec::new() };
    let head = otc_parser::parse_head(text);
    let block = head.frontmatter.as_ref().map_or(0..0, |f| f.span.range());
    let mut keys: Vec<String> = Vec::new();
    for line in text[block].lines().skip(1) {
        if line.starts_with([' ', '\t', '-', '#']) {
            continue;
        }
        let Some((key, _)) = line.split_once(':') else { continue };
        let key = key.trim().trim_matches(['"', '\'']);
        if map.contains_key(key) && !keys.iter().any(|k| k == key) {
            keys.push(key.to_string());
        }
    }
    keys.extend(map.keys().filter(|k| !keys.contains(k)).cloned().collect::<Vec<_>>());
    keys
}

/// `text` with the missing levels of the heading path `target` ("A::B::C", or a bare name)
/// created and `body` under the last: under the deepest level the note has, at the end of that
/// heading's section (else at the end of the note), each one level below its parent (a path
/// with no level in the note starts at level 1).
fn create_heading_path(text: &str, note: &otc_parser::Note, target: &str, body: &str) -> String {
    let parts: Vec<&str> = target.split("::").map(str::trim).filter(|p| !p.is_empty()).collect();
    let headings = heading_paths(note);
    // The deepest existing ancestor: the longest proper prefix of the path naming one heading.
    let mut found: Option<(usize, usize)> = None;
    for depth in (1..parts.len()).rev() {
        let prefix = parts[..depth].join("::");
        if let HeadingMatch::One(h) = find_heading(&headings, &prefix) {
            let index = headings.iter().position(|x| std::ptr::eq(x, h)).unwrap_or(0);
            found = Some((depth, index));
            break;
        }
    }
    let (at, level, missing) = match found {
        Some((depth, index)) => (note.headings[index].section.end, headings[index].level, &parts[depth..]),
        None => (text.len(), 0, &parts[..]),
    };
    let nl = otc_edit::anchor::line_break(text);
    let mut insert = String::new();
    if at > 0 && !text[..at].ends_with('\n') {
        insert.push_str(nl);
    }
    if at > 0 && !text[..at].ends_with(&format!("{nl}{nl}")) {
        insert.push_str(nl);
    }
    for (i, part) in missing.iter().enumerate() {
        let level = (level as usize + i + 1).min(6);
        insert.push_str(&format!("{} {part}{nl}", "#".repeat(level)));
    }
    if !body.is_empty() {
        insert.push_str(body);
        if !body.ends_with('\n') {
            insert.push_str(nl);
        }
    }
    if at < text.len() {
        insert.push_str(nl);
    }
    format!("{}{insert}{}", &text[..at], &text[at..])
}
