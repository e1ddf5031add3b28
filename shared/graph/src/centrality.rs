//! PageRank and betweenness.

use std::collections::VecDeque;

use crate::{Graph, Rng};

/// PageRank by power iteration, as networkx computes it: damping `alpha`, a dangling note's
/// rank spread over every note, stopping when the ranks move less than `n * tol` in sum (or
/// after `max_iter` passes). The ranks sum to 1. Returns the ranks and the passes made.
pub fn pagerank(g: &Graph, alpha: f64, tol: f64, max_iter: usize) -> (Vec<f64>, usize) {
    let n = g.len();
    if n == 0 {
        return (Vec::new(), 0);
    }
    let uniform = 1.0 / n as f64;
    let mut x = vec![uniform; n];
    let mut next = vec![0.0; n];
    for pass in 1..=max_iter {
        let dangling: f64 = (0..n).filter(|&a| g.out[a].is_empty()).map(|a| x[a]).sum();
        let base = (alpha * dangling + (1.0 - alpha)) * uniform;
        next.iter_mut().for_each(|v| *v = base);
        for (a, targets) in g.out.iter().enumerate() {
            if targets.is_empty() {
                continue;
            }
            let share = alpha * x[a] / targets.len() as f64;
            for &b in targets {
                next[b as usize] += share;
            }
        }
        let moved: f64 = x.iter().zip(&next).map(|(a, b)| (a - b).abs()).sum();
        std::mem::swap(&mut x, &mut next);
        if moved < n as f64 * tol {
            return (x, pass);
        }
    }
    (x, max_iter)
}

/// Betweenness centrality.
#[derive(Debug, Clone)]
pub struct Betweenness {
    /// Per node, normalized as networkx does for a directed graph (by (n-1)(n-2)).
    pub scores: Vec<f64>,
    /// Shortest-path sources walked: every node when exact, else a seeded sample, scaled up.
    pub sources: usize,
    pub exact: bool,
}

/// Betweenness by Brandes' algorithm over the directed, unweighted graph. Sources are walked
/// in a seeded order until the walks have visited `budget` edges: when every source was walked
/// the result is exact, else the sums are scaled by n over the sources walked, as networkx's
/// `k` sample does. A fragmented vault's walks are short, so it is exact far past the size a
/// connected one is.
pub fn betweenness(g: &Graph, budget: usize, seed: u64) -> Betweenness {
    let n = g.len();
    let mut sources: Vec<u32> = (0..n as u32).collect();
    Rng::new(seed).shuffle(&mut sources);
    let mut visited = 0usize;
    let mut walked = 0usize;
    let mut scores = vec![0.0f64; n];
    let mut sigma = vec![0.0f64; n];
    let mut dist = vec![-1i64; n];
    let mut delta = vec![0.0f64; n];
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut order = Vec::with_capacity(n);
    let mut queue = VecDeque::new();
    for &s in &sources {
        if visited >= budget {
            break;
        }
        walked += 1;
        for &v in &order {
            let v = v as usize;
            sigma[v] = 0.0;
            dist[v] = -1;
            delta[v] = 0.0;
            preds[v].clear();
        }
        order.clear();
        let s = s as usize;
        sigma[s] = 1.0;
        dist[s] = 0;
        queue.push_back(s as u32);
        while let Some(v) = queue.pop_front() {
            order.push(v);
            let v = v as usize;
            visited += g.out[v].len() + 1;
            for &w in &g.out[v] {
                let w = w as usize;
                if dist[w] < 0 {
                    dist[w] = dist[v] + 1;
                    queue.push_back(w as u32);
                }
                if dist[w] == dist[v] + 1 {
                    sigma[w] += sigma[v];
                    preds[w].push(v as u32);
                }
            }
        }
        for &w in order.iter().rev() {
            let w = w as usize;
            for &v in &preds[w] {
                let v = v as usize;
                delta[v] += sigma[v] / sigma[w] * (1.0 + delta[w]);
            }
            if w != s {
                scores[w] += delta[w];
            }
        }
    }
    let exact = walked == n;
    let scale = if n > 2 { 1.0 / ((n - 1) * (n - 2)) as f64 } else { 1.0 };
    let sample = if exact { 1.0 } else { n as f64 / walked as f64 };
    scores.iter_mut().for_each(|v| *v *= scale * sample);
    Betweenness { scores, sources: walked, exact }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph;

    #[test]
    fn pagerank_of_a_cycle_is_uniform_and_a_sink_collects() {
        let g = graph(&[("a", "b"), ("b", "c"), ("c", "a")]);
        let (r, _) = pagerank(&g, 0.85, 1e-10, 200);
        for v in &r {
            assert!((v - 1.0 / 3.0).abs() < 1e-9);
        }
        let g = graph(&[("a", "c"), ("b", "c")]);
        let (r, _) = pagerank(&g, 0.85, 1e-10, 200);
        assert!((r.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(r[2] > r[0] && (r[0] - r[1]).abs() < 1e-12);
    }

    #[test]
    fn betweenness_of_a_chain_is_its_middle() {
        let g = graph(&[("a", "b"), ("b", "c")]);
        let b = betweenness(&g, usize::MAX, 1);
        assert!(b.exact);
        // One of the (n-1)(n-2) = 2 ordered pairs passes through b.
        assert_eq!(b.scores, vec![0.0, 0.5, 0.0]);
        let sampled = betweenness(&g, 1, 1);
        assert!(!sampled.exact && sampled.sources == 1, "{sampled:?}");
    }
}
