use std::collections::{BTreeMap, BTreeSet};

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_fts::Query;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tools::knowledge::wiki::commit_wiki_page::SEE_ALSO;
use crate::tools::knowledge::wiki::find_existing_page::DEFAULT_MIN_SIMILARITY;
use crate::tools::knowledge::wiki::{self, Candidate, Problem, Skipped};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{bounded, not_found};
use otc_kernel::searching::{Corpus, Scope};
use otc_kernel::{CallContext, Tool, writing};

pub struct DraftWikiPage;

/// A raw source shorter than this (body characters) gets a page of its own only when a page
/// covers, relates to or cites it.
pub const MIN_SOURCE_CHARS: usize = 1500;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub topic: String,
    /// SCHEMA.md page type.
    #[serde(default, rename = "type")]
    pub page_type: Option<String>,
    #[serde(default)]
    pub sources: Option<Vec<String>>,
    /// A raw-folder note: plan ingesting it.
    #[serde(default)]
    pub source: Option<String>,
    /// Ask a judge model about soft duplicates.
    #[serde(default)]
    pub judge: Option<bool>,
    #[serde(default)]
    pub limit: Option<u32>,
    /// Cosine (default 0.7).
    #[serde(default)]
    pub min_similarity: Option<f32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub topic: String,
    /// find_existing_page's verdict: exists, ambiguous or new.
    pub verdict: &'static str,
    /// The page that covers the topic, when the verdict is exists: extend it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing: Option<Existing>,
    pub candidates: Vec<Candidate>,
    pub link_map: LinkMap,
    /// What SCHEMA.md asks of the page, when the wiki has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaOut>,
    /// The changes to make, for commit_wiki_page (absent when an ingest was refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changeset: Option<Changeset>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest: Option<Ingest>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    /// Set when the judge decided the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_by: Option<wiki::JudgedBy>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Existing {
    pub path: String,
    pub content_hash: String,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct LinkMap {
    /// Notes the page should link (most relevant to the topic first).
    pub link_to: Vec<Mapped>,
    /// Notes that mention the topic and should link to the page.
    pub link_from: Vec<Mapped>,
    /// Notes that already link the topic's name.
    pub already_linking: Vec<String>,
    /// The sources the page cites.
    pub sources: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Mapped {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SchemaOut {
    /// Every type SCHEMA.md declares.
    pub types: Vec<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub page_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub required: Vec<String>,
    /// The subfolder of the wiki folder pages of the type go in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// Allowed properties and their allowed values (null: any); empty: any property.
    pub properties: BTreeMap<String, Option<Vec<String>>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Changeset {
    pub page: PageSkeleton,
    /// A link patch per note that should link the page.
    pub patches: Vec<PatchSkeleton>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PageSkeleton {
    pub path: String,
    /// create, or overwrite for the existing page (with its prev_hash).
    pub mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
    /// Fill in the empty values; the page body is yours to write.
    #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
    pub frontmatter: serde_json::Map<String, Value>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PatchSkeleton {
    pub path: String,
    pub prev_hash: String,
    pub op: &'static str,
    pub heading: &'static str,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Ingest {
    pub path: String,
    pub content_hash: String,
    /// Characters of its body (frontmatter left out).
    pub chars: usize,
    pub title: String,
    /// Wiki pages that already link it.
    pub cited_by: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refused>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Refused {
    pub reason: &'static str,
    pub chars: usize,
    pub min_chars: usize,
}

/// The topic as a note name: link syntax and characters no desktop stores dropped.
fn page_name(topic: &str) -> String {
    let cleaned: String = topic
        .chars()
        .filter(|c| {
            !c.is_control()
                && !matches!(c, '[' | ']' | '#' | '^' | '|' | ':' | '\\' | '/' | '*' | '?' | '"' | '<' | '>')
        })
        .collect();
    let name = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    let name = name.trim_end_matches(['.', ' ']).to_string();
    if name.is_empty() { "Untitled".into() } else { name }
}

impl Tool for DraftWikiPage {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        core: false,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "draft_wiki_page",
            "Draft a wiki page",
            "Plans a wiki page without writing: duplicate check, links, SCHEMA.md requirements and a changeset \
             skeleton for commit_wiki_page.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let folders = wiki::folders(&view)?;
        let limit = bounded(input.limit, 10, 1..=50, "limit")?;
        let min = wiki::min_similarity(input.min_similarity, DEFAULT_MIN_SIMILARITY)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let mut problems = Vec::new();

        // The source to ingest: readable first (a hidden one is as missing), then inside raw.
        let mut sources: Vec<String> = input.sources.clone().unwrap_or_default();
        let ingest_source = match &input.source {
            Some(source) => {
                view.readable_path(source).map_err(|e| e.detail("field", "source"))?;
                let Some(raw) = folders.raw.as_deref() else {
                    return Err(wiki::invalid("no_raw_folder", "this vault has no raw sources folder", "source"));
                };
                if !wiki::is_raw(&view, source) {
                    return Err(wiki::invalid(
                        "outside_raw_folder",
                        format!("source must be a note in {raw}/"),
                        "source",
                    ));
                }
                if !source.ends_with(".md") {
                    return Err(wiki::invalid("not_markdown", "source must be a .md note", "source"));
                }
                let (entry, text) =
                    writing::current_text(ctx, view.vault.id, source).await?.ok_or_else(|| not_found(source))?;
                if !sources.contains(source) {
                    sources.push(source.clone());
                }
                Some((source.clone(), entry, text))
            }
            None => None,
        };

        // The duplicate check over the wiki's pages (what commit_wiki_page checks again).
        let wiki_prefix = format!("{}/", folders.folder);
        let found = wiki::find(ctx, &view, &input.topic, &wiki_prefix, min, input.judge).await?;
        let existing = match found.existing() {
            Some(c) if c.excluded => {
                problems.push(Problem::new(
                    "excluded_note",
                    Some(&c.path),
                    "a note in Obsidian's Excluded files has this name: give the page another one",
                ));
                None
            }
            Some(c) => {
                let entry = writing::current(ctx, view.vault.id, &c.path).await?;
                entry.map(|e| Existing { path: c.path.clone(), content_hash: hex::encode(e.hash) })
            }
            None => None,
        };

        // The link map, from the full-text index: the topic's words rank what to link; its
        // phrase finds what mentions it.
        let corpus = Corpus::open(ctx, &view, &Scope::default()).await?;
        let usable = |p: &str| !wiki::is_raw(&view, p) && !view.is_wiki_generated(p);
        let ranked = |query: &str| -> Vec<String> {
            let Ok(q) = Query::parse(query) else { return Vec::new() };
            let mut hits = corpus.rank(&q);
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            let mut seen = BTreeSet::new();
            hits.iter().map(|h| corpus.path(h.part, h.path).to_string()).filter(|p| seen.insert(p.clone())).collect()
        };
        let phrase = format!("\"{}\"", input.topic.replace('"', " "));
        let own = existing.as_ref().map(|e| e.path.clone());
        let mut already: BTreeSet<String> = found.wanted_by.iter().flat_map(|w| w.all.iter().cloned()).collect();
        if let Some(own) = &own {
            let keys = otc_vault::links::affected_link_keys(own);
            let mut tx = ctx.begin().await?;
            let links = tx.links_named(view.vault.id, &keys).await?;
            tx.commit().await?;
            already.extend(
                links
                    .into_iter()
                    .filter(|l| l.resolved_path.as_deref() == Some(own.as_str()) && view.can_read(&l.source_path))
                    .map(|l| l.source_path),
            );
        }
        let already: BTreeSet<String> = already.into_iter().filter(|p| usable(p)).collect();
        let mut link_to: Vec<Mapped> = found
            .candidates
            .iter()
            .filter(|c| !c.identity && !c.excluded && Some(&c.path) != own.as_ref())
            .map(|c| Mapped { path: c.path.clone(), why: Some(format!("{} evidence", c.evidence[0].kind)) })
            .collect();
        for path in ranked(&input.topic.replace('"', " ")) {
            if link_to.len() >= limit {
                break;
            }
            if usable(&path) && Some(&path) != own.as_ref() && !link_to.iter().any(|m| m.path == path) {
                link_to.push(Mapped { path, why: Some("ranks high for the topic's words".into()) });
            }
        }
        link_to.truncate(limit);
        let mut link_from: Vec<Mapped> = Vec::new();
        for path in ranked(&phrase) {
            if link_from.len() >= limit {
                break;
            }
            if usable(&path) && Some(&path) != own.as_ref() && !already.contains(&path) && view.acl().can_write(&path) {
                link_from.push(Mapped { path, why: Some("mentions the topic without linking it".into()) });
            }
        }

        // SCHEMA.md's requirements for the type.
        let schema = match wiki::read_schema(ctx, &view, &folders).await? {
            None => None,
            Some(Err(why)) => {
                problems.push(Problem::new("schema_file", Some(&format!("{}/SCHEMA.md", folders.folder)), why));
                None
            }
            Some(Ok(s)) => {
                let t = input.page_type.as_deref().and_then(|t| s.page_type(t));
                if let Some(kind) = input.page_type.as_deref().filter(|_| t.is_none() && !s.types.is_empty()) {
                    problems.push(Problem::new(
                        "schema",
                        None,
                        format!("type {kind:?} is not one of SCHEMA.md's types"),
                    ));
                }
                Some(SchemaOut {
                    types: s.types.iter().map(|t| t.name.clone()).collect(),
                    page_type: t.map(|t| t.name.clone()),
                    description: t.and_then(|t| t.description.clone()),
                    required: t.map(|t| t.required.clone()).unwrap_or_default(),
                    folder: t.and_then(|t| t.folder.clone()),
                    properties: s.properties.clone(),
                })
            }
        };

        // The ingest's bookkeeping, and whether the source earns a page.
        let ingest = match &ingest_source {
            Some((path, entry, text)) => {
                let note = otc_kernel::memory::parse_note(text)?;
                let chars = text[note.body_start.min(text.len())..].chars().count();
                let keys = otc_vault::links::affected_link_keys(path);
                let mut tx = ctx.begin().await?;
                let links = tx.links_named(view.vault.id, &keys).await?;
                tx.commit().await?;
                let cited_by: Vec<String> = links
                    .into_iter()
                    .filter(|l| l.resolved_path.as_deref() == Some(path.as_str()))
                    .map(|l| l.source_path)
                    .filter(|p| p.starts_with(&wiki_prefix) && view.can_read(p) && !view.is_wiki_generated(p))
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                let alone = found.verdict == "new" && cited_by.is_empty();
                let refused = (chars < MIN_SOURCE_CHARS && alone).then_some(Refused {
                    reason: "source_too_short",
                    chars,
                    min_chars: MIN_SOURCE_CHARS,
                });
                let title = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".md").to_string();
                Some(Ingest {
                    path: path.clone(),
                    content_hash: hex::encode(entry.hash),
                    chars,
                    title,
                    cited_by,
                    refused,
                })
            }
            None => None,
        };

        let refused = ingest.as_ref().is_some_and(|i| i.refused.is_some());
        let changeset = (!refused).then(|| {
            let (path, mode, prev_hash) = match &existing {
                Some(e) => (e.path.clone(), "overwrite", Some(e.content_hash.clone())),
                None => {
                    let sub = schema.as_ref().and_then(|s| s.folder.clone());
                    let folder = match sub {
                        Some(sub) => format!("{}/{sub}", folders.folder),
                        None => folders.folder.clone(),
                    };
                    (format!("{folder}/{}.md", page_name(&input.topic)), "create", None)
                }
            };
            let mut frontmatter = serde_json::Map::new();
            if let Some(t) = &input.page_type {
                frontmatter.insert("type".into(), json!(t));
            }
            for field in schema.as_ref().map(|s| s.required.clone()).unwrap_or_default() {
                frontmatter.entry(field).or_insert(json!(""));
            }
            if !sources.is_empty() {
                let cites: Vec<String> =
                    sources.iter().map(|s| format!("[[{}]]", s.strip_suffix(".md").unwrap_or(s))).collect();
                frontmatter.insert("sources".into(), json!(cites));
            }
            Changeset { page: PageSkeleton { path, mode, prev_hash, frontmatter }, patches: Vec::new() }
        });
        let mut changeset = changeset;
        if let Some(cs) = &mut changeset {
            for m in &link_from {
                if let Some(entry) = writing::current(ctx, view.vault.id, &m.path).await? {
                    cs.patches.push(PatchSkeleton {
                        path: m.path.clone(),
                        prev_hash: hex::encode(entry.hash),
                        op: "link",
                        heading: SEE_ALSO,
                    });
                }
            }
        }

        let mut candidates = found.candidates;
        candidates.truncate(limit);
        let mut link_map = LinkMap { link_to, link_from, already_linking: already.into_iter().collect(), sources };
        if !detailed {
            for c in &mut candidates {
                c.evidence.iter_mut().for_each(|e| e.detail = None);
            }
            for m in link_map.link_to.iter_mut().chain(link_map.link_from.iter_mut()) {
                m.why = None;
            }
        }
        Ok(Output {
            vault: view.vault.name.clone(),
            topic: input.topic,
            verdict: found.verdict,
            existing,
            candidates,
            link_map,
            schema,
            changeset,
            ingest,
            problems,
            judged_by: found.judged_by.clone(),
            skipped: found.skipped,
        })
    }
}
