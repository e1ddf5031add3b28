use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::links::outgoing::{LinkView, view};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, not_found, page, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct GetBacklinks;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// The note or attachment linked to.
    pub path: String,
    #[serde(default)]
    pub limit: Option<u32>,
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
    pub path: String,
    /// In (source note, position) order.
    pub backlinks: Vec<LinkView>,
    /// Pass as cursor for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Tool for GetBacklinks {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "get_backlinks",
            "Links to a note",
            "Lists backlinks: the links into a note from other notes (body links, embeds, property links).",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let v = ctx.view(&input.vault).await?;
        v.readable_path(&input.path)?;
        let limit = page_limit(input.limit)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let after: Option<(String, i32)> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let mut tx = ctx.begin().await?;
        if tx.file(v.vault.id, &input.path).await?.is_none() {
            return Err(not_found(&input.path));
        }
        let rows = tx
            .backlinks(
                v.vault.id,
                &input.path,
                v.readable(),
                after.as_ref().map(|(p, o)| (p.as_str(), *o)),
                limit as i64 + 1,
            )
            .await?;
        let sources: Vec<String> = rows.iter().map(|(_, s, _)| s.clone()).collect();
        let body_lines = tx.body_lines(v.vault.id, &sources).await?;
        tx.commit().await?;
        let more = rows.len() > limit;
        let items: Vec<((String, i32), LinkView)> = rows
            .into_iter()
            .take(limit)
            .map(|(ord, source, link)| {
                let mut lv = view(&link, body_lines.get(&source).copied().unwrap_or(0), detailed);
                if !detailed {
                    lv.heading = None;
                }
                lv.source_path = Some(source.clone());
                ((source, ord), lv)
            })
            .collect();
        let (items, next_cursor) = page(ctx.tool, items, more, PAGE_BUDGET_BYTES, |(k, _)| k.clone());
        Ok(Output {
            vault: v.vault.name.clone(),
            path: input.path,
            backlinks: items.into_iter().map(|(_, lv)| lv).collect(),
            next_cursor,
        })
    }
}
