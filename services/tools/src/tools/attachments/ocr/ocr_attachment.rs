use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::attachments::ocr;
use otc_kernel::reading::not_found;
use otc_kernel::{CallContext, Tool, writing};

pub struct OcrAttachment;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// An image: png, jpg, tiff, bmp, gif, webp (not PDF).
    pub path: String,
    /// Read again even if cached.
    #[serde(default)]
    pub force: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// The text found ("" when none).
    pub text: String,
    /// Whether it came from the cache (the same image content was read before).
    pub cached: bool,
    /// How long the reading took (0 when cached).
    pub duration_ms: u64,
}

impl Tool for OcrAttachment {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Model),
        scopes: &["read:ocr"],
        response_format: Format::Fixed { why: "the extracted text and the cache and duration fields" },
        core: false,
        ..ToolSpec::base(
            "ocr_attachment",
            "Read the text in an image",
            "Reads the text in an image attachment with OCR (Tesseract); the text is cached.",
            Domain::Attachments,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        ocr::check_image(&input.path, "path")?;
        let entry = writing::current(ctx, view.vault.id, &input.path).await?.ok_or_else(|| not_found(&input.path))?;
        let found = ocr::recognize(ctx, &entry.hash, input.force.unwrap_or(false)).await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            text: found.text,
            cached: found.cached,
            duration_ms: found.duration_ms,
        })
    }
}
