//! Graph-expanded retrieval, what vault_graph_search, vault_context, knowledge_search,
//! diagnose_retrieval and reflect share: each query variant runs the keyword arm (search_and_read's
//! best sections) and, with an embedding provider, the semantic arm (search_semantic's best
//! chunks, the hypothetical answer too); the arms are fused by reciprocal rank over chunks, the
//! best seeds' notes are expanded one hop along the link graph (outgoing, then incoming), and
//! the time window applies. Every arm runs as a catalogue call of the caller's, so the folder
//! ACL, Excluded files and scopes hold as in any search. A failed variant or arm is reported,
//! never fatal while another answered.

pub mod diagnose_retrieval;
pub mod knowledge_challenge;
pub mod reflect;
pub mod vault_context;
pub mod vault_graph_search;

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use otc_errors::{ErrorCode, ToolError};
use serde::Serialize;
use serde_json::{Value, json};

use otc_kernel::reading::View;
use otc_kernel::searching::{note_texts, slice};
use otc_kernel::{CallContext, internal};

/// Reciprocal rank fusion's constant.
const RRF_K: f64 = 60.0;
/// Query variants run at most.
pub const MAX_VARIANTS: usize = 5;
/// Seeds whose notes are expanded, and neighbours taken per seed.
const EXPANDED_SEEDS: usize = 5;
const NEIGHBOURS_PER_SEED: usize = 3;
/// What a graph neighbour gets of its seed's score.
const HOP_DECAY: f64 = 0.5;
/// The largest chunk text a hit carries.
const MAX_CONTENT_BYTES: usize = 4000;

/// What to retrieve.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The query and its variants, first the main one.
    pub queries: Vec<String>,
    /// A guessed answer, embedded as a further semantic query.
    pub hypothetical: Option<String>,
    /// Hits answered.
    pub k: usize,
    /// Candidates each arm returns (at least k).
    pub depth: usize,
    /// Only notes changed at or after this.
    pub since: Option<DateTime<Utc>>,
    /// Only notes as last changed at or before this.
    pub as_of: Option<DateTime<Utc>>,
    /// Expand the seeds along the link graph.
    pub expand: bool,
    /// Only notes under this folder (no slashes at either end).
    pub root: Option<String>,
    /// The keyword arm alone (its filters, such as tag:, bind only it).
    pub keyword_only: bool,
}

impl Request {
    fn under_root(&self, path: &str) -> bool {
        self.root.as_deref().is_none_or(|r| path.strip_prefix(r).is_some_and(|rest| rest.starts_with('/')))
    }
}

/// One chunk retrieved.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    pub path: String,
    pub ord: i32,
    pub content: String,
    /// The fused score (graph neighbours: a share of their seed's).
    pub score: f64,
    /// keyword, semantic, both (hybrid) or graph.
    pub arm: &'static str,
    /// 0 for a direct hit, 1 for a graph neighbour.
    pub hop: u8,
    /// links_to (the seed links to it) or linked_from (it links to the seed), for a neighbour.
    pub edge: Option<&'static str>,
    /// The seed a neighbour was reached from.
    pub seed: Option<String>,
    /// The best raw score of a direct arm: cosine similarity (semantic) or BM25 (keyword).
    pub raw_score: Option<f64>,
    pub mtime: DateTime<Utc>,
}

/// A variant or arm that failed, and why.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Failed {
    pub query: String,
    pub arm: String,
    /// The error code it answered.
    pub reason: String,
}

/// One candidate's path through the stages, for diagnose_retrieval.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Trace {
    pub keyword_rank: Option<usize>,
    pub semantic_rank: Option<usize>,
    pub fused_rank: Option<usize>,
    pub graph: bool,
    pub time_filtered: bool,
    pub final_rank: Option<usize>,
}

/// What a retrieval found.
#[derive(Debug, Clone, Default)]
pub struct Retrieval {
    /// Best first, at most k.
    pub hits: Vec<Hit>,
    /// hybrid (both arms answered) or keyword.
    pub mode_used: &'static str,
    pub failed: Vec<Failed>,
    /// Distinct chunks the arms returned, before fusion cut them.
    pub candidates: usize,
    pub expanded: usize,
    /// Per note path: its best chunk's trace.
    pub traces: HashMap<String, Trace>,
    /// Chunks the keyword arm found (before the time window).
    pub keyword_candidates: usize,
    /// The best cosine similarity the semantic arm found.
    pub best_cosine: Option<f64>,
}

struct Candidate {
    path: String,
    ord: i32,
    content: Option<String>,
    rrf: f64,
    keyword: bool,
    semantic: bool,
    raw: Option<f64>,
}

/// Runs `request` in `view` for `tool`.
pub async fn retrieve(ctx: &CallContext<'_>, view: &View, request: &Request) -> Result<Retrieval, ToolError> {
    let vault = view.vault.name.clone();
    let depth = request.depth.max(request.k).clamp(1, 20);
    let semantic_on = !request.keyword_only && ctx.services().embeddings.active().is_some();
    let mut out = Retrieval { mode_used: if semantic_on { "hybrid" } else { "keyword" }, ..Retrieval::default() };
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut index: HashMap<(String, i32), usize> = HashMap::new();
    let mut add = |candidates: &mut Vec<Candidate>,
                   path: String,
                   ord: i32,
                   content: Option<String>,
                   rank: usize,
                   semantic: bool,
                   raw: f64| {
        let at = *index.entry((path.clone(), ord)).or_insert_with(|| {
            candidates.push(Candidate {
                path,
                ord,
                content: None,
                rrf: 0.0,
                keyword: false,
                semantic: false,
                raw: None,
            });
            candidates.len() - 1
        });
        let c = &mut candidates[at];
        c.rrf += 1.0 / (RRF_K + rank as f64);
        if c.content.is_none() {
            c.content = content;
        }
        if semantic {
            c.semantic = true;
            c.raw = Some(c.raw.map_or(raw, |r| r.max(raw)));
        } else {
            c.keyword = true;
            c.raw = c.raw.or(Some(raw));
        }
    };
    let (mut keyword_answered, mut semantic_answered) = (false, false);
    let mut first_error: Option<ToolError> = None;
    for query in request.queries.iter().take(MAX_VARIANTS) {
        // The keyword arm narrows by path when the folder name is one word (the result is
        // filtered by folder either way).
        let query = match request.root.as_deref().filter(|r| !r.contains(char::is_whitespace)) {
            Some(root) => format!("{query} path:{root}/"),
            None => query.clone(),
        };
        let args =
            json!({"vault": vault, "query": query, "mode": "section", "k": depth, "response_format": "detailed"});
        match ctx.call_part_json("search_and_read", args).await {
            Ok(found) => {
                keyword_answered = true;
                for (i, item) in found["results"].as_array().into_iter().flatten().enumerate() {
                    let Some(path) = item["path"].as_str() else { continue };
                    // A note found by its frontmatter (its title, tags) stands for its first chunk,
                    // whose text is read below.
                    let (ord, body) = match item["chunk_id"].as_i64() {
                        Some(ord) => (ord, item["body"].as_str().map(str::to_string)),
                        None => (0, None),
                    };
                    let raw = item["score"].as_f64().unwrap_or(0.0);
                    add(&mut candidates, path.to_string(), ord as i32, body, i + 1, false, raw);
                    let trace = out.traces.entry(path.to_string()).or_default();
                    trace.keyword_rank = Some(trace.keyword_rank.map_or(i + 1, |r| r.min(i + 1)));
                }
            }
            Err(e) => {
                out.failed.push(Failed { query, arm: "keyword".into(), reason: e.code.as_str().into() });
                first_error.get_or_insert(e);
            }
        }
    }
    if semantic_on {
        let mut meanings: Vec<&String> = request.queries.iter().take(MAX_VARIANTS).collect();
        meanings.extend(request.hypothetical.as_ref());
        for query in meanings {
            let mut args = json!({"vault": vault, "query": query, "k": depth, "return_content": true,
                                  "response_format": "detailed"});
            if let Some(root) = &request.root {
                args["root"] = json!(root);
            }
            match ctx.call_part_json("search_semantic", args).await {
                Ok(found) => {
                    semantic_answered = true;
                    for (i, hit) in found["hits"].as_array().into_iter().flatten().enumerate() {
                        let (Some(path), Some(ord)) = (hit["path"].as_str(), hit["chunk_id"].as_i64()) else {
                            continue;
                        };
                        let content = hit["content"].as_str().map(str::to_string);
                        let raw = hit["score"].as_f64().unwrap_or(0.0);
                        out.best_cosine = Some(out.best_cosine.map_or(raw, |b| b.max(raw)));
                        add(&mut candidates, path.to_string(), ord as i32, content, i + 1, true, raw);
                        let trace = out.traces.entry(path.to_string()).or_default();
                        trace.semantic_rank = Some(trace.semantic_rank.map_or(i + 1, |r| r.min(i + 1)));
                    }
                }
                Err(e) => {
                    out.failed.push(Failed {
                        query: query.clone(),
                        arm: "semantic".into(),
                        reason: e.code.as_str().into(),
                    });
                    first_error.get_or_insert(e);
                }
            }
        }
        if !semantic_answered {
            out.mode_used = "keyword";
        }
    }
    if !keyword_answered && !semantic_answered {
        // No arm answered at all: the first failure is the answer, as it was.
        if let Some(e) = first_error {
            return Err(e);
        }
    }
    candidates.retain(|c| request.under_root(&c.path));
    out.candidates = candidates.len();
    out.keyword_candidates = candidates.iter().filter(|c| c.keyword).count();
    candidates.sort_by(|a, b| b.rrf.total_cmp(&a.rrf).then_with(|| a.path.cmp(&b.path)).then(a.ord.cmp(&b.ord)));
    // One chunk per note among the direct hits keeps a long note from crowding out the rest.
    let mut seen_notes = HashSet::new();
    candidates.retain(|c| seen_notes.insert(c.path.clone()));
    for (i, c) in candidates.iter().enumerate() {
        out.traces.entry(c.path.clone()).or_default().fused_rank = Some(i + 1);
    }
    let paths: Vec<String> = candidates.iter().map(|c| c.path.clone()).collect();
    let mtimes = mtimes(ctx, view, &paths).await?;
    let unread: Vec<String> = candidates.iter().filter(|c| c.content.is_none()).map(|c| c.path.clone()).collect();
    let mut firsts = first_chunks(ctx, view, &unread).await?;
    for c in candidates.iter_mut().filter(|c| c.content.is_none()) {
        c.content = firsts.remove(&c.path).map(|(_, text)| text);
    }
    let mut hits: Vec<Hit> = Vec::new();
    for c in candidates {
        let Some(&mtime) = mtimes.get(&c.path) else { continue };
        if !in_window(mtime, request) {
            out.traces.entry(c.path.clone()).or_default().time_filtered = true;
            continue;
        }
        hits.push(Hit {
            arm: match (c.keyword, c.semantic) {
                (true, true) => "both",
                (false, true) => "semantic",
                _ => "keyword",
            },
            content: clip(&c.content.unwrap_or_default(), MAX_CONTENT_BYTES),
            path: c.path,
            ord: c.ord,
            score: c.rrf,
            hop: 0,
            edge: None,
            seed: None,
            raw_score: c.raw,
            mtime,
        });
    }
    if request.expand && !hits.is_empty() {
        let neighbours = expand(ctx, view, &hits, request).await?;
        out.expanded = neighbours.len();
        for n in &neighbours {
            out.traces.entry(n.path.clone()).or_default().graph = true;
        }
        hits.extend(neighbours);
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.path.cmp(&b.path)));
    }
    hits.truncate(request.k);
    for (i, h) in hits.iter().enumerate() {
        out.traces.entry(h.path.clone()).or_default().final_rank = Some(i + 1);
    }
    out.hits = hits;
    Ok(out)
}

/// The chunk id of a hit.
pub fn chunk_id(hit: &Hit) -> String {
    crate::tools::knowledge::work::chunk_id(&hit.path, hit.ord)
}

/// Days since a hit's note last changed, to a tenth.
pub fn changed_since_days(hit: &Hit) -> f64 {
    ((Utc::now() - hit.mtime).num_minutes().max(0) as f64 / 1440.0 * 10.0).round() / 10.0
}

/// Leaves out of `hits` the notes the organisation excludes from egress (before anything is
/// sent to a model); the paths left out, each once.
pub async fn keep_egress(ctx: &CallContext<'_>, hits: &mut Vec<Hit>) -> Result<Vec<String>, ToolError> {
    let egress = otc_kernel::egress::for_call(ctx).await?;
    let mut skipped: Vec<String> = Vec::new();
    hits.retain(|h| {
        let out = egress.excludes(&h.path);
        if out && !skipped.contains(&h.path) {
            skipped.push(h.path.clone());
        }
        !out
    });
    Ok(skipped)
}

/// Records `hits` as the running call's retrievals: in place of what its arms retrieved when
/// `first`, else after the ones recorded before.
pub fn record(vault: &str, hits: &[Hit], first: bool) {
    let chunks = hits.iter().map(|h| (h.path.clone(), h.ord, Some(h.score)));
    if first {
        otc_kernel::replace_retrieved(vault, chunks);
    } else {
        otc_kernel::note_retrieved(vault, chunks);
    }
}

/// The cosine similarity under which a chunk found by meaning alone answers a query weakly.
const WEAK_COSINE: f64 = 0.3;

/// Persists what the gap detector makes of a retrieval of `query`: a gap when no chunk answered
/// it directly, or only by meaning and weakly (judged before any time window: a window narrows
/// what is shown, not what the vault knows). A retrieval with a failed arm or variant is not
/// judged. The query is kept with its secrets redacted.
pub async fn note_gap(ctx: &CallContext<'_>, view: &View, query: &str, found: &Retrieval) -> Result<(), ToolError> {
    let tool = ctx.tool;
    if !found.failed.is_empty() {
        return Ok(());
    }
    let direct: Vec<&Hit> = found.hits.iter().filter(|h| h.hop == 0).collect();
    let weak = found.keyword_candidates == 0 && found.best_cosine.unwrap_or(0.0) < WEAK_COSINE;
    let gap = found.candidates == 0 || weak;
    let top_score = found.best_cosine.or_else(|| direct.first().and_then(|h| h.raw_score));
    let paths = |hits: &mut dyn Iterator<Item = &Hit>| -> Value {
        let mut seen = Vec::new();
        for h in hits {
            if !seen.contains(&h.path) && seen.len() < 3 {
                seen.push(h.path.clone());
            }
        }
        json!(seen)
    };
    let (results, nearest) =
        if gap { (json!([]), paths(&mut found.hits.iter())) } else { (paths(&mut direct.into_iter()), json!([])) };
    let query = otc_kernel::screening::screen(query).text;
    let norm = crate::tools::knowledge::wiki::normalize(&query);
    let mut tx = ctx.begin().await?;
    tx.record_gap(view.vault.id, ctx.caller.principal_id, &norm, &query, top_score, gap, &results, &nearest).await?;
    tx.commit().await.map_err(|e| internal(tool, &e))
}

fn in_window(mtime: DateTime<Utc>, request: &Request) -> bool {
    request.since.is_none_or(|s| mtime >= s) && request.as_of.is_none_or(|a| mtime <= a)
}

/// `text` cut to at most `max` bytes (on a character boundary), with an ellipsis when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    format!("{}…", &text[..text.floor_char_boundary(max)])
}

/// When each readable note of `paths` last changed (a note gone since is left out).
async fn mtimes(
    ctx: &CallContext<'_>,
    view: &View,
    paths: &[String],
) -> Result<HashMap<String, DateTime<Utc>>, ToolError> {
    let mut out = HashMap::new();
    for path in paths {
        if let Some(entry) = otc_kernel::reading::file_entry(ctx, view.vault.id, path).await? {
            out.insert(path.clone(), entry.mtime);
        }
    }
    Ok(out)
}

/// The notes one hop from the best seeds, each by its first chunk, scored as a share of its
/// seed's score; notes already hit are not repeated.
async fn expand(ctx: &CallContext<'_>, view: &View, hits: &[Hit], request: &Request) -> Result<Vec<Hit>, ToolError> {
    let graph = otc_kernel::graphing::load(ctx, view).await?;
    let mut taken: HashSet<String> = hits.iter().map(|h| h.path.clone()).collect();
    let mut picked: Vec<(String, &'static str, &Hit, f64)> = Vec::new();
    for seed in hits.iter().take(EXPANDED_SEEDS) {
        let Some(node) = graph.graph.node(&seed.path) else { continue };
        let outgoing = graph.graph.outgoing(node).iter().map(|n| (*n, "links_to"));
        let incoming = graph.graph.incoming(node).iter().map(|n| (*n, "linked_from"));
        let mut n = 0;
        for (other, edge) in outgoing.chain(incoming) {
            if n >= NEIGHBOURS_PER_SEED {
                break;
            }
            let path = graph.graph.name(other).to_string();
            if !path.ends_with(".md")
                || !request.under_root(&path)
                || !view.can_read(&path)
                || !taken.insert(path.clone())
            {
                continue;
            }
            n += 1;
            picked.push((path, edge, seed, seed.score * HOP_DECAY / (n as f64)));
        }
    }
    if picked.is_empty() {
        return Ok(Vec::new());
    }
    let paths: Vec<String> = picked.iter().map(|(p, ..)| p.clone()).collect();
    let mut firsts = first_chunks(ctx, view, &paths).await?;
    let mut out = Vec::new();
    for (path, edge, seed, score) in picked {
        let Some((mtime, content)) = firsts.remove(&path) else { continue };
        if !in_window(mtime, request) {
            continue;
        }
        out.push(Hit {
            content,
            path,
            ord: 0,
            score,
            arm: "graph",
            hop: 1,
            edge: Some(edge),
            seed: Some(seed.path.clone()),
            raw_score: None,
            mtime,
        });
    }
    Ok(out)
}

/// The first chunk of each note of `paths` (its text now, and when the note last changed); a
/// note without chunks, or gone, is left out.
pub async fn first_chunks(
    ctx: &CallContext<'_>,
    view: &View,
    paths: &[String],
) -> Result<HashMap<String, (DateTime<Utc>, String)>, ToolError> {
    if paths.is_empty() {
        return Ok(HashMap::new());
    }
    let keys: Vec<(String, i32)> = paths.iter().map(|p| (p.clone(), 0)).collect();
    let mut tx = ctx.begin().await?;
    let spans = tx.chunk_spans(view.vault.id, &keys).await?;
    tx.commit().await?;
    let spans: HashMap<String, (i32, i32)> = spans.into_iter().map(|s| (s.path, (s.start, s.end))).collect();
    let texts = note_texts(ctx, view.vault.id, paths).await?;
    let mut out = HashMap::new();
    for (path, text) in paths.iter().zip(texts) {
        let (Some(text), Some(&(start, end))) = (text, spans.get(path)) else { continue };
        out.insert(
            path.clone(),
            (text.entry.mtime, clip(slice(&text.text, start as usize, end as usize), MAX_CONTENT_BYTES)),
        );
    }
    Ok(out)
}

/// A query argument with its variants: `query` first, then `queries`, blanks and repeats left
/// out; at least one is required.
pub fn variants(query: &str, more: Option<&[String]>) -> Result<Vec<String>, ToolError> {
    let mut out: Vec<String> = Vec::new();
    for q in std::iter::once(query).chain(more.unwrap_or_default().iter().map(String::as_str)) {
        let q = q.trim();
        if !q.is_empty() && !out.iter().any(|o| o == q) {
            out.push(q.to_string());
        }
    }
    if out.is_empty() {
        return Err(ToolError::with_message(ErrorCode::InvalidInput, "query is empty").detail("field", "query"));
    }
    if out.len() > MAX_VARIANTS {
        return Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            format!("at most {MAX_VARIANTS} queries in all (query and queries)"),
        )
        .detail("field", "queries"));
    }
    Ok(out)
}
