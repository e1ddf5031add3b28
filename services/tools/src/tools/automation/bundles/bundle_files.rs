use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::automation::bundles::{Bundle, DEFAULT_BUNDLE_BYTES, Layout, MAX_BUNDLE_BYTES, Part};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool, writing};

pub struct BundleFiles;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// In order; 1 to 200.
    pub paths: Vec<String>,
    /// 1,000 to 900,000 (default 200,000).
    #[serde(default)]
    pub max_bytes: Option<u32>,
    #[serde(default)]
    pub include_frontmatter: Option<bool>,
    #[serde(default)]
    pub format: Option<Layout>,
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
    /// Some paths did not fit the budget (they are in not_included).
    pub truncated: bool,
    /// Paths that are missing or that you cannot read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_paths: Vec<String>,
    /// Paths that did not fit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_included: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<Part>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<usize>,
}

impl Tool for BundleFiles {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Bulk),
        scopes: &["read:context"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "bundle_files",
            "Pack notes into one text",
            "Packs notes into one text for a model's context, within a byte budget.",
            Domain::Automation,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        otc_kernel::reading::bounded(Some(input.paths.len() as u32), 1, 1..=200, "paths")?;
        let budget = otc_kernel::reading::bounded(
            input.max_bytes,
            DEFAULT_BUNDLE_BYTES,
            1_000..=MAX_BUNDLE_BYTES as u32,
            "max_bytes",
        )?;
        let mut bundle =
            Bundle::new(input.format.unwrap_or_default(), input.include_frontmatter.unwrap_or(true), budget);
        let (mut missing_paths, mut not_included) = (Vec::new(), Vec::new());
        for path in &input.paths {
            if otc_vault::check_path(path).is_err() || !view.can_read(path) {
                missing_paths.push(path.clone());
                continue;
            }
            match writing::current(ctx, view.vault.id, path).await? {
                None => missing_paths.push(path.clone()),
                Some(entry) => {
                    let bytes = writing::blob(ctx, &entry.hash).await?;
                    if !bundle.add(path, &String::from_utf8_lossy(&bytes)) {
                        not_included.push(path.clone());
                    }
                }
            }
        }
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        Ok(Output {
            vault: view.vault.name.clone(),
            file_count: bundle.parts.len(),
            truncated: !not_included.is_empty(),
            total_bytes: detailed.then_some(bundle.text.len()),
            files: detailed.then(|| bundle.parts.clone()),
            bundle: bundle.text,
            missing_paths,
            not_included,
        })
    }
}
