use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::automation::bundles::{Bundle, DEFAULT_BUNDLE_BYTES, Layout, MAX_BUNDLE_BYTES, Part};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{decode_cursor, encode_cursor};
use otc_kernel::{CallContext, Tool, writing};

pub struct BundleFolder;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// "" for the whole vault.
    pub root: String,
    /// 1 to 1000 (default 100).
    #[serde(default)]
    pub max_files: Option<u32>,
    /// 1000 to 900000 (default 200000).
    #[serde(default)]
    pub max_bytes: Option<u32>,
    /// Default [".md"].
    #[serde(default)]
    pub extensions: Option<Vec<String>>,
    #[serde(default)]
    pub include_frontmatter: Option<bool>,
    #[serde(default)]
    pub format: Option<Layout>,
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
    pub bundle: String,
    pub file_count: usize,
    /// More files are left: send next_cursor for the next bundle.
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<Part>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

impl Tool for BundleFolder {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Bulk),
        scopes: &["read:context"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "bundle_folder",
            "Pack a folder into one text",
            "Packs a folder's notes into one text for a model's context.",
            Domain::Automation,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let folder = view.folder_prefix(Some(&input.root)).map_err(|e| e.detail("field", "root"))?;
        let max_files = otc_kernel::reading::bounded(input.max_files, 100, 1..=1000, "max_files")?;
        let budget = otc_kernel::reading::bounded(
            input.max_bytes,
            DEFAULT_BUNDLE_BYTES,
            1_000..=MAX_BUNDLE_BYTES as u32,
            "max_bytes",
        )?;
        let extensions: Vec<String> = input
            .extensions
            .unwrap_or_else(|| vec![".md".into()])
            .iter()
            .map(|e| format!(".{}", e.trim_start_matches('.').to_lowercase()))
            .collect();
        let after: Option<String> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let mut tx = ctx.begin().await?;
        let rows = tx
            .list_files(
                view.vault.id,
                &folder,
                true,
                Some(&extensions),
                view.readable(),
                after.as_deref(),
                max_files as i64 + 1,
            )
            .await?;
        tx.commit().await?;
        let mut bundle =
            Bundle::new(input.format.unwrap_or_default(), input.include_frontmatter.unwrap_or(true), budget);
        let mut stopped = rows.len() > max_files;
        for row in rows.iter().take(max_files) {
            // Gone since the listing: nothing to pack.
            let Some((_, text)) = writing::current_text(ctx, view.vault.id, &row.path).await? else { continue };
            if !bundle.add(&row.path, &text) {
                stopped = true;
                break;
            }
        }
        let next_cursor = stopped.then(|| encode_cursor(ctx.tool, &bundle.parts.last().map(|p| p.path.clone())));
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        Ok(Output {
            vault: view.vault.name.clone(),
            file_count: bundle.parts.len(),
            truncated: stopped,
            next_cursor,
            total_bytes: detailed.then_some(bundle.text.len()),
            files: detailed.then(|| bundle.parts.clone()),
            root: detailed.then(|| input.root.clone()),
            bundle: bundle.text,
        })
    }
}
