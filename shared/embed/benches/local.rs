//! Local-model throughput in chunks per second, over the chunks of a real vault's notes.
//!
//!   eval "$(scripts/models env)"; OTC_BENCH_VAULT=$PWD/corpus/<vault> cargo bench -p otc-embed
//!
//! Chunks are cut as the indexer cuts them, roughly: each note split at its headings, a part
//! at most 2,000 bytes. `OTC_BENCH_THREADS` sets the texts run at once, one thread each
//! (default: the cores), as `embeddings.local_threads` does. The model is the one
//! `scripts/models env` names; `OTC_TEST_EMBEDDING_MODEL=<file>` measures another.

use std::time::Instant;

use otc_embed::local::{Local, LocalFiles};

fn chunks(dir: &std::path::Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            chunks(&path, out);
        } else if path.extension().is_some_and(|e| e == "md")
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            let mut part = String::new();
            for line in text.lines() {
                if (line.starts_with('#') || part.len() > 2_000) && !part.trim().is_empty() {
                    out.push(std::mem::take(&mut part));
                }
                part.push_str(line);
                part.push('\n');
            }
            if !part.trim().is_empty() {
                out.push(part);
            }
        }
    }
}

fn main() {
    let var = |n: &str| std::env::var(n).unwrap_or_else(|_| panic!("{n} is not set (eval \"$(scripts/models env)\")"));
    let files = LocalFiles {
        library: var("OTC_TEST_EMBEDDING_LIBRARY").into(),
        model: var("OTC_TEST_EMBEDDING_MODEL").into(),
        tokenizer: var("OTC_TEST_EMBEDDING_TOKENIZER").into(),
    };
    let threads = std::env::var("OTC_BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let vault = std::env::var("OTC_BENCH_VAULT")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus").into());
    let mut texts = Vec::new();
    chunks(std::path::Path::new(&vault), &mut texts);
    texts.truncate(2_000);
    assert!(!texts.is_empty(), "no notes under {vault}");
    let local = Local::load(&files, threads).expect("model");
    local.run(&texts[..texts.len().min(32)]).expect("warm-up");
    let started = Instant::now();
    let mut tokens = 0;
    for batch in texts.chunks(64) {
        tokens += local.run(batch).expect("embeds").usage.tokens;
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{}: {} chunks ({} tokens, {:.0} a chunk) in {secs:.2} s with {threads} threads: {:.0} chunks/s",
        local.model(),
        texts.len(),
        tokens,
        tokens as f64 / texts.len() as f64,
        texts.len() as f64 / secs
    );
}
