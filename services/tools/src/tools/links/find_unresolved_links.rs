use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::links::outgoing::{LinkView, Warning, view, warnings};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, page, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct FindUnresolvedLinks;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Only links in notes under this folder.
    #[serde(default)]
    pub folder: Option<String>,
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
    /// In (source note, position) order.
    pub unresolved: Vec<LinkView>,
    /// Pass as cursor for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// On the first page, notes (up to 20) whose frontmatter does not parse: they have no
    /// property links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<Warning>>,
}

impl Tool for FindUnresolvedLinks {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Scan),
        scopes: &["read:notes"],
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "find_unresolved_links",
            "Unresolved links",
            "Lists unresolved links (body, embed, property): targets missing from the vault or unreadable to you.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let v = ctx.view(&input.vault).await?;
        let folder = v.folder_prefix(input.folder.as_deref())?;
        let limit = page_limit(input.limit)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let after: Option<(String, i32)> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let mut tx = ctx.begin().await?;
        let rows = tx
            .unresolved_links(
                v.vault.id,
                &folder,
                v.readable(),
                after.as_ref().map(|(p, o)| (p.as_str(), *o)),
                limit as i64 + 1,
            )
            .await?;
        let sources: Vec<String> = rows.iter().map(|(_, s, _)| s.clone()).collect();
        let body_lines = tx.body_lines(v.vault.id, &sources).await?;
        let failures = if after.is_none() {
            tx.frontmatter_failures(v.vault.id, &folder, v.readable(), 20).await?
        } else {
            Vec::new()
        };
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
                lv.target = Some(link.target.clone());
                lv.source_path = Some(source.clone());
                ((source, ord), lv)
            })
            .collect();
        let warnings = warnings(failures);
        let warnings_size = serde_json::to_vec(&warnings).map_or(0, |v| v.len());
        let (items, next_cursor) =
            page(ctx.tool, items, more, PAGE_BUDGET_BYTES.saturating_sub(warnings_size), |(k, _)| k.clone());
        Ok(Output {
            vault: v.vault.name.clone(),
            unresolved: items.into_iter().map(|(_, lv)| lv).collect(),
            next_cursor,
            warnings,
        })
    }
}
