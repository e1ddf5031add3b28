use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::search::semantic::{self, Near, VectorSet};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, bounded, fit};
use otc_kernel::searching::{note_texts, slice};
use otc_kernel::{CallContext, Tool};

/// Vector search over the notes' chunks: the nearest chunk of each note, best first.
pub struct SearchSemantic;

const DEFAULT_K: usize = 10;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub query: String,
    /// 1 to 100 (default 10).
    #[serde(default)]
    pub k: Option<u32>,
    #[serde(default)]
    pub root: Option<String>,
    /// Cosine similarity floor, -1 to 1.
    #[serde(default)]
    pub min_score: Option<f32>,
    /// Adds each hit's best chunk.
    #[serde(default)]
    pub return_content: bool,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// The embedding model the vectors come from.
    pub model: String,
    /// True while the vault's vectors are still being made: notes not embedded yet are missing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    pub hits: Vec<Hit>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    pub path: String,
    /// Cosine similarity of the note's best chunk.
    pub score: f32,
    /// The heading path of that chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Detailed: the chunk's first line (1-based) and its index in the note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<u32>,
    /// With return_content: the chunk's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

impl Tool for SearchSemantic {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Model),
        scopes: &["read:notes"],
        response_format: Format::Takes,
        essentials: true,
        ..ToolSpec::base(
            "search_semantic",
            "Search by meaning",
            "Searches notes by meaning (vector similarity); needs an embedding provider.",
            Domain::Search,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let k = bounded(input.k, DEFAULT_K, 1..=100, "k")?;
        if let Some(m) = input.min_score
            && !(-1.0..=1.0).contains(&m)
        {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "min_score must be between -1 and 1")
                .detail("field", "min_score"));
        }
        if input.query.trim().is_empty() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "query is empty").detail("field", "query"));
        }
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        // The vault first: a vault the caller cannot reach answers vault_not_found, as for
        // every other tool, whatever the embedding configuration.
        let view = ctx.view(&input.vault).await?;
        let prefix = view.folder_prefix(input.root.as_deref())?;
        let set = VectorSet::open(ctx, &view, "query").await?;
        let vector = set.embed(ctx, ctx.tool, &input.query).await?;
        let mut found = set.nearest_notes(ctx, &view, &vector, Near { prefix: &prefix, skip: &[], notes: k }).await?;
        if let Some(min) = input.min_score {
            found.retain(|h| h.score >= min);
        }
        let spans = semantic::spans(ctx, &view, &found).await?;
        otc_kernel::note_retrieved(
            &view.vault.name,
            found
                .iter()
                .filter(|h| spans.contains_key(&(h.path.clone(), h.ord)))
                .map(|h| (h.path.clone(), h.ord, Some(h.score as f64))),
        );
        let texts = if input.return_content || detailed {
            let paths: Vec<String> = found.iter().map(|h| h.path.clone()).collect();
            note_texts(ctx, view.vault.id, &paths).await?
        } else {
            found.iter().map(|_| None).collect()
        };
        let hits = found
            .into_iter()
            .zip(texts)
            .filter_map(|(h, text)| {
                let span = spans.get(&(h.path.clone(), h.ord))?;
                let chunk = text.as_ref().map(|t| slice(&t.text, span.start as usize, span.end as usize).to_string());
                Some(Hit {
                    section: (!span.heading_path.is_empty()).then(|| span.heading_path.clone()),
                    line: detailed.then_some(span.line as usize + 1),
                    chunk_id: detailed.then_some(h.ord as u32),
                    content: if input.return_content { chunk } else { None },
                    score: h.score,
                    path: h.path,
                })
            })
            .collect();
        let (hits, _) = fit(hits, PAGE_BUDGET_BYTES);
        Ok(Output { vault: view.vault.name.clone(), model: set.model.clone(), partial: set.partial, hits })
    }
}
