use std::collections::HashMap;

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::search::semantic::{self, Near, VectorSet};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, View, bounded, fit, read_content};
use otc_kernel::{CallContext, Tool};

/// Notes worth linking from a note: its semantic neighbours (when an embedding provider is
/// configured) fused with its link-graph neighbourhood (notes linking to it, notes linking to
/// the same targets), leaving out what it already links to.
pub struct SuggestLinks;

const DEFAULT_LIMIT: usize = 10;
/// Candidates each ranking gives before fusion.
const POOL: usize = 50;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// 1 to 50 (default 10).
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub suggestions: Vec<Suggestion>,
    /// True when semantic neighbours were left out (no embedding provider, or the note has no
    /// vectors yet and could not be embedded): the suggestions come from links alone.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub links_only: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Suggestion {
    pub path: String,
    /// Reciprocal-rank-fused score: higher is stronger.
    pub score: f32,
    /// Detailed: why (similarity to the note, whether it links here, link targets shared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links_here: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_targets: Option<i64>,
}

impl Tool for SuggestLinks {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Model),
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "suggest_links",
            "Suggest links for a note",
            "Suggests notes to link from a note: similar notes (with embeddings), its backlinks and notes \
             linking to the same targets, less what it already links to.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let limit = bounded(input.limit, DEFAULT_LIMIT, 1..=50, "limit")?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        if !input.path.ends_with(".md") {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "suggest_links takes a note (.md)")
                .detail("field", "path"));
        }
        let content = read_content(ctx, &view, &input.path).await?;
        let mut tx = ctx.begin().await?;
        let linked = tx.link_targets(view.vault.id, &input.path).await?;
        let graph = tx.link_neighbours(view.vault.id, &input.path, &view.visible(), POOL as i64).await?;
        let excluded_paths = tx.excluded_paths(view.vault.id).await?;
        tx.commit().await?;
        // A wiki's generated pages link everything: never a suggestion.
        let generated = view.wiki_generated_paths();
        let graph: Vec<_> =
            graph.into_iter().filter(|n| !excluded_paths.contains(&n.path) && !generated.contains(&n.path)).collect();
        let near = match Self::neighbours(ctx, &view, &input.path, &content.text, &linked).await {
            Ok(near) => Some(near),
            Err(e) if e.code == ErrorCode::EmbeddingProviderError => None,
            Err(e) => return Err(e),
        };
        let graph_rank: Vec<String> = graph.iter().map(|n| n.path.clone()).collect();
        let near_rank: Vec<String> =
            near.iter().flatten().filter(|h| !generated.contains(&h.path)).map(|h| h.path.clone()).collect();
        let k = ctx.services().config.embeddings.rrf_k;
        let fused = semantic::fuse(&[(&graph_rank, 1.0), (&near_rank, 1.0)], k);
        let similarity: HashMap<&str, f32> = near.iter().flatten().map(|h| (h.path.as_str(), h.score)).collect();
        let graph_of: HashMap<&str, &otc_store::LinkNeighbour> = graph.iter().map(|n| (n.path.as_str(), n)).collect();
        let suggestions: Vec<Suggestion> = fused
            .into_iter()
            .take(limit)
            .map(|(path, score)| {
                let g = graph_of.get(path.as_str());
                Suggestion {
                    similarity: if detailed { similarity.get(path.as_str()).copied() } else { None },
                    links_here: detailed.then(|| g.is_some_and(|g| g.links_here)),
                    shared_targets: detailed.then(|| g.map_or(0, |g| g.shared_targets)),
                    score,
                    path,
                }
            })
            .collect();
        let (suggestions, _) = fit(suggestions, PAGE_BUDGET_BYTES);
        Ok(Output { vault: view.vault.name.clone(), path: input.path, suggestions, links_only: near.is_none() })
    }
}

impl SuggestLinks {
    /// The note's semantic neighbours, less itself and what it links to: by the mean of its
    /// chunk vectors, or, before it has any, by its text embedded now.
    async fn neighbours(
        ctx: &CallContext<'_>,
        view: &View,
        path: &str,
        text: &str,
        linked: &[String],
    ) -> Result<Vec<semantic::NoteHit>, ToolError> {
        let set = VectorSet::open(ctx, view, "path").await?;
        let mut tx = ctx.begin().await?;
        let vectors = tx.note_vectors(view.vault.id, &set.model, path).await?;
        tx.commit().await?;
        let vector = match semantic::centroid(&vectors) {
            Some(v) => v,
            None => {
                let body = otc_kernel::searching::slice(text, otc_parser::parse_head(text).body_start, text.len());
                let input = otc_indexer::embedding::input_text(path, "", otc_kernel::searching::slice(body, 0, 2_000));
                set.embed(ctx, ctx.tool, &input).await?
            }
        };
        let mut skip = linked.to_vec();
        skip.push(path.to_string());
        set.nearest_notes(ctx, view, &vector, Near { prefix: "", skip: &skip, notes: POOL }).await
    }
}
