//! What the semantic tools share (search_semantic, search_vault's semantic and hybrid modes,
//! search_and_read's semantic mode, suggest_links): which of the vault's vector sets a search
//! uses, the query's vector, the nearest notes under the caller's view, the chunks' text, and
//! reciprocal rank fusion.
//!
//! A vault can hold two sets while a model change fills the new one; search uses the
//! configured model's set once it is complete, else a complete older set whose model the
//! provider can still embed queries with, else whatever the configured model has so far
//! (`partial`). Every vector query runs with the caller's read ACL, the hidden folders, the
//! Excluded files and the search's folder in its filter, so nothing hidden reaches a result.

use std::collections::{HashMap, HashSet};

use otc_embed::SharedEmbedder;
use otc_errors::{ErrorCode, ToolError};
use otc_store::{ChunkSpan, VectorFilter};

use otc_kernel::CallContext;
use otc_kernel::reading::View;

/// The error for a call that needs embeddings where no provider is configured.
pub fn unavailable(field: &str) -> ToolError {
    ToolError::with_message(
        ErrorCode::EmbeddingProviderError,
        "semantic search needs an embedding provider: set embeddings.provider in the server configuration; \
         search_vault's text mode works now",
    )
    .detail("field", field)
    .detail("reason", "not_configured")
}

/// The error for a provider that failed to embed a query (its cause goes to the log only).
pub fn provider_failed(tool: &str, model: &str, err: &otc_embed::EmbedError) -> ToolError {
    tracing::warn!(tool, model, error = %otc_errors::error_chain(err), "embedding a query failed");
    ToolError::with_message(
        ErrorCode::EmbeddingProviderError,
        "the embedding provider could not embed the query; search_vault's text mode works now",
    )
    .detail("reason", "provider_failed")
    .detail("model", model)
}

/// The vector set a search uses.
pub struct VectorSet {
    pub model: String,
    /// True while the set is still filling, or changed notes wait for their vectors: results
    /// may miss what is not embedded yet.
    pub partial: bool,
    embedder: SharedEmbedder,
}

impl VectorSet {
    /// The set the caller's search of `view`'s vault uses.
    pub async fn open(ctx: &CallContext<'_>, view: &View, field: &str) -> Result<VectorSet, ToolError> {
        let embeddings = &ctx.services().embeddings;
        let Some(active) = embeddings.active().cloned() else { return Err(unavailable(field)) };
        let mut tx = ctx.begin().await?;
        let sets = tx.vault_models(view.vault.id).await?;
        let pending = tx.embedding_pending(view.vault.id).await?;
        tx.commit().await?;
        if sets.iter().any(|s| s.complete && s.model == active.model()) {
            return Ok(VectorSet { model: active.model().to_string(), partial: pending, embedder: active });
        }
        for set in sets.iter().filter(|s| s.complete) {
            if let Some(embedder) = embeddings.for_model(&set.model, set.dims as usize) {
                return Ok(VectorSet { model: set.model.clone(), partial: pending, embedder });
            }
        }
        Ok(VectorSet { model: active.model().to_string(), partial: true, embedder: active })
    }

    /// `text`'s vector in this set's space.
    pub async fn embed(&self, ctx: &CallContext<'_>, tool: &str, text: &str) -> Result<Vec<f32>, ToolError> {
        let texts = [text.to_string()];
        let mut got = self
            .embedder
            .embed(ctx.caller.tenant_id, &texts)
            .await
            .map_err(|e| provider_failed(tool, &self.model, &e))?;
        got.vectors.pop().ok_or_else(|| {
            provider_failed(tool, &self.model, &otc_embed::EmbedError::BadAnswer("no vector for the query".into()))
        })
    }

    /// The notes nearest `vector`, best chunk each, nearest first, as `near` bounds them: only
    /// what the caller may read, less the Excluded files.
    pub async fn nearest_notes(
        &self,
        ctx: &CallContext<'_>,
        view: &View,
        vector: &[f32],
        near: Near<'_>,
    ) -> Result<Vec<NoteHit>, ToolError> {
        let Near { prefix, skip, notes } = near;
        let mut tx = ctx.begin().await?;
        let filter = VectorFilter { prefix, visible: view.visible(), skip };
        // Chunks, not notes, come back: ask for enough that `notes` distinct notes are likely.
        let limit = (notes * 4 + 20).min(1_000) as i64;
        let chunks = tx.nearest_chunks(view.vault.id, &self.model, vector, &filter, limit).await?;
        tx.commit().await?;
        let mut best: Vec<NoteHit> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for c in chunks {
            // Nearest first, so a note's first chunk is its best.
            if seen.insert(c.path.clone()) {
                best.push(NoteHit { path: c.path, ord: c.ord, score: c.score });
            }
        }
        best.truncate(notes);
        Ok(best)
    }
}

/// Which notes, and how many, a vector search returns.
#[derive(Debug, Clone, Copy)]
pub struct Near<'a> {
    /// A folder prefix ("" for the whole vault).
    pub prefix: &'a str,
    /// Paths left out (the note a related-notes search starts from, and what it links to).
    pub skip: &'a [String],
    /// At most this many notes.
    pub notes: usize,
}

/// What of a search_vault query a vector search embeds: its words and phrases as written,
/// without the operators (`path:`, `tag:`, `-exclusions`), which filter instead. A query with
/// no words left answers invalid_input.
pub fn meaning_of(query: &str) -> Result<String, ToolError> {
    let mut out = Vec::new();
    let mut quoted_excluded = false;
    for word in query.split_whitespace() {
        if quoted_excluded {
            quoted_excluded = !word.ends_with('"');
            continue;
        }
        let lower = word.to_lowercase();
        if lower.starts_with("path:") || lower.starts_with("tag:") {
            continue;
        }
        if let Some(rest) = word.strip_prefix('-') {
            quoted_excluded = rest.starts_with('"') && !(rest.len() > 1 && rest.ends_with('"'));
            continue;
        }
        out.push(word.trim_matches('"'));
    }
    let meaning = out.join(" ");
    if meaning.trim().is_empty() {
        return Err(ToolError::with_message(ErrorCode::InvalidInput, "query has no words to search by meaning")
            .detail("field", "query"));
    }
    Ok(meaning)
}

/// The notes nearest a search_vault query's `meaning` (from [`meaning_of`]) within `near`
/// and the query's `path:` and `tag:` filters: the vector half of search_vault's semantic and
/// hybrid modes and of search_and_read's semantic mode.
pub async fn nearest_to_query(
    ctx: &CallContext<'_>,
    view: &View,
    meaning: &str,
    query: &otc_fts::Query,
    near: Near<'_>,
) -> Result<Vec<NoteHit>, ToolError> {
    let tool = ctx.tool;
    let set = VectorSet::open(ctx, view, "mode").await?;
    let vector = set.embed(ctx, tool, meaning).await?;
    let hits = set.nearest_notes(ctx, view, &vector, near).await?;
    in_scope(ctx, view, hits, query).await
}

/// `hits` less the notes outside the query's `path:` and `tag:` filters, as search_vault's
/// text mode applies them (`-exclusions` are words, which a vector search does not match).
async fn in_scope(
    ctx: &CallContext<'_>,
    view: &View,
    hits: Vec<NoteHit>,
    query: &otc_fts::Query,
) -> Result<Vec<NoteHit>, ToolError> {
    let mut hits: Vec<NoteHit> = hits
        .into_iter()
        .filter(|h| {
            let lower = h.path.to_lowercase();
            query.paths.is_empty() || query.paths.iter().any(|c| lower.contains(c.as_str()))
        })
        .collect();
    if !query.tags.is_empty() {
        let mut tx = ctx.begin().await?;
        for tag in &query.tags {
            let tagged: HashSet<String> = tx.paths_tagged(view.vault.id, tag).await?.into_iter().collect();
            hits.retain(|h| tagged.contains(&h.path));
        }
        tx.commit().await?;
    }
    Ok(hits)
}

/// A note a vector search found, by its best chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteHit {
    pub path: String,
    pub ord: i32,
    /// Cosine similarity of the best chunk, -1 to 1.
    pub score: f32,
}

/// Where the hits' best chunks sit (a chunk gone since the search is left out).
pub async fn spans(
    ctx: &CallContext<'_>,
    view: &View,
    hits: &[NoteHit],
) -> Result<HashMap<(String, i32), ChunkSpan>, ToolError> {
    let keys: Vec<(String, i32)> = hits.iter().map(|h| (h.path.clone(), h.ord)).collect();
    let mut tx = ctx.begin().await?;
    let spans = tx.chunk_spans(view.vault.id, &keys).await?;
    tx.commit().await?;
    Ok(spans.into_iter().map(|s| ((s.path.clone(), s.ord), s)).collect())
}

/// Reciprocal rank fusion: each ranking (best first) gives a note `weight / (k + rank)`
/// (rank from 1); a note's score is the sum. Best first, ties by path.
pub fn fuse(rankings: &[(&[String], f32)], k: f32) -> Vec<(String, f32)> {
    let mut scores: HashMap<&str, f32> = HashMap::new();
    for (ranking, weight) in rankings {
        for (i, path) in ranking.iter().enumerate() {
            *scores.entry(path.as_str()).or_default() += weight / (k + i as f32 + 1.0);
        }
    }
    let mut out: Vec<(String, f32)> = scores.into_iter().map(|(p, s)| (p.to_string(), s)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// Relative score fusion: each ranking's scores min-max normalised over its candidates (the
/// best 1, the worst 0; a ranking whose scores are all equal, one note alone included, gives each
/// 1), weighted and summed;
/// a note missing from a ranking gets nothing from it. Best first, ties by path.
pub fn fuse_scores(rankings: &[(&[(String, f32)], f32)]) -> Vec<(String, f32)> {
    let mut scores: HashMap<&str, f32> = HashMap::new();
    for (ranking, weight) in rankings {
        let max = ranking.iter().map(|r| r.1).fold(f32::MIN, f32::max);
        let min = ranking.iter().map(|r| r.1).fold(f32::MAX, f32::min);
        let span = max - min;
        for (path, score) in ranking.iter() {
            let normal = if span > f32::EPSILON { (score - min) / span } else { 1.0 };
            *scores.entry(path.as_str()).or_default() += weight * normal;
        }
    }
    let mut out: Vec<(String, f32)> = scores.into_iter().map(|(p, s)| (p.to_string(), s)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// The page of owned ranked items after the keyset position `after` (score, then path): best
/// first, at most `n` (what `otc_fts::search::top` does for borrowed hits).
pub fn ranked_page<T>(
    mut items: Vec<T>,
    score: impl Fn(&T) -> f32,
    path: impl for<'a> Fn(&'a T) -> &'a str,
    after: Option<(f32, &str)>,
    n: usize,
) -> Vec<T> {
    if let Some((s, p)) = after {
        items.retain(|h| score(h) < s || (score(h) == s && path(h) > p));
    }
    items.sort_by(|a, b| score(b).total_cmp(&score(a)).then_with(|| path(a).cmp(path(b))));
    items.truncate(n);
    items
}

/// The mean of a note's chunk vectors, unit length (None for a note with none).
pub fn centroid(vectors: &[Vec<f32>]) -> Option<Vec<f32>> {
    let first = vectors.first()?;
    let mut sum = vec![0f32; first.len()];
    let dims = sum.len();
    for v in vectors.iter().filter(|v| v.len() == dims) {
        sum.iter_mut().zip(v).for_each(|(s, x)| *s += x);
    }
    otc_embed::normalize(&mut sum);
    Some(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_agreement() {
        let text = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let semantic = vec!["b".to_string(), "d".to_string(), "a".to_string()];
        let fused = fuse(&[(&text, 1.0), (&semantic, 1.0)], 60.0);
        let order: Vec<&str> = fused.iter().map(|(p, _)| p.as_str()).collect();
        // b is high in both, a in both but lower; d and c in one ranking each.
        assert_eq!(order, ["b", "a", "d", "c"]);
        let text_only = fuse(&[(&text, 1.0), (&semantic, 0.0)], 60.0);
        assert_eq!(text_only[0].0, "a");
    }

    #[test]
    fn relative_fusion_keeps_a_clear_lead() {
        let s = |v: &[(&str, f32)]| v.iter().map(|(p, x)| (p.to_string(), *x)).collect::<Vec<_>>();
        // BM25 puts "a" far ahead; the vectors barely prefer "b". Rank fusion would tie them.
        let text = s(&[("a", 30.0), ("b", 5.0), ("c", 4.0)]);
        let near = s(&[("b", 0.61), ("a", 0.60), ("c", 0.30)]);
        let fused = fuse_scores(&[(&text, 1.0), (&near, 0.5)]);
        assert_eq!(fused.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!((fused[0].1 - (1.0 + 0.5 * 0.31 / 0.31)).abs() < 0.05, "{fused:?}");
        // A lone hit is the best of its ranking, not the worst.
        let lone = fuse_scores(&[(&s(&[("x", 2.0)]), 1.0), (&near, 0.5)]);
        assert_eq!(lone[0].0, "x", "{lone:?}");
        let rrf =
            fuse(&[(&["a".into(), "b".into(), "c".into()], 1.0), (&["b".into(), "a".into(), "c".into()], 1.0)], 10.0);
        assert_eq!(rrf[0].1, rrf[1].1, "ranks alone tie them");
    }

    #[test]
    fn the_meaning_leaves_the_operators_out() {
        assert_eq!(meaning_of("budget path:work tag:#q3 -draft").unwrap(), "budget");
        assert_eq!(meaning_of("\"launch plan\" -\"old plan\" dates").unwrap(), "launch plan dates");
        assert_eq!(meaning_of("Tag:x").unwrap_err().code, ErrorCode::InvalidInput);
    }

    #[test]
    fn centroid_is_unit_length() {
        let c = centroid(&[vec![1.0, 0.0], vec![0.0, 1.0]]).unwrap();
        assert!((c[0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6 && (c[0] - c[1]).abs() < 1e-6);
        assert!(centroid(&[]).is_none());
    }
}
