//! Simple cycles (no note twice) up to a length, each found once.

use crate::{Graph, Node};

/// What to look for.
#[derive(Debug, Clone, Copy)]
pub struct CycleSearch {
    /// Shortest and longest cycle wanted, in links.
    pub min_len: usize,
    pub max_len: usize,
    /// Cycles kept for the answer (the counts go on past it).
    pub keep: usize,
    /// Edge visits before the search stops; the counts are then lower bounds.
    pub budget: usize,
}

/// What a search found.
#[derive(Debug, Clone, Default)]
pub struct Cycles {
    /// Cycles of min_len..=max_len links, each as its notes from the one first in node order:
    /// the `keep` shortest of all found (ties in node order), shortest first.
    pub found: Vec<Vec<Node>>,
    /// Cycles of min_len..=max_len links.
    pub total: usize,
    /// Cycles shorter than min_len.
    pub shorter: usize,
    /// Cycles of exactly max_len + 1 links (longer ones are not searched).
    pub longer: usize,
    /// The budget ran out: every count is a lower bound.
    pub truncated: bool,
}

/// Every simple cycle of at most `max_len + 1` links, each once: a depth-first walk from each
/// note through the notes after it in node order, so a cycle is found from its first note only.
pub fn find_cycles(g: &Graph, search: CycleSearch) -> Cycles {
    let horizon = search.max_len + 1;
    let mut out = Cycles::default();
    // The `keep` shortest so far, the longest on top to be pushed out.
    let mut kept: std::collections::BinaryHeap<(usize, Vec<Node>)> = std::collections::BinaryHeap::new();
    let mut steps = 0usize;
    let mut on_path = vec![false; g.len()];
    let mut path: Vec<Node> = Vec::with_capacity(horizon);
    // (node, next edge to try) per depth.
    let mut stack: Vec<(Node, usize)> = Vec::with_capacity(horizon);
    'starts: for s in 0..g.len() as Node {
        if g.outgoing(s).is_empty() || g.incoming(s).is_empty() {
            continue;
        }
        path.clear();
        path.push(s);
        on_path[s as usize] = true;
        stack.clear();
        stack.push((s, 0));
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            let targets = g.outgoing(v);
            if *next >= targets.len() {
                stack.pop();
                on_path[v as usize] = false;
                path.pop();
                continue;
            }
            let w = targets[*next];
            *next += 1;
            steps += 1;
            if steps > search.budget {
                out.truncated = true;
                for &p in &path {
                    on_path[p as usize] = false;
                }
                break 'starts;
            }
            if w == s {
                let len = path.len();
                if len < search.min_len {
                    out.shorter += 1;
                } else if len > search.max_len {
                    out.longer += 1;
                } else {
                    out.total += 1;
                    let beats = kept.peek().is_none_or(|(l, top)| (len, &path) < (*l, top));
                    if kept.len() < search.keep || beats {
                        kept.push((len, path.clone()));
                        if kept.len() > search.keep {
                            kept.pop();
                        }
                    }
                }
            } else if w > s && !on_path[w as usize] && path.len() < horizon {
                on_path[w as usize] = true;
                path.push(w);
                stack.push((w, 0));
            }
        }
    }
    out.found = kept.into_sorted_vec().into_iter().map(|(_, cycle)| cycle).collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph;

    fn search(min_len: usize, max_len: usize) -> CycleSearch {
        CycleSearch { min_len, max_len, keep: 100, budget: usize::MAX }
    }

    #[test]
    fn each_cycle_once_counted_by_length() {
        // a⇄b (2), a→b→c→a (3), a→b→c→d→a (4).
        let g = graph(&[("a", "b"), ("b", "a"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "a")]);
        let c = find_cycles(&g, search(3, 3));
        assert_eq!((c.total, c.shorter, c.longer, c.truncated), (1, 1, 1, false));
        let names: Vec<&str> = c.found[0].iter().map(|&n| g.name(n)).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let all = find_cycles(&g, search(2, 10));
        assert_eq!(all.total, 3);
        assert_eq!(all.found.iter().map(Vec::len).collect::<Vec<_>>(), [2, 3, 4]);
        let cut = find_cycles(&g, CycleSearch { budget: 2, ..search(2, 10) });
        assert!(cut.truncated);
        // Kept: the shortest, whatever order the walk finds them in.
        let one = find_cycles(&g, CycleSearch { keep: 1, ..search(2, 10) });
        assert_eq!((one.total, one.found.len(), one.found[0].len()), (3, 1, 2));
    }
}
