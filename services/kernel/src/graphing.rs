//! The graph tools' common ground: the link graph one caller may see, loaded from the index,
//! and the CPU-bound measures run off the async workers.
//!
//! A node is a note the caller may read that is not in Obsidian's Excluded files (an excluded
//! note stays a link target elsewhere, but gets no graph edge) nor a wiki's generated page; an edge joins two such notes
//! that link, by a body link, an embed or a property link alike.

use std::sync::Arc;

use otc_cache::{Figures, GenerationCache};
use otc_errors::{ErrorCode, ToolError};
use otc_graph::{Graph, Node};
use otc_kv::Generation;
use uuid::Uuid;

use crate::reading::{View, not_found};
use crate::{CallContext, internal};

/// The caller's link graph of a vault.
pub struct LinkGraph {
    pub graph: Graph,
    /// Readable notes left out as Excluded files.
    pub excluded: std::collections::HashSet<String>,
    /// Per node that holds links: how many, and how many lead to no note the caller can read.
    pub counts: Vec<otc_store::LinkCounts>,
}

impl LinkGraph {
    /// About how many bytes it holds.
    pub fn weight(&self) -> usize {
        self.graph.weight()
            + self.excluded.iter().map(|p| p.len() + 32).sum::<usize>()
            + self.counts.iter().map(|c| c.path.len() + 48).sum::<usize>()
    }

    /// Links the nodes hold, of every kind, and how many of them lead nowhere readable.
    pub fn link_totals(&self) -> (u64, u64) {
        self.counts.iter().fold((0, 0), |(l, u), c| (l + u64::from(c.links), u + u64::from(c.unresolved)))
    }
}

impl LinkGraph {
    /// The node of a path argument: a readable note in the graph; a missing or unreadable
    /// note is note_not_found, an excluded one invalid_input.
    pub fn node(&self, view: &View, path: &str, field: &str) -> Result<Node, ToolError> {
        view.readable_path(path).map_err(|e| e.detail("field", field))?;
        let found = self.graph.node(path).or_else(|| {
            (!path.to_ascii_lowercase().ends_with(".md")).then(|| self.graph.node(&format!("{path}.md"))).flatten()
        });
        if let Some(node) = found {
            return Ok(node);
        }
        if self.excluded.contains(path) || self.excluded.contains(&format!("{path}.md")) {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("{field} is in the vault's Excluded files, which the link graph leaves out"),
            )
            .detail("field", field)
            .detail("reason", "excluded"));
        }
        Err(not_found(path).detail("field", field))
    }
}

/// How long a cached graph counts at most, even while the vault's write generation holds (an
/// index rebuilt without a commit shows after this).
const CACHED_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// Link graphs this gateway loaded, by tenant, vault and read ACL, valid while the vault's
/// write generation (moved on by every commit) holds: an agent's run of graph calls on an
/// unchanged vault loads it once.
pub struct GraphCache(GenerationCache<GraphKey, Arc<LinkGraph>>);

/// A cached graph's tenant, vault and read ACL (as the store's expressions; None: any path).
type GraphKey = (Uuid, Uuid, Option<Vec<String>>);

impl GraphCache {
    /// A cache of at most `max_bytes` of graphs (`caches.graphs_bytes`), the least recently used
    /// evicted first; off when `enabled` is false.
    pub fn new(enabled: bool, max_bytes: u64) -> Self {
        let age = if enabled { CACHED_FOR } else { std::time::Duration::ZERO };
        let weigh = |_: &GraphKey, graph: &Arc<LinkGraph>| graph.weight();
        Self(GenerationCache::new("graphs", age, usize::MAX, max_bytes, weigh))
    }

    /// What the cache holds and has done.
    pub fn figures(&self) -> Figures {
        self.0.figures()
    }
}

/// The caller's link graph of the vault: from this gateway's cache while the vault is
/// unchanged, else loaded.
pub async fn load(ctx: &CallContext<'_>, view: &View) -> Result<Arc<LinkGraph>, ToolError> {
    let services = ctx.services();
    let cache = &services.graphs.0;
    let key = (ctx.caller.tenant_id, view.vault.id, view.readable().map(<[String]>::to_vec));
    // Read before the graph is, so a commit in between makes the entry stale, never wrong.
    let generation = match cache.enabled() {
        true => services.kv.generation(Generation::Vault(view.vault.id)).await.ok(),
        false => None,
    };
    if let Some(generation) = generation
        && let Some(graph) = cache.get(&key, generation)
    {
        return Ok(graph);
    }
    let graph = Arc::new(read(ctx, view).await?);
    if let Some(generation) = generation {
        cache.put(key, generation, graph.clone());
    }
    Ok(graph)
}

/// Reads the caller's link graph of the vault from the index.
async fn read(ctx: &CallContext<'_>, view: &View) -> Result<LinkGraph, ToolError> {
    let tool = ctx.tool;
    let mut tx = ctx.begin().await?;
    let rows = tx.link_graph(view.vault.id, view.readable()).await?;
    let excluded = tx.excluded_paths(view.vault.id).await?;
    tx.commit().await?;
    // A wiki's generated pages list every page: no node, so their links count for nothing.
    let generated = view.wiki_generated_paths();
    compute(tool, move || {
        let excluded: std::collections::HashSet<String> = excluded.into_iter().collect();
        let notes = rows.notes.into_iter().filter(|p| !excluded.contains(p) && !generated.contains(p));
        let graph = Graph::new(notes, rows.edges);
        let excluded = excluded.into_iter().filter(|p| graph.node(p).is_none()).collect();
        let counts = rows.counts.into_iter().filter(|c| graph.node(&c.path).is_some()).collect();
        LinkGraph { graph, excluded, counts }
    })
    .await
}

/// Runs a graph computation on the blocking pool, so a large vault's walk never holds up
/// other requests on the async workers.
pub async fn compute<T: Send + 'static>(tool: &str, f: impl FnOnce() -> T + Send + 'static) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| internal(tool, &e))
}
