//! Paths, reach and how strongly two notes are joined.

use std::collections::VecDeque;

use crate::{Graph, Node};

/// A shortest path from `from` to `to` (both included), following links forward only when
/// `directed`, else either way. Among equally short paths, the one through the earliest notes
/// in node order.
pub fn shortest_path(g: &Graph, from: Node, to: Node, directed: bool) -> Option<Vec<Node>> {
    if from == to {
        return Some(vec![from]);
    }
    let undirected = (!directed).then(|| g.undirected());
    let mut parent: Vec<Option<Node>> = vec![None; g.len()];
    let mut seen = vec![false; g.len()];
    seen[from as usize] = true;
    let mut queue = VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        let next = match &undirected {
            Some(u) => &u[v as usize][..],
            None => g.outgoing(v),
        };
        for &w in next {
            if seen[w as usize] {
                continue;
            }
            seen[w as usize] = true;
            parent[w as usize] = Some(v);
            if w == to {
                let mut path = vec![to];
                let mut at = to;
                while let Some(p) = parent[at as usize] {
                    path.push(p);
                    at = p;
                }
                path.reverse();
                return Some(path);
            }
            queue.push_back(w);
        }
    }
    None
}

/// The weakly connected components: each node's component, numbered by size (largest first),
/// and the sizes.
pub fn components(g: &Graph) -> (Vec<u32>, Vec<usize>) {
    let both = g.undirected();
    let mut of = vec![u32::MAX; g.len()];
    let mut sizes = Vec::new();
    for s in 0..g.len() {
        if of[s] != u32::MAX {
            continue;
        }
        let id = sizes.len() as u32;
        let mut size = 0;
        let mut queue = VecDeque::from([s as Node]);
        of[s] = id;
        while let Some(v) = queue.pop_front() {
            size += 1;
            for &w in &both[v as usize] {
                if of[w as usize] == u32::MAX {
                    of[w as usize] = id;
                    queue.push_back(w);
                }
            }
        }
        sizes.push(size);
    }
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(a.cmp(&b)));
    let mut rank = vec![0u32; sizes.len()];
    for (r, &c) in order.iter().enumerate() {
        rank[c] = r as u32;
    }
    (of.iter().map(|&c| rank[c as usize]).collect(), order.iter().map(|&c| sizes[c]).collect())
}

/// How strongly two notes are joined, and of what the score is made.
#[derive(Debug, Clone, PartialEq)]
pub struct Strength {
    /// Links from the first note to the second, and back.
    pub forward: u32,
    pub backward: u32,
    /// Notes both link to.
    pub shared_targets: usize,
    /// Notes that link to both.
    pub shared_sources: usize,
    /// Jaccard similarity of their neighbourhoods (linked or linking, either way, each
    /// other left out).
    pub jaccard: f64,
    /// Links on the shortest path either way (None: not connected).
    pub distance: Option<usize>,
    /// 0 to 1: half from direct links (a quarter each way), half from the shared
    /// neighbourhood (Jaccard); with neither, 1 / distance scaled into the lowest tenth.
    pub score: f64,
}

pub fn link_strength(g: &Graph, a: Node, b: Node) -> Strength {
    let forward = g.links(a, b);
    let backward = g.links(b, a);
    let count_common = |x: &[Node], y: &[Node]| x.iter().filter(|n| y.binary_search(n).is_ok()).count();
    let shared_targets = count_common(g.outgoing(a), g.outgoing(b));
    let shared_sources = count_common(g.incoming(a), g.incoming(b));
    let hood = |n: Node, other: Node| {
        let mut v: Vec<Node> = g.outgoing(n).iter().chain(g.incoming(n)).copied().filter(|&m| m != other).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (ha, hb) = (hood(a, b), hood(b, a));
    let common = count_common(&ha, &hb);
    let union = ha.len() + hb.len() - common;
    let jaccard = if union == 0 { 0.0 } else { common as f64 / union as f64 };
    let distance = shortest_path(g, a, b, false).map(|p| p.len() - 1);
    let direct = 0.25 * f64::from(u8::from(forward > 0)) + 0.25 * f64::from(u8::from(backward > 0));
    let mut score = direct + 0.5 * jaccard;
    if score == 0.0
        && let Some(d) = distance.filter(|&d| d > 0)
    {
        score = 0.1 / d as f64;
    }
    Strength { forward, backward, shared_targets, shared_sources, jaccard, distance, score }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph;

    #[test]
    fn paths_follow_links_forward_or_either_way() {
        let g = graph(&[("a", "b"), ("b", "c"), ("d", "c")]);
        let n = |s| g.node(s).unwrap();
        assert_eq!(shortest_path(&g, n("a"), n("c"), true), Some(vec![n("a"), n("b"), n("c")]));
        assert_eq!(shortest_path(&g, n("a"), n("d"), true), None);
        assert_eq!(shortest_path(&g, n("a"), n("d"), false).map(|p| p.len()), Some(4));
        let (of, sizes) = components(&g);
        assert_eq!(sizes, vec![4]);
        assert!(of.iter().all(|&c| c == 0));
    }

    #[test]
    fn strength_is_direct_links_and_a_shared_neighbourhood() {
        let g = graph(&[("a", "b"), ("b", "a"), ("a", "x"), ("b", "x"), ("y", "a"), ("y", "b"), ("p", "q")]);
        let n = |s| g.node(s).unwrap();
        let s = link_strength(&g, n("a"), n("b"));
        assert_eq!((s.forward, s.backward, s.shared_targets, s.shared_sources), (1, 1, 1, 1));
        assert_eq!(s.jaccard, 1.0);
        assert_eq!(s.score, 1.0);
        assert_eq!(link_strength(&g, n("a"), n("p")).distance, None);
        assert_eq!(link_strength(&g, n("a"), n("p")).score, 0.0);
        let far = link_strength(&g, n("x"), n("y"));
        assert_eq!(far.distance, Some(2));
    }
}
