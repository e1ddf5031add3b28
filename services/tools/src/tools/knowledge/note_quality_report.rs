use std::collections::{BTreeMap, HashMap};

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::graphing::{self, compute};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, bounded, fit};
use otc_kernel::{CallContext, Tool};

pub struct NoteQualityReport;

/// A note not modified for this long is stale.
const STALE_DAYS: i64 = 365;
/// The other notes with the same bytes named per duplicate (a note copied a thousand times
/// would otherwise name every copy in every copy's row).
const TWINS_LISTED: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Flag {
    Duplicate,
    Orphan,
    /// No outgoing links.
    DeadEnd,
    UnresolvedLinks,
    /// Unmodified for a year.
    Stale,
    Empty,
    FrontmatterError,
    Contradiction,
}

const ALL: [Flag; 8] = [
    Flag::Duplicate,
    Flag::Orphan,
    Flag::DeadEnd,
    Flag::UnresolvedLinks,
    Flag::Stale,
    Flag::Empty,
    Flag::FrontmatterError,
    Flag::Contradiction,
];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub flags: Option<Vec<Flag>>,
    /// Max 500 (default 50).
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub notes: Vec<Flagged>,
    /// Notes flagged, listed or not.
    pub flagged: usize,
    /// Notes flagged per check.
    pub counts: BTreeMap<String, usize>,
    /// More notes are flagged than listed: raise limit, or ask for fewer flags.
    pub truncated: bool,
    /// Checks that could not run, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Flagged {
    pub path: String,
    pub flags: Vec<Flag>,
    /// The other notes with the same bytes (the first ten).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<Vec<String>>,
    /// How many of its links lead nowhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unresolved_links: Option<u32>,
    /// When it was last modified (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Skipped {
    pub check: Flag,
    pub reason: &'static str,
}

impl Tool for NoteQualityReport {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Graph),
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "note_quality_report",
            "Note quality report",
            "Flags notes needing care (duplicate, orphan, stale, broken links...), most flagged first.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let limit = bounded(input.limit, 50, 1..=500, "limit")?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let mut wanted: Vec<Flag> = input.flags.unwrap_or_else(|| ALL.to_vec());
        wanted.sort();
        wanted.dedup();
        let loaded = graphing::load(ctx, &view).await?;
        let mut tx = ctx.begin().await?;
        let facts = tx.note_facts(view.vault.id, "", view.readable()).await?;
        tx.commit().await?;
        let now = chrono::Utc::now();
        let mut out = compute(ctx.tool, move || {
            let g = &loaded.graph;
            let unresolved: HashMap<&str, u32> =
                loaded.counts.iter().filter(|c| c.unresolved > 0).map(|c| (c.path.as_str(), c.unresolved)).collect();
            let facts: Vec<_> = facts.into_iter().filter(|f| g.node(&f.path).is_some()).collect();
            let mut by_hash: HashMap<&[u8], Vec<&str>> = HashMap::new();
            for f in &facts {
                by_hash.entry(&f.content_hash[..]).or_default().push(&f.path);
            }
            let want = |f: Flag| wanted.contains(&f);
            let mut flagged: Vec<Flagged> = Vec::new();
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            for f in &facts {
                let v = g.node(&f.path).expect("filtered to the graph's notes");
                let group = &by_hash[&f.content_hash[..]];
                let twins: Vec<String> =
                    group.iter().filter(|p| **p != f.path).take(TWINS_LISTED).map(|p| p.to_string()).collect();
                let broken = unresolved.get(f.path.as_str()).copied().unwrap_or(0);
                let stale = (now - f.mtime).num_days() >= STALE_DAYS;
                let checks = [
                    (Flag::Duplicate, !twins.is_empty()),
                    (Flag::Orphan, g.incoming(v).is_empty()),
                    (Flag::DeadEnd, g.outgoing(v).is_empty()),
                    (Flag::UnresolvedLinks, broken > 0),
                    (Flag::Stale, stale),
                    (Flag::Empty, f.empty),
                    (Flag::FrontmatterError, f.frontmatter_error),
                ];
                let flags: Vec<Flag> =
                    checks.iter().filter(|(flag, hit)| *hit && want(*flag)).map(|(f, _)| *f).collect();
                if flags.is_empty() {
                    continue;
                }
                for flag in &flags {
                    *counts.entry(format::variant_name(*flag)).or_default() += 1;
                }
                flagged.push(Flagged {
                    path: f.path.clone(),
                    duplicate_of: flags.contains(&Flag::Duplicate).then_some(twins),
                    unresolved_links: flags.contains(&Flag::UnresolvedLinks).then_some(broken),
                    modified: flags.contains(&Flag::Stale).then(|| f.mtime.to_rfc3339()),
                    flags,
                });
            }
            flagged.sort_by(|a, b| b.flags.len().cmp(&a.flags.len()).then_with(|| a.path.cmp(&b.path)));
            let total = flagged.len();
            let skipped = want(Flag::Contradiction)
                .then_some(Skipped {
                    check: Flag::Contradiction,
                    reason: "no contradiction detector has run on this vault",
                })
                .into_iter()
                .collect();
            Output { vault: String::new(), notes: flagged, flagged: total, counts, truncated: false, skipped }
        })
        .await?;
        out.vault = view.vault.name.clone();
        if !detailed {
            for n in &mut out.notes {
                (n.duplicate_of, n.unresolved_links, n.modified) = (None, None, None);
            }
        }
        out.notes.truncate(limit);
        let (notes, cut) = fit(std::mem::take(&mut out.notes), PAGE_BUDGET_BYTES);
        out.notes = notes;
        out.truncated = cut || out.notes.len() < out.flagged;
        Ok(out)
    }
}
