use std::collections::HashMap;

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{decode_cursor, encode_cursor};
use otc_kernel::resources::{self, MIME_TYPE};
use otc_kernel::{CallContext, Tool};

pub struct ReadResources;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub uris: Vec<String>,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// One item per URI on this page, in request order.
    pub resources: Vec<Item>,
    /// Call again with the same uris and this cursor for the rest; absent when done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Item {
    pub ok: bool,
    pub uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// When ok is false: why (note_not_found for missing and hidden alike; overflow for a note
    /// that can never fit a page).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ItemError>,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vault: Option<String>,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// Detailed only: bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// Detailed only: RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemError {
    pub code: String,
    pub message: String,
}

fn failed(uri: &str, code: &str, message: String) -> Item {
    Item {
        ok: false,
        uri: uri.to_string(),
        text: None,
        error: Some(ItemError { code: code.to_string(), message }),
        vault: None,
        path: None,
        mime_type: None,
        content_hash: None,
        size: None,
        mtime: None,
    }
}

impl Tool for ReadResources {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::LargeRead),
        scopes: &["read:notes"],
        whole_note_reader: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "read_resources",
            "Read note resources",
            "Reads up to 100 note URIs (obsidian-tc://<vault>/<path>), across vaults, in order; a URI that cannot \
             be read gets ok false and its error without failing the rest.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        if input.uris.is_empty() || input.uris.len() > 100 {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "uris holds 1 to 100 URIs").detail("field", "uris")
            );
        }
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let start: usize = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?.unwrap_or(0);
        if start >= input.uris.len() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "cursor is not one this tool handed out")
                .detail("field", "cursor"));
        }
        // The governor's ceiling, less room for the envelope.
        let budget = (ctx.services().config.governor.max_response_bytes as usize).saturating_sub(4_096);
        let mut used = 0;
        let mut views = HashMap::new();
        let mut out = Output { resources: Vec::new(), next_cursor: None };
        for (i, uri) in input.uris.iter().enumerate().skip(start) {
            let item = match resources::read(ctx, &mut views, uri).await {
                Ok(note) => Item {
                    ok: true,
                    uri: note.uri.clone(),
                    text: Some(if detailed { note.text.clone() } else { note.body().to_string() }),
                    error: None,
                    vault: detailed.then(|| note.vault.clone()),
                    path: detailed.then(|| note.path.clone()),
                    mime_type: detailed.then(|| MIME_TYPE.to_string()),
                    content_hash: detailed.then(|| note.content_hash.clone()),
                    size: detailed.then_some(note.size),
                    mtime: detailed.then(|| note.mtime.to_rfc3339()),
                },
                Err(e) if e.code == ErrorCode::InternalError => return Err(e),
                Err(e) => failed(uri, e.code.as_str(), e.message),
            };
            let size = serde_json::to_vec(&item).map(|v| v.len()).unwrap_or(usize::MAX);
            if size > budget {
                let message = format!("{size} bytes can never fit the {budget}-byte response budget");
                out.resources.push(failed(uri, ErrorCode::Overflow.as_str(), message));
                continue;
            }
            if used + size > budget {
                out.next_cursor = Some(encode_cursor(ctx.tool, &i));
                break;
            }
            used += size;
            out.resources.push(item);
        }
        Ok(out)
    }
}
