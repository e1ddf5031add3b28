//! vault_context: one packed context for a question, within a token budget.

use std::collections::{BTreeMap, HashSet};

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::EpisodeFilter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::tools::knowledge::retrieval::{self, Request};
use crate::tools::knowledge::work;
use otc_kernel::format::{ResponseFormat, Verbosity};
use otc_kernel::reading::View;
use otc_kernel::{CallContext, Tool};

pub struct VaultContext;

/// Tokens counted per this many bytes of text (a common estimate for English prose).
const BYTES_PER_TOKEN: usize = 4;
/// Lessons, episodes, syntheses and contradictions packed at most.
const LESSONS: usize = 3;
const EPISODES: usize = 5;
const SYNTHESES: usize = 3;
const CONTRADICTIONS: i64 = 10;
/// The longest excerpt of a lesson or synthesis.
const EXCERPT_BYTES: usize = 600;
/// Recent changes listed at most.
const CHANGES: usize = 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub query: Option<String>,
    /// Default 2000.
    #[serde(default)]
    #[schemars(range(min = 100, max = 32000))]
    pub token_budget: Option<u32>,
    /// Chunks (default 8).
    #[serde(default)]
    #[schemars(range(min = 1, max = 30))]
    pub k: Option<u32>,
    #[serde(default)]
    pub include_work: Option<bool>,
    #[serde(default)]
    pub include_lessons: Option<bool>,
    /// Also list changes since: YYYY-MM-DD or RFC 3339.
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// The packed chunks by note, best note first.
    pub notes: Vec<PackedNote>,
    /// Wiki pages among the hits: curated syntheses.
    pub syntheses: Vec<Excerpt>,
    /// Open contradiction findings touching a packed note: read both sides before relying on
    /// either.
    pub contradictions: Vec<ContradictionOut>,
    pub lessons: Vec<Excerpt>,
    pub episodes: Vec<EpisodeBrief>,
    /// With since: what changed since then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diff_since: Vec<Change>,
    /// What to read next: chunks that did not fit the budget, and notes linked to the packed ones.
    pub prefetch: Prefetch,
    /// Detailed only from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteOut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<Stats>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RouteOut {
    /// hybrid, keyword, or recent (no query).
    pub mode_used: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_variants: Vec<retrieval::Failed>,
    pub graph_expansion: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Stats {
    pub candidates: usize,
    pub expanded: usize,
    pub retrieved: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PackedNote {
    pub path: String,
    pub chunks: Vec<PackedChunk>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PackedChunk {
    pub chunk_id: String,
    pub content: String,
    pub score: f64,
    /// Detailed only: keyword, semantic, both, graph or recent; and the hop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop: Option<u8>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Excerpt {
    pub chunk_id: String,
    pub path: String,
    pub excerpt: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ContradictionOut {
    pub id: String,
    pub path_a: String,
    pub path_b: String,
    pub statement_a: String,
    pub statement_b: String,
    pub rationale: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct EpisodeBrief {
    pub id: String,
    pub ts: String,
    pub tool: String,
    pub summary: String,
    pub trust: f64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Change {
    pub at: String,
    pub path: String,
    pub op: String,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Prefetch {
    pub chunk_ids: Vec<String>,
    pub paths: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Budget {
    pub token_budget: usize,
    pub tokens_used: usize,
    /// Items that did not fit.
    pub dropped: usize,
}

/// What the packer spends: every packed text costs its estimated tokens.
struct Packer {
    budget: usize,
    used: usize,
    dropped: usize,
}

impl Packer {
    fn take(&mut self, text: &str) -> bool {
        let cost = text.len().div_ceil(BYTES_PER_TOKEN);
        if self.used + cost > self.budget {
            self.dropped += 1;
            return false;
        }
        self.used += cost;
        true
    }
}

fn excerpt(text: &str) -> String {
    retrieval::clip(text.trim(), EXCERPT_BYTES)
}

impl Tool for VaultContext {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        essentials: true,
        ..ToolSpec::base(
            "vault_context",
            "Pack context for a question",
            "Packs a question's context into token_budget: best chunks, syntheses, #lesson notes, work episodes, \
             contradictions; no query: recent changes (needs read:git).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let detailed = work::detailed(ctx, input.response_format, input.verbosity);
        let budget = otc_kernel::reading::bounded(input.token_budget, 2000, 100..=32000, "token_budget")?;
        let k = otc_kernel::reading::bounded(input.k, 8, 1..=30, "k")?;
        let since = crate::tools::knowledge::memory::time_arg(input.since.as_deref(), "since")?;
        let query = input.query.as_deref().map(str::trim).filter(|q| !q.is_empty()).map(str::to_string);
        if input.query.is_some() && query.is_none() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "query is blank").detail("field", "query"));
        }
        let view = ctx.view(&input.vault).await?;
        let vault = view.vault.name.clone();
        // The change log, read once for both its uses: the latest notes (no query) and diff_since.
        let log = match query.is_none() || since.is_some() {
            true if ctx.dispatcher.reachable(ctx.caller, "git_log") => log_changes(ctx, &vault).await?,
            _ => Vec::new(),
        };

        // The chunks: retrieved for the query, or the latest changed notes.
        let (hits, found) = match &query {
            Some(q) => {
                let request =
                    Request { queries: vec![q.clone()], k, depth: k.min(20), expand: true, ..Request::default() };
                let found = retrieval::retrieve(ctx, &view, &request).await?;
                retrieval::note_gap(ctx, &view, q, &found).await?;
                (found.hits.clone(), Some(found))
            }
            None if ctx.dispatcher.reachable(ctx.caller, "git_log") => (recent(ctx, &view, &log, k).await?, None),
            None => {
                return Err(ToolError::with_message(
                    ErrorCode::Forbidden,
                    "without a query vault_context packs the latest changes, which needs scope read:git; pass a query",
                )
                .detail("required", vec!["read:git"])
                .detail("field", "query"));
            }
        };
        let mut packer = Packer { budget, used: 0, dropped: 0 };
        let packed_paths: Vec<String> = {
            let mut seen = Vec::new();
            for h in &hits {
                if !seen.contains(&h.path) {
                    seen.push(h.path.clone());
                }
            }
            seen
        };

        // Safety first: the open contradictions touching the notes.
        let mut contradictions = Vec::new();
        if !packed_paths.is_empty() {
            let store_err = work::store_err(ctx.tool);
            let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
            let found =
                tx.contradictions(view.vault.id, &packed_paths, false, CONTRADICTIONS).await.map_err(&store_err)?;
            tx.commit().await.map_err(&store_err)?;
            for c in found {
                // Both sides must be readable: a finding names what each note says.
                if !view.can_read(&c.path_a) || !view.can_read(&c.path_b) {
                    continue;
                }
                let text = format!("{} {} {}", c.statement_a, c.statement_b, c.rationale);
                if packer.take(&text) {
                    contradictions.push(ContradictionOut {
                        id: c.id.to_string(),
                        path_a: c.path_a,
                        path_b: c.path_b,
                        statement_a: c.statement_a,
                        statement_b: c.statement_b,
                        rationale: c.rationale,
                    });
                }
            }
        }

        let mut lessons = Vec::new();
        if input.include_lessons.unwrap_or(true) {
            let q = format!("{} tag:lesson", query.as_deref().unwrap_or(""));
            let args = json!({"vault": vault, "query": q.trim(), "mode": "section", "k": LESSONS, "response_format": "detailed"});
            if let Ok(found) = ctx.call_part_json("search_and_read", args).await {
                for item in found["results"].as_array().into_iter().flatten() {
                    let (Some(path), Some(ord)) = (item["path"].as_str(), item["chunk_id"].as_i64()) else { continue };
                    let text = excerpt(item["body"].as_str().unwrap_or_default());
                    if packer.take(&text) {
                        lessons.push(Excerpt {
                            chunk_id: work::chunk_id(path, ord as i32),
                            path: path.into(),
                            excerpt: text,
                        });
                    }
                }
            }
        }

        let mut episodes = Vec::new();
        if input.include_work.unwrap_or(true) && ctx.dispatcher.reachable(ctx.caller, "work_search") {
            // Only eligible episodes are read: work_result made them so after settling the
            // audit writer, so waiting for it here could not change the answer.
            let filter = EpisodeFilter {
                principal: Some(ctx.caller.principal_id),
                eligibility: Some(vec!["eligible".into()]),
                min_trust: Some(0.5),
                judgeable: true,
                words: query
                    .as_deref()
                    .map(|q| q.split_whitespace().take(8).map(str::to_string).collect())
                    .unwrap_or_default(),
                limit: EPISODES as i64,
                ..EpisodeFilter::default()
            };
            let store_err = work::store_err(ctx.tool);
            let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
            let found = tx.episodes(&filter).await.map_err(&store_err)?;
            tx.commit().await.map_err(&store_err)?;
            for e in found {
                if packer.take(&e.summary) {
                    episodes.push(EpisodeBrief {
                        id: e.id.to_string(),
                        ts: e.ts.to_rfc3339(),
                        tool: e.tool,
                        summary: e.summary,
                        trust: (e.trust as f64 * 100.0).round() / 100.0,
                    });
                }
            }
        }

        let wiki = view.wiki().map(|w| format!("{}/", w.folder));
        let is_synthesis = |path: &str| wiki.as_deref().is_some_and(|w| path.starts_with(w));
        let mut syntheses = Vec::new();
        let mut notes: BTreeMap<usize, PackedNote> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        let mut prefetch = Prefetch::default();
        for h in &hits {
            if is_synthesis(&h.path) && syntheses.len() < SYNTHESES {
                let text = excerpt(&h.content);
                if packer.take(&text) {
                    syntheses.push(Excerpt { chunk_id: retrieval::chunk_id(h), path: h.path.clone(), excerpt: text });
                    continue;
                }
            }
            if !packer.take(&h.content) {
                prefetch.chunk_ids.push(retrieval::chunk_id(h));
                continue;
            }
            let at = order.iter().position(|p| *p == h.path).unwrap_or_else(|| {
                order.push(h.path.clone());
                order.len() - 1
            });
            notes.entry(at).or_insert_with(|| PackedNote { path: h.path.clone(), chunks: Vec::new() }).chunks.push(
                PackedChunk {
                    chunk_id: retrieval::chunk_id(h),
                    content: h.content.clone(),
                    score: (h.score * 10_000.0).round() / 10_000.0,
                    source: detailed.then(|| h.arm.to_string()),
                    hop: detailed.then_some(h.hop),
                },
            );
        }
        // Notes linked to the packed ones, not packed themselves.
        if !order.is_empty() {
            let graph = otc_kernel::graphing::load(ctx, &view).await?;
            let packed: HashSet<&String> = order.iter().collect();
            for path in &order {
                let Some(node) = graph.graph.node(path) else { continue };
                for other in graph.graph.outgoing(node).iter().chain(graph.graph.incoming(node)) {
                    let p = graph.graph.name(*other).to_string();
                    if prefetch.paths.len() < 10
                        && !packed.contains(&p)
                        && !prefetch.paths.contains(&p)
                        && view.can_read(&p)
                    {
                        prefetch.paths.push(p);
                    }
                }
            }
        }
        let retrieved: Vec<retrieval::Hit> = hits
            .iter()
            .filter(|h| notes.values().any(|n| n.chunks.iter().any(|c| c.chunk_id == retrieval::chunk_id(h))))
            .cloned()
            .collect();
        retrieval::record(&vault, &retrieved, true);

        let diff_since: Vec<Change> = match since {
            Some(since) => log
                .into_iter()
                .take_while(|c| chrono::DateTime::parse_from_rfc3339(&c.at).map_or(true, |t| t >= since))
                .take(CHANGES)
                .collect(),
            None => Vec::new(),
        };

        Ok(Output {
            vault,
            notes: notes.into_values().collect(),
            syntheses,
            contradictions,
            lessons,
            episodes,
            diff_since,
            prefetch,
            route: detailed.then(|| match &found {
                Some(f) => {
                    RouteOut { mode_used: f.mode_used.into(), failed_variants: f.failed.clone(), graph_expansion: true }
                }
                None => RouteOut { mode_used: "recent".into(), failed_variants: Vec::new(), graph_expansion: false },
            }),
            query_source: detailed.then(|| if query.is_some() { "query" } else { "recent_changes" }.to_string()),
            budget: detailed.then_some(Budget {
                token_budget: budget,
                tokens_used: packer.used,
                dropped: packer.dropped,
            }),
            stats: detailed.then(|| Stats {
                candidates: found.as_ref().map_or(hits.len(), |f| f.candidates),
                expanded: found.as_ref().map_or(0, |f| f.expanded),
                retrieved: hits.len(),
            }),
        })
    }
}

/// The vault's latest changes, newest first, as git_log answers them (the paths the caller may
/// read).
async fn log_changes(ctx: &CallContext<'_>, vault: &str) -> Result<Vec<Change>, ToolError> {
    let log = ctx.call_part_json("git_log", json!({"vault": vault, "limit": 200})).await?;
    let mut out = Vec::new();
    for commit in log["commits"].as_array().into_iter().flatten() {
        let at = commit["at"].as_str().unwrap_or_default();
        for change in commit["changes"].as_array().into_iter().flatten() {
            out.push(Change {
                at: at.to_string(),
                path: change["path"].as_str().unwrap_or_default().to_string(),
                op: change["op"].as_str().unwrap_or_default().to_string(),
            });
        }
    }
    Ok(out)
}

/// The first chunks of the `k` latest changed notes of `log`, newest first.
async fn recent(
    ctx: &CallContext<'_>,
    view: &View,
    log: &[Change],
    k: usize,
) -> Result<Vec<retrieval::Hit>, ToolError> {
    let mut paths: Vec<String> = Vec::new();
    for change in log {
        if paths.len() < k && change.path.ends_with(".md") && change.op != "delete" && !paths.contains(&change.path) {
            paths.push(change.path.clone());
        }
    }
    let mut firsts = retrieval::first_chunks(ctx, view, &paths).await?;
    Ok(paths
        .into_iter()
        .enumerate()
        .filter_map(|(i, path)| {
            let (mtime, content) = firsts.remove(&path)?;
            Some(retrieval::Hit {
                content,
                ord: 0,
                score: 1.0 / (i as f64 + 1.0),
                arm: "recent",
                hop: 0,
                edge: None,
                seed: None,
                raw_score: None,
                mtime,
                path,
            })
        })
        .collect())
}
