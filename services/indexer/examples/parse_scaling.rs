//! How parsing and extraction time grows with a note's size (issue 12: a note of random bytes
//! took 0.8 s at 8 MB and 32 s at 32 MB). Prints, per input kind and size, the time of
//! `otc_parser::parse`, of `extract::note_record_within` with no size limit (parse, rows and
//! chunks) and ns per byte, and of `extract::note_record` as the indexer runs it (the first
//! 4 MiB).
//!
//! `cargo run --release -p otc-indexer --example parse_scaling -- [SIZE ...] [--kinds a,b]`
//! (sizes in MB, or KiB as `256k`; default 8 16 32 64; a kind stops growing once one size takes over 10 s).

use std::time::{Duration, Instant};

use otc_store::{FileEntry, FileKind};

fn random_bytes(len: usize, mut seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        out.extend_from_slice(&seed.to_le_bytes());
    }
    out.truncate(len);
    out
}

fn repeat(unit: &str, len: usize) -> Vec<u8> {
    unit.as_bytes().iter().copied().cycle().take(len).collect()
}

fn nested(open: &str, inner: &str, close: &str, len: usize) -> Vec<u8> {
    let depth = len / (open.len() + close.len()).max(1);
    let mut s = open.repeat(depth);
    s.push_str(inner);
    s.push_str(&close.repeat(depth));
    s.into_bytes()
}

pub fn input(kind: &str, len: usize) -> Vec<u8> {
    match kind {
        "random" => random_bytes(len, 0x9E37_79B9_7F4A_7C15),
        "wiki-open" => repeat("[[", len),
        "wiki-open-line" => repeat("[[a ", len),
        "brackets" => repeat("[", len),
        "link-mid" => repeat("](", len),
        "backticks" => repeat("`", len),
        "code-spans" => repeat("`a` ", len),
        "percent" => repeat("%%", len),
        "percent-lines" => repeat("%%\n", len),
        "dollars" => repeat("$$", len),
        "html-open" => repeat("<!--", len),
        "headings" => repeat("# h\n", len),
        "heading-line" => {
            let mut s = b"# ".to_vec();
            s.extend(repeat("word ", len));
            s
        }
        "tasks" => repeat("- [ ] task #tag [[x]]\n", len),
        "nested-list" => {
            (0..len / 40).flat_map(|i| format!("{}- item\n", "  ".repeat(i % 200)).into_bytes()).take(len).collect()
        }
        "nested-quote" => repeat(">", len),
        "nested-images" => nested("![", "x", "](a)", len),
        "nested-links" => nested("[", "x", "](a)", len),
        "one-line" => repeat("word [[a]] #t `c` [b](c) ", len),
        "tiny-lines" => repeat("\n", len),
        "tags" => repeat(" #a", len),
        "frontmatter-links" => {
            let mut s = b"---\nup:\n".to_vec();
            while s.len() < len {
                s.extend_from_slice(b"  - \"[[a\\\"b]]\"\n");
            }
            s.extend_from_slice(b"---\nbody\n");
            s
        }
        other => panic!("unknown input kind {other}"),
    }
}

pub const KINDS: &[&str] = &[
    "random",
    "wiki-open",
    "wiki-open-line",
    "brackets",
    "link-mid",
    "backticks",
    "code-spans",
    "percent",
    "percent-lines",
    "dollars",
    "html-open",
    "headings",
    "heading-line",
    "tasks",
    "nested-list",
    "nested-quote",
    "nested-images",
    "nested-links",
    "one-line",
    "tiny-lines",
    "tags",
    "frontmatter-links",
];

fn main() {
    let mut sizes: Vec<usize> = Vec::new();
    let mut kinds: Vec<String> = KINDS.iter().map(|k| k.to_string()).collect();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--kinds" {
            kinds = args.next().expect("--kinds a,b").split(',').map(str::to_string).collect();
        } else {
            sizes.push(match arg.strip_suffix('k') {
                Some(kib) => kib.parse::<usize>().expect("a size in KiB") << 10,
                None => arg.parse::<usize>().expect("a size in MB") << 20,
            });
        }
    }
    if sizes.is_empty() {
        sizes = vec![8 << 20, 16 << 20, 32 << 20, 64 << 20];
    }
    let entry = FileEntry {
        path: "big.md".into(),
        hash: [0; 32],
        size: 0,
        mtime: chrono::Utc::now(),
        kind: FileKind::Note,
        seq: 1,
    };
    println!(
        "{:<18} {:>8} {:>10} {:>8} {:>10} {:>8} {:>10}",
        "kind", "KiB", "parse s", "ns/B", "extract s", "ns/B", "4 MiB s"
    );
    for kind in &kinds {
        for &len in &sizes {
            let bytes = input(kind, len);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let t = Instant::now();
            let note = otc_parser::parse(&text);
            let parse = t.elapsed();
            drop(note);
            let t = Instant::now();
            let record = otc_indexer::extract::note_record_within(&entry, &bytes, usize::MAX, &|| false);
            let extract = t.elapsed();
            drop(record);
            let t = Instant::now();
            let record = otc_indexer::extract::note_record(&entry, &bytes);
            let capped = t.elapsed();
            drop(record);
            let n = bytes.len() as f64;
            println!(
                "{kind:<18} {:>8} {:>10.3} {:>8.1} {:>10.3} {:>8.1} {:>10.3}",
                len >> 10,
                parse.as_secs_f64(),
                parse.as_nanos() as f64 / n,
                extract.as_secs_f64(),
                extract.as_nanos() as f64 / n,
                capped.as_secs_f64()
            );
            if parse + extract > Duration::from_secs(10) {
                break;
            }
        }
    }
}
