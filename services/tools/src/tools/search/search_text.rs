use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_fts::search::{Edge, TextHit, text_edges, text_matches, token_spans, top};
use otc_fts::tokenize::tokens;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::search::search_vault::hits_limit;
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, bounded, decode_cursor, page};
use otc_kernel::searching::{Corpus, RankKey, Scope, line_col, note_texts, slice};
use otc_kernel::{CallContext, Tool};

pub struct SearchText;

/// Matches listed per note by default.
const DEFAULT_MATCHES: usize = 10;
/// Characters of context on each side of a match by default.
const DEFAULT_CONTEXT: usize = 100;
/// The most notes a case-sensitive search reads to check its candidates.
const CASE_CHECK_NOTES: usize = 2_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub query: String,
    /// Match case and accents.
    #[serde(default)]
    pub case_sensitive: bool,
    #[serde(default)]
    pub whole_word: bool,
    /// Folder to search.
    #[serde(default)]
    pub root: Option<String>,
    /// Characters each side (default 100, max 500).
    #[serde(default)]
    pub context_length: Option<u32>,
    /// Listed per note (default 10, max 100).
    #[serde(default)]
    pub max_matches_per_hit: Option<u32>,
    /// Max 100 (default 25).
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
    /// Notes matching, before paging.
    pub total_count: usize,
    pub hits: Vec<Hit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    pub path: String,
    /// Detailed: BM25 of the match count over the note's length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    pub total_matches: usize,
    /// Whether more matches exist than are listed.
    pub truncated: bool,
    pub matches: Vec<Match>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Match {
    /// 1-based line of the match.
    pub line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// The match with context around it.
    pub context: String,
}

/// The byte range in `text` of match (doc, position) of an `n`-token query.
fn match_range(corpus: &Corpus, part: usize, doc: u32, pos: u32, n: usize, text: &str) -> Option<(usize, usize)> {
    let d = corpus.segment(part).docs[doc as usize];
    let chunk = corpus.chunk(part, doc, text);
    let spans = token_spans(chunk);
    let i = (pos - d.text_start) as usize;
    let first = spans.get(i)?;
    let last = spans.get(i + n - 1)?;
    Some((d.start as usize + first.0, d.start as usize + last.1))
}

/// Whether the original text of a match holds the query's tokens exactly (case and accents).
fn exact_case(text: &str, range: (usize, usize), query: &[(String, Edge)]) -> bool {
    let found = tokens(slice(text, range.0, range.1));
    let raw: Vec<&str> = found.iter().map(|t| &text[range.0 + t.start..range.0 + t.end]).collect();
    raw.len() == query.len()
        && raw.iter().zip(query).all(|(word, (q, edge))| match edge {
            Edge::Exact => word == q,
            Edge::Within => word.contains(q.as_str()),
            Edge::Suffix => word.ends_with(q.as_str()),
            Edge::Prefix => word.starts_with(q.as_str()),
        })
}

fn context(text: &str, range: (usize, usize), chars: usize) -> String {
    let before: String = {
        let head = slice(text, 0, range.0);
        let skip = head.chars().count().saturating_sub(chars);
        head.chars().skip(skip).collect()
    };
    let after: String = slice(text, range.1, text.len()).chars().take(chars).collect();
    let mut out = String::new();
    if before.len() < range.0 {
        out.push('…');
    }
    out.push_str(&before);
    out.push_str(slice(text, range.0, range.1));
    out.push_str(&after);
    if range.1 + after.len() < text.len() {
        out.push('…');
    }
    out
}

impl Tool for SearchText {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        essentials: true,
        ..ToolSpec::base(
            "search_text",
            "Find text in notes",
            "Finds notes containing a phrase, most matches first, with each match's line and context.",
            Domain::Search,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let limit = hits_limit(input.limit)?;
        let context_chars = bounded(input.context_length, DEFAULT_CONTEXT, 0..=500, "context_length")?;
        let per_hit = bounded(input.max_matches_per_hit, DEFAULT_MATCHES, 1..=100, "max_matches_per_hit")?;
        let query_tokens = tokens(&input.query);
        if query_tokens.is_empty() {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                "query needs at least one letter or digit (use search_regex for punctuation)",
            )
            .detail("field", "query"));
        }
        let folded: Vec<String> = query_tokens.iter().map(|t| t.text.clone()).collect();
        let edges = text_edges(&folded, input.whole_word);
        let exact: Vec<(String, Edge)> =
            query_tokens.iter().zip(&edges).map(|(t, (_, e))| (input.query[t.start..t.end].to_string(), *e)).collect();
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let key: Option<RankKey> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let view = ctx.view(&input.vault).await?;
        let root = match input.root.as_deref() {
            Some(r) => Some(view.folder_prefix(Some(r))?),
            None => None,
        };
        let corpus = Corpus::open(ctx, &view, &Scope { root: root.as_deref(), ..Scope::default() }).await?;
        let mut hits: Vec<TextHit> = text_matches(&corpus.parts(), &edges);
        let n = folded.len();
        if input.case_sensitive {
            // The index folds case and accents: check every candidate's own text.
            if hits.len() > CASE_CHECK_NOTES {
                return Err(ToolError::new(ErrorCode::ComputeBudgetExceeded)
                    .detail("reason", "case_sensitive needs each candidate note read")
                    .detail("candidates", hits.len())
                    .detail("limit", CASE_CHECK_NOTES));
            }
            let paths: Vec<String> = hits.iter().map(|h| corpus.path(h.part, h.path).to_string()).collect();
            let texts = note_texts(ctx, view.vault.id, &paths).await?;
            for (h, note) in hits.iter_mut().zip(texts) {
                let text = note.map(|c| c.text).unwrap_or_default();
                h.matches.retain(|&(doc, pos)| {
                    match_range(&corpus, h.part, doc, pos, n, &text).is_some_and(|r| exact_case(&text, r, &exact))
                });
            }
            hits.retain(|h| !h.matches.is_empty());
        }
        let total = hits.len();
        let after = key.as_ref().map(|k| (k.s, k.p.as_str()));
        let page_hits: Vec<TextHit> = top(hits, |h| h.score, |h| corpus.path(h.part, h.path), after, limit + 1);
        let more = page_hits.len() > limit;
        let page_hits = &page_hits[..page_hits.len().min(limit)];
        let paths: Vec<String> = page_hits.iter().map(|h| corpus.path(h.part, h.path).to_string()).collect();
        let texts = note_texts(ctx, view.vault.id, &paths).await?;
        let items: Vec<Hit> = page_hits
            .iter()
            .zip(paths)
            .zip(texts)
            .map(|((h, path), note)| {
                let text = note.map(|c| c.text).unwrap_or_default();
                let matches = h
                    .matches
                    .iter()
                    .take(per_hit)
                    .filter_map(|&(doc, pos)| match_range(&corpus, h.part, doc, pos, n, &text))
                    .map(|range| {
                        let (line, column) = line_col(&text, range.0);
                        Match {
                            line,
                            column: detailed.then_some(column),
                            context: context(&text, range, context_chars),
                        }
                    })
                    .collect();
                Hit {
                    path,
                    score: detailed.then_some(h.score),
                    total_matches: h.matches.len(),
                    truncated: h.matches.len() > per_hit,
                    matches,
                }
            })
            .collect();
        let scores: std::collections::HashMap<String, f32> =
            page_hits.iter().map(|h| (corpus.path(h.part, h.path).to_string(), h.score)).collect();
        let (hits, next_cursor) =
            page(ctx.tool, items, more, PAGE_BUDGET_BYTES, |h| RankKey { s: scores[&h.path], p: h.path.clone() });
        Ok(Output { vault: view.vault.name.clone(), total_count: total, hits, next_cursor })
    }
}
