use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_fts::search::{snippet, top};
use otc_fts::{Query, QueryError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::search::semantic::{self, Near};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, page};
use otc_kernel::searching::{Corpus, RankKey, Scope, line_col, note_texts, section_of, slice};
use otc_kernel::{CallContext, Tool};

pub struct SearchVault;

/// Search results a page holds by default (spec: "Result size and paging").
pub const DEFAULT_HITS: usize = 25;
/// Snippet width in bytes.
const SNIPPET_BYTES: usize = 240;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Text,
    Semantic,
    Hybrid,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Words (any), "phrase" (must), -word (exclude), path:text, tag:name.
    pub query: String,
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Folder to search.
    #[serde(default)]
    pub root: Option<String>,
    /// mode text: per-term scores.
    #[serde(default)]
    pub explain: bool,
    /// 1 to 100 (default 25).
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
    pub mode: &'static str,
    /// Notes matching, before paging.
    pub total_count: usize,
    pub hits: Vec<Hit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    pub path: String,
    pub score: f32,
    /// The best-matching passage, matched words in **bold**.
    pub snippet: String,
    /// Detailed: the passage's first line (1-based) and the heading it sits under.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explain>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Explain {
    /// BM25 (k1 1.2, b 0.75) of the best chunk: its length in tokens, the average, the chunks
    /// searched.
    pub chunk_tokens: u32,
    pub average_tokens: f32,
    pub chunks: u64,
    pub terms: Vec<TermExplain>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TermExplain {
    pub term: String,
    pub tf: u32,
    pub df: u64,
    pub idf: f32,
    pub score: f32,
}

pub fn query_error(e: QueryError) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, e.to_string()).detail("field", "query")
}

/// A hits-per-page argument: 1 to 100, default [`DEFAULT_HITS`].
pub fn hits_limit(limit: Option<u32>) -> Result<usize, ToolError> {
    otc_kernel::reading::bounded(limit, DEFAULT_HITS, 1..=100, "limit")
}

impl Tool for SearchVault {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        essentials: true,
        ..ToolSpec::base(
            "search_vault",
            "Search the vault",
            "Ranked full-text search of notes (text, titles, aliases, tags, frontmatter) with snippets; mode \
             semantic or hybrid searches by meaning (needs embeddings).",
            Domain::Search,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let mode = input.mode.unwrap_or_default();
        if mode != Mode::Text {
            return by_meaning(ctx, input, mode).await;
        }
        let limit = hits_limit(input.limit)?;
        let query = Query::parse(&input.query).map_err(query_error)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let key: Option<RankKey> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let view = ctx.view(&input.vault).await?;
        let root = match input.root.as_deref() {
            Some(r) => Some(view.folder_prefix(Some(r))?),
            None => None,
        };
        let scope = Scope { root: root.as_deref(), path_contains: &query.paths, tags: &query.tags };
        let started = std::time::Instant::now();
        let corpus = Corpus::open(ctx, &view, &scope).await?;
        let opened = started.elapsed();
        let hits = corpus.rank(&query);
        let ranked = started.elapsed();
        let total = hits.len();
        let after = key.as_ref().map(|k| (k.s, k.p.as_str()));
        let page_hits = top(hits, |h| h.score, |h| corpus.path(h.part, h.path), after, limit + 1);
        let more = page_hits.len() > limit;
        let page_hits = &page_hits[..page_hits.len().min(limit)];
        let paths: Vec<String> = page_hits.iter().map(|h| corpus.path(h.part, h.path).to_string()).collect();
        let texts = note_texts(ctx, view.vault.id, &paths).await?;
        let read = started.elapsed();
        let mut explained = if input.explain { corpus.explain(&query, page_hits) } else { Vec::new() }.into_iter();
        let items: Vec<Hit> = page_hits
            .iter()
            .zip(paths)
            .zip(texts)
            .map(|((h, path), text)| {
                let text = text.as_ref().map(|c| c.text.as_str());
                let chunk = text.map_or("", |t| corpus.chunk(h.part, h.doc, t));
                let start = corpus.segment(h.part).docs[h.doc as usize].start as usize;
                Hit {
                    snippet: snippet(chunk, &query.words, SNIPPET_BYTES),
                    line: detailed.then(|| text.map_or(1, |t| line_col(t, start).0)),
                    section: if detailed { section_of(chunk) } else { None },
                    explain: explained.next().map(|e| Explain {
                        chunk_tokens: e.doc_len,
                        average_tokens: e.avgdl,
                        chunks: e.docs,
                        terms: e
                            .terms
                            .into_iter()
                            .map(|t| TermExplain { term: t.term, tf: t.tf, df: t.df, idf: t.idf, score: t.score })
                            .collect(),
                    }),
                    score: h.score,
                    path,
                }
            })
            .collect();
        let (hits, next_cursor) =
            page(ctx.tool, items, more, PAGE_BUDGET_BYTES, |h| RankKey { s: h.score, p: h.path.clone() });
        tracing::debug!(
            segments = corpus.parts().len(),
            open_us = opened.as_micros() as u64,
            rank_us = (ranked - opened).as_micros() as u64,
            read_us = (read - ranked).as_micros() as u64,
            snippets_us = (started.elapsed() - read).as_micros() as u64,
            "searched"
        );
        Ok(Output { vault: view.vault.name.clone(), mode: "text", total_count: total, hits, next_cursor })
    }
}

/// Candidates each ranking gives a semantic or hybrid search, before fusion and paging.
const FUSION_POOL: usize = 200;

/// search_vault in mode semantic (the vector ranking alone) or hybrid (BM25 and vector rankings
/// fused as `embeddings.fusion` says, with the two weights): up to [`FUSION_POOL`]
/// notes each, paged by fused score. A hit's snippet comes from its best BM25 chunk when it has
/// one, else from its nearest chunk.
async fn by_meaning(ctx: &CallContext<'_>, input: Input, mode: Mode) -> Result<Output, ToolError> {
    let name = SearchVault::SPEC.name;
    let limit = hits_limit(input.limit)?;
    // Hybrid's keyword half reads the query language; semantic embeds the words as written.
    let query = Query::parse(&input.query).map_err(query_error)?;
    let meaning = semantic::meaning_of(&input.query)?;
    let detailed =
        format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
    let key: Option<RankKey> = input.cursor.as_deref().map(|c| decode_cursor(name, c)).transpose()?;
    let view = ctx.view(&input.vault).await?;
    let prefix = view.folder_prefix(input.root.as_deref())?;
    let near = Near { prefix: &prefix, skip: &[], notes: FUSION_POOL };
    let near = semantic::nearest_to_query(ctx, &view, &meaning, &query, near).await?;
    let (corpus, text_hits) = if mode == Mode::Hybrid {
        let root = (!prefix.is_empty()).then_some(prefix.as_str());
        let scope = Scope { root, path_contains: &query.paths, tags: &query.tags };
        let corpus = Corpus::open(ctx, &view, &scope).await?;
        let hits = corpus.rank(&query);
        let hits = top(hits, |h| h.score, |h| corpus.path(h.part, h.path), None, FUSION_POOL);
        (Some(corpus), hits)
    } else {
        (None, Vec::new())
    };
    let fused: Vec<(String, f32)> = match &corpus {
        Some(corpus) => {
            let settings = &ctx.services().config.embeddings;
            let text: Vec<(String, f32)> =
                text_hits.iter().map(|h| (corpus.path(h.part, h.path).to_string(), h.score)).collect();
            let semantic: Vec<(String, f32)> = near.iter().map(|h| (h.path.clone(), h.score)).collect();
            let (tw, sw) = (settings.text_weight, settings.semantic_weight);
            match settings.fusion {
                otc_config::Fusion::Relative => semantic::fuse_scores(&[(&text, tw), (&semantic, sw)]),
                otc_config::Fusion::Rrf => {
                    let paths = |r: &[(String, f32)]| r.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
                    semantic::fuse(&[(&paths(&text), tw), (&paths(&semantic), sw)], settings.rrf_k)
                }
            }
        }
        None => near.iter().map(|h| (h.path.clone(), h.score)).collect(),
    };
    let total = fused.len();
    let after = key.as_ref().map(|k| (k.s, k.p.as_str()));
    let page_hits = semantic::ranked_page(fused, |h| h.1, |h| h.0.as_str(), after, limit + 1);
    let more = page_hits.len() > limit;
    let page_hits = &page_hits[..page_hits.len().min(limit)];
    let paths: Vec<String> = page_hits.iter().map(|(p, _)| p.clone()).collect();
    let texts = note_texts(ctx, view.vault.id, &paths).await?;
    let nearest: std::collections::HashMap<&str, &semantic::NoteHit> =
        near.iter().map(|h| (h.path.as_str(), h)).collect();
    let spans =
        semantic::spans(ctx, &view, &near.iter().filter(|h| paths.contains(&h.path)).cloned().collect::<Vec<_>>())
            .await?;
    let by_text: std::collections::HashMap<&str, &otc_fts::search::Hit> = match &corpus {
        Some(corpus) => text_hits.iter().map(|h| (corpus.path(h.part, h.path), h)).collect(),
        None => Default::default(),
    };
    let items: Vec<Hit> = page_hits
        .iter()
        .zip(texts)
        .map(|((path, score), text)| {
            let text = text.as_ref().map_or("", |c| c.text.as_str());
            let (chunk, start) = match (by_text.get(path.as_str()), &corpus) {
                (Some(h), Some(corpus)) => {
                    (corpus.chunk(h.part, h.doc, text), corpus.segment(h.part).docs[h.doc as usize].start as usize)
                }
                _ => match nearest.get(path.as_str()).and_then(|h| spans.get(&(h.path.clone(), h.ord))) {
                    Some(span) => (slice(text, span.start as usize, span.end as usize), span.start as usize),
                    None => ("", 0),
                },
            };
            Hit {
                snippet: snippet(chunk, &query.words, SNIPPET_BYTES),
                line: detailed.then(|| line_col(text, start).0),
                section: if detailed { section_of(chunk) } else { None },
                explain: None,
                score: *score,
                path: path.clone(),
            }
        })
        .collect();
    let (hits, next_cursor) = page(name, items, more, PAGE_BUDGET_BYTES, |h| RankKey { s: h.score, p: h.path.clone() });
    let mode = if mode == Mode::Hybrid { "hybrid" } else { "semantic" };
    Ok(Output { vault: view.vault.name.clone(), mode, total_count: total, hits, next_cursor })
}
