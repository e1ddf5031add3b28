use std::collections::{HashMap, HashSet};

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::writing;
use otc_kernel::{CallContext, Tool};

pub struct BulkCreateNotes;

/// The most notes one call creates.
const MAX_ITEMS: usize = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub items: Vec<Item>,
    /// Default true: one failing item refuses the whole batch. false: the rest are created and
    /// each failure is reported.
    #[serde(default)]
    pub stop_on_first_error: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Item {
    pub path: String,
    pub content: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub created: usize,
    pub failed: usize,
    /// Per item, in order.
    pub results: Vec<ItemResult>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemResult {
    pub path: String,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// The error code, when this item failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Tool for BulkCreateNotes {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Bulk),
        scopes: &["write:notes", "bulk:notes"],
        scope_class: otc_catalog::ScopeClass::Bulk,
        hitl: Sometimes::Always,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "bulk_create_notes",
            "Create many notes",
            "Creates many new notes in one batch, all or nothing by default, with a result per item. Needs \
             confirmation.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        if input.items.is_empty() || input.items.len() > MAX_ITEMS {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("items holds 1 to {MAX_ITEMS} notes"),
            )
            .detail("field", "items"));
        }
        let view = ctx.view(&input.vault).await?;
        let strict = input.stop_on_first_error.unwrap_or(true);
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        // Check every item first.
        let mut seen = HashSet::new();
        let mut keys = HashMap::new();
        let mut verdicts: Vec<Result<(), ToolError>> = Vec::with_capacity(input.items.len());
        for item in &input.items {
            let verdict = async {
                writing::check_write(&view, &item.path, "path")?;
                writing::check_new_name(ctx, &view, &item.path, "path").await?;
                if !seen.insert(item.path.clone()) {
                    return Err(ToolError::with_message(ErrorCode::InvalidInput, "this path appears twice in items"));
                }
                if let Some(other) = keys.insert(otc_vault::clash_key(&item.path), item.path.clone()) {
                    return Err(ToolError::with_message(
                        ErrorCode::Conflict,
                        "another item's path differs from this one only by letter case or Unicode normalization; \
                         macOS and Windows cannot keep both",
                    )
                    .detail("field", "path")
                    .detail("clash", "file")
                    .detail("existing", other));
                }
                if writing::current(ctx, view.vault.id, &item.path).await?.is_some() {
                    return Err(ToolError::with_message(ErrorCode::NoteExists, "a note already exists at that path"));
                }
                Ok(())
            }
            .await;
            verdicts.push(verdict);
        }
        let failures = verdicts.iter().filter(|v| v.is_err()).count();
        if strict && let Some((i, Err(e))) = verdicts.iter().enumerate().find(|(_, v)| v.is_err()) {
            return Err(ToolError::with_message(
                e.code,
                format!("item {i} cannot be created ({}); nothing was written", e.message),
            )
            .detail("index", i)
            .detail("path", input.items[i].path.clone())
            .detail("failed", failures));
        }
        if failures < input.items.len() {
            writing::confirm(ctx, true, "it creates many notes").await?;
        }
        let mut changes = Vec::new();
        let mut results = Vec::with_capacity(input.items.len());
        for (item, verdict) in input.items.into_iter().zip(verdicts) {
            match verdict {
                Ok(()) => {
                    let (hash, size) = writing::put_content(ctx, item.content.into_bytes()).await?;
                    changes.push(writing::put(&item.path, otc_store::Expect::NewName, hash, size));
                    results.push(ItemResult {
                        path: item.path,
                        ok: true,
                        content_hash: Some(hex::encode(hash)),
                        size: detailed.then_some(size),
                        code: None,
                        message: None,
                    });
                }
                Err(e) => results.push(ItemResult {
                    path: item.path,
                    ok: false,
                    content_hash: None,
                    size: None,
                    code: Some(e.code.as_str().to_string()),
                    message: Some(e.message),
                }),
            }
        }
        if !changes.is_empty() {
            writing::commit(ctx, &view, &changes, None).await?.map_err(|stale| {
                // A note appeared at one of the paths meanwhile: nothing was written.
                ToolError::with_message(
                    ErrorCode::NoteExists,
                    "a note appeared at one of the paths meanwhile; nothing was written",
                )
                .detail("paths", stale.paths.into_iter().filter(|p| view.can_read(p)).collect::<Vec<_>>())
            })?;
        }
        Ok(Output { vault: view.vault.name.clone(), created: changes.len(), failed: failures, results })
    }
}
