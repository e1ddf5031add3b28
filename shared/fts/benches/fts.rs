//! The full-text engine alone, in process: segment building (tokenising included), merging,
//! decoding, and query latency over a whole vault. No Postgres, no HTTP: the floor under what
//! the tools measure in loadtests/search-bench.sh.
//!
//!   OTC_BENCH_VAULT=/tmp/v100k cargo bench -p otc-fts
//!   (default: the repository's corpus/ vaults)

use std::time::Instant;

use otc_fts::search::{Part, Ranked, rank, text_edges, text_matches};
use otc_fts::{DocSource, Segment, SegmentBuilder, merge};

fn files(dir: &std::path::Path, out: &mut Vec<(String, String)>, root: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
                files(&p, out, root);
            }
        } else if p.extension().is_some_and(|x| x == "md")
            && let Ok(bytes) = std::fs::read(&p)
        {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.push((rel, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
}

/// A note's documents the way the indexer cuts them, roughly: a chunk per heading section.
fn add(b: &mut SegmentBuilder, path: &str, text: &str) {
    let title = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".md");
    let mut start = 0;
    let mut ord = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i <= text.len() {
        let at_heading = i == text.len() || (i > start && bytes[i] == b'#' && (i == 0 || bytes[i - 1] == b'\n'));
        if at_heading {
            b.add(&DocSource { path, ord, prefix: &[title], text: &text[start..i], offset: start as u32 });
            ord += 1;
            start = i;
        }
        i += 1;
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let root = std::env::var("OTC_BENCH_VAULT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus"));
    let mut notes = Vec::new();
    files(&root, &mut notes, &root);
    notes.sort();
    let bytes: usize = notes.iter().map(|n| n.1.len()).sum();
    println!("{} notes, {:.1} MB from {}", notes.len(), bytes as f64 / 1e6, root.display());

    let t = Instant::now();
    let mut segments = Vec::new();
    for batch in notes.chunks(500) {
        let mut b = SegmentBuilder::new();
        for (path, text) in batch {
            add(&mut b, path, text);
        }
        segments.push(b.finish());
    }
    let built = t.elapsed().as_secs_f64();
    let seg_bytes: usize = segments.iter().map(Vec::len).sum();
    println!(
        "build (tokenise + postings), batches of 500: {built:.2} s, {:.0} notes/s, {:.1} MB/s, {:.1} MB of segments",
        notes.len() as f64 / built,
        bytes as f64 / 1e6 / built,
        seg_bytes as f64 / 1e6
    );

    let t = Instant::now();
    let decoded: Vec<Segment> = segments.into_iter().map(|s| Segment::decode(s).unwrap()).collect();
    println!("decode {} segments: {:.3} s", decoded.len(), t.elapsed().as_secs_f64());
    let t = Instant::now();
    let all = |_p: u32| true;
    let parts: Vec<(&Segment, &dyn Fn(u32) -> bool)> =
        decoded.iter().map(|s| (s, &all as &dyn Fn(u32) -> bool)).collect();
    let (merged, _) = merge(&parts);
    println!(
        "merge all (nothing dead: copied): {:.3} s, {:.1} MB",
        t.elapsed().as_secs_f64(),
        merged.len() as f64 / 1e6
    );
    let half = |p: u32| p.is_multiple_of(2);
    let t = Instant::now();
    let parts: Vec<(&Segment, &dyn Fn(u32) -> bool)> =
        decoded.iter().map(|s| (s, &half as &dyn Fn(u32) -> bool)).collect();
    let _ = merge(&parts);
    println!("merge all (half dead: rewritten): {:.3} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let one = Segment::decode(merged).unwrap();
    println!("decode the merged segment: {:.3} s", t.elapsed().as_secs_f64());

    let visible = vec![true; one.paths.len()];
    let parts = [Part { seg: &one, visible: &visible }];
    let queries: [&[&str]; 5] =
        [&["project"], &["vertical", "hydroponics"], &["daily", "note", "template"], &["task"], &["the"]];
    for q in queries {
        let words: Vec<String> = q.iter().map(|s| s.to_string()).collect();
        let mut times = Vec::new();
        let mut n = 0;
        for _ in 0..15 {
            let t = Instant::now();
            n = rank(&parts, &Ranked { words: &words, ..Default::default() }).len();
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!("rank {q:?}: {n} notes, p50 {:.2} ms", median(times));
    }
    {
        // search_vault's `"concept board" -satellite`: a required phrase and an excluded word.
        let words: Vec<String> = ["concept", "board"].iter().map(|s| s.to_string()).collect();
        let phrases = [words.clone()];
        let excluded = [vec!["satellite".to_string()]];
        let q = Ranked { words: &words, phrases: &phrases, excluded: &excluded };
        let mut times = Vec::new();
        let mut n = 0;
        for _ in 0..15 {
            let t = Instant::now();
            n = rank(&parts, &q).len();
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!("rank \"concept board\" -satellite: {n} notes, p50 {:.2} ms", median(times));
    }
    for q in [&["hydroponic"][..], &["satellite", "concept"], &["ject"], &["the"]] {
        let tokens: Vec<String> = q.iter().map(|s| s.to_string()).collect();
        let mut times = Vec::new();
        let mut n = 0;
        for _ in 0..15 {
            let t = Instant::now();
            n = text_matches(&parts, &text_edges(&tokens, false)).len();
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!("text {q:?}: {n} notes, p50 {:.2} ms", median(times));
    }
}
