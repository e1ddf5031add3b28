use base64::Engine;
use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::FileKind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::writing;
use otc_kernel::{CallContext, Tool};

pub struct WriteAttachment;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// The bytes, base64.
    pub content: String,
    /// Checked against the extension.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Replace an existing file (trashed; needs confirmation).
    #[serde(default)]
    pub overwrite: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub size: i64,
    pub content_hash: String,
    pub created: bool,
    /// Where the replaced file went, when one was replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trashed_to: Option<String>,
}

impl Tool for WriteAttachment {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:attachments"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        core: false,
        response_format: Format::Fixed { why: "a write acknowledgement: the path, size and hash" },
        ..ToolSpec::base(
            "write_attachment",
            "Write an attachment",
            "Writes a binary file (image, PDF ...) from base64. A .md note goes through write_note.",
            Domain::Attachments,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        if FileKind::of_path(&input.path) == FileKind::Note {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "a .md path is a note; use write_note")
                .detail("field", "path"));
        }
        let bytes = base64::engine::general_purpose::STANDARD.decode(input.content.trim()).map_err(|_| {
            ToolError::with_message(ErrorCode::InvalidInput, "content is not base64").detail("field", "content")
        })?;
        if let Some(mime) = &input.mime_type {
            let expected = crate::tools::attachments::get_attachment::mime_of(&input.path);
            if expected != "application/octet-stream" && !mime.eq_ignore_ascii_case(expected) {
                return Err(ToolError::with_message(
                    ErrorCode::InvalidInput,
                    format!("mime_type does not match the file's extension (which means {expected})"),
                )
                .detail("field", "mime_type"));
            }
        }
        let view = ctx.view(&input.vault).await?;
        writing::check_write(&view, &input.path, "path")?;
        let now = writing::current(ctx, view.vault.id, &input.path).await?;
        let overwrite = input.overwrite.unwrap_or(false);
        writing::check_destination(ctx, &view, &input.path, "path", now.as_ref(), overwrite, None, true).await?;
        let mut changes = Vec::new();
        let mut trashed_to = None;
        if let Some(old) = &now {
            let trash = writing::trash_change(ctx, &view, &input.path, old).await?;
            trashed_to = Some(trash.path.clone());
            changes.push(trash);
        }
        let (hash, size) = writing::put_content(ctx, bytes).await?;
        changes.insert(0, writing::put(&input.path, writing::expect_of(now.as_ref()), hash, size));
        writing::commit(ctx, &view, &changes, None).await?.map_err(|stale| writing::stale_error(&view, &stale))?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            size,
            content_hash: hex::encode(hash),
            created: now.is_none(),
            trashed_to,
        })
    }
}
