use futures::StreamExt;
use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::attachments::ocr;
use otc_kernel::{CallContext, Tool, writing};

pub struct OcrBulk;

/// The most images one call reads.
const MAX_IMAGES: usize = 50;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    #[serde(default)]
    pub root: Option<String>,
    #[serde(default)]
    pub extensions: Option<Vec<String>>,
    /// Ignore the cache.
    #[serde(default)]
    pub force: Option<bool>,
    /// 1 to 4 (default 2).
    #[serde(default)]
    pub max_concurrent: Option<u32>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// One per image, in path order.
    pub results: Vec<Item>,
    pub succeeded: usize,
    pub failed: usize,
    /// More images matched than one call reads (50): read the rest with paths.
    pub truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Item {
    pub path: String,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached: Option<bool>,
    /// The error's code, when this image failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Tool for OcrBulk {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Bulk),
        scopes: &["read:ocr"],
        response_format: Format::Fixed { why: "per-file batch results" },
        core: false,
        ..ToolSpec::base(
            "ocr_bulk",
            "Read the text in many images",
            "Reads the text in up to 50 images with OCR (paths, or the images under root); a text or error each.",
            Domain::Attachments,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let concurrent = otc_kernel::reading::bounded(input.max_concurrent, 2, 1..=4, "max_concurrent")?;
        let mut paths = match input.paths {
            Some(paths) => {
                for path in &paths {
                    view.readable_path(path).map_err(|e| e.detail("field", "paths"))?;
                    ocr::check_image(path, "paths")?;
                }
                paths
            }
            None => {
                let folder = view.folder_prefix(input.root.as_deref())?;
                let extensions: Vec<String> = match input.extensions {
                    Some(list) => {
                        list.iter().map(|e| format!(".{}", e.trim_start_matches('.').to_lowercase())).collect()
                    }
                    None => ocr::IMAGE_EXTENSIONS.iter().map(|e| e.to_string()).collect(),
                };
                if let Some(bad) = extensions.iter().find(|e| !ocr::IMAGE_EXTENSIONS.contains(&e.as_str())) {
                    return Err(ToolError::with_message(
                        ErrorCode::InvalidInput,
                        format!("OCR does not read {bad} files"),
                    )
                    .detail("field", "extensions"));
                }
                let mut tx = ctx.begin().await?;
                let rows = tx
                    .list_files(
                        view.vault.id,
                        &folder,
                        true,
                        Some(&extensions),
                        view.readable(),
                        None,
                        MAX_IMAGES as i64 + 1,
                    )
                    .await?;
                tx.commit().await?;
                rows.into_iter().map(|r| r.path).collect()
            }
        };
        let truncated = paths.len() > MAX_IMAGES;
        paths.truncate(MAX_IMAGES);
        let force = input.force.unwrap_or(false);
        let results: Vec<Item> = futures::stream::iter(paths)
            .map(|path| async move {
                let read = async {
                    let entry = writing::current(ctx, view.vault.id, &path)
                        .await?
                        .ok_or_else(|| otc_kernel::reading::not_found(&path))?;
                    ocr::recognize(ctx, &entry.hash, force).await
                };
                match read.await {
                    Ok(found) => {
                        Item { path, ok: true, text: Some(found.text), cached: Some(found.cached), error: None }
                    }
                    Err(e) => {
                        Item { path, ok: false, text: None, cached: None, error: Some(e.code.as_str().to_string()) }
                    }
                }
            })
            .buffered(concurrent)
            .collect()
            .await;
        let succeeded = results.iter().filter(|r| r.ok).count();
        Ok(Output { vault: view.vault.name.clone(), failed: results.len() - succeeded, succeeded, results, truncated })
    }
}
