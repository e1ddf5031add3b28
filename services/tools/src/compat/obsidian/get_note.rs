//! obsidian_get_note: a note in one of four projections (content, full, document-map, section).

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{HeadingMatch, Section, SectionKind, Target, call, find_heading, heading_paths, refuse, resolve_target};
use otc_kernel::{CallContext, Tool};

pub struct ObsidianGetNote;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Projection {
    Content,
    Full,
    DocumentMap,
    Section,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    /// content: the markdown; full: content, frontmatter, tags and stat; document-map: headings,
    /// blocks and frontmatter fields; section: one of them (needs section).
    pub format: Projection,
    pub target: Target,
    #[serde(default)]
    pub section: Option<Section>,
    /// format full: also the note's vault-internal links.
    #[serde(default, rename = "includeLinks")]
    pub include_links: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub result: Projected,
}

/// The projection asked for (fields by format).
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Projected {
    pub format: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<Stat>,
    /// full with includeLinks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outgoing_links: Option<Vec<LinkOut>>,
    /// document-map: full heading paths ("A::B"), in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headings: Option<Vec<String>>,
    /// document-map: block ids without ^.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontmatter_fields: Option<Vec<String>>,
    /// section: the section as asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<Section>,
    /// section: the heading's full path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_target: Option<String>,
    /// section: every heading path that matched, when several did (the first is read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<String>>,
    /// section heading or block: its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_text: Option<String>,
    /// section frontmatter: the field's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub value_json: Option<Value>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Stat {
    /// Epoch milliseconds (the server keeps no birth time: when the path last came into being).
    pub ctime: i64,
    pub mtime: i64,
    pub size: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LinkOut {
    pub target: String,
    /// wikilink or markdown.
    #[serde(rename = "type")]
    pub kind: String,
}

impl Tool for ObsidianGetNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_get_note",
            "Get an Obsidian note",
            "Reads a note by path or periodic date. format content is the markdown; full adds frontmatter, tags and stat \
             (includeLinks: its outgoing links); document-map lists headings (\"A::B\"), blocks and frontmatter fields to \
             target edits; section (with section) reads one heading's subtree, block or field.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let path = resolve_target(ctx, &input.vault, &input.target).await?;
        if input.format == Projection::Section && input.section.is_none() {
            return Err(refuse(ErrorCode::ValidationError, "section_required", "format section needs section")
                .detail("field", "section"));
        }
        let read = call(
            ctx,
            "read_note",
            json!({"vault": input.vault, "path": path, "format": "full", "response_format": "detailed"}),
        )
        .await?;
        let path = read["path"].as_str().unwrap_or(&path).to_string();
        let text = read["content"].as_str().unwrap_or_default().to_string();
        let mut out = Projected {
            format: serde_json::to_value(input.format)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            path,
            ..Projected::default()
        };
        match input.format {
            Projection::Content => out.content = Some(text),
            Projection::Full => {
                let note = otc_parser::parse(&text);
                out.frontmatter = Some(otc_kernel::reading::frontmatter_map(&text).unwrap_or_default());
                out.tags = Some(
                    read["tags"]
                        .as_array()
                        .map(|t| t.iter().filter_map(|t| t.as_str().map(str::to_string)).collect())
                        .unwrap_or_default(),
                );
                let size = read["stat"]["size"].as_i64().unwrap_or(text.len() as i64);
                let mtime = read["stat"]["mtime"]
                    .as_str()
                    .and_then(|m| chrono::DateTime::parse_from_rfc3339(m).ok())
                    .map_or(0, |m| m.timestamp_millis());
                out.stat = Some(Stat { ctime: mtime, mtime, size });
                if input.include_links.unwrap_or(false) {
                    out.outgoing_links = Some(
                        note.links
                            .iter()
                            .filter(|l| l.kind != otc_parser::LinkKind::Property && !l.target.is_empty())
                            .filter(|l| !is_external(&l.target))
                            .map(|l| LinkOut {
                                target: l.target.clone(),
                                kind: if l.wiki { "wikilink" } else { "markdown" }.to_string(),
                            })
                            .collect(),
                    );
                }
                out.content = Some(text);
            }
            Projection::DocumentMap => {
                let note = otc_parser::parse(&text);
                out.headings = Some(heading_paths(&note).into_iter().map(|h| h.path).collect());
                out.blocks = Some(note.blocks.iter().map(|b| b.id.clone()).collect());
                out.frontmatter_fields = Some(super::frontmatter_keys(&text));
            }
            Projection::Section => {
                let section = input.section.clone().unwrap_or_else(|| unreachable!("checked above"));
                read_section(&text, &section, &mut out)?;
                out.section = Some(section);
            }
        }
        Ok(Output { result: out })
    }
}

/// A `scheme:` URL (`https:`, `mailto:`, `obsidian:`): not a note of the vault.
fn is_external(target: &str) -> bool {
    let scheme = target.split(':').next().unwrap_or_default();
    target.contains(':')
        && scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// One section's value into `out`; section_missing when the note has none such.
fn read_section(text: &str, section: &Section, out: &mut Projected) -> Result<(), ToolError> {
    // Not found, as the other server answers a read of a missing section.
    let missing = || {
        let err = super::section_missing(section);
        let mut found = ToolError::with_message(ErrorCode::NotFound, err.message.clone());
        found.details = err.details;
        super::reason(found.with_hints(super::SECTION_HINTS), "section_missing")
    };
    let note = otc_parser::parse(text);
    match section.kind {
        SectionKind::Heading => {
            let headings = heading_paths(&note);
            let (found, candidates) = match find_heading(&headings, &section.target) {
                HeadingMatch::One(h) => (h, None),
                HeadingMatch::Ambiguous(paths) => {
                    let first = headings.iter().find(|h| h.path == paths[0]).ok_or_else(missing)?;
                    (first, Some(paths))
                }
                HeadingMatch::Missing => return Err(missing()),
            };
            let target =
                otc_edit::anchor::Target::Heading { heading: found.text.clone(), occurrence: Some(found.occurrence) };
            let at = otc_edit::anchor::locate(text, &note, &target).map_err(|_| missing())?;
            out.value_text = Some(text[at.range].trim_end_matches(['\n', '\r']).to_string());
            out.section_target = Some(found.path.clone());
            out.candidates = candidates;
        }
        SectionKind::Block => {
            let id = section.target.trim().trim_start_matches('^').to_string();
            let target = otc_edit::anchor::Target::Block { id: id.clone() };
            let at = otc_edit::anchor::locate(text, &note, &target).map_err(|_| missing())?;
            // The paragraph the id closes: back to a blank line or a heading (never into the
            // frontmatter).
            let mut start = at.range.start;
            while start > note.body_start {
                let prev_end = start - 1;
                let prev_start = text[..prev_end].rfind('\n').map_or(0, |i| i + 1);
                let line = text[prev_start..prev_end].trim_end_matches('\r');
                if line.trim().is_empty() || line.trim_start().starts_with('#') {
                    break;
                }
                start = prev_start;
            }
            out.value_text = Some(text[start..at.range.end].trim_end_matches(['\n', '\r']).to_string());
            out.section_target = Some(id);
        }
        SectionKind::Frontmatter => {
            let field = section.target.trim();
            let value =
                otc_kernel::reading::frontmatter_map(text).and_then(|f| f.get(field).cloned()).ok_or_else(missing)?;
            out.value_json = Some(value);
            out.section_target = Some(field.to_string());
        }
    }
    Ok(())
}
