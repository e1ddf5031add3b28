//! suggest_tags: tags a note could carry. Where the client offers sampling (a stdio session
//! whose client declared it) its own model chooses, shown the note and the vault's vocabulary;
//! otherwise, or when the model gives nothing usable, a heuristic over the vocabulary: tags
//! the note's linked notes carry, and tags whose words the note uses. Either way only tags the
//! note lacks, and nothing is written.

use std::collections::{BTreeMap, BTreeSet};

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{View, not_found};
use otc_kernel::{CallContext, Sample, Tool};

pub struct SuggestTags;

/// Notes of the vault whose tags form the vocabulary, at most.
const VOCABULARY_NOTES: i64 = 5_000;
/// Tags of the vocabulary shown to the client's model, most used first.
const VOCABULARY_SHOWN: usize = 150;
/// Linked notes (out and back) whose tags count.
const NEIGHBOURS: i64 = 50;
/// The note's text shown to the client's model, at most (cut at a character).
const TEXT_SHOWN: usize = 6_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// Default 5, max 20.
    #[serde(default)]
    #[schemars(range(min = 1, max = 20))]
    pub max_suggestions: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// sampling (the client's model chose) or vocabulary (the heuristic).
    pub source: &'static str,
    /// Best first.
    pub suggestions: Vec<Suggestion>,
    /// Detailed only: the tags the note has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing: Option<Vec<String>>,
    /// Set when the client could sample but the note is excluded from egress, so the
    /// heuristic answered instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress_skipped: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Suggestion {
    /// Without #.
    pub tag: String,
    /// Notes of the vault carrying it (0: a new tag the client's model proposes).
    pub notes: i64,
    /// Detailed only: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasons: Option<Vec<String>>,
}

/// A tag's key: lower-cased, without #.
fn key(tag: &str) -> String {
    tag.trim_start_matches('#').to_lowercase()
}

/// The words of a text, lower-cased (letters and digits).
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() > 2).map(str::to_lowercase).collect()
}

/// The words of a tag: its segments split at / - _ and case changes are not attempted.
fn tag_words(tag: &str) -> Vec<String> {
    tag.split(['/', '-', '_']).filter(|w| w.chars().count() > 2).map(str::to_lowercase).collect()
}

/// A candidate tag while scoring.
struct Candidate {
    tag: String,
    notes: i64,
    score: f64,
    reasons: Vec<String>,
}

/// The heuristic: each vocabulary tag the note lacks, scored by the linked notes that carry it
/// and the words of it the note uses, with how common it is as the tie-break.
fn heuristic(
    vocabulary: &[(String, i64)],
    existing: &BTreeSet<String>,
    neighbour_tags: &BTreeMap<String, usize>,
    neighbours: usize,
    note_words: &BTreeSet<String>,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for (tag, notes) in vocabulary {
        if existing.contains(&key(tag)) {
            continue;
        }
        let mut score = 0.0;
        let mut reasons = Vec::new();
        if let Some(&n) = neighbour_tags.get(&key(tag)) {
            score += 2.0 * n as f64 / neighbours.max(1) as f64 + 0.5;
            reasons.push(format!("{n} of the {neighbours} linked notes carry it"));
        }
        let parts = tag_words(tag);
        let used: Vec<&String> = parts.iter().filter(|w| note_words.contains(*w)).collect();
        if !used.is_empty() {
            score += used.len() as f64 / parts.len() as f64;
            let list: Vec<&str> = used.iter().map(|w| w.as_str()).collect();
            reasons.push(format!("the note uses its word(s) {}", list.join(", ")));
        }
        if score > 0.0 {
            score += (*notes as f64).ln_1p() / 100.0;
            out.push(Candidate { tag: tag.clone(), notes: *notes, score, reasons });
        }
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.tag.cmp(&b.tag)));
    out
}

/// The tags in the client model's answer: one per line or comma (`#tag`, `- tag`, `1. tag` and
/// quoted names read too), each a tag add_tag would take (`otc_edit`'s `normalize_tag`: no
/// spaces, not only digits) of at most 100 characters, at most `max`, only tags the note lacks.
fn sampled_tags(answer: &str, existing: &BTreeSet<String>, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in answer.split(['\n', ',']) {
        let item = item.trim().trim_start_matches(['-', '*', '[']).trim();
        // A numbered list's "1. " goes; a tag that starts with digits ("2026-review") stays.
        let digits = item.len() - item.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let item = match item[digits..].strip_prefix(['.', ')']) {
            Some(rest) if digits > 0 && rest.starts_with(' ') => rest.trim(),
            _ => item,
        };
        let tag = item.trim_matches(['"', '\'', '`', '[', ']']).trim_start_matches('#').trim_end_matches('.');
        // A tag add_tag would take, and no longer than a vault's tags run.
        let valid = tag.chars().count() <= 100 && otc_edit::frontmatter::normalize_tag(tag).is_ok();
        if valid && !existing.contains(&key(tag)) && !out.iter().any(|t| key(t) == key(tag)) {
            out.push(tag.to_string());
        }
        if out.len() == max {
            break;
        }
    }
    out
}

fn prompt(path: &str, text: &str, vocabulary: &[(String, i64)], existing: &BTreeSet<String>, max: usize) -> Sample {
    let shown: String = text.chars().take(TEXT_SHOWN).collect();
    let vocab: Vec<&str> = vocabulary.iter().take(VOCABULARY_SHOWN).map(|(t, _)| t.as_str()).collect();
    let has: Vec<&str> = existing.iter().map(String::as_str).collect();
    Sample {
        system: "You tag notes in an Obsidian vault. Answer with tags only, one per line, without #, no prose. \
                 Prefer tags the vault already uses."
            .into(),
        prompt: format!(
            "Suggest up to {max} tags for the note {path:?}.\nThe vault's tags, most used first: {}\nThe note already has: {}\n\n---\n{shown}",
            vocab.join(", "),
            if has.is_empty() { "none".to_string() } else { has.join(", ") }
        ),
        max_tokens: 200,
    }
}

async fn neighbour_tags(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
) -> Result<(BTreeMap<String, usize>, usize), ToolError> {
    let mut tx = ctx.begin().await?;
    let mut linked: BTreeSet<String> = tx
        .outgoing_links(view.vault.id, path)
        .await?
        .into_iter()
        .filter_map(|l| l.resolved_path)
        .filter(|p| p != path && view.can_read(p))
        .take(NEIGHBOURS as usize)
        .collect();
    for (_, source, _) in tx.backlinks(view.vault.id, path, view.readable(), None, NEIGHBOURS).await? {
        linked.insert(source);
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for other in linked.iter().take(2 * NEIGHBOURS as usize) {
        let tags: BTreeSet<String> =
            tx.note_tag_list(view.vault.id, other).await?.iter().map(|(t, _)| key(t)).collect();
        for tag in tags {
            *counts.entry(tag).or_default() += 1;
        }
    }
    tx.commit().await?;
    Ok((counts, linked.len().min(2 * NEIGHBOURS as usize)))
}

impl Tool for SuggestTags {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        declared_tags: &["client-sampling"],
        core: false,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "suggest_tags",
            "Suggest tags for a note",
            "Suggests tags a note lacks, by your client's model when it offers sampling, else from the vault's \
             tags. Writes nothing (add_tag does).",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let max = otc_kernel::reading::bounded(input.max_suggestions, 5, 1..=20, "max_suggestions")?;
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        let mut tx = ctx.begin().await?;
        let meta = tx.note_meta(view.vault.id, &input.path, view.readable()).await?;
        let meta = meta.ok_or_else(|| not_found(&input.path))?;
        let vocabulary = tx.tag_counts(view.vault.id, "", view.readable(), VOCABULARY_NOTES).await?;
        tx.commit().await?;
        let existing: BTreeSet<String> = meta.tags.iter().map(|t| key(t)).collect();
        // The text, a page at most: what the heuristic's words and the model's prompt need.
        let text = match otc_kernel::reading::read_content(ctx, &view, &input.path).await {
            Ok(content) => content.text,
            Err(e) if e.code == otc_errors::ErrorCode::ComputeBudgetExceeded => String::new(),
            Err(e) => return Err(e),
        };
        let mut egress_skipped = None;
        if let Some(sample) = ctx.sample {
            if otc_kernel::egress::for_call(ctx).await?.excludes(&input.path) {
                egress_skipped = Some(true);
            } else if let Some(answer) = sample(prompt(&input.path, &text, &vocabulary, &existing, max)).await {
                let counts: BTreeMap<String, i64> = vocabulary.iter().map(|(t, n)| (key(t), *n)).collect();
                let tags = sampled_tags(&answer, &existing, max);
                if !tags.is_empty() {
                    let suggestions = tags
                        .into_iter()
                        .map(|tag| {
                            let notes = counts.get(&key(&tag)).copied().unwrap_or(0);
                            let why = if notes > 0 {
                                "the client's model chose it"
                            } else {
                                "the client's model proposes it (new to the vault)"
                            };
                            Suggestion { tag, notes, reasons: detailed.then(|| vec![why.to_string()]) }
                        })
                        .collect();
                    let existing = detailed.then(|| existing.into_iter().collect());
                    let (vault, path) = (view.vault.name.clone(), input.path);
                    return Ok(Output { vault, path, source: "sampling", suggestions, existing, egress_skipped });
                }
            }
        }
        let (neighbours, linked) = neighbour_tags(ctx, &view, &input.path).await?;
        let title = input.path.rsplit('/').next().unwrap_or(&input.path).trim_end_matches(".md");
        let note_words = words(&format!("{title}\n{text}"));
        let ranked = heuristic(&vocabulary, &existing, &neighbours, linked, &note_words);
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            source: "vocabulary",
            suggestions: ranked
                .into_iter()
                .take(max)
                .map(|c| Suggestion { tag: c.tag, notes: c.notes, reasons: detailed.then_some(c.reasons) })
                .collect(),
            existing: detailed.then(|| existing.into_iter().collect()),
            egress_skipped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linked_notes_and_words_rank_the_vocabulary() {
        let vocabulary = vec![("garden".to_string(), 9), ("project/active".to_string(), 4), ("recipe".to_string(), 2)];
        let existing = BTreeSet::from(["recipe".to_string()]);
        let neighbours = BTreeMap::from([("project/active".to_string(), 3)]);
        let words = words("Notes on the garden beds");
        let ranked = heuristic(&vocabulary, &existing, &neighbours, 4, &words);
        let tags: Vec<&str> = ranked.iter().map(|c| c.tag.as_str()).collect();
        assert_eq!(tags, ["project/active", "garden"]);
        assert_eq!(ranked[0].reasons, ["3 of the 4 linked notes carry it"]);
        assert_eq!(ranked[1].reasons, ["the note uses its word(s) garden"]);
    }

    #[test]
    fn a_models_answer_is_read_as_tags() {
        let existing = BTreeSet::from(["garden".to_string()]);
        let answer = "#compost\n- soil/health\nGarden\n2026\nnot a tag!\n1. water, \"compost\"";
        assert_eq!(sampled_tags(answer, &existing, 5), ["compost", "soil/health", "water"]);
        assert_eq!(sampled_tags("a, b, c", &BTreeSet::new(), 2), ["a", "b"]);
        assert_eq!(sampled_tags("2026-review", &BTreeSet::new(), 2), ["2026-review"]);
        assert!(sampled_tags("/lead, trail/", &BTreeSet::new(), 2).is_empty(), "what add_tag refuses");
    }
}
