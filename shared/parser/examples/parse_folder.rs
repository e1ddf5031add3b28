//! Parses every note under a folder and reports notes/s (parse only: no I/O in the timing).
//!
//!   cargo run --release -p otc-parser --example parse_folder -- /tmp/v10k

use std::time::Instant;

fn main() {
    let root = std::env::args().nth(1).expect("usage: parse_folder DIR");
    let mut texts = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(root)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                texts.push(text);
            }
        }
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    let started = Instant::now();
    let mut links = 0;
    for text in &texts {
        links += otc_parser::parse(text).links.len();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{} notes ({:.1} MB, {links} links) in {secs:.2} s: {:.0} notes/s, {:.1} MB/s (one core)",
        texts.len(),
        bytes as f64 / 1e6,
        texts.len() as f64 / secs,
        bytes as f64 / 1e6 / secs
    );
}
