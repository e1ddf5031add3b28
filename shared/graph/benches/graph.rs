//! The graph measures alone, in memory, on a whole vault: what the graph tools compute after
//! they load the link graph (loadtests/graph-bench.sh times the tools end to end).
//!
//!   OTC_BENCH_VAULT=/tmp/v100k cargo bench -p otc-graph
//!   (default: the repository's corpus/ vaults)
//!
//! Links are read with a plain `[[target]]` scan resolved by file name: close enough to the
//! index's resolution for timing (scale_vault.py keeps every link resolving).

use std::collections::HashMap;
use std::time::Instant;

use otc_graph::{CycleSearch, Graph};

fn notes(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
                notes(&p, root, out);
            }
        } else if p.extension().is_some_and(|x| x == "md")
            && let Ok(bytes) = std::fs::read(&p)
        {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.push((rel, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
}

fn stem(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_suffix(".md").unwrap_or(name).to_lowercase()
}

fn load(root: &std::path::Path) -> Graph {
    let mut files = Vec::new();
    notes(root, root, &mut files);
    files.sort();
    let mut by_name: HashMap<String, &str> = HashMap::new();
    for (path, _) in &files {
        by_name.entry(stem(path)).or_insert(path);
    }
    let mut edges = Vec::new();
    for (path, text) in &files {
        let mut rest = text.as_str();
        while let Some(at) = rest.find("[[") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find("]]") else { break };
            let target = rest[..end].split(['|', '#']).next().unwrap_or("").trim();
            if let Some(to) = by_name.get(&stem(target)) {
                edges.push((path.clone(), to.to_string()));
            }
            rest = &rest[end + 2..];
        }
    }
    Graph::new(files.into_iter().map(|(p, _)| p), edges)
}

fn time<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    println!("  {what:<44} {:>9.1} ms", start.elapsed().as_secs_f64() * 1000.0);
    out
}

fn main() {
    let roots: Vec<std::path::PathBuf> = match std::env::var_os("OTC_BENCH_VAULT") {
        Some(v) => vec![v.into()],
        None => {
            let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
            let mut dirs: Vec<_> = std::fs::read_dir(corpus).unwrap().flatten().map(|e| e.path()).collect();
            dirs.retain(|d| d.is_dir());
            dirs.sort();
            dirs
        }
    };
    for root in roots {
        let start = Instant::now();
        let g = load(&root);
        println!(
            "{}: {} notes, {} linking pairs (read and scanned in {:.1} s)",
            root.display(),
            g.len(),
            g.edge_count(),
            start.elapsed().as_secs_f64()
        );
        let edges: Vec<(String, String)> = (0..g.len() as u32)
            .flat_map(|a| g.outgoing(a).iter().map(move |&b| (a, b)))
            .map(|(a, b)| (g.name(a).to_string(), g.name(b).to_string()))
            .collect();
        let names: Vec<String> = (0..g.len() as u32).map(|n| g.name(n).to_string()).collect();
        time("build the graph (Graph::new)", || Graph::new(names, edges));
        let (_, passes) = time("pagerank", || otc_graph::pagerank(&g, 0.85, 1e-6, 100));
        println!("    ({passes} passes)");
        let b = time("betweenness (budget 1e8 edge visits)", || otc_graph::betweenness(&g, 100_000_000, 1));
        println!("    ({} sources, exact: {})", b.sources, b.exact);
        let c = time("louvain", || otc_graph::louvain(&g, 0));
        println!("    ({} communities, modularity {:.3}, {} levels)", c.sizes.len(), c.modularity, c.levels);
        let search = CycleSearch { min_len: 3, max_len: 10, keep: 50_000, budget: 20_000_000 };
        let cycles = time("cycles 3..10 (budget 2e7 edge visits)", || otc_graph::find_cycles(&g, search));
        println!("    ({} found, truncated: {})", cycles.total, cycles.truncated);
        let (_, sizes) = time("weak components", || otc_graph::components(&g));
        println!("    ({} components)", sizes.len());
        if g.len() > 1 {
            let last = g.len() as u32 - 1;
            time("shortest path, first to last note, either way", || otc_graph::shortest_path(&g, 0, last, false));
            time("link strength, first and last note", || otc_graph::link_strength(&g, 0, last));
        }
    }
}
