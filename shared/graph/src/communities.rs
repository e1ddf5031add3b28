//! Communities by the Louvain method, on the graph with link direction dropped.

use rustc_hash::FxHashMap;

use crate::{Graph, Rng};

/// A partition of the notes.
#[derive(Debug, Clone)]
pub struct Communities {
    /// Each node's community; communities are numbered by size, largest first (ties by their
    /// first node).
    pub of: Vec<u32>,
    /// Nodes per community, by number.
    pub sizes: Vec<usize>,
    /// Newman's modularity of the partition, on the undirected graph whose edge weight is
    /// the number of directions the two notes link in (1 or 2).
    pub modularity: f64,
    /// Aggregation levels the method went through.
    pub levels: usize,
}

/// One level of the method: an undirected weighted graph (a self-loop's weight held apart).
struct Level {
    adj: Vec<Vec<(u32, f64)>>,
    self_w: Vec<f64>,
}

impl Level {
    fn of(g: &Graph) -> Level {
        let n = g.len();
        let mut maps: Vec<FxHashMap<u32, f64>> = vec![FxHashMap::default(); n];
        for a in 0..n {
            for &b in g.outgoing(a as u32) {
                *maps[a].entry(b).or_default() += 1.0;
                *maps[b as usize].entry(a as u32).or_default() += 1.0;
            }
        }
        Level::from_maps(maps, vec![0.0; n])
    }

    fn from_maps(maps: Vec<FxHashMap<u32, f64>>, self_w: Vec<f64>) -> Level {
        let adj = maps
            .into_iter()
            .map(|m| {
                let mut v: Vec<(u32, f64)> = m.into_iter().collect();
                v.sort_unstable_by_key(|&(b, _)| b);
                v
            })
            .collect();
        Level { adj, self_w }
    }

    fn degree(&self, a: usize) -> f64 {
        self.adj[a].iter().map(|&(_, w)| w).sum::<f64>() + 2.0 * self.self_w[a]
    }
}

/// Sweeps over the nodes per level, and levels, at most: each sweep gains modularity, so both
/// end long before these on any vault; the caps bound a pathological one.
const MAX_SWEEPS: usize = 100;
const MAX_LEVELS: usize = 32;

/// Louvain: move each node (in a seeded order) to the neighbouring community that gains the
/// most modularity until no move gains, then fold each community into one node and repeat
/// while that changes anything. Deterministic for a seed.
pub fn louvain(g: &Graph, seed: u64) -> Communities {
    let n = g.len();
    let mut rng = Rng::new(seed);
    // Each original node's node at the current level.
    let mut node_of: Vec<u32> = (0..n as u32).collect();
    let mut level = Level::of(g);
    let mut levels = 0;
    let two_m: f64 = (0..level.adj.len()).map(|a| level.degree(a)).sum();
    if two_m == 0.0 {
        return finish(g, node_of, 0);
    }
    loop {
        let size = level.adj.len();
        let k: Vec<f64> = (0..size).map(|a| level.degree(a)).collect();
        let mut community: Vec<u32> = (0..size as u32).collect();
        let mut tot = k.clone();
        let mut order: Vec<usize> = (0..size).collect();
        rng.shuffle(&mut order);
        let mut moved_any = false;
        let mut weights: FxHashMap<u32, f64> = FxHashMap::default();
        for _ in 0..MAX_SWEEPS {
            let mut moved = false;
            for &a in &order {
                let here = community[a];
                weights.clear();
                for &(b, w) in &level.adj[a] {
                    *weights.entry(community[b as usize]).or_default() += w;
                }
                tot[here as usize] -= k[a];
                let gain = |c: u32, w: f64| w - tot[c as usize] * k[a] / two_m;
                let mut best = here;
                let mut best_gain = gain(here, weights.get(&here).copied().unwrap_or(0.0));
                let mut candidates: Vec<(u32, f64)> = weights.iter().map(|(&c, &w)| (c, w)).collect();
                candidates.sort_unstable_by_key(|&(c, _)| c);
                for (c, w) in candidates {
                    let g = gain(c, w);
                    if g > best_gain + 1e-12 {
                        best = c;
                        best_gain = g;
                    }
                }
                tot[best as usize] += k[a];
                if best != here {
                    community[a] = best;
                    moved = true;
                    moved_any = true;
                }
            }
            if !moved {
                break;
            }
        }
        if !moved_any {
            break;
        }
        levels += 1;
        if levels > MAX_LEVELS {
            break;
        }
        // Fold: number the communities in use, then sum the weights between them.
        let mut renumber: FxHashMap<u32, u32> = FxHashMap::default();
        for &c in &community {
            let next = renumber.len() as u32;
            renumber.entry(c).or_insert(next);
        }
        let folded = renumber.len();
        let mut maps: Vec<FxHashMap<u32, f64>> = vec![FxHashMap::default(); folded];
        let mut self_w = vec![0.0; folded];
        for a in 0..size {
            let ca = renumber[&community[a]];
            self_w[ca as usize] += level.self_w[a];
            for &(b, w) in &level.adj[a] {
                let cb = renumber[&community[b as usize]];
                if ca == cb {
                    // Seen from both ends.
                    self_w[ca as usize] += w / 2.0;
                } else {
                    *maps[ca as usize].entry(cb).or_default() += w;
                }
            }
        }
        for v in node_of.iter_mut() {
            *v = renumber[&community[*v as usize]];
        }
        level = Level::from_maps(maps, self_w);
        if folded == size {
            break;
        }
    }
    finish(g, node_of, levels)
}

fn finish(g: &Graph, of: Vec<u32>, levels: usize) -> Communities {
    let mut sizes: FxHashMap<u32, (usize, u32)> = FxHashMap::default();
    for (node, &c) in of.iter().enumerate() {
        let e = sizes.entry(c).or_insert((0, node as u32));
        e.0 += 1;
    }
    let mut ranked: Vec<(u32, usize, u32)> = sizes.into_iter().map(|(c, (size, first))| (c, size, first)).collect();
    ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    let number: FxHashMap<u32, u32> = ranked.iter().enumerate().map(|(i, &(c, _, _))| (c, i as u32)).collect();
    let of: Vec<u32> = of.iter().map(|c| number[c]).collect();
    let sizes = ranked.iter().map(|&(_, size, _)| size).collect();
    let modularity = modularity(g, &of);
    Communities { of, sizes, modularity, levels }
}

/// Newman's modularity of a partition (`of`: each node's community) on the undirected graph
/// whose edge weight is the number of directions two notes link in. 0 for a graph without
/// edges.
pub fn modularity(g: &Graph, of: &[u32]) -> f64 {
    let communities = of.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut inside = vec![0.0f64; communities];
    let mut degree = vec![0.0f64; communities];
    let mut m = 0.0;
    for a in 0..g.len() {
        for &b in g.outgoing(a as u32) {
            m += 1.0;
            degree[of[a] as usize] += 1.0;
            degree[of[b as usize] as usize] += 1.0;
            if of[a] == of[b as usize] {
                inside[of[a] as usize] += 1.0;
            }
        }
    }
    if m == 0.0 {
        return 0.0;
    }
    inside.iter().zip(&degree).map(|(l, d)| l / m - (d / (2.0 * m)).powi(2)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph;

    #[test]
    fn two_cliques_joined_by_one_link_are_two_communities() {
        let mut edges = Vec::new();
        for side in [["a1", "a2", "a3", "a4"], ["b1", "b2", "b3", "b4"]] {
            for x in side {
                for y in side {
                    if x != y {
                        edges.push((x, y));
                    }
                }
            }
        }
        edges.push(("a1", "b1"));
        let g = graph(&edges);
        for seed in 0..5 {
            let c = louvain(&g, seed);
            assert_eq!(c.sizes, vec![4, 4], "seed {seed}");
            let a = g.node("a1").unwrap() as usize;
            let b = g.node("b1").unwrap() as usize;
            assert_ne!(c.of[a], c.of[b]);
            assert!(c.modularity > 0.4, "{}", c.modularity);
        }
        // One community of everything has modularity 0.
        assert!(modularity(&g, &vec![0; g.len()]).abs() < 1e-12);
    }
}
