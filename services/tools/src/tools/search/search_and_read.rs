use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_fts::Query;
use otc_fts::search::top;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::search::search_vault::query_error;
use crate::tools::search::semantic::{self, Near};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{bounded, decode_cursor, encode_cursor};
use otc_kernel::searching::{Corpus, RankKey, Scope, note_texts, section_of, slice};
use otc_kernel::{CallContext, Tool};

pub struct SearchAndRead;

const DEFAULT_K: usize = 5;
const MAX_K: u32 = 20;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Note,
    Section,
    Semantic,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// As search_vault's: words, "phrases", -exclusions, path:, tag:.
    pub query: String,
    /// 1 to 20 (default 5).
    #[serde(default)]
    pub k: Option<u32>,
    /// note (default), section (best section) or semantic (needs an embedding provider).
    #[serde(default)]
    pub mode: Option<Mode>,
    #[serde(default)]
    pub max_bytes_per_item: Option<u32>,
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
    /// Notes matching, before paging.
    pub total_count: usize,
    pub results: Vec<Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Item {
    pub path: String,
    /// 1-based, across pages.
    pub rank: usize,
    pub score: f32,
    pub body: String,
    pub content_hash: String,
    /// Only on an item cut to its share: the full size in bytes (read the rest with read_note).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// Detailed, note mode: the frontmatter block as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<String>,
    /// Detailed, section mode: the section's heading and its chunk id within the note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<u32>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Position {
    key: RankKey,
    rank: usize,
}

/// `text` cut to at most `share` bytes: at the last line break within it when there is one in
/// the second half, else on a char boundary.
fn cut(text: &str, share: usize) -> &str {
    if text.len() <= share {
        return text;
    }
    let head = slice(text, 0, share);
    match head.rfind('\n') {
        Some(i) if i >= share / 2 => &head[..=i],
        _ => head,
    }
}

impl Tool for SearchAndRead {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::LargeRead),
        scopes: &["read:notes"],
        response_format: Format::Takes,
        whole_note_reader: true,
        essentials: true,
        ..ToolSpec::base(
            "search_and_read",
            "Search and read the best notes",
            "Searches as search_vault does and returns the top k notes' text in one call.",
            Domain::Search,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let mode = input.mode.unwrap_or_default();
        let k = bounded(input.k, DEFAULT_K, 1..=MAX_K, "k")?;
        if input.max_bytes_per_item == Some(0) {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "max_bytes_per_item must be positive")
                .detail("field", "max_bytes_per_item"));
        }
        let query = Query::parse(&input.query).map_err(query_error)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let position: Option<Position> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let view = ctx.view(&input.vault).await?;
        let first_rank = position.as_ref().map_or(1, |p| p.rank);
        let after = position.as_ref().map(|p| (p.key.s, p.key.p.as_str()));
        // The ranking: (path, score, where its best chunk is), best first, one page and one more.
        let (total, page, corpus): (usize, Vec<Ranked>, Option<Corpus>) = if mode == Mode::Semantic {
            let meaning = semantic::meaning_of(&input.query)?;
            let pool = Near { prefix: "", skip: &[], notes: SEMANTIC_POOL };
            let near = semantic::nearest_to_query(ctx, &view, &meaning, &query, pool).await?;
            let total = near.len();
            let near = semantic::ranked_page(near, |h| h.score, |h| h.path.as_str(), after, k + 1);
            let spans = semantic::spans(ctx, &view, &near).await?;
            let page = near
                .into_iter()
                .map(|h| {
                    let at = spans.get(&(h.path.clone(), h.ord)).map(|s| At::Span(s.start, s.end, h.ord as u32));
                    Ranked { path: h.path, score: h.score, at }
                })
                .collect();
            (total, page, None)
        } else {
            let scope = Scope { root: None, path_contains: &query.paths, tags: &query.tags };
            let corpus = Corpus::open(ctx, &view, &scope).await?;
            let hits = corpus.rank(&query);
            let total = hits.len();
            let page = top(hits, |h| h.score, |h| corpus.path(h.part, h.path), after, k + 1)
                .into_iter()
                .map(|h| Ranked {
                    path: corpus.path(h.part, h.path).to_string(),
                    score: h.score,
                    at: Some(At::Doc(h.part, h.doc)),
                })
                .collect();
            (total, page, Some(corpus))
        };
        let more = page.len() > k;
        let page = &page[..page.len().min(k)];
        let budget = (ctx.services().config.governor.max_response_bytes as usize).saturating_sub(4_096);
        let share = (budget / k.max(1)).saturating_sub(512);
        let share = input.max_bytes_per_item.map_or(share, |m| (m as usize).min(share)).max(1);
        let paths: Vec<String> = page.iter().map(|h| h.path.clone()).collect();
        let notes = note_texts(ctx, view.vault.id, &paths).await?;
        let mut results = Vec::with_capacity(page.len());
        for (i, (h, note)) in page.iter().zip(notes).enumerate() {
            let Some(note) = note else { continue };
            let text = note.text.as_str();
            let head = otc_parser::parse_head(text);
            // The best chunk's text and index in the note (the index's chunk ordinal: a note's
            // frontmatter is a full-text document of its own, before its chunks, and no chunk).
            let best = match (&h.at, &corpus) {
                (Some(At::Doc(part, doc)), Some(corpus)) => {
                    let ord = corpus.segment(*part).docs[*doc as usize].ord;
                    let ord = if head.body_start > 0 { ord.checked_sub(1) } else { Some(ord) };
                    Some((corpus.chunk(*part, *doc, text), ord))
                }
                (Some(At::Span(start, end, ord)), _) => Some((slice(text, *start as usize, *end as usize), Some(*ord))),
                _ => None,
            };
            let (whole, front, section, chunk_id) = match (mode, best) {
                (Mode::Section, Some((chunk, ord))) => (chunk.to_string(), None, section_of(chunk), ord),
                (_, best) => (
                    text[head.body_start.min(text.len())..].to_string(),
                    (head.body_start > 0).then(|| slice(text, 0, head.body_start).to_string()),
                    // Semantic: which section matched, besides the whole note.
                    best.filter(|_| mode == Mode::Semantic).and_then(|(chunk, _)| section_of(chunk)),
                    best.filter(|_| mode == Mode::Semantic).and_then(|(_, ord)| ord),
                ),
            };
            if let Some(ord) = chunk_id {
                otc_kernel::note_retrieved(&view.vault.name, [(h.path.clone(), ord as i32, Some(h.score as f64))]);
            }
            let body = cut(&whole, share);
            let was_cut = body.len() < whole.len();
            results.push(Item {
                path: h.path.clone(),
                rank: first_rank + i,
                score: h.score,
                body: body.to_string(),
                content_hash: note.content_hash,
                size_bytes: was_cut.then_some(whole.len()),
                truncated: was_cut.then_some(true),
                frontmatter: if detailed { front } else { None },
                section: if detailed { section } else { None },
                chunk_id: if detailed { chunk_id } else { None },
            });
        }
        let next_cursor = match (more, page.last()) {
            (true, Some(last)) => Some(encode_cursor(
                ctx.tool,
                &Position { key: RankKey { s: last.score, p: last.path.clone() }, rank: first_rank + page.len() },
            )),
            _ => None,
        };
        Ok(Output { vault: view.vault.name.clone(), total_count: total, results, next_cursor })
    }
}

/// Notes a semantic search_and_read ranks, before paging.
const SEMANTIC_POOL: usize = 200;

/// A ranked note and where its best chunk is.
struct Ranked {
    path: String,
    score: f32,
    at: Option<At>,
}

enum At {
    /// A full-text hit: part and document of the corpus.
    Doc(usize, u32),
    /// A vector hit: the chunk's byte range and index in the note.
    Span(i32, i32, u32),
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cuts_at_a_line_break_in_the_second_half() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("aaaa\nbbbb\ncccc", 12), "aaaa\nbbbb\n");
        assert_eq!(cut("aaaaaaaaaa\nb", 8), "aaaaaaaa");
        assert_eq!(cut("ééé", 3), "é");
    }
}
