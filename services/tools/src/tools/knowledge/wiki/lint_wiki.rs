use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures::{StreamExt, TryStreamExt};
use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tools::knowledge::wiki::{self, Skipped};
use crate::tools::search::semantic::{Near, VectorSet};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::graphing;
use otc_kernel::reading::{View, bounded};
use otc_kernel::{CallContext, Tool, writing};

pub struct LintWiki;

/// A page not modified for this long is stale.
const STALE_DAYS: i64 = 180;
/// A paragraph this long or longer, word for word in two pages, is a duplicate chunk.
const MIN_DUPLICATE_CHARS: usize = 80;
/// Pages named per proposal (the detail counts them all).
const RELATED_LISTED: usize = 10;
/// Unresolved links read at most.
const MAX_UNRESOLVED: usize = 10_000;
/// Note-to-note cosine from which two pages are near duplicates (the spec's calibrated floor).
const DEFAULT_NEAR_DUPLICATE: f32 = 0.909;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    Orphan,
    UnresolvedLink,
    Stale,
    DuplicateChunks,
    MissingSources,
    NearDuplicate,
    Contradiction,
    CoverageGap,
    GeneratedPages,
}

const ALL: [Check; 9] = [
    Check::Orphan,
    Check::UnresolvedLink,
    Check::Stale,
    Check::DuplicateChunks,
    Check::MissingSources,
    Check::NearDuplicate,
    Check::Contradiction,
    Check::CoverageGap,
    Check::GeneratedPages,
];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Default: the wiki folder.
    #[serde(default)]
    pub folder: Option<String>,
    #[serde(default)]
    pub checks: Option<Vec<Check>>,
    /// Let a model judge near duplicates.
    #[serde(default)]
    pub judge: Option<bool>,
    /// Max 200 (default 20).
    #[serde(default)]
    pub limit_per_check: Option<u32>,
    #[serde(default)]
    pub max_judge_calls: Option<u32>,
    /// Pages compared (default 1500, max 5000).
    #[serde(default)]
    pub max_notes: Option<u32>,
    /// Cosine, default 0.909.
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
    /// The folder linted ("" for the whole vault).
    pub folder: String,
    /// Pages looked at (raw sources, generated pages and Excluded files left out).
    pub pages: usize,
    pub proposals: Vec<Proposal>,
    /// Proposals per check, before the per-check limit.
    pub counts: BTreeMap<String, usize>,
    /// Part of the work was cut short: more than 10,000 unresolved links, or more pages than
    /// max_notes for the pairwise checks. The counts are then lower bounds.
    pub truncated: bool,
    /// The judge's verdicts on near duplicates, by verdict.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub judge_verdicts: BTreeMap<String, usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Proposal {
    pub kind: Check,
    /// The page (or, for unresolved_link, the missing target) the proposal is about.
    pub subject: String,
    /// The other pages involved (the first ten).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub suggested_action: String,
    /// The tool that applies the fix.
    pub tool: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<std::collections::BTreeMap<String, serde_json::Value>>")]
    pub tool_args: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// What the judge said of a near duplicate, when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_verdict: Option<crate::tools::knowledge::wiki::judge::Judgement>,
}

impl Tool for LintWiki {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Model),
        scopes: &["read:notes"],
        // Its judge, when one is configured, reads pages at an endpoint outside the server.
        declared_tags: &["external-network"],
        core: false,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "lint_wiki",
            "Lint the wiki",
            "Proposes wiki fixes as ready tool calls, writing nothing: orphan, stale or duplicate pages, broken \
             links, missing sources.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let per_check = bounded(input.limit_per_check, 20, 1..=200, "limit_per_check")?;
        let max_notes = bounded(input.max_notes, 1500, 1..=5000, "max_notes")?;
        let near_floor = wiki::min_similarity(input.min_similarity, DEFAULT_NEAR_DUPLICATE)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let prefix = match (&input.folder, view.wiki()) {
            (Some(f), _) => view.folder_prefix(Some(f))?,
            (None, Some(w)) => format!("{}/", w.folder),
            (None, None) => String::new(),
        };
        let mut checks: Vec<Check> = input.checks.clone().unwrap_or_else(|| ALL.to_vec());
        checks.sort();
        checks.dedup();
        let wants = |c: Check| checks.contains(&c);

        let loaded = graphing::load(ctx, &view).await?;
        let g = &loaded.graph;
        let counts_in = |p: &str| p.starts_with(&prefix) && !wiki::is_raw(&view, p) && !view.is_wiki_generated(p);
        let pages: Vec<String> = (0..g.len() as u32).map(|n| g.name(n).to_string()).filter(|p| counts_in(p)).collect();
        let mut proposals: Vec<Proposal> = Vec::new();
        let mut skipped = Vec::new();
        let mut judge_verdicts: BTreeMap<String, usize> = BTreeMap::new();

        if wants(Check::Orphan) {
            for page in &pages {
                let n = g.node(page).expect("a graph node");
                if g.incoming(n).is_empty() {
                    proposals.push(Proposal {
                        kind: Check::Orphan,
                        subject: page.clone(),
                        related: Vec::new(),
                        detail: Some("no other note links to this page".into()),
                        suggested_action: "link it from a related note; suggest_links lists candidates".into(),
                        tool: "suggest_links",
                        tool_args: Some(json!({"vault": view.vault.name, "path": page})),
                        evidence: None,
                        judge_verdict: None,
                    });
                }
            }
        }

        // Reads of the pages' index rows and texts, for the checks that need them.
        let mut tx = ctx.begin().await?;
        let facts = tx.note_facts(view.vault.id, &prefix, view.readable()).await?;
        let unresolved = if wants(Check::UnresolvedLink) {
            tx.unresolved_links(view.vault.id, &prefix, view.readable(), None, MAX_UNRESOLVED as i64).await?
        } else {
            Vec::new()
        };
        tx.commit().await?;
        let unresolved_cut = unresolved.len() >= MAX_UNRESOLVED;

        if wants(Check::UnresolvedLink) {
            let mut by_target: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
            for (_, source, link) in unresolved.iter().filter(|(_, s, _)| counts_in(s)) {
                let key = wiki::normalize(&link.target);
                let e = by_target.entry(key).or_insert_with(|| (link.target.clone(), BTreeSet::new()));
                e.1.insert(source.clone());
            }
            let mut groups: Vec<(String, BTreeSet<String>)> = by_target.into_values().collect();
            groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
            for (target, sources) in groups {
                proposals.push(Proposal {
                    kind: Check::UnresolvedLink,
                    subject: target.clone(),
                    detail: Some(format!("{} page(s) link [[{target}]], which leads to no note", sources.len())),
                    related: sources.into_iter().take(RELATED_LISTED).collect(),
                    suggested_action: "write the missing page (or repoint the links with rewrite_link)".into(),
                    tool: "draft_wiki_page",
                    tool_args: Some(json!({"vault": view.vault.name, "topic": target})),
                    evidence: None,
                    judge_verdict: None,
                });
            }
        }

        let page_set: BTreeSet<&str> = pages.iter().map(String::as_str).collect();
        if wants(Check::Stale) {
            let now = chrono::Utc::now();
            for f in facts.iter().filter(|f| page_set.contains(f.path.as_str())) {
                let days = (now - f.mtime).num_days();
                if days >= STALE_DAYS {
                    proposals.push(Proposal {
                        kind: Check::Stale,
                        subject: f.path.clone(),
                        related: Vec::new(),
                        detail: Some(format!("not changed for {days} days")),
                        suggested_action: "review the page and bring it up to date".into(),
                        tool: "patch_note",
                        tool_args: Some(json!({"vault": view.vault.name, "path": f.path})),
                        evidence: Some(f.mtime.to_rfc3339()),
                        judge_verdict: None,
                    });
                }
            }
        }

        let pairwise: Vec<&String> = pages.iter().take(max_notes).collect();
        if wants(Check::DuplicateChunks) || wants(Check::MissingSources) {
            let schema = match view.wiki() {
                Some(folders) => match wiki::read_schema(ctx, &view, folders).await? {
                    Some(Ok(s)) => Some(s),
                    _ => None,
                },
                None => None,
            };
            let mut seen: HashMap<String, String> = HashMap::new();
            let mut dups: BTreeMap<(String, String), usize> = BTreeMap::new();
            // The pages' texts, sixteen reads at a time, in page order.
            let vault_id = view.vault.id;
            let owned: Vec<String> = pairwise.iter().map(|p| p.to_string()).collect();
            let texts: Vec<Option<(otc_store::FileEntry, String)>> = futures::stream::iter(owned)
                .map(|path| async move { writing::current_text(ctx, vault_id, &path).await })
                .buffered(16)
                .try_collect()
                .await?;
            for (path, current) in pairwise.iter().zip(texts) {
                let Some((_, text)) = current else { continue };
                let note = otc_parser::parse(&text);
                if wants(Check::DuplicateChunks) {
                    let body = &text[note.body_start.min(text.len())..];
                    for para in body.split("\n\n") {
                        let norm = wiki::normalize(para);
                        if norm.chars().count() < MIN_DUPLICATE_CHARS {
                            continue;
                        }
                        match seen.get(&norm) {
                            Some(first) if first != *path => {
                                *dups.entry((first.clone(), (*path).clone())).or_default() += 1
                            }
                            Some(_) => {}
                            None => {
                                seen.insert(norm, (*path).clone());
                            }
                        }
                    }
                }
                if wants(Check::MissingSources) {
                    let fm = note.frontmatter.as_ref().and_then(|f| f.value.clone());
                    let props = fm.as_ref().and_then(Value::as_object);
                    let kind = props.and_then(|p| p.get("type")).and_then(Value::as_str);
                    let requires = schema
                        .as_ref()
                        .and_then(|s| kind.and_then(|k| s.page_type(k)))
                        .is_some_and(|t| t.required.iter().any(|f| f == "sources"));
                    let cites = note.links.iter().filter(|l| l.property.as_deref() == Some("sources")).count();
                    let declared = props.is_some_and(|p| p.contains_key("sources"));
                    let empty = props.and_then(|p| p.get("sources")).is_none_or(|v| {
                        v.is_null() || v.as_str() == Some("") || v.as_array().is_some_and(|a| a.is_empty())
                    });
                    if (requires || declared) && (empty || cites == 0) {
                        proposals.push(Proposal {
                            kind: Check::MissingSources,
                            subject: (*path).clone(),
                            related: Vec::new(),
                            detail: Some("the page cites no source in its sources property".into()),
                            suggested_action: "add the raw notes it draws on as [[links]] in sources".into(),
                            tool: "update_frontmatter",
                            tool_args: Some(json!({"vault": view.vault.name, "path": path})),
                            evidence: None,
                            judge_verdict: None,
                        });
                    }
                }
            }
            for ((first, second), n) in dups {
                proposals.push(Proposal {
                    kind: Check::DuplicateChunks,
                    subject: second.clone(),
                    related: vec![first.clone()],
                    detail: Some(format!("{n} paragraph(s) appear word for word in {first}")),
                    suggested_action: "keep the text in one page and link to it from the other".into(),
                    tool: "patch_note",
                    tool_args: Some(json!({"vault": view.vault.name, "path": second})),
                    evidence: None,
                    judge_verdict: None,
                });
            }
        }

        if wants(Check::NearDuplicate) {
            if ctx.services().embeddings.active().is_none() {
                skipped.push(Skipped { check: "near_duplicate", reason: "no embedding provider is configured".into() });
            } else {
                match near_duplicates(ctx, &view, &pairwise, &prefix, near_floor).await {
                    Ok(pairs) => {
                        for (a, b, score) in pairs {
                            proposals.push(Proposal {
                                kind: Check::NearDuplicate,
                                subject: a.clone(),
                                related: vec![b.clone()],
                                detail: Some(format!("the pages' meaning is {score:.3} alike")),
                                suggested_action: "read both; merge one into the other if they cover one topic".into(),
                                tool: "patch_note",
                                tool_args: Some(json!({"vault": view.vault.name, "path": a})),
                                evidence: Some(format!("cosine {score:.3}")),
                                judge_verdict: None,
                            });
                        }
                    }
                    Err(e) => skipped.push(Skipped {
                        check: "near_duplicate",
                        reason: format!("the embedding provider failed ({})", e.code.as_str()),
                    }),
                }
            }
            if let Some(asked) =
                crate::tools::knowledge::wiki::judge::for_call(ctx.services(), input.judge, |j| j.lint_enabled)
            {
                match asked {
                    None => skipped.push(Skipped { check: "judge", reason: "no judge is configured".into() }),
                    Some(judge) => {
                        let max = bounded(input.max_judge_calls, 10, 1..=100, "max_judge_calls")?;
                        let near = proposals.iter_mut().filter(|p| p.kind == Check::NearDuplicate).take(max);
                        let (failed, excluded) = judge_pairs(ctx, &view, judge, near, &mut judge_verdicts).await?;
                        if excluded > 0 {
                            skipped.push(Skipped {
                                check: "judge",
                                reason: format!(
                                    "{excluded} pair(s) left unjudged: a page of each is excluded from egress"
                                ),
                            });
                        }
                        if let Some(reason) = failed {
                            skipped.push(Skipped { check: "judge", reason });
                        }
                    }
                }
            }
        }
        if wants(Check::GeneratedPages)
            && let Some(w) = view.wiki()
        {
            let key = crate::tools::knowledge::wiki::pages::seal_key(ctx, view.vault.id).await?;
            for page in otc_kernel::reading::WIKI_GENERATED_PAGES {
                let path = format!("{}/{page}", w.folder);
                if !path.starts_with(&prefix) || !view.can_read(&path) {
                    continue;
                }
                let Some(page) =
                    crate::tools::knowledge::wiki::pages::read_page(ctx, view.vault.id, &path, &key).await?
                else {
                    continue;
                };
                let detail = match page.seal {
                    crate::tools::knowledge::wiki::pages::Seal::Valid => continue,
                    crate::tools::knowledge::wiki::pages::Seal::Unmarked => {
                        "a page of the server's name that the server did not write"
                    }
                    crate::tools::knowledge::wiki::pages::Seal::Broken => {
                        "the server's page, changed since it was written"
                    }
                };
                proposals.push(Proposal {
                    kind: Check::GeneratedPages,
                    subject: path.clone(),
                    related: Vec::new(),
                    detail: Some(format!("{detail}: it is left as it is and no longer kept up to date")),
                    suggested_action: "move your text to a page of its own, then delete this file (restore_note keeps \
                                       a copy); the next pass writes a fresh one"
                        .into(),
                    tool: "delete_note",
                    tool_args: Some(json!({"vault": view.vault.name, "path": path})),
                    evidence: None,
                    judge_verdict: None,
                });
            }
        }
        if wants(Check::Contradiction) {
            skipped.push(Skipped {
                check: "contradiction",
                reason: "no contradiction detector has run on this vault".into(),
            });
        }
        if wants(Check::CoverageGap) {
            skipped
                .push(Skipped { check: "coverage_gap", reason: "no gap report has been made for this vault".into() });
        }

        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        let mut kept: Vec<Proposal> = Vec::new();
        for p in proposals {
            let n = counts.entry(format::variant_name(p.kind)).or_default();
            *n += 1;
            if *n <= per_check {
                kept.push(p);
            }
        }
        if !detailed {
            for p in &mut kept {
                (p.detail, p.tool_args, p.evidence) = (None, None, None);
            }
        }
        let pairwise_cut = pages.len() > max_notes
            && (wants(Check::DuplicateChunks) || wants(Check::NearDuplicate) || wants(Check::MissingSources));
        Ok(Output {
            truncated: unresolved_cut || pairwise_cut,
            vault: view.vault.name.clone(),
            folder: prefix.trim_end_matches('/').to_string(),
            pages: pages.len(),
            proposals: kept,
            counts,
            judge_verdicts,
            skipped,
        })
    }
}

/// Asks the judge about each near-duplicate proposal (its subject against its related page),
/// setting its verdict and counting it. The reason comes back when a call failed (the rest are
/// then left unjudged), with how many pairs were left unjudged because a page of theirs is
/// excluded from egress (never sent).
async fn judge_pairs<'p>(
    ctx: &CallContext<'_>,
    view: &View,
    judge: &crate::tools::knowledge::wiki::judge::Judge,
    proposals: impl Iterator<Item = &'p mut Proposal>,
    counts: &mut BTreeMap<String, usize>,
) -> Result<(Option<String>, usize), ToolError> {
    let tool = ctx.tool;
    use crate::tools::knowledge::wiki::judge::Side;
    let egress = otc_kernel::egress::for_call(ctx).await?;
    let mut excluded = 0;
    for p in proposals {
        let Some(other) = p.related.first() else { continue };
        if egress.excludes(&p.subject) || egress.excludes(other) {
            excluded += 1;
            continue;
        }
        let (Some((_, a)), Some((_, b))) = (
            writing::current_text(ctx, view.vault.id, &p.subject).await?,
            writing::current_text(ctx, view.vault.id, other).await?,
        ) else {
            continue;
        };
        let sides = (Side { label: &p.subject, text: &a }, Side { label: other, text: &b });
        match judge.judge(&ctx.services().kv, ctx.caller.tenant_id, sides.0, sides.1).await {
            Ok(j) => {
                *counts.entry(format::variant_name(j.verdict)).or_default() += 1;
                p.judge_verdict = Some(j);
            }
            Err(e) => {
                tracing::warn!(tool, error = %otc_errors::error_chain(&e), "the judge gave no verdict");
                return Ok((Some(e.reason()), excluded));
            }
        }
    }
    Ok((None, excluded))
}

/// Pairs of pages whose mean chunk vectors are at least `floor` alike, each pair once, most
/// alike first.
async fn near_duplicates(
    ctx: &CallContext<'_>,
    view: &View,
    pages: &[&String],
    prefix: &str,
    floor: f32,
) -> Result<Vec<(String, String, f32)>, ToolError> {
    let set = VectorSet::open(ctx, view, "checks").await?;
    let allowed: BTreeSet<&str> = pages.iter().map(|p| p.as_str()).collect();
    let mut pairs: BTreeMap<(String, String), f32> = BTreeMap::new();
    for page in pages {
        let mut tx = ctx.begin().await?;
        let vectors = tx.note_vectors(view.vault.id, &set.model, page).await?;
        tx.commit().await?;
        let Some(centroid) = crate::tools::search::semantic::centroid(&vectors) else { continue };
        let skip = [(*page).clone()];
        let near = set.nearest_notes(ctx, view, &centroid, Near { prefix, skip: &skip, notes: 5 }).await?;
        for hit in near.into_iter().filter(|h| h.score >= floor && allowed.contains(h.path.as_str())) {
            let key = if **page < hit.path { ((*page).clone(), hit.path) } else { (hit.path, (*page).clone()) };
            let e = pairs.entry(key).or_insert(hit.score);
            *e = e.max(hit.score);
        }
    }
    let mut out: Vec<(String, String, f32)> = pairs.into_iter().map(|((a, b), s)| (a, b, s)).collect();
    out.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    Ok(out)
}
