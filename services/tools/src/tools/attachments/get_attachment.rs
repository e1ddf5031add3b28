use base64::Engine;
use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::not_found;
use otc_kernel::{CallContext, Tool, internal};

pub struct GetAttachment;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    #[serde(default)]
    pub encoding: Option<Encoding>,
    /// Refuse larger files (default 10,000,000).
    #[serde(default)]
    pub max_bytes: Option<u64>,
    /// false: the description only, no bytes.
    #[serde(default)]
    pub include_content: Option<bool>,
    /// Also list the notes linking to it.
    #[serde(default)]
    pub include_references: Option<bool>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    Base64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub mime: String,
    pub size: i64,
    /// What the file is, in a sentence: type, pixel size for common images, file size.
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// base64 of the bytes (absent with include_content false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// include_references: notes that link to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub references: Option<Vec<String>>,
}

/// The MIME type of a file name.
pub fn mime_of(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "bmp" => "image/bmp",
        "avif" => "image/avif",
        "pdf" => "application/pdf",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "m4a" => "audio/mp4",
        "ogg" => "audio/ogg",
        "flac" => "audio/flac",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mov" => "video/quicktime",
        "canvas" | "json" => "application/json",
        "txt" => "text/plain",
        "csv" => "text/csv",
        _ => "application/octet-stream",
    }
}

/// Width and height of a PNG, GIF or JPEG, read from its header.
pub fn pixel_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() >= 24 {
        let w = u32::from_be_bytes(bytes[16..20].try_into().ok()?);
        let h = u32::from_be_bytes(bytes[20..24].try_into().ok()?);
        return Some((w, h));
    }
    if (bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a")) && bytes.len() >= 10 {
        return Some((
            u16::from_le_bytes([bytes[6], bytes[7]]).into(),
            u16::from_le_bytes([bytes[8], bytes[9]]).into(),
        ));
    }
    if bytes.starts_with(&[0xFF, 0xD8]) {
        let mut i = 2;
        while i + 9 < bytes.len() {
            if bytes[i] != 0xFF {
                return None;
            }
            let marker = bytes[i + 1];
            let len = u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]) as usize;
            if matches!(marker, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF) {
                let h = u16::from_be_bytes([bytes[i + 5], bytes[i + 6]]);
                let w = u16::from_be_bytes([bytes[i + 7], bytes[i + 8]]);
                return Some((w.into(), h.into()));
            }
            i += 2 + len;
        }
    }
    None
}

impl Tool for GetAttachment {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::LargeRead),
        scopes: &["read:attachments"],
        // The catalogue lists it in essentials but outside core; essentials is a subset of core
        // here, so it stays out of both.
        core: false,
        response_format: Format::Fixed {
            why: "the base64 bytes are the payload; MIME type, size and encoding describe them",
        },
        ..ToolSpec::base(
            "get_attachment",
            "Get an attachment",
            "Returns an attachment (image, PDF, audio) as base64 with MIME type, size and pixel size (PNG, GIF, JPEG).",
            Domain::Attachments,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let v = ctx.view(&input.vault).await?;
        v.readable_path(&input.path)?;
        if input.path.to_ascii_lowercase().ends_with(".md") {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "this is a note: read it with read_note")
                .detail("field", "path"));
        }
        let max_bytes = input.max_bytes.unwrap_or(10_000_000);
        let mut tx = ctx.begin().await?;
        let entry = tx.file(v.vault.id, &input.path).await?;
        let references = if input.include_references == Some(true) {
            Some(tx.referencing_notes(v.vault.id, &input.path, v.readable(), 1_000).await?)
        } else {
            None
        };
        tx.commit().await?;
        let entry = entry.ok_or_else(|| not_found(&input.path))?;
        let include = input.include_content != Some(false);
        if include && entry.size as u64 > max_bytes {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!(
                    "the file is {} bytes, over max_bytes; pass include_content: false for its description",
                    entry.size
                ),
            )
            .detail("field", "max_bytes")
            .detail("size", entry.size)
            .detail("max_bytes", max_bytes));
        }
        let bytes = ctx
            .services()
            .blobs
            .get_blob(ctx.caller.tenant_id, &entry.hash)
            .await
            .map_err(|e| internal(ctx.tool, &e))?;
        let mime = mime_of(&input.path);
        let dims = pixel_size(&bytes);
        let description = match dims {
            Some((w, h)) => format!("{mime} image, {w}×{h} pixels, {} bytes", entry.size),
            None => format!("{mime}, {} bytes", entry.size),
        };
        Ok(Output {
            vault: v.vault.name.clone(),
            path: input.path,
            mime: mime.to_string(),
            size: entry.size,
            description,
            width: dims.map(|d| d.0),
            height: dims.map(|d| d.1),
            content: include.then(|| base64::engine::general_purpose::STANDARD.encode(&bytes)),
            encoding: include.then(|| "base64".to_string()),
            references,
        })
    }
}
