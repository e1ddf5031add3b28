//! The link graph's analytics, in memory: a directed graph of notes (an edge per linking pair,
//! however many links join them) and the measures the graph tools report. No I/O: the tools
//! load the nodes and edges a caller may see from the index and hand them here.
//!
//! Every algorithm is bounded: PageRank and Louvain are linear per pass with a pass cap,
//! betweenness samples its sources past a work budget, and cycle search stops at a step
//! budget and says so.

mod centrality;
mod communities;
mod cycles;
mod paths;

pub use centrality::{Betweenness, betweenness, pagerank};
pub use communities::{Communities, louvain, modularity};
pub use cycles::{CycleSearch, Cycles, find_cycles};
pub use paths::{Strength, components, link_strength, shortest_path};

use rustc_hash::FxHashMap;

/// A node's index in a [`Graph`].
pub type Node = u32;

/// A directed graph of named nodes with at most one edge per ordered pair and no self-loops.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    names: Vec<String>,
    index: FxHashMap<String, Node>,
    out: Vec<Vec<Node>>,
    into: Vec<Vec<Node>>,
    /// Links behind each edge (parallel to `out`).
    weight: Vec<Vec<u32>>,
    edges: usize,
}

impl Graph {
    /// About how many bytes the graph holds (names twice, the index's slots, each edge in both
    /// directions with its weight), for a cache's bound.
    pub fn weight(&self) -> usize {
        self.names.iter().map(|n| 2 * n.len() + 3 * 24 + 48).sum::<usize>() + self.edges * 16
    }

    /// The graph of `nodes` (duplicates kept once) and the `edges` between them as (from, to,
    /// links): an edge naming an unknown node or joining a node to itself is left out, and
    /// repeated pairs add up their links.
    pub fn new<I>(nodes: impl IntoIterator<Item = String>, edges: I) -> Graph
    where
        I: IntoIterator,
        I::Item: EdgeRef,
    {
        let mut g = Graph::default();
        for name in nodes {
            if !g.index.contains_key(&name) {
                g.index.insert(name.clone(), g.names.len() as Node);
                g.names.push(name);
            }
        }
        let n = g.names.len();
        g.out = vec![Vec::new(); n];
        g.into = vec![Vec::new(); n];
        g.weight = vec![Vec::new(); n];
        let mut seen: FxHashMap<(Node, Node), usize> = FxHashMap::default();
        for e in edges {
            let (Some(&a), Some(&b)) = (g.index.get(e.from()), g.index.get(e.to())) else { continue };
            if a == b {
                continue;
            }
            match seen.get(&(a, b)) {
                Some(&at) => g.weight[a as usize][at] += e.links().max(1),
                None => {
                    seen.insert((a, b), g.out[a as usize].len());
                    g.out[a as usize].push(b);
                    g.weight[a as usize].push(e.links().max(1));
                    g.into[b as usize].push(a);
                    g.edges += 1;
                }
            }
        }
        // Adjacency in node order, so every walk is deterministic.
        for a in 0..n {
            let mut pairs: Vec<(Node, u32)> = g.out[a].iter().copied().zip(g.weight[a].iter().copied()).collect();
            pairs.sort_unstable();
            (g.out[a], g.weight[a]) = pairs.into_iter().unzip();
            g.into[a].sort_unstable();
        }
        g
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Edges (linking pairs).
    pub fn edge_count(&self) -> usize {
        self.edges
    }

    pub fn name(&self, node: Node) -> &str {
        &self.names[node as usize]
    }

    pub fn node(&self, name: &str) -> Option<Node> {
        self.index.get(name).copied()
    }

    /// The nodes `node` links to, in node order.
    pub fn outgoing(&self, node: Node) -> &[Node] {
        &self.out[node as usize]
    }

    /// The nodes that link to `node`, in node order.
    pub fn incoming(&self, node: Node) -> &[Node] {
        &self.into[node as usize]
    }

    /// How many links `from` has to `to` (0: no edge).
    pub fn links(&self, from: Node, to: Node) -> u32 {
        let out = &self.out[from as usize];
        out.binary_search(&to).map_or(0, |at| self.weight[from as usize][at])
    }

    /// Each node's neighbours either way, once each, in node order.
    pub fn undirected(&self) -> Vec<Vec<Node>> {
        (0..self.len())
            .map(|a| {
                let mut both: Vec<Node> = self.out[a].iter().chain(&self.into[a]).copied().collect();
                both.sort_unstable();
                both.dedup();
                both
            })
            .collect()
    }
}

/// An edge as [`Graph::new`] takes it.
pub trait EdgeRef {
    fn from(&self) -> &str;
    fn to(&self) -> &str;
    /// Links behind the edge (at least one).
    fn links(&self) -> u32 {
        1
    }
}

impl EdgeRef for (String, String) {
    fn from(&self) -> &str {
        &self.0
    }
    fn to(&self) -> &str {
        &self.1
    }
}

impl EdgeRef for (&str, &str) {
    fn from(&self) -> &str {
        self.0
    }
    fn to(&self) -> &str {
        self.1
    }
}

impl EdgeRef for (String, String, u32) {
    fn from(&self) -> &str {
        &self.0
    }
    fn to(&self) -> &str {
        &self.1
    }
    fn links(&self) -> u32 {
        self.2
    }
}

/// A small seeded generator (SplitMix64), so a seeded result is the same on every run and
/// every machine.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fisher–Yates.
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
pub(crate) fn graph(edges: &[(&str, &str)]) -> Graph {
    let mut nodes: Vec<String> = edges.iter().flat_map(|(a, b)| [a.to_string(), b.to_string()]).collect();
    nodes.sort();
    nodes.dedup();
    Graph::new(nodes, edges.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_pairs_add_links_and_self_loops_and_strangers_are_left_out() {
        let g = Graph::new(
            ["a".to_string(), "b".to_string(), "a".to_string()],
            [
                ("a".to_string(), "b".to_string(), 2),
                ("a".to_string(), "b".to_string(), 1),
                ("a".to_string(), "a".to_string(), 1),
                ("a".to_string(), "zzz".to_string(), 1),
            ],
        );
        assert_eq!(g.len(), 2);
        assert_eq!(g.edge_count(), 1);
        assert_eq!(g.links(0, 1), 3);
        assert_eq!(g.links(1, 0), 0);
        assert_eq!(g.incoming(1), &[0]);
    }
}
