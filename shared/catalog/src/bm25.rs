//! BM25 over the tool catalogue: each tool's name, title, description, tags and domain,
//! split on anything not a letter or digit and lowercased; k1 1.2, b 0.75, plus a flat bonus
//! for each query term found in the tool's name.

use std::collections::{BTreeSet, HashMap};

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// A query term in the tool's name almost always means that tool.
const NAME_BONUS: f64 = 5.0;

pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).map(str::to_lowercase).collect()
}

/// One searchable document.
pub struct Doc<'a> {
    pub name: &'a str,
    pub tokens: Vec<String>,
    pub name_tokens: BTreeSet<String>,
}

impl<'a> Doc<'a> {
    pub fn new(name: &'a str, text: &str) -> Self {
        Self { name, tokens: tokenize(text), name_tokens: tokenize(name).into_iter().collect() }
    }
}

/// Scores every document against `query`; returns (name, score) with score > 0, best first,
/// ties by name.
pub fn rank<'a>(docs: &[Doc<'a>], query: &str) -> Vec<(&'a str, f64)> {
    let terms: BTreeSet<String> = tokenize(query).into_iter().collect();
    if docs.is_empty() || terms.is_empty() {
        return Vec::new();
    }
    let n = docs.len() as f64;
    let avg_len = docs.iter().map(|d| d.tokens.len()).sum::<usize>() as f64 / n;
    let df: HashMap<&str, usize> =
        terms.iter().map(|t| (t.as_str(), docs.iter().filter(|d| d.tokens.contains(t)).count())).collect();
    let mut scored: Vec<(&str, f64)> = docs
        .iter()
        .map(|doc| {
            let len = doc.tokens.len() as f64;
            let mut score = 0.0;
            for term in &terms {
                let tf = doc.tokens.iter().filter(|t| *t == term).count() as f64;
                if tf > 0.0 {
                    let df = df[term.as_str()] as f64;
                    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                    score += idf * (tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * len / avg_len.max(1.0)));
                }
                if doc.name_tokens.contains(term) {
                    score += NAME_BONUS;
                }
            }
            (doc.name, score)
        })
        .filter(|(_, s)| *s > 0.0)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_win_and_irrelevant_documents_score_zero() {
        let docs = vec![
            Doc::new("read_note", "read_note Read note Returns a note's content. domain:notes read-only"),
            Doc::new("server_health", "server_health Server health Reports liveness and subsystem health. admin"),
            Doc::new("list_notes", "list_notes List notes Lists notes in a folder. notes"),
        ];
        let ranked = rank(&docs, "read a note");
        assert_eq!(ranked[0].0, "read_note");
        assert!(ranked.iter().all(|(n, _)| *n != "server_health"));
        assert_eq!(rank(&docs, "health")[0].0, "server_health");
        assert!(rank(&docs, "zebra").is_empty());
        assert!(rank(&docs, "  ").is_empty());
    }
}
