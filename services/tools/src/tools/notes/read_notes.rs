use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{Content, decode_cursor, encode_cursor, read_content};
use otc_kernel::{CallContext, Tool};

pub struct ReadNotes;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub paths: Vec<String>,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// The notes that fit this page, in request order.
    pub notes: Vec<NoteOut>,
    /// Paths that could not be read, with why (note_not_found for missing and hidden alike;
    /// too_large for a note that can never fit a page).
    pub errors: Vec<PathError>,
    /// Call again with the same arguments and this cursor for the rest; absent when done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct NoteOut {
    pub path: String,
    pub body: String,
    pub content_hash: String,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Detailed only (absent when the note has none or it does not parse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Map<String, Value>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PathError {
    pub path: String,
    pub code: String,
    pub message: String,
}

impl Tool for ReadNotes {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::LargeRead),
        scopes: &["read:notes"],
        essentials: true,
        whole_note_reader: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "read_notes",
            "Read several notes",
            "Reads up to 100 notes in one call, in the order given; when they do not all fit, next_cursor gets \
             the rest.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        if input.paths.is_empty() || input.paths.len() > 100 {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "paths holds 1 to 100 paths").detail("field", "paths")
            );
        }
        let view = ctx.view(&input.vault).await?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let start: usize = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?.unwrap_or(0);
        if start >= input.paths.len() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "cursor is not one this tool handed out")
                .detail("field", "cursor"));
        }
        // The governor's ceiling, less room for the envelope.
        let budget = (ctx.services().config.governor.max_response_bytes as usize).saturating_sub(4_096);
        let mut used = 0;
        let mut out =
            Output { vault: view.vault.name.clone(), notes: Vec::new(), errors: Vec::new(), next_cursor: None };
        for (i, path) in input.paths.iter().enumerate().skip(start) {
            let note = match read_content(ctx, &view, path).await {
                Ok(Content { text, content_hash: hash, .. }) => {
                    let parsed = otc_parser::parse_head(&text);
                    let frontmatter = match parsed.frontmatter.and_then(|f| f.value) {
                        Some(Value::Object(map)) if detailed => Some(map),
                        _ => None,
                    };
                    NoteOut {
                        path: path.clone(),
                        body: text[parsed.body_start..].to_string(),
                        content_hash: hash,
                        content: detailed.then_some(text),
                        frontmatter,
                    }
                }
                Err(e) if e.code == ErrorCode::InternalError => return Err(e),
                Err(e) => {
                    out.errors.push(PathError { path: path.clone(), code: e.code.to_string(), message: e.message });
                    continue;
                }
            };
            let size = serde_json::to_vec(&note).map(|v| v.len()).unwrap_or(usize::MAX);
            if size > budget {
                out.errors.push(PathError {
                    path: path.clone(),
                    code: "too_large".into(),
                    message: format!(
                        "{size} bytes can never fit the {budget}-byte response budget; read it with read_note anchors"
                    ),
                });
                continue;
            }
            if used + size > budget {
                out.next_cursor = Some(encode_cursor(ctx.tool, &i));
                break;
            }
            used += size;
            out.notes.push(note);
        }
        Ok(out)
    }
}
