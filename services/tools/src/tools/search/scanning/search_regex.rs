use std::sync::Arc;
use std::time::Instant;

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_store::ScanCandidate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::search::scanning::{
    self, Budget, Limit, Matcher, PageSpec, Prefilter, RegexFlags, candidate_paths, root_prefix, search_limit,
};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, bounded, decode_cursor, page};
use otc_kernel::{CallContext, Tool};

pub struct SearchRegex;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Rust regex syntax: no look-around or backreferences.
    pub pattern: String,
    /// Any of i, m, s, x.
    #[serde(default)]
    pub flags: Option<String>,
    /// Folder to search.
    #[serde(default)]
    pub root: Option<String>,
    /// Listed per note (default 10, max 100).
    #[serde(default)]
    pub max_matches_per_file: Option<u32>,
    /// Default 25, max 1000.
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Over all pages.
    pub total_count: usize,
    pub hits: Vec<Hit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    pub path: String,
    pub total_matches: usize,
    /// More matches than listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    pub matches: Vec<MatchOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MatchOut {
    pub line: usize,
    /// In characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// The match's line, clipped to 200 characters.
    pub text: String,
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub matched: Option<String>,
}

/// Context lines are clipped to this many characters, the matched text to [`MATCH_CHARS`].
const CONTEXT_CHARS: usize = 200;
const MATCH_CHARS: usize = 100;
/// How much of a long line's context comes before the match.
const CONTEXT_BEFORE: usize = 60;
const DEFAULT_MATCHES_PER_FILE: usize = 10;

impl Tool for SearchRegex {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Scan),
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "search_regex",
            "Search notes by regular expression",
            "Regex search over note text: matching notes in path order with their matching lines.",
            Domain::Search,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let started = Instant::now();
        let view = ctx.view(&input.vault).await?;
        let prefix = root_prefix(input.root.as_deref())?;
        let limit = search_limit(input.limit)?;
        let per_file = bounded(input.max_matches_per_file, DEFAULT_MATCHES_PER_FILE, 1..=100, "max_matches_per_file")?;
        let flags = RegexFlags::parse(input.flags.as_deref())?;
        let regex = scanning::compile_regex(&input.pattern, flags).map_err(|e| e.to_error("pattern"))?;
        let prefilter = Prefilter::new(&input.pattern, flags);
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let after: Option<String> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;

        let paths = if prefilter.literals().is_empty() {
            None
        } else {
            candidate_paths(ctx, &view, prefilter.literals()).await?
        };
        let candidates = scanning::candidates(ctx, &view, &scanning::filter(prefix, paths)).await?;
        let matcher = Arc::new(RegexMatcher { regex, prefilter, per_file, detailed });
        let budget = Arc::new(Budget::new(ctx, started));
        let scanned = scanning::scan(ctx, candidates, true, PageSpec { after, limit }, matcher, budget).await?;
        let hits: Vec<Hit> = scanned.hits.into_iter().map(|(_, hit)| hit).collect();
        let (hits, next_cursor) = page(ctx.tool, hits, scanned.more, PAGE_BUDGET_BYTES, |h| h.path.clone());
        Ok(Output { vault: view.vault.name.clone(), total_count: scanned.total, hits, next_cursor })
    }
}

struct RegexMatcher {
    regex: regex::Regex,
    prefilter: Prefilter,
    per_file: usize,
    detailed: bool,
}

impl Matcher for RegexMatcher {
    type Hit = Hit;

    fn matches(&self, _note: &ScanCandidate, text: Option<&str>) -> bool {
        let text = text.unwrap_or("");
        self.prefilter.may_match(text.as_bytes()) && self.regex.is_match(text)
    }

    fn hit(&self, note: &ScanCandidate, text: Option<&str>, budget: &Budget) -> Result<Hit, Limit> {
        let (matches, total) =
            find_matches(&self.regex, text.unwrap_or(""), self.per_file, self.detailed, || budget.past_deadline())?;
        Ok(Hit {
            path: note.path.clone(),
            total_matches: total,
            truncated: (total > matches.len()).then_some(true),
            matches,
        })
    }
}

/// The first `keep` matches of `regex` in `text` with their lines, and how many there are in
/// all. `out_of_time` is asked now and then while counting; when it says so, the count stops.
fn find_matches(
    regex: &regex::Regex,
    text: &str,
    keep: usize,
    detailed: bool,
    out_of_time: impl Fn() -> bool,
) -> Result<(Vec<MatchOut>, usize), Limit> {
    let bytes = text.as_bytes();
    let mut kept = Vec::new();
    let mut total = 0usize;
    // The line of the last match kept: its number and where it starts; newlines are counted
    // from `counted` on.
    let (mut line, mut line_start, mut counted) = (1usize, 0usize, 0usize);
    for m in regex.find_iter(text) {
        total += 1;
        if total.is_multiple_of(1024) && out_of_time() {
            return Err(Limit::Deadline);
        }
        if kept.len() >= keep {
            continue;
        }
        for newline in memchr::memchr_iter(b'\n', &bytes[counted..m.start()]) {
            line += 1;
            line_start = counted + newline + 1;
        }
        counted = m.start();
        let line_end = memchr::memchr(b'\n', &bytes[m.start()..]).map_or(text.len(), |i| m.start() + i);
        let line_text = text[line_start..line_end].trim_end_matches('\r');
        let column = text[line_start..m.start()].chars().count();
        kept.push(MatchOut {
            line,
            column: detailed.then_some(column + 1),
            text: clip_around(line_text, column),
            matched: detailed.then(|| clip(m.as_str(), MATCH_CHARS)),
        });
    }
    Ok((kept, total))
}

/// `line` clipped to [`CONTEXT_CHARS`] characters around the character `at`, with … where cut.
fn clip_around(line: &str, at: usize) -> String {
    let count = line.chars().count();
    if count <= CONTEXT_CHARS {
        return line.to_string();
    }
    let start = at.saturating_sub(CONTEXT_BEFORE).min(count - CONTEXT_CHARS);
    let end = start + CONTEXT_CHARS;
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(line.chars().skip(start).take(CONTEXT_CHARS));
    if end < count {
        out.push('…');
    }
    out
}

/// `text` cut to `max` characters, with … when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(p: &str) -> regex::Regex {
        scanning::compile_regex(p, RegexFlags::default()).unwrap()
    }

    #[test]
    fn matches_carry_lines_columns_and_counts() {
        let text = "alpha\nbeta gamma beta\r\n\nzeta béta beta\n";
        let (kept, total) = find_matches(&re("b.ta"), text, 3, true, || false).unwrap();
        assert_eq!(total, 4);
        let got: Vec<(usize, usize, &str, &str)> =
            kept.iter().map(|m| (m.line, m.column.unwrap(), m.text.as_str(), m.matched.as_deref().unwrap())).collect();
        assert_eq!(
            got,
            [(2, 1, "beta gamma beta", "beta"), (2, 12, "beta gamma beta", "beta"), (4, 6, "zeta béta beta", "béta"),]
        );
        let (concise, _) = find_matches(&re("zeta"), text, 10, false, || false).unwrap();
        assert_eq!((concise[0].line, concise[0].column, concise[0].matched.as_deref()), (4, None, None));
    }

    #[test]
    fn long_lines_are_clipped_on_character_boundaries() {
        let line = format!("{}NEEDLE{}", "é".repeat(300), "ü".repeat(300));
        let (kept, _) = find_matches(&re("NEEDLE"), &line, 1, true, || false).unwrap();
        let text = &kept[0].text;
        assert_eq!(text.chars().count(), CONTEXT_CHARS + 2, "two ellipses");
        assert!(text.starts_with('…') && text.ends_with('…') && text.contains("NEEDLE"));
        assert_eq!(kept[0].column, Some(301));
        assert_eq!(clip("ab", 1), "a…");
        assert_eq!(clip("ab", 2), "ab");
        assert_eq!(clip_around("short", 3), "short");
        let tail = format!("{}END", "x".repeat(400));
        assert!(clip_around(&tail, 400).ends_with("END"), "a match at the end keeps the end");
    }

    #[test]
    fn counting_gives_up_when_time_is_out() {
        let text = "a".repeat(5000);
        assert_eq!(find_matches(&re("a"), &text, 10, false, || true).err(), Some(Limit::Deadline));
        let (kept, total) = find_matches(&re("a"), &text, 10, false, || false).unwrap();
        assert_eq!((kept.len(), total), (10, 5000));
    }

    #[test]
    fn catastrophic_patterns_run_in_linear_time() {
        let text = "a".repeat(200_000);
        let started = Instant::now();
        assert!(!re("(a*)*b").is_match(&text));
        assert!(!re("(x+x+)+y").is_match(&"x".repeat(200_000)));
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }
}
