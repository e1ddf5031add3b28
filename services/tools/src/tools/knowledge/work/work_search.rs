//! work_search: finds past work in your episodes, under the work-memory reader contract.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::EpisodeFilter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::work::{self, EpisodeOut};
use crate::tools::search::semantic;
use otc_kernel::format::{ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool};

pub struct WorkSearch;

/// Episodes a semantic search compares with the query (the latest that pass the filters).
const SEMANTIC_CANDIDATES: i64 = 200;
/// The trust floor when none is given: an unjudged call's.
const DEFAULT_MIN_TRUST: f32 = 0.5;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// All words must match; with semantic, by meaning.
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    /// YYYY-MM-DD or RFC 3339.
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub until: Option<String>,
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub k: Option<u32>,
    /// Default 0.5.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_trust: Option<f32>,
    /// Also unjudged episodes.
    #[serde(default)]
    pub include_pending: bool,
    /// Needs admin:workspace.
    #[serde(default)]
    pub any_caller: bool,
    #[serde(default)]
    pub semantic: bool,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// Most trusted first (semantic: closest first).
    pub episodes: Vec<EpisodeOut>,
    /// keyword or semantic.
    pub mode_used: String,
    /// Which eligibilities were searched.
    pub searched: Vec<String>,
}

impl Tool for WorkSearch {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:workspace"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "work_search",
            "Search past work",
            "Searches your past work-memory episodes (those a verdict made eligible).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let principal = work::whose(ctx, input.any_caller)?;
        let detailed = work::detailed(ctx, input.response_format, input.verbosity);
        let k = otc_kernel::reading::bounded(input.k, 10, 1..=100, "k")?;
        let min_trust = input.min_trust.unwrap_or(DEFAULT_MIN_TRUST);
        if !(0.0..=1.0).contains(&min_trust) {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "min_trust is between 0 and 1")
                .detail("field", "min_trust"));
        }
        let query = input.query.as_deref().map(str::trim).filter(|q| !q.is_empty());
        if input.semantic && query.is_none() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "a semantic search needs a query")
                .detail("field", "query"));
        }
        let embedder = match input.semantic {
            true => Some(ctx.services().embeddings.active().cloned().ok_or_else(|| semantic::unavailable("semantic"))?),
            false => None,
        };
        let session = match &input.session_id {
            Some(id) if !input.any_caller => Some(work::own_session(ctx, id).await?),
            Some(id) => Some(crate::tools::knowledge::memory::entity_id(id, "session_id")?),
            None => None,
        };
        let mut searched = vec!["eligible".to_string()];
        if input.include_pending {
            searched.push("pending".into());
        }
        let words: Vec<String> = match (&embedder, query) {
            (None, Some(q)) => q.split_whitespace().take(12).map(str::to_string).collect(),
            _ => Vec::new(),
        };
        // Episodes reach the store through the audit writer as pending; only a search that
        // includes them needs it to have written the latest (eligible ones were made so by
        // work_result, after it settled).
        if input.include_pending {
            work::settle(ctx).await;
        }
        let filter = EpisodeFilter {
            principal,
            session,
            tool: input.tool,
            since: crate::tools::knowledge::memory::time_arg(input.since.as_deref(), "since")?,
            until: crate::tools::knowledge::memory::time_arg(input.until.as_deref(), "until")?,
            eligibility: Some(searched.clone()),
            min_trust: Some(min_trust),
            judgeable: true,
            words,
            limit: if embedder.is_some() { SEMANTIC_CANDIDATES } else { 1000 },
            ..EpisodeFilter::default()
        };
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(work::store_err(ctx.tool))?;
        let mut found = tx.episodes(&filter).await.map_err(work::store_err(ctx.tool))?;
        tx.commit().await.map_err(work::store_err(ctx.tool))?;
        let ranked: Vec<(Option<f64>, otc_store::Episode)> = match (embedder, query) {
            (Some(embedder), Some(query)) => {
                let mut texts = vec![query.to_string()];
                texts.extend(found.iter().map(|e| e.summary.clone()));
                let embedded = embedder
                    .embed(ctx.caller.tenant_id, &texts)
                    .await
                    .map_err(|e| semantic::provider_failed(ctx.tool, embedder.model(), &e))?;
                let mut vectors = embedded.vectors;
                vectors.iter_mut().for_each(|v| otc_embed::normalize(v));
                let q = vectors.remove(0);
                let mut scored: Vec<(Option<f64>, otc_store::Episode)> = found
                    .into_iter()
                    .zip(vectors)
                    .map(|(e, v)| {
                        let score = q.iter().zip(&v).map(|(a, b)| a * b).sum::<f32>() as f64;
                        (Some((score * 1000.0).round() / 1000.0), e)
                    })
                    .collect();
                scored.sort_by(|a, b| b.0.unwrap_or(0.0).total_cmp(&a.0.unwrap_or(0.0)));
                scored
            }
            _ => {
                // Newest first from the store; the most trusted lead, ties staying newest first.
                found.sort_by(|a, b| b.trust.total_cmp(&a.trust));
                found.into_iter().map(|e| (None, e)).collect()
            }
        };
        let (scores, episodes): (Vec<Option<f64>>, Vec<otc_store::Episode>) = ranked.into_iter().unzip();
        // Another caller's episode naming notes the reader may not read is no answer to a search
        // (its match would tell what the hidden note is called).
        let episodes: Vec<EpisodeOut> = work::shape(ctx, episodes, detailed)
            .await
            .into_iter()
            .zip(scores)
            .filter(|(e, _)| !work::hidden(e))
            .take(k)
            .map(|(e, score)| EpisodeOut { score, ..e })
            .collect();
        Ok(Output { episodes, mode_used: if input.semantic { "semantic" } else { "keyword" }.into(), searched })
    }
}
