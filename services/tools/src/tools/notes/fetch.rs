use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::citations::{note_title, note_uri, parse_result_id};
use otc_kernel::reading::{Content, View, not_found, read_content};
use otc_kernel::{CallContext, Tool};

pub struct Fetch;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// obsidian-tc://<vault>/<path>
    pub id: String,
}

/// The knowledge-connector shape: { id, title, text, url, metadata }.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub id: String,
    pub title: String,
    /// The whole note, frontmatter included.
    pub text: String,
    pub url: String,
    pub metadata: Metadata,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Metadata {
    pub vault: String,
    pub path: String,
    pub content_hash: String,
    pub size: i64,
    pub mtime: String,
    pub tags: Vec<String>,
}

impl Tool for Fetch {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        essentials: true,
        whole_note_reader: true,
        advertise_output_schema: false,
        response_format: Format::Fixed { why: "knowledge-connector contract: the whole note is the payload" },
        ..ToolSpec::base("fetch", "Fetch a note", "A whole note by a search hit's id, with its url.", Domain::Notes)
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let (vault, path) = parse_result_id(&input.id)?;
        let view = View::open(ctx, &vault).await?;
        if otc_store::FileKind::of_path(&path) != otc_store::FileKind::Note {
            return Err(not_found(&path));
        }
        let Content { text, content_hash, entry } = read_content(ctx, &view, &path).await?;
        if entry.size as u64 > ctx.services().config.governor.max_response_bytes {
            return Err(ToolError::with_message(
                ErrorCode::Overflow,
                "the note is larger than the response ceiling; read it in parts with read_note's anchor",
            )
            .detail("bytes", entry.size)
            .detail("limit", ctx.services().config.governor.max_response_bytes));
        }
        let note = otc_kernel::memory::parse_note(&text)?;
        let mut seen = std::collections::HashSet::new();
        let tags = note.tags.iter().filter(|t| seen.insert(t.name.to_lowercase())).map(|t| t.name.clone()).collect();
        let uri = note_uri(&view.vault.name, &path);
        Ok(Output {
            id: uri.clone(),
            title: note_title(&path).to_string(),
            text,
            url: uri,
            metadata: Metadata {
                vault: view.vault.name.clone(),
                path,
                content_hash,
                size: entry.size,
                mtime: entry.mtime.to_rfc3339(),
                tags,
            },
        })
    }
}
