use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_formats::canvas;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::structured::canvas::check_canvas_path;
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, encode_cursor, fit, page_limit};
use otc_kernel::{CallContext, Tool, writing};

pub struct QueryCanvas;

/// The most canvases one call reads.
const MAX_CANVASES: i64 = 500;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Default: every canvas under root.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    #[serde(default)]
    pub root: Option<String>,
    /// All must match; type: text|file|link|group; text: case-insensitive substring; in_group: a
    /// group's id.
    #[serde(default)]
    pub filter: Option<Filter>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub color: Option<String>,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub in_group: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub matches: Vec<Match>,
    /// Matching nodes in all the canvases read.
    pub total: usize,
    /// Canvases that could not be read as JSON Canvas, by path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Match {
    pub path: String,
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl Tool for QueryCanvas {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:canvas"],
        response_format: Format::Fixed { why: "the matching nodes are the payload, with their recomputed total" },
        core: false,
        ..ToolSpec::base(
            "query_canvas",
            "Find nodes in canvases",
            "Finds canvas nodes by type, text, color, shown file or group.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let limit = page_limit(input.limit)?;
        let skip: usize = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?.unwrap_or(0);
        let paths = match input.paths {
            Some(paths) => {
                for path in &paths {
                    check_canvas_path(path, "paths")?;
                    view.readable_path(path)?;
                }
                paths
            }
            None => {
                let folder = view.folder_prefix(input.root.as_deref())?;
                let ext = [".canvas".to_string()];
                let mut tx = ctx.begin().await?;
                let rows = tx
                    .list_files(view.vault.id, &folder, true, Some(&ext), view.readable(), None, MAX_CANVASES)
                    .await?;
                tx.commit().await?;
                rows.into_iter().map(|r| r.path).collect()
            }
        };
        let f = input.filter.unwrap_or_default();
        let filter = canvas::Filter { kind: f.kind, text: f.text, color: f.color, file: f.file, in_group: f.in_group };
        let mut all = Vec::new();
        let mut unreadable = Vec::new();
        for path in paths {
            let Some((_, text)) = writing::current_text(ctx, view.vault.id, &path).await? else {
                return Err(otc_kernel::reading::not_found(&path));
            };
            let Ok(parsed) = canvas::parse(&text) else {
                unreadable.push(path);
                continue;
            };
            all.extend(canvas::query(&parsed, &filter).into_iter().map(|m| Match {
                path: path.clone(),
                id: m.id,
                kind: m.kind,
                text: m.text,
                file: m.file,
                url: m.url,
                label: m.label,
            }));
        }
        let total = all.len();
        let rest: Vec<Match> = all.into_iter().skip(skip).collect();
        let more = rest.len() > limit;
        let (matches, cut) = fit(rest.into_iter().take(limit).collect(), PAGE_BUDGET_BYTES);
        let next_cursor = (more || cut).then(|| encode_cursor(ctx.tool, &(skip + matches.len())));
        Ok(Output { vault: view.vault.name.clone(), matches, total, unreadable, next_cursor })
    }
}
