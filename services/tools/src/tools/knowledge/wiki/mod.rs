//! The wiki workflow's common ground (spec: "Wiki checks", "Wiki workflow"): where a vault's
//! wiki and raw sources are, which pages the server generates, and the duplicate check that
//! find_existing_page and draft_wiki_page share.
//!
//! Identity evidence (a path, file name, alias, wikidata QID, title property or first H1
//! naming the topic) can make a verdict; soft evidence (other notes' link text, semantic
//! nearness) only ever makes it ambiguous. Raw sources and the generated pages are never
//! candidates; a note in Obsidian's Excluded files is identity evidence (its name is taken) but
//! never a semantic match.

pub mod commit_wiki_page;
pub mod draft_wiki_page;
pub mod find_existing_page;
pub mod judge;
pub mod lint_wiki;
pub mod pages;
pub mod schema;
pub mod vet;

use std::collections::BTreeMap;

use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::Serialize;

use crate::tools::search::semantic::{Near, VectorSet};
use otc_kernel::CallContext;
use otc_kernel::reading::View;

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Candidate {
    pub path: String,
    /// Whether any of its evidence is identity evidence.
    pub identity: bool,
    pub evidence: Vec<Evidence>,
    /// Best chunk's cosine similarity to the topic, when it is a semantic candidate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// In Obsidian's Excluded files: its name is taken, but it is not a page to extend.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub excluded: bool,
    /// What the judge said of it, when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<crate::tools::knowledge::wiki::judge::Judgement>,
}

/// The judge's decision of a verdict: the page it found the same topic as (exists), or that
/// every candidate is about something else (new).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct JudgedBy {
    pub model: String,
    pub verdict: crate::tools::knowledge::wiki::judge::Verdict,
    pub rationale: String,
    /// The pages it read.
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Evidence {
    /// path, file_name, alias, wikidata, title, h1 (identity); link_text, semantic (soft).
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Wanted {
    /// Notes linking the topic's text to nothing.
    pub count: usize,
    /// The first ten of them.
    pub sources: Vec<String>,
    /// All of them.
    #[serde(skip)]
    pub all: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Skipped {
    pub check: &'static str,
    pub reason: String,
}

/// The duplicate check's answer.
pub struct Found {
    pub verdict: &'static str,
    pub candidates: Vec<Candidate>,
    pub wanted_by: Option<Wanted>,
    pub skipped: Vec<Skipped>,
    /// The vault's Excluded files, as the check read them.
    pub excluded: std::collections::HashSet<String>,
    /// Set when the judge decided the verdict.
    pub judged_by: Option<JudgedBy>,
}

impl Found {
    pub fn suggested_action(&self) -> &'static str {
        match self.verdict {
            "exists" => "link to or extend the existing page",
            "ambiguous" => "read the candidates, then decide",
            _ => "create the page",
        }
    }

    /// The one page the verdict names, when it is exists: the identity match, or the page
    /// the judge found to be the same topic.
    pub fn existing(&self) -> Option<&Candidate> {
        if self.verdict != "exists" {
            return None;
        }
        match &self.judged_by {
            Some(j) => self.candidates.iter().find(|c| j.paths.first() == Some(&c.path)),
            None => self.candidates.iter().find(|c| c.identity),
        }
    }
}

/// invalid_input with the spec's `reason` and the field it is about.
pub fn invalid(reason: &'static str, message: impl Into<String>, field: &str) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, message)
        .detail("reason", reason)
        .detail("field", field.to_string())
}

/// The vault's wiki folders, or the refusal of a vault that has none.
pub fn folders(view: &View) -> Result<otc_config::WikiFolders, ToolError> {
    view.wiki()
        .cloned()
        .ok_or_else(|| invalid("no_wiki_folder", "this vault has no wiki folder (set [wiki] folder)", "vault"))
}

/// How names are compared: lower-cased, runs of spaces, hyphens and underscores as one space,
/// trimmed (the store's `otc_name_norm`).
pub fn normalize(text: &str) -> String {
    let lower = text.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut gap = false;
    for c in lower.chars() {
        if c.is_whitespace() || c == '-' || c == '_' {
            gap = true;
        } else {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.push(c);
        }
    }
    out
}

/// A wikidata QID in the topic ("Q42", "Douglas Adams (Q42)").
pub fn qid(topic: &str) -> Option<String> {
    topic
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| {
            w.len() > 1 && w.starts_with('Q') && w[1..].chars().all(|c| c.is_ascii_digit()) && !w[1..].starts_with('0')
        })
        .map(str::to_string)
}

/// Whether `path` is in the vault's raw sources folder.
pub fn is_raw(view: &View, path: &str) -> bool {
    let Some(raw) = view.wiki().and_then(|w| w.raw.as_deref()) else { return false };
    let lower = path.to_lowercase();
    let raw = raw.to_lowercase();
    lower.strip_prefix(&raw).is_some_and(|rest| rest.starts_with('/'))
}

/// A min_similarity argument: -1 to 1.
pub fn min_similarity(value: Option<f32>, default: f32) -> Result<f32, ToolError> {
    match value {
        None => Ok(default),
        Some(v) if (-1.0..=1.0).contains(&v) => Ok(v),
        Some(_) => Err(ToolError::with_message(ErrorCode::InvalidInput, "min_similarity must be between -1 and 1")
            .detail("field", "min_similarity")),
    }
}

/// The duplicate check for `topic` among the readable notes under `prefix`.
pub async fn find(
    ctx: &CallContext<'_>,
    view: &View,
    topic: &str,
    prefix: &str,
    min_similarity: f32,
    judge: Option<bool>,
) -> Result<Found, ToolError> {
    let norm = normalize(topic);
    if norm.is_empty() {
        return Err(ToolError::with_message(ErrorCode::InvalidInput, "topic is empty").detail("field", "topic"));
    }
    let qid = qid(topic);
    let mut tx = ctx.begin().await?;
    let named = tx.notes_named(view.vault.id, view.readable(), prefix, &norm, qid.as_deref()).await?;
    let linked = tx.links_with_text(view.vault.id, view.readable(), &norm).await?;
    let excluded: std::collections::HashSet<String> = tx.excluded_paths(view.vault.id).await?.into_iter().collect();
    tx.commit().await?;
    let counts = |p: &str| !is_raw(view, p) && !view.is_wiki_generated(p);
    let mut by_path: BTreeMap<String, Candidate> = BTreeMap::new();
    for m in named.iter().filter(|m| counts(&m.path)) {
        let c = candidate(&mut by_path, &m.path, &excluded);
        c.identity = true;
        for (hit, kind, detail) in [
            (m.by_path, "path", None),
            (m.by_file_name, "file_name", None),
            (m.by_alias, "alias", None),
            (m.by_wikidata, "wikidata", qid.clone()),
            (m.by_title, "title", None),
            (m.by_h1, "h1", None),
        ] {
            if hit {
                c.evidence.push(Evidence { kind, detail });
            }
        }
    }
    let mut wanted_by = None;
    for group in &linked {
        match &group.resolved_path {
            Some(path) if counts(path) && path.starts_with(prefix) => {
                let sources: Vec<&String> = group.sources.iter().filter(|s| *s != path).collect();
                if sources.is_empty() {
                    continue;
                }
                candidate(&mut by_path, path, &excluded).evidence.push(Evidence {
                    kind: "link_text",
                    detail: Some(format!("{} note(s) link it with this text", sources.len())),
                });
            }
            Some(_) => {}
            None => {
                wanted_by = Some(Wanted {
                    count: group.sources.len(),
                    sources: group.sources.iter().take(10).cloned().collect(),
                    all: group.sources.clone(),
                })
            }
        }
    }
    let mut skipped = Vec::new();
    if ctx.services().embeddings.active().is_none() {
        skipped.push(Skipped { check: "semantic", reason: "no embedding provider is configured".into() });
    } else {
        match semantic_candidates(ctx, view, topic, prefix).await {
            Ok(hits) => {
                for (path, score) in hits.into_iter().filter(|(p, s)| *s >= min_similarity && counts(p)) {
                    let c = candidate(&mut by_path, &path, &excluded);
                    c.score = Some(score);
                    c.evidence.push(Evidence { kind: "semantic", detail: Some(format!("cosine {score:.3}")) });
                }
            }
            Err(e) => skipped.push(Skipped {
                check: "semantic",
                reason: format!("the embedding provider failed ({})", e.code.as_str()),
            }),
        }
    }
    let mut candidates: Vec<Candidate> = by_path.into_values().collect();
    candidates.sort_by(|a, b| {
        b.identity
            .cmp(&a.identity)
            .then(b.score.unwrap_or(0.0).total_cmp(&a.score.unwrap_or(0.0)))
            .then(b.evidence.len().cmp(&a.evidence.len()))
            .then(a.path.cmp(&b.path))
    });
    let identities = candidates.iter().filter(|c| c.identity).count();
    let mut verdict = match identities {
        1 => "exists",
        0 if candidates.is_empty() => "new",
        _ => "ambiguous",
    };
    // Only a verdict resting on soft evidence goes to the judge: an identity match is final.
    let mut judged_by = None;
    if let Some(asked) = crate::tools::knowledge::wiki::judge::for_call(ctx.services(), judge, |j| j.enabled) {
        match asked {
            None => skipped.push(Skipped { check: "judge", reason: "no judge is configured".into() }),
            Some(j) if verdict == "ambiguous" && identities == 0 => {
                let (decided, reason) = ask_judge(ctx, view, j, topic, &mut candidates).await?;
                if let Some(reason) = reason {
                    skipped.push(Skipped { check: "judge", reason });
                }
                if let Some(d) = decided {
                    verdict = if d.verdict == crate::tools::knowledge::wiki::judge::Verdict::SameTopic {
                        "exists"
                    } else {
                        "new"
                    };
                    judged_by = Some(d);
                }
            }
            Some(_) => {}
        }
    }
    Ok(Found { verdict, candidates, wanted_by, skipped, excluded, judged_by })
}

/// Asks the judge about the first candidates (up to its per-request limit; Excluded files are
/// never sent) and says what it decided: exactly one same_topic makes the verdict exists, every
/// candidate judged different makes it new, anything else decides nothing. The reason comes
/// back when a call could not be made or failed.
async fn ask_judge(
    ctx: &CallContext<'_>,
    view: &View,
    judge: &crate::tools::knowledge::wiki::judge::Judge,
    topic: &str,
    candidates: &mut [Candidate],
) -> Result<(Option<JudgedBy>, Option<String>), ToolError> {
    let tool = ctx.tool;
    use crate::tools::knowledge::wiki::judge::{Side, Verdict};
    let limit = judge.settings().max_calls_per_request as usize;
    let mut failure = None;
    let mut asked = 0;
    for c in candidates.iter_mut().filter(|c| !c.excluded && view.can_read(&c.path)).take(limit) {
        let Some((_, text)) = otc_kernel::writing::current_text(ctx, view.vault.id, &c.path).await? else {
            continue;
        };
        let subject = Side { label: "the topic", text: topic };
        let page = Side { label: &c.path, text: &text };
        match judge.judge(&ctx.services().kv, ctx.caller.tenant_id, subject, page).await {
            Ok(j) => {
                asked += 1;
                c.judged = Some(j);
            }
            Err(e) => {
                tracing::warn!(tool, error = %otc_errors::error_chain(&e), "the judge gave no verdict");
                failure = Some(e.reason());
                break;
            }
        }
    }
    let judged: Vec<&Candidate> = candidates.iter().filter(|c| c.judged.is_some()).collect();
    let same: Vec<&&Candidate> =
        judged.iter().filter(|c| c.judged.as_ref().is_some_and(|j| j.verdict == Verdict::SameTopic)).collect();
    let paths = judged.iter().map(|c| c.path.clone()).collect::<Vec<_>>();
    let decided = if failure.is_none() && same.len() == 1 {
        let j = same[0].judged.clone().expect("judged");
        let mut paths = paths;
        paths.retain(|p| *p != same[0].path);
        paths.insert(0, same[0].path.clone());
        Some(JudgedBy { model: j.model, verdict: Verdict::SameTopic, rationale: j.rationale, paths })
    } else if failure.is_none()
        && asked == candidates.len()
        && judged.iter().all(|c| c.judged.as_ref().is_some_and(|j| j.verdict == Verdict::Different))
    {
        let rationale = judged.first().and_then(|c| c.judged.as_ref()).map(|j| j.rationale.clone()).unwrap_or_default();
        Some(JudgedBy { model: judge.model().to_string(), verdict: Verdict::Different, rationale, paths })
    } else {
        None
    };
    Ok((decided, failure))
}

/// The candidate for `path`, added without evidence when it is new.
fn candidate<'a>(
    by_path: &'a mut BTreeMap<String, Candidate>,
    path: &str,
    excluded: &std::collections::HashSet<String>,
) -> &'a mut Candidate {
    by_path.entry(path.to_string()).or_insert_with(|| Candidate {
        path: path.to_string(),
        identity: false,
        evidence: Vec::new(),
        score: None,
        excluded: excluded.contains(path),
        judged: None,
    })
}

/// The notes whose best chunk is nearest the topic, with the cosine (Excluded files left out).
async fn semantic_candidates(
    ctx: &CallContext<'_>,
    view: &View,
    topic: &str,
    prefix: &str,
) -> Result<Vec<(String, f32)>, ToolError> {
    let tool = ctx.tool;
    let set = VectorSet::open(ctx, view, "topic").await?;
    let vector = set.embed(ctx, tool, topic).await?;
    let hits = set.nearest_notes(ctx, view, &vector, Near { prefix, skip: &[], notes: 10 }).await?;
    Ok(hits.into_iter().map(|h| (h.path, h.score)).collect())
}

/// One thing a wiki write leaves to fix (never a refusal).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Problem {
    /// schema, schema_file, unresolved_link, missing_link, no_inbound_link, patch_without_link,
    /// patch_skipped, possible_duplicate, excluded_note, poison_suspect or redacted.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub message: String,
}

impl Problem {
    pub fn new(kind: &'static str, path: Option<&str>, message: impl Into<String>) -> Problem {
        Problem { kind, path: path.map(str::to_string), message: message.into() }
    }
}

/// Whether a link written with `target` names the note at `page` (by path, or by file name
/// with or without .md, case-blind, as a link to a unique name does).
pub fn names_page(target: &str, page: &str) -> bool {
    let t = target.trim().to_lowercase();
    let page = page.to_lowercase();
    let stem = page.rsplit('/').next().unwrap_or(&page).trim_end_matches(".md").to_string();
    let t_md = if t.ends_with(".md") { t.clone() } else { format!("{t}.md") };
    t_md == page || t.trim_end_matches(".md") == stem
}

/// SCHEMA.md of the wiki folder, when there is one the caller can read: Ok(None) without one,
/// Err(reason) when it cannot be read.
pub async fn read_schema(
    ctx: &CallContext<'_>,
    view: &View,
    folders: &otc_config::WikiFolders,
) -> Result<Option<Result<crate::tools::knowledge::wiki::schema::Schema, String>>, ToolError> {
    let path = format!("{}/SCHEMA.md", folders.folder);
    if !view.can_read(&path) {
        return Ok(None);
    }
    let Some(entry) = otc_kernel::writing::current(ctx, view.vault.id, &path).await? else { return Ok(None) };
    let bytes = otc_kernel::writing::blob(ctx, &entry.hash).await?;
    Ok(Some(match std::str::from_utf8(&bytes) {
        Ok(text) => crate::tools::knowledge::wiki::schema::Schema::parse(text),
        Err(_) => Err("SCHEMA.md is not UTF-8 text".into()),
    }))
}

/// What SCHEMA.md says of a page: a `schema` problem per rule broken, `schema_file` when the
/// file cannot be read or was cut.
pub async fn schema_problems(
    ctx: &CallContext<'_>,
    view: &View,
    folders: &otc_config::WikiFolders,
    path: &str,
    page_type: Option<&str>,
    frontmatter: Option<&serde_json::Value>,
) -> Result<Vec<Problem>, ToolError> {
    let schema_path = format!("{}/SCHEMA.md", folders.folder);
    Ok(match read_schema(ctx, view, folders).await? {
        None => Vec::new(),
        Some(Err(why)) => vec![Problem::new("schema_file", Some(&schema_path), why)],
        Some(Ok(schema)) => schema
            .warnings
            .iter()
            .map(|w| Problem::new("schema_file", Some(&schema_path), w.clone()))
            .chain(
                schema
                    .check(&folders.folder, path, page_type, frontmatter)
                    .into_iter()
                    .map(|m| Problem::new("schema", Some(path), m)),
            )
            .collect(),
    })
}

/// The page's links that lead nowhere the caller can read (per target), and the sources it
/// does not link.
pub async fn link_problems(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    page: &otc_parser::Note,
    sources: &[String],
) -> Result<Vec<Problem>, ToolError> {
    let asked: Vec<(&str, &str)> = page
        .links
        .iter()
        .filter(|l| !l.target.is_empty() && !names_page(&l.target, path))
        .map(|l| (l.target.as_str(), path))
        .collect();
    let mut tx = ctx.begin().await?;
    let resolved = tx.resolve_among_readable(view.vault.id, view.readable(), &asked).await?;
    tx.commit().await?;
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for ((target, _), to) in asked.iter().zip(&resolved) {
        if to.is_none() && seen.insert(target.to_lowercase()) {
            out.push(Problem::new("unresolved_link", Some(path), format!("[[{target}]] leads to no note")));
        }
    }
    for source in sources {
        if !resolved.iter().any(|to| to.as_deref() == Some(source.as_str())) {
            out.push(Problem::new("missing_link", Some(path), format!("the page does not link its source {source}")));
        }
    }
    Ok(out)
}

/// Whether a readable note other than the page links it already (a link to its name that
/// leads nowhere yet counts: it resolves once the page exists).
pub async fn has_inbound(ctx: &CallContext<'_>, view: &View, path: &str) -> Result<bool, ToolError> {
    let keys = otc_vault::links::affected_link_keys(path);
    let mut tx = ctx.begin().await?;
    let links = tx.links_named(view.vault.id, &keys).await?;
    tx.commit().await?;
    Ok(links.iter().any(|l| {
        l.source_path != path
            && view.can_read(&l.source_path)
            && !view.is_wiki_generated(&l.source_path)
            && match &l.resolved_path {
                Some(to) => to == path,
                None => names_page(&l.target, path),
            }
    }))
}
