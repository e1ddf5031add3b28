use std::collections::BTreeSet;

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_edit::frontmatter::{FrontmatterOp, edit_frontmatter};
use otc_errors::{ErrorCode, ToolError};
use otc_store::Expect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::not_found;
use otc_kernel::writing;
use otc_kernel::{CallContext, Tool};

pub struct BulkSetProperty;

const MAX_PATHS: usize = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub paths: Vec<String>,
    /// A top-level property.
    pub key: String,
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub value: Value,
    /// Default true: one failing note refuses all; false: the rest change, failures reported.
    #[serde(default)]
    pub stop_on_first_error: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub key: String,
    pub changed: usize,
    /// Notes that already had the value.
    pub unchanged: usize,
    pub failed: usize,
    /// Per note (detailed, or any note that failed).
    pub results: Vec<ItemResult>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemResult {
    pub path: String,
    /// changed, unchanged or failed.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Tool for BulkSetProperty {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Bulk),
        scopes: &["write:notes", "bulk:notes"],
        scope_class: otc_catalog::ScopeClass::Bulk,
        hitl: Sometimes::Always,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "bulk_set_property",
            "Set a property on many notes",
            "Sets one frontmatter property on many notes in one batch. Needs confirmation.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let paths: Vec<String> = input.paths.iter().cloned().collect::<BTreeSet<_>>().into_iter().collect();
        if paths.is_empty() || paths.len() > MAX_PATHS {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("paths holds 1 to {MAX_PATHS} notes"),
            )
            .detail("field", "paths"));
        }
        if input.key.trim().is_empty() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "key is empty").detail("field", "key"));
        }
        let view = ctx.view(&input.vault).await?;
        let strict = input.stop_on_first_error.unwrap_or(true);
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let mut replanned = false;
        loop {
            let mut results = Vec::with_capacity(paths.len());
            let mut changes = Vec::new();
            let mut failed = 0;
            for path in &paths {
                let planned = async {
                    writing::check_write(&view, path, "paths")?;
                    let (entry, text) =
                        writing::current_text(ctx, view.vault.id, path).await?.ok_or_else(|| not_found(path))?;
                    let op = FrontmatterOp::Set { key: &input.key, value: &input.value, nested: false };
                    Ok::<_, ToolError>((entry, edit_frontmatter(&text, op)?))
                }
                .await;
                match planned {
                    Ok((_, edited)) if !edited.changed => results.push(ItemResult {
                        path: path.clone(),
                        status: "unchanged".into(),
                        content_hash: None,
                        code: None,
                        message: None,
                    }),
                    Ok((entry, edited)) => {
                        let (hash, size) = writing::put_content(ctx, edited.text.into_bytes()).await?;
                        changes.push(writing::put(path, Expect::Hash(entry.hash), hash, size));
                        results.push(ItemResult {
                            path: path.clone(),
                            status: "changed".into(),
                            content_hash: Some(hex::encode(hash)),
                            code: None,
                            message: None,
                        });
                    }
                    Err(e) if strict => {
                        return Err(ToolError::with_message(e.code, format!("{}; nothing was written", e.message))
                            .detail("path", path.clone()));
                    }
                    Err(e) => {
                        failed += 1;
                        results.push(ItemResult {
                            path: path.clone(),
                            status: "failed".into(),
                            content_hash: None,
                            code: Some(e.code.as_str().into()),
                            message: Some(e.message),
                        });
                    }
                }
            }
            if !changes.is_empty() {
                writing::confirm(ctx, true, "it changes many notes").await?;
                match writing::commit(ctx, &view, &changes, None).await? {
                    Ok(_) => {}
                    Err(_) if !replanned => {
                        replanned = true;
                        continue;
                    }
                    Err(stale) => return Err(writing::stale_error(&view, &stale)),
                }
            }
            let changed = changes.len();
            let unchanged = results.iter().filter(|r| r.status == "unchanged").count();
            if !detailed {
                results.retain(|r| r.status == "failed");
            }
            return Ok(Output {
                vault: view.vault.name.clone(),
                key: input.key.clone(),
                changed,
                unchanged,
                failed,
                results,
            });
        }
    }
}
