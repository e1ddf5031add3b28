//! What the content-scanning search tools (search_regex, search_jsonlogic) share: the notes a
//! caller may read as scan candidates (the store's query applies the read ACL, the
//! always-hidden folders and Obsidian's Excluded files), their text from the object store
//! (fetched concurrently, a bounded number at a time, while the previous batch is matched on the
//! blocking pool), a matcher run over each in path order, and the compute budget that bounds it
//! all: the bytes of note text one call may read (`tools.search_scan_bytes`) and how long it may
//! take (`tools.search_deadline_ms`). Past either the call answers compute_budget_exceeded,
//! never a hang.
//!
//! The count of matching notes covers every candidate (so every call scans them all, within the
//! budget); a page is the matches after the cursor's path, in path order.
//!
//! Also the regular-expression rules both tools share: compiled-size limits, and the literals a
//! pattern requires, which skip notes without running the pattern and narrow the candidates
//! through [`candidate_paths`].

pub mod search_jsonlogic;
pub mod search_regex;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use memchr::memmem;
use otc_errors::{ErrorCode, ToolError};
use otc_store::{ScanCandidate, ScanFilter};
use regex_syntax::hir::{Hir, HirKind};

use otc_kernel::reading::View;
use otc_kernel::{CallContext, internal};

/// The default page of the search tools (spec: "Result size and paging").
pub const SEARCH_PAGE: usize = 25;
/// Blob reads in flight at once.
const FETCH_CONCURRENCY: usize = 64;
/// A batch handed to the blocking pool: this many bytes of text, or this many notes.
const BATCH_BYTES: u64 = 4 << 20;
const BATCH_NOTES: usize = 256;
/// The most a compiled regular expression may take (regex's `size_limit`): larger patterns
/// (`a{1000}{1000}`, long alternations) are refused before any note is read.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// The lazy DFA's cache per regular expression (regex's `dfa_size_limit`).
pub const REGEX_DFA_LIMIT: usize = 4 << 20;
/// The longest pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 4096;

/// The narrowing hook: the paths of the notes in `view`'s vault that contain every one of
/// `literals` (case-sensitive substrings, as UTF-8 bytes), as the full-text index tells without
/// reading the notes (`searching::notes_that_may_contain`), or `None` when it cannot narrow (no
/// literal has a letter or digit: every candidate is scanned). The scanners call it with the literals their prefilter extracted (none is empty)
/// and scan only the paths it returns, still matching each one, so a superset is fine but a
/// note left out is never found: the answer must cover every note that contains them all, as
/// the vault is now (read-your-writes). Visibility need not be applied here: the candidates'
/// query applies the read ACL, the hidden folders and Excluded files to whatever this returns.
pub async fn candidate_paths(
    ctx: &CallContext<'_>,
    view: &View,
    literals: &[String],
) -> Result<Option<Vec<String>>, ToolError> {
    otc_kernel::searching::notes_that_may_contain(ctx, view, &otc_kernel::searching::Scope::default(), literals).await
}

/// A `root` argument as a path prefix ("" for the whole vault, else "Folder/").
pub fn root_prefix(root: Option<&str>) -> Result<String, ToolError> {
    let root = root.map(|f| f.trim_matches('/')).unwrap_or("");
    if root.is_empty() {
        return Ok(String::new());
    }
    otc_vault::check_path(root).map_err(|e| e.detail("field", "root"))?;
    Ok(format!("{root}/"))
}

/// The narrower of two path prefixes, or None when no path can start with both.
pub fn merge_prefix(a: &str, b: &str) -> Option<String> {
    if a.starts_with(b) {
        Some(a.to_string())
    } else if b.starts_with(a) {
        Some(b.to_string())
    } else {
        None
    }
}

/// A page size argument for the search tools: 1 to 1,000, default [`SEARCH_PAGE`].
pub fn search_limit(limit: Option<u32>) -> Result<usize, ToolError> {
    otc_kernel::reading::bounded(limit, SEARCH_PAGE, 1..=1000, "limit")
}

/// One call's compute budget, with what the scan has used of it so far.
pub struct Budget {
    max_bytes: u64,
    deadline: Instant,
    deadline_ms: u64,
    bytes: AtomicU64,
    notes: AtomicU64,
    notes_in_scope: AtomicU64,
    bytes_in_scope: AtomicU64,
}

/// Which limit a scan hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Bytes,
    Deadline,
}

impl Budget {
    /// The configured budget, counted from `started` (the call's start).
    pub fn new(ctx: &CallContext<'_>, started: Instant) -> Self {
        let tools = &ctx.services().config.tools;
        Self::with_limits(tools.search_scan_bytes, tools.search_deadline_ms, started)
    }

    pub fn with_limits(max_bytes: u64, deadline_ms: u64, started: Instant) -> Self {
        Self {
            max_bytes,
            deadline: started + Duration::from_millis(deadline_ms),
            deadline_ms,
            bytes: AtomicU64::new(0),
            notes: AtomicU64::new(0),
            notes_in_scope: AtomicU64::new(0),
            bytes_in_scope: AtomicU64::new(0),
        }
    }

    pub fn past_deadline(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Counts `bytes` more read, or the limit they would cross.
    fn take_bytes(&self, bytes: u64) -> Result<(), Limit> {
        let used = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if used > self.max_bytes { Err(Limit::Bytes) } else { Ok(()) }
    }

    /// compute_budget_exceeded for `limit`, with what was scanned and how to narrow.
    pub fn exceeded(&self, limit: Limit) -> ToolError {
        let (which, message) = match limit {
            Limit::Bytes => ("scan_bytes", "the scan would read more note text than one call may"),
            Limit::Deadline => ("deadline", "the scan ran out of time"),
        };
        ToolError::with_message(ErrorCode::ComputeBudgetExceeded, message)
            .detail("limit", which)
            .detail("max_scan_bytes", self.max_bytes)
            .detail("deadline_ms", self.deadline_ms)
            .detail("bytes_scanned", self.bytes.load(Ordering::Relaxed))
            .detail("notes_scanned", self.notes.load(Ordering::Relaxed))
            .detail("notes_in_scope", self.notes_in_scope.load(Ordering::Relaxed))
            .detail("bytes_in_scope", self.bytes_in_scope.load(Ordering::Relaxed))
            .detail(
                "suggestion",
                "narrow the scan with root, or make the pattern more selective (a literal word in it lets notes be skipped)",
            )
    }
}

/// What decides, for one note, whether it is a hit, and what its page item holds.
pub trait Matcher: Send + Sync + 'static {
    type Hit: Send + 'static;
    /// Whether the note matches. `text` is the note's content when the scan reads content.
    fn matches(&self, note: &ScanCandidate, text: Option<&str>) -> bool;
    /// The page item of a matching note (only for the notes on the page); work that can run
    /// long checks [`Budget::past_deadline`] and gives up with [`Limit::Deadline`].
    fn hit(&self, note: &ScanCandidate, text: Option<&str>, budget: &Budget) -> Result<Self::Hit, Limit>;
}

/// A scan's outcome: the page's hits in path order, every match counted.
pub struct Scanned<H> {
    pub hits: Vec<(String, H)>,
    /// Matching notes among all candidates (the page's and every other).
    pub total: usize,
    /// Whether matching notes follow the page.
    pub more: bool,
}

/// What a scan pages by.
#[derive(Debug, Clone)]
pub struct PageSpec {
    /// Only notes after this path go on the page (the cursor).
    pub after: Option<String>,
    pub limit: usize,
}

/// The matching state carried from batch to batch.
struct Tally<H> {
    page: PageSpec,
    hits: Vec<(String, H)>,
    total: usize,
    after_page: usize,
}

impl<H> Tally<H> {
    /// Matches one batch in path order, within the deadline.
    fn run<M: Matcher<Hit = H>>(
        mut self,
        batch: Vec<(ScanCandidate, Option<bytes::Bytes>)>,
        matcher: &M,
        budget: &Budget,
    ) -> Result<Self, Limit> {
        for (note, bytes) in batch {
            if budget.past_deadline() {
                return Err(Limit::Deadline);
            }
            let text = bytes.as_deref().map(String::from_utf8_lossy);
            let text = text.as_deref();
            if !matcher.matches(&note, text) {
                budget.notes.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            budget.notes.fetch_add(1, Ordering::Relaxed);
            self.total += 1;
            if self.page.after.as_deref().is_some_and(|after| note.path.as_str() <= after) {
                continue;
            }
            if self.hits.len() < self.page.limit {
                let hit = matcher.hit(&note, text, budget)?;
                self.hits.push((note.path, hit));
            } else {
                self.after_page += 1;
            }
        }
        Ok(self)
    }
}

/// Scans `candidates` (in path order) with `matcher`, reading each note's text when
/// `read_content`, within `budget`: the page after `page.after`, and the count of every match.
pub async fn scan<M: Matcher>(
    ctx: &CallContext<'_>,
    candidates: Vec<ScanCandidate>,
    read_content: bool,
    page: PageSpec,
    matcher: Arc<M>,
    budget: Arc<Budget>,
) -> Result<Scanned<M::Hit>, ToolError> {
    budget.notes_in_scope.store(candidates.len() as u64, Ordering::Relaxed);
    let in_scope: u64 = candidates.iter().map(|c| c.size.max(0) as u64).sum();
    budget.bytes_in_scope.store(in_scope, Ordering::Relaxed);
    if read_content && in_scope > budget.max_bytes {
        // The manifest already says the text will not fit: answer before reading any.
        return Err(budget.exceeded(Limit::Bytes));
    }
    let deadline = tokio::time::Instant::from_std(budget.deadline);
    // Matching runs on the blocking pool; the grace covers the batch in hand when time ran out.
    let grace = Duration::from_millis(250);
    let work = run_scan(ctx, candidates, read_content, page, matcher, budget.clone());
    match tokio::time::timeout_at(deadline + grace, work).await {
        Ok(Ok(scanned)) => Ok(scanned),
        Ok(Err(ScanError::Limit(limit))) => Err(budget.exceeded(limit)),
        Ok(Err(ScanError::Tool(e))) => Err(e),
        Err(_) => Err(budget.exceeded(Limit::Deadline)),
    }
}

enum ScanError {
    Limit(Limit),
    Tool(ToolError),
}

async fn run_scan<M: Matcher>(
    ctx: &CallContext<'_>,
    candidates: Vec<ScanCandidate>,
    read_content: bool,
    page: PageSpec,
    matcher: Arc<M>,
    budget: Arc<Budget>,
) -> Result<Scanned<M::Hit>, ScanError> {
    let tool = ctx.tool;
    let blobs = ctx.services().blobs.clone();
    let tenant = ctx.caller.tenant_id;
    let mut notes = futures::stream::iter(candidates)
        .map(move |note| {
            let blobs = blobs.clone();
            async move {
                if !read_content {
                    return (note, Ok(None));
                }
                let bytes = blobs.get_blob(tenant, &note.hash).await.map(Some);
                (note, bytes)
            }
        })
        .buffered(FETCH_CONCURRENCY);
    let mut tally = Some(Tally { page, hits: Vec::new(), total: 0, after_page: 0 });
    let mut running: Option<tokio::task::JoinHandle<Result<Tally<M::Hit>, Limit>>> = None;
    loop {
        // Read the next batch while the blocking pool matches the previous one.
        let next = async {
            let mut batch = Vec::new();
            let mut batch_bytes = 0u64;
            while batch.len() < BATCH_NOTES && batch_bytes < BATCH_BYTES {
                let Some((note, bytes)) = notes.next().await else { break };
                let bytes = bytes.map_err(|e| ScanError::Tool(internal(tool, &e)))?;
                if let Some(bytes) = &bytes {
                    budget.take_bytes(bytes.len() as u64).map_err(ScanError::Limit)?;
                    batch_bytes += bytes.len() as u64;
                }
                if budget.past_deadline() {
                    return Err(ScanError::Limit(Limit::Deadline));
                }
                batch.push((note, bytes));
            }
            Ok(batch)
        };
        let previous = async {
            match running.take() {
                Some(handle) => Some(handle.await),
                None => None,
            }
        };
        let (batch, previous) = tokio::join!(next, previous);
        if let Some(done) = previous {
            let done = done.map_err(|e| ScanError::Tool(internal(tool, &e)))?;
            tally = Some(done.map_err(ScanError::Limit)?);
        }
        let batch = batch?;
        let current = tally.take().expect("the tally is back from the previous batch");
        if batch.is_empty() {
            let more = current.after_page > 0;
            return Ok(Scanned { hits: current.hits, total: current.total, more });
        }
        let matcher = matcher.clone();
        let budget = budget.clone();
        running = Some(tokio::task::spawn_blocking(move || current.run(batch, &*matcher, &budget)));
    }
}

/// The flags of search_regex (and of the regexp operator: none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegexFlags {
    pub case_insensitive: bool,
    pub multi_line: bool,
    pub dot_all: bool,
    pub verbose: bool,
}

impl RegexFlags {
    /// `flags` as given: any of i, m, s, x, each at most once.
    pub fn parse(flags: Option<&str>) -> Result<Self, ToolError> {
        let mut out = Self::default();
        for c in flags.unwrap_or("").chars() {
            let flag = match c {
                'i' => &mut out.case_insensitive,
                'm' => &mut out.multi_line,
                's' => &mut out.dot_all,
                'x' => &mut out.verbose,
                _ => {
                    return Err(ToolError::with_message(
                        ErrorCode::InvalidInput,
                        format!("unknown flag {c:?}: flags are any of i, m, s, x"),
                    )
                    .detail("field", "flags"));
                }
            };
            if *flag {
                return Err(ToolError::with_message(ErrorCode::InvalidInput, format!("flag {c:?} given twice"))
                    .detail("field", "flags"));
            }
            *flag = true;
        }
        Ok(out)
    }
}

/// Why a pattern does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    /// Not a valid pattern (the regex crate's message).
    Syntax(String),
    /// Valid, but past the compiled-size limit or the length limit.
    TooLarge,
}

impl PatternError {
    /// The answer for a pattern argument named `field`: invalid_input for syntax, else
    /// compute_budget_exceeded (the same pattern will never fit).
    pub fn to_error(&self, field: &str) -> ToolError {
        match self {
            PatternError::Syntax(message) => {
                ToolError::with_message(ErrorCode::InvalidInput, "the regular expression does not parse")
                    .detail("field", field)
                    .detail("error", message.as_str())
            }
            PatternError::TooLarge => too_large(field),
        }
    }
}

/// compute_budget_exceeded for a pattern too large to compile.
pub fn too_large(field: &str) -> ToolError {
    ToolError::with_message(ErrorCode::ComputeBudgetExceeded, "the regular expression is too large to run")
        .detail("field", field)
        .detail("limit", "regex_size")
        .detail("max_regex_bytes", REGEX_SIZE_LIMIT)
        .detail("max_pattern_bytes", MAX_PATTERN_BYTES)
        .detail("suggestion", "simplify the pattern: fewer or smaller counted repetitions and alternatives")
}

/// Compiles `pattern` under the size limits.
pub fn compile_regex(pattern: &str, flags: RegexFlags) -> Result<regex::Regex, PatternError> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(PatternError::TooLarge);
    }
    regex::RegexBuilder::new(pattern)
        .case_insensitive(flags.case_insensitive)
        .multi_line(flags.multi_line)
        .dot_matches_new_line(flags.dot_all)
        .ignore_whitespace(flags.verbose)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => PatternError::TooLarge,
            other => PatternError::Syntax(other.to_string()),
        })
}

/// Literals a pattern's every match needs, to skip notes without running the pattern: each of
/// `all` occurs in every match, and every match starts with one of `any` (when set). Both are
/// necessary conditions only: a note that passes is still matched.
pub struct Prefilter {
    all: Vec<memmem::Finder<'static>>,
    any: Option<Vec<memmem::Finder<'static>>>,
    /// `all` as text, for [`candidate_paths`].
    literals: Vec<String>,
}

/// Literals shorter than this do not pay for the search (and say little to an index).
const MIN_LITERAL: usize = 3;
/// At most this many prefix alternatives are tried.
const MAX_ANY: usize = 16;

impl Prefilter {
    /// The prefilter of `pattern` (which compiled with `flags`); one that passes everything
    /// when nothing can be said.
    pub fn new(pattern: &str, flags: RegexFlags) -> Prefilter {
        let hir = regex_syntax::ParserBuilder::new()
            .case_insensitive(flags.case_insensitive)
            .multi_line(flags.multi_line)
            .dot_matches_new_line(flags.dot_all)
            .ignore_whitespace(flags.verbose)
            .build()
            .parse(pattern);
        let Ok(hir) = hir else { return Prefilter { all: Vec::new(), any: None, literals: Vec::new() } };
        let mut required = Vec::new();
        required_literals(&hir, &mut required);
        required.retain(|l| l.len() >= MIN_LITERAL);
        required.sort_by_key(|l| std::cmp::Reverse(l.len()));
        required.dedup();
        required.truncate(4);
        let literals = required.iter().filter_map(|l| String::from_utf8(l.clone()).ok()).collect();
        let all = required.iter().map(|l| memmem::Finder::new(l).into_owned()).collect();
        let any = {
            use regex_syntax::hir::literal::Extractor;
            let seq = Extractor::new().extract(&hir);
            seq.literals()
                .filter(|lits| !lits.is_empty() && lits.len() <= MAX_ANY)
                .filter(|lits| lits.iter().all(|l| l.as_bytes().len() >= MIN_LITERAL))
                .map(|lits| lits.iter().map(|l| memmem::Finder::new(l.as_bytes()).into_owned()).collect())
        };
        Prefilter { all, any, literals }
    }

    /// Whether `haystack` may hold a match.
    pub fn may_match(&self, haystack: &[u8]) -> bool {
        self.all.iter().all(|f| f.find(haystack).is_some())
            && self.any.as_ref().is_none_or(|any| any.iter().any(|f| f.find(haystack).is_some()))
    }

    /// The literals every match contains (valid UTF-8 ones, longest first).
    pub fn literals(&self) -> &[String] {
        &self.literals
    }

    /// Whether it can skip anything at all.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty() && self.any.is_none()
    }
}

/// Literals that occur in every match of `hir`, pushed to `out`.
fn required_literals(hir: &Hir, out: &mut Vec<Vec<u8>>) {
    match hir.kind() {
        HirKind::Literal(lit) => out.push(lit.0.to_vec()),
        HirKind::Capture(cap) => required_literals(&cap.sub, out),
        HirKind::Repetition(rep) if rep.min >= 1 => required_literals(&rep.sub, out),
        HirKind::Concat(subs) => {
            // Adjacent literals make one longer literal.
            let mut run: Vec<u8> = Vec::new();
            for sub in subs {
                if let HirKind::Literal(lit) = sub.kind() {
                    run.extend_from_slice(&lit.0);
                    continue;
                }
                if !run.is_empty() {
                    out.push(std::mem::take(&mut run));
                }
                required_literals(sub, out);
            }
            if !run.is_empty() {
                out.push(run);
            }
        }
        _ => {}
    }
}

/// The filter for a plain scan under `prefix`, narrowed to `paths` when an index said so.
pub fn filter(prefix: String, paths: Option<Vec<String>>) -> ScanFilter {
    ScanFilter { prefix, paths, ..ScanFilter::default() }
}

/// The candidates `filter` leaves, in path order.
pub async fn candidates(
    ctx: &CallContext<'_>,
    view: &View,
    filter: &ScanFilter,
) -> Result<Vec<ScanCandidate>, ToolError> {
    let mut tx = ctx.begin().await?;
    let rows = tx.scan_candidates(view.vault.id, view.readable(), filter).await?;
    tx.commit().await?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(path: &str, size: i64) -> ScanCandidate {
        ScanCandidate {
            path: path.into(),
            hash: [0; 32],
            size,
            mtime: chrono::Utc::now(),
            frontmatter: None,
            tags: Vec::new(),
            created: None,
        }
    }

    struct Contains(&'static str);
    impl Matcher for Contains {
        type Hit = String;
        fn matches(&self, note: &ScanCandidate, _text: Option<&str>) -> bool {
            note.path.contains(self.0)
        }
        fn hit(&self, note: &ScanCandidate, _text: Option<&str>, _budget: &Budget) -> Result<String, Limit> {
            Ok(note.path.to_uppercase())
        }
    }

    fn tally(after: Option<&str>, limit: usize) -> Tally<String> {
        Tally { page: PageSpec { after: after.map(str::to_string), limit }, hits: Vec::new(), total: 0, after_page: 0 }
    }

    #[test]
    fn a_tally_counts_every_match_and_pages_after_the_cursor() {
        let budget = Budget::with_limits(1 << 20, 60_000, Instant::now());
        let batch = |names: &[&str]| names.iter().map(|n| (note(n, 1), None)).collect::<Vec<_>>();
        let t = tally(Some("b.md"), 2)
            .run(batch(&["a.md", "ab.md", "b.md"]), &Contains("b"), &budget)
            .unwrap()
            .run(batch(&["bb.md", "cb.md", "db.md", "e.md"]), &Contains("b"), &budget)
            .unwrap();
        assert_eq!(t.total, 5, "ab, b, bb, cb, db");
        assert_eq!(t.hits, [("bb.md".to_string(), "BB.MD".to_string()), ("cb.md".into(), "CB.MD".into())]);
        assert_eq!(t.after_page, 1, "db.md follows the page");
        assert_eq!(budget.notes.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn a_tally_stops_at_the_deadline() {
        let budget = Budget::with_limits(1 << 20, 0, Instant::now());
        let err = tally(None, 10).run(vec![(note("a.md", 1), None)], &Contains("a"), &budget).err();
        assert_eq!(err, Some(Limit::Deadline));
        let payload = budget.exceeded(Limit::Deadline).to_payload();
        assert_eq!(payload["code"], "compute_budget_exceeded");
        assert_eq!(payload["details"]["limit"], "deadline");
        assert_eq!(payload["details"]["notes_scanned"], 0);
        assert!(payload["details"]["suggestion"].as_str().unwrap().contains("root"));
    }

    #[test]
    fn bytes_past_the_limit_are_refused() {
        let budget = Budget::with_limits(10, 60_000, Instant::now());
        assert_eq!(budget.take_bytes(6), Ok(()));
        assert_eq!(budget.take_bytes(4), Ok(()));
        assert_eq!(budget.take_bytes(1), Err(Limit::Bytes));
        assert_eq!(budget.exceeded(Limit::Bytes).to_payload()["details"]["bytes_scanned"], 11);
    }

    #[test]
    fn roots_prefixes_and_limits() {
        assert_eq!(root_prefix(None).unwrap(), "");
        assert_eq!(root_prefix(Some("/Projects/")).unwrap(), "Projects/");
        assert_eq!(root_prefix(Some("../x")).unwrap_err().to_payload()["details"]["field"], "root");
        assert_eq!(merge_prefix("Projects/", "Pro").as_deref(), Some("Projects/"));
        assert_eq!(merge_prefix("", "A/").as_deref(), Some("A/"));
        assert_eq!(merge_prefix("A/", "B/"), None);
        assert_eq!(search_limit(None).unwrap(), 25);
        assert_eq!(search_limit(Some(1000)).unwrap(), 1000);
        assert!(search_limit(Some(0)).is_err() && search_limit(Some(1001)).is_err());
    }

    #[test]
    fn flags_are_i_m_s_x_once_each() {
        let f = RegexFlags::parse(Some("ix")).unwrap();
        assert!(f.case_insensitive && f.verbose && !f.multi_line && !f.dot_all);
        assert_eq!(RegexFlags::parse(None).unwrap(), RegexFlags::default());
        for bad in ["g", "ii", "I", "m s"] {
            let e = RegexFlags::parse(Some(bad)).unwrap_err().to_payload();
            assert_eq!((e["code"].as_str(), e["details"]["field"].as_str()), (Some("invalid_input"), Some("flags")));
        }
    }

    #[test]
    fn patterns_compile_under_the_size_limit() {
        let plain = RegexFlags::default();
        assert!(compile_regex("(a*)*b", plain).is_ok(), "linear time: no need to refuse");
        assert!(compile_regex("(x+x+)+y", plain).is_ok());
        assert_eq!(compile_regex("a{1000}{1000}", plain).unwrap_err(), PatternError::TooLarge);
        assert_eq!(compile_regex(&"a".repeat(MAX_PATTERN_BYTES + 1), plain).unwrap_err(), PatternError::TooLarge);
        let PatternError::Syntax(message) = compile_regex("(unclosed", plain).unwrap_err() else { panic!() };
        assert!(message.contains("unclosed"), "{message}");
        let e = PatternError::Syntax(message).to_error("pattern").to_payload();
        assert_eq!((e["code"].as_str(), e["details"]["field"].as_str()), (Some("invalid_input"), Some("pattern")));
        let e = PatternError::TooLarge.to_error("pattern").to_payload();
        assert_eq!(
            (e["code"].as_str(), e["details"]["limit"].as_str()),
            (Some("compute_budget_exceeded"), Some("regex_size"))
        );
        let i = RegexFlags { case_insensitive: true, ..plain };
        assert!(compile_regex("HELLO", i).unwrap().is_match("say hello"));
    }

    #[test]
    fn prefilters_keep_every_note_that_can_match() {
        let plain = RegexFlags::default();
        let p = Prefilter::new(r"foo\d+bar(baz|qux)", plain);
        assert_eq!(p.literals(), ["foo", "bar"]);
        assert!(p.may_match(b"xx foo12barqux"));
        assert!(!p.may_match(b"foo only"));
        let alt = Prefilter::new("(alpha|beta)gamma", plain);
        assert_eq!(alt.literals(), ["gamma"]);
        assert!(alt.may_match(b"betagamma") && !alt.may_match(b"gamma alone") && !alt.may_match(b"alpha beta"));
        let anchored = Prefilter::new(r"^# Heading\s+\w+", RegexFlags { multi_line: true, ..plain });
        assert!(anchored.literals().contains(&"# Heading".to_string()));
        // Case-insensitive: no case-sensitive literal is required, but the prefixes still skip.
        let i = Prefilter::new("todo", RegexFlags { case_insensitive: true, ..plain });
        assert!(i.literals().is_empty());
        assert!(i.may_match(b"a ToDo item") && !i.may_match(b"nothing here"));
        // Nothing to say: everything passes.
        for open in [r"\w+", "a?b?c?", "(a*)*b", ".", "x|y"] {
            let p = Prefilter::new(open, plain);
            assert!(p.is_empty() && p.may_match(b""), "{open}");
        }
        // Every regex match passes the prefilter (sampled).
        let hay = "the foo12barbaz, the betagamma and # Heading one";
        for pattern in [r"foo\d+bar(baz|qux)", "(alpha|beta)gamma", r"the \w+", "(?i)HEADING"] {
            let re = compile_regex(pattern, plain).unwrap();
            let p = Prefilter::new(pattern, plain);
            assert_eq!(re.is_match(hay), re.is_match(hay) && p.may_match(hay.as_bytes()), "{pattern}");
        }
    }
}
