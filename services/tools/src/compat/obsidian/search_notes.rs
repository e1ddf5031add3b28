//! obsidian_search_notes: text search with context windows, or a JSONLogic predicate, paged by
//! opaque cursors.

use base64::Engine;
use futures::{StreamExt, TryStreamExt};
use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{call, refuse};
use otc_kernel::{CallContext, Tool};

pub struct ObsidianSearchNotes;

/// Hits per page by default, and at most.
const PAGE: usize = 50;
const PAGE_MAX: usize = 200;
/// The most hits a search reads: a pathPrefix search to count and filter them, any search to
/// reach a page (pages past it are not served; the notice says so).
const PREFIX_SCAN: usize = 5_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Text,
    Jsonlogic,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    /// text: a substring (case-insensitive) with context; jsonlogic: a predicate over each note.
    pub mode: Mode,
    /// mode text: what to find.
    #[serde(default)]
    pub query: Option<String>,
    /// mode jsonlogic: over path, content, frontmatter.<key>, tags and stat.{ctime,mtime,size};
    /// glob and regexp take [PATTERN, VALUE], e.g. {"glob": ["Projects/*.md", {"var": "path"}]}.
    #[serde(default)]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub logic: Option<Value>,
    /// mode text: characters of context on each side of a match (default 100).
    #[serde(default, rename = "contextLength")]
    #[schemars(range(min = 1, max = 10000))]
    pub context_length: Option<u32>,
    /// mode text only: keep hits whose path starts with this (case-sensitive).
    #[serde(default, rename = "pathPrefix")]
    pub path_prefix: Option<String>,
    /// mode text: the most matches listed per note (default 10).
    #[serde(default, rename = "maxMatchesPerHit")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_matches_per_hit: Option<u32>,
    /// nextCursor of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub result: Found,
    /// mode text: the query searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_query: Option<String>,
    /// Said when nothing matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Found {
    pub mode: Mode,
    pub hits: Vec<Hit>,
    /// Hits over every page (after pathPrefix and access filtering).
    pub total_count: usize,
    /// Pass as cursor for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub filename: String,
    /// mode text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<TextMatch>>,
    /// mode text, when the matches were clipped at maxMatchesPerHit: how many there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_matches: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// mode jsonlogic: what the predicate gave for the note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub result: Option<Value>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TextMatch {
    /// The match with contextLength characters on each side.
    pub context: String,
    #[serde(rename = "match")]
    pub at: MatchAt,
}

/// Character offsets: start and end in the note, contextStart and contextEnd in context.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchAt {
    pub start: usize,
    pub end: usize,
    pub context_start: usize,
    pub context_end: usize,
}

/// Where a page starts, as the cursor carries it.
#[derive(Debug, Serialize, Deserialize)]
struct Cursor {
    offset: usize,
    limit: usize,
}

fn encode_cursor(cursor: &Cursor) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(cursor).unwrap_or_default())
}

fn decode_cursor(text: &str) -> Result<Cursor, ToolError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim())
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Cursor>(&bytes).ok())
        .filter(|c| c.offset <= PREFIX_SCAN)
        .map(|c| Cursor { offset: c.offset, limit: c.limit.clamp(1, PAGE_MAX) })
        .ok_or_else(|| {
            refuse(ErrorCode::ValidationError, "invalid_cursor", "cursor is not one this tool returned")
                .detail("field", "cursor")
        })
}

impl Tool for ObsidianSearchNotes {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_search_notes",
            "Search Obsidian notes",
            "Searches notes. mode text: a case-insensitive substring, each match with contextLength characters of \
             context (default 100), at most maxMatchesPerHit per note, pathPrefix to narrow; mode jsonlogic: logic \
             over path, content, frontmatter.<key>, tags and stat, with glob and regexp taking [PATTERN, VALUE]. \
             Pages of 50: pass nextCursor as cursor.",
            Domain::Search,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        if input.path_prefix.is_some() && input.mode != Mode::Text {
            return Err(refuse(
                ErrorCode::ValidationError,
                "path_prefix_invalid_mode",
                "pathPrefix works in text mode only",
            )
            .detail("field", "pathPrefix"));
        }
        let page = match input.cursor.as_deref() {
            Some(cursor) => decode_cursor(cursor)?,
            None => Cursor { offset: 0, limit: PAGE },
        };
        match input.mode {
            Mode::Text => text(ctx, &input, page).await,
            Mode::Jsonlogic => jsonlogic(ctx, &input, page).await,
        }
    }
}

/// Pages of a catalogue search, read until `want` hits pass `keep` or the search ends; with
/// `count_all` (a filtered search) read on to count them all. Returns (kept hits, total).
async fn collect(
    ctx: &CallContext<'_>,
    tool: &str,
    mut args: Value,
    per_page: usize,
    want: usize,
    count_all: bool,
    keep: impl Fn(&Value) -> bool,
) -> Result<(Vec<Value>, usize), ToolError> {
    let mut kept = Vec::new();
    let mut seen_total = None;
    let mut filtered = 0;
    let mut read = 0;
    loop {
        args["limit"] = json!(per_page);
        let out = call(ctx, tool, args.clone()).await?;
        seen_total.get_or_insert(out["total_count"].as_u64().unwrap_or(0) as usize);
        for hit in out["hits"].as_array().into_iter().flatten() {
            read += 1;
            if keep(hit) {
                filtered += 1;
                if kept.len() < want {
                    kept.push(hit.clone());
                }
            }
        }
        let next = out["next_cursor"].as_str();
        let enough = kept.len() >= want && !count_all;
        match next {
            Some(next) if !enough && read < PREFIX_SCAN => args["cursor"] = json!(next),
            _ => break,
        }
    }
    let total = if count_all { filtered } else { seen_total.unwrap_or(0) };
    Ok((kept, total))
}

async fn text(ctx: &CallContext<'_>, input: &Input, page: Cursor) -> Result<Output, ToolError> {
    let name = ObsidianSearchNotes::SPEC.name;
    let query = input.query.as_deref().filter(|q| !q.trim().is_empty()).ok_or_else(|| {
        refuse(ErrorCode::ValidationError, "query_required", "mode text needs query").detail("field", "query")
    })?;
    let context = input.context_length.unwrap_or(100) as usize;
    let per_hit = input.max_matches_per_hit.unwrap_or(10).max(1) as usize;
    let prefix = input.path_prefix.clone().filter(|p| !p.is_empty());
    let mut args = json!({
        "vault": input.vault, "query": query, "max_matches_per_hit": per_hit.min(100), "response_format": "detailed",
    });
    // The prefix's folder narrows the search; the prefix itself filters what comes back.
    if let Some(folder) = prefix.as_deref().and_then(|p| p.rsplit_once('/')).map(|(f, _)| f).filter(|f| !f.is_empty()) {
        args["root"] = json!(folder);
    }
    let want = page.offset + page.limit;
    let (hits, total) = collect(ctx, "search_text", args, 100, want, prefix.is_some(), |hit| {
        prefix.as_deref().is_none_or(|p| hit["path"].as_str().is_some_and(|path| path.starts_with(p)))
    })
    .await?;
    let view = ctx.view(&input.vault).await?;
    let finder = regex::RegexBuilder::new(&regex::escape(query))
        .case_insensitive(true)
        .build()
        .map_err(|e| otc_kernel::internal(name, &e))?;
    let mut out = Vec::new();
    // The page's notes, read 16 at a time, in hit order.
    let page_hits: Vec<&Value> = hits.iter().skip(page.offset).collect();
    let paths: Vec<String> = page_hits.iter().map(|hit| hit["path"].as_str().unwrap_or_default().to_string()).collect();
    let vault = view.vault.id;
    let reads = paths.into_iter().map(|path| async move {
        otc_kernel::writing::current_text(ctx, vault, &path).await.map(|t| t.map(|(_, text)| text))
    });
    let texts: Vec<Option<String>> = futures::stream::iter(reads).buffered(16).try_collect().await?;
    for (hit, text) in page_hits.into_iter().zip(texts) {
        let path = hit["path"].as_str().unwrap_or_default();
        let Some(text) = text else { continue };
        let mut found: Vec<(usize, usize)> = finder.find_iter(&text).map(|m| (m.start(), m.end())).collect();
        if found.is_empty() {
            // The catalogue search also ignores accents and the spacing and punctuation between
            // words: its own match places, then.
            found = hit["matches"].as_array().into_iter().flatten().filter_map(|m| at_line(&text, m, query)).collect();
        }
        let total_matches = found.len();
        let matches = found.iter().take(per_hit).map(|&(start, end)| window(&text, start, end, context)).collect();
        let clipped = total_matches > per_hit;
        out.push(Hit {
            filename: path.to_string(),
            matches: Some(matches),
            total_matches: clipped.then_some(total_matches),
            truncated: clipped.then_some(true),
            result: None,
        });
    }
    let next = (want < total.min(PREFIX_SCAN)).then(|| encode_cursor(&Cursor { offset: want, limit: page.limit }));
    let notice = if total == 0 {
        Some(format!("No notes contain {query:?}."))
    } else if total > PREFIX_SCAN {
        Some(format!("{total} notes match; pages reach the first {PREFIX_SCAN}: narrow the query or pass pathPrefix."))
    } else {
        None
    };
    Ok(Output {
        notice,
        effective_query: Some(query.to_string()),
        result: Found { mode: Mode::Text, hits: out, total_count: total, next_cursor: next },
    })
}

/// The bytes of a catalogue match (`{line, column}`, 1-based, the column in characters), as long
/// as the query.
fn at_line(text: &str, m: &Value, query: &str) -> Option<(usize, usize)> {
    let line = m["line"].as_u64()? as usize;
    let column = m["column"].as_u64()? as usize;
    let line_start = if line <= 1 { 0 } else { text.match_indices('\n').nth(line - 2)?.0 + 1 };
    let line_end = text[line_start..].find('\n').map_or(text.len(), |i| line_start + i);
    let mut chars = text[line_start..line_end].char_indices().map(|(i, _)| line_start + i).chain([line_end]);
    let start = chars.nth(column.saturating_sub(1))?;
    let end = text[start..line_end].char_indices().nth(query.chars().count()).map_or(line_end, |(i, _)| start + i);
    Some((start, end))
}

/// The match at bytes start..end of `text` with `context` characters each side, in character
/// offsets.
fn window(text: &str, start: usize, end: usize, context: usize) -> TextMatch {
    let start_char = text[..start].chars().count();
    let end_char = start_char + text[start..end].chars().count();
    let from = text[..start].char_indices().rev().nth(context.saturating_sub(1)).map_or(0, |(i, _)| i);
    let from = if context == 0 { start } else { from };
    let to = text[end..].char_indices().nth(context).map_or(text.len(), |(i, _)| end + i);
    let context_start = text[from..start].chars().count();
    TextMatch {
        context: text[from..to].to_string(),
        at: MatchAt {
            start: start_char,
            end: end_char,
            context_start,
            context_end: context_start + (end_char - start_char),
        },
    }
}

async fn jsonlogic(ctx: &CallContext<'_>, input: &Input, page: Cursor) -> Result<Output, ToolError> {
    let logic = match &input.logic {
        Some(Value::Object(logic)) => Value::Object(logic.clone()),
        Some(_) => {
            return Err(refuse(ErrorCode::ValidationError, "logic_invalid", "logic must be a JSONLogic object")
                .detail("field", "logic"));
        }
        None => {
            return Err(refuse(ErrorCode::ValidationError, "logic_required", "mode jsonlogic needs logic")
                .detail("field", "logic"));
        }
    };
    let want = page.offset + page.limit;
    let args = json!({"vault": input.vault, "logic": logic});
    let (hits, total) = collect(ctx, "search_jsonlogic", args, want.min(1000), want, false, |_| true)
        .await
        .map_err(|e| if e.code == ErrorCode::JsonlogicError { super::reason(e, "logic_invalid") } else { e })?;
    let out = hits
        .iter()
        .skip(page.offset)
        .map(|hit| Hit {
            filename: hit["path"].as_str().unwrap_or_default().to_string(),
            matches: None,
            total_matches: None,
            truncated: None,
            result: Some(Value::Bool(true)),
        })
        .collect();
    let next = (want < total.min(PREFIX_SCAN)).then(|| encode_cursor(&Cursor { offset: want, limit: page.limit }));
    Ok(Output {
        notice: (total == 0).then(|| "No notes matched the logic.".to_string()),
        effective_query: None,
        result: Found { mode: Mode::Jsonlogic, hits: out, total_count: total, next_cursor: next },
    })
}
