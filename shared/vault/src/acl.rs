//! A vault's folder ACL: which paths a caller may read, write and delete. Each list holds globs
//! over vault paths (`*` one segment's characters, `**` anything, `?` one character but `/`);
//! a list that is absent leaves that action unrestricted. Some folders are hidden whatever the
//! lists say, and which depends on who reads ([`Audience`]): the trash and git's folder
//! (`.trash/`, `.git/`) from everyone, Obsidian's own settings (`.obsidian/`) from the tools only.
//!
//! An ACL is made of layers ([`Layer`]): the deployment's `[[acl]]` entry (a floor no tenant can
//! widen) and the tenant's own rules for the caller. A path must be allowed by every layer, and
//! within a layer by any one of its rules (a member of two groups gets what either grants).
//!
//! A read the ACL refuses answers exactly like a missing note: neither the tools nor the sync
//! API reveal that a path they may not show exists.

/// Who reads through an ACL, which decides the folders hidden whatever the lists say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Audience {
    /// The MCP tools: Obsidian's settings, the trash and git's folder are never theirs to see.
    #[default]
    Tools,
    /// The sync API (`/v1/vaults`), whose clients mirror the vault into a folder Obsidian opens.
    /// `.obsidian/` (the vault's settings, themes, plugins) is part of that vault and syncs
    /// between devices, as Obsidian Sync carries it, so the API serves and accepts it (under the
    /// configured lists like any other path). The trash and git's folder stay hidden: the sync
    /// client keeps them local, and the trash holds what was deleted from paths the lists may
    /// hide.
    Sync,
}

impl Audience {
    /// The folders (as path prefixes) this audience never reads, writes or deletes in.
    pub fn hidden(self) -> &'static [&'static str] {
        match self {
            Audience::Tools => &[".obsidian/", ".trash/", ".git/"],
            Audience::Sync => &[".trash/", ".git/"],
        }
    }

    /// Why this audience never reaches `path`, when it does not: one of [`Audience::hidden`]'s
    /// folders, or, for the tools, a file or folder whose name starts with a dot (Obsidian
    /// shows none of them: `.github/`, `.stversions/`, `Notes/.draft.md`; they stay in the
    /// store and sync).
    pub fn hides(self, path: &str) -> Option<&'static str> {
        if let Some(folder) = self.hidden().iter().find(|h| path.starts_with(**h)) {
            return Some(folder);
        }
        (self == Audience::Tools && has_dot_name(path)).then_some(DOT_NAMES)
    }

    /// [`Audience::hides`] as one Postgres (and Rust) regular expression, for the store's
    /// queries: a path it matches is left out.
    pub fn hidden_regex(self) -> &'static str {
        match self {
            Audience::Tools => r"(^|/)\.",
            Audience::Sync => r"^\.(trash|git)/",
        }
    }
}

/// What [`Audience::hides`] answers for a dot-named file or folder.
pub const DOT_NAMES: &str = "a file or folder whose name starts with a dot";

/// Whether a segment of `path` (a folder's name or the file's) starts with a dot: what
/// Obsidian never shows, indexes or links to.
pub fn has_dot_name(path: &str) -> bool {
    path.split('/').any(|segment| segment.starts_with('.'))
}

/// Where a rule comes from: the deployment's config file, or the tenant's own rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    Deployment,
    Tenant,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Deployment => "deployment",
            Layer::Tenant => "tenant",
        }
    }
}

/// What a caller asks to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    Delete,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Delete => "delete",
        }
    }
}

/// One rule: globs per action, and whether it grants reading only.
#[derive(Debug, Clone)]
pub struct Rule {
    read: Option<Vec<Glob>>,
    write: Option<Vec<Glob>>,
    delete: Option<Vec<Glob>>,
    read_only: bool,
    layer: Layer,
    /// Whom the rule is for, as people name it ("vault Notes" for the deployment's entry,
    /// "principal alice", "group eng", "everyone").
    subject: String,
    /// The rule's id in the tenant's rules, when it has one.
    id: Option<String>,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.read_paths() == other.read_paths()
            && self.write_paths() == other.write_paths()
            && self.delete_paths() == other.delete_paths()
            && (self.read_only, self.layer, &self.subject, &self.id)
                == (other.read_only, other.layer, &other.subject, &other.id)
    }
}

impl Eq for Rule {}

impl Rule {
    /// A rule from its lists; an invalid glob is an error naming it.
    pub fn new(
        layer: Layer,
        subject: impl Into<String>,
        read: Option<&[String]>,
        write: Option<&[String]>,
        delete: Option<&[String]>,
        read_only: bool,
    ) -> Result<Self, String> {
        Ok(Self {
            read: compile(read)?,
            write: compile(write)?,
            delete: compile(delete)?,
            read_only,
            layer,
            subject: subject.into(),
            id: None,
        })
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    fn allows(&self, op: Op, path: &str) -> bool {
        let read = allows(&self.read, path);
        match op {
            Op::Read => read,
            Op::Write => read && !self.read_only && allows(&self.write, path),
            Op::Delete => read && !self.read_only && allows(&self.delete, path),
        }
    }

    pub fn layer(&self) -> Layer {
        self.layer
    }

    pub fn subject(&self) -> &str {
        &self.subject
    }

    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// The read globs as given (None: unrestricted).
    pub fn read_paths(&self) -> Option<Vec<String>> {
        patterns(&self.read)
    }

    pub fn write_paths(&self) -> Option<Vec<String>> {
        patterns(&self.write)
    }

    pub fn delete_paths(&self) -> Option<Vec<String>> {
        patterns(&self.delete)
    }
}

fn patterns(list: &Option<Vec<Glob>>) -> Option<Vec<String>> {
    list.as_ref().map(|l| l.iter().map(|g| g.pattern.clone()).collect())
}

/// Why an ACL answers as it does for one path and action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// The folder is hidden from this audience whatever the rules say.
    Hidden(&'static str),
    /// No rule restricts the path.
    Unrestricted,
    /// Every layer allows it; the first rule of each layer that does.
    Allowed(Vec<&'a Rule>),
    /// This layer's rules all refuse it (the rules listed).
    Denied(Layer, Vec<&'a Rule>),
    /// A change inside a folder no tool may change (a wiki's raw sources), whatever the rules.
    Immutable(&'a str),
    /// A path closed to a caller without this scope, whatever the rules.
    ScopeRequired(&'static str),
}

impl Verdict<'_> {
    pub fn allowed(&self) -> bool {
        matches!(self, Verdict::Unrestricted | Verdict::Allowed(_))
    }
}

/// The ACL a caller works under in one vault: its layers (each must allow) of rules (any may).
#[derive(Debug, Clone, Default)]
pub struct Acl {
    layers: Vec<Vec<Rule>>,
    audience: Audience,
    /// Folders nothing may be written, created, moved or deleted in (compared case-blind).
    immutable: Vec<String>,
    /// Paths this caller may not read, write or delete whatever the rules, with the scope that
    /// would open them (a wiki's log.md without read:provenance); compared case-blind.
    closed: Vec<(String, &'static str)>,
}

#[derive(Debug, Clone)]
struct Glob {
    pattern: String,
    regex: regex::Regex,
}

impl Glob {
    fn new(pattern: &str) -> Result<Self, String> {
        let source = glob_regex(pattern);
        let regex = regex::Regex::new(&source).map_err(|e| format!("{pattern:?}: {e}"))?;
        Ok(Self { pattern: pattern.to_string(), regex })
    }
}

/// The anchored regular expression a glob stands for. The same text means the same in Rust's
/// regex crate and in Postgres: ASCII punctuation is escaped (but `<` and `>`, which Rust reads
/// as word boundaries when escaped, go in a class), everything else stands for itself.
pub fn glob_regex(pattern: &str) -> String {
    let mut out = String::from("^");
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                out.push_str(".*");
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            '<' | '>' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            c if c.is_ascii_punctuation() && c != '/' && c != '_' && c != '-' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push('$');
    out
}

fn compile(list: Option<&[String]>) -> Result<Option<Vec<Glob>>, String> {
    list.map(|globs| globs.iter().map(|g| Glob::new(g)).collect()).transpose()
}

impl Acl {
    /// Unrestricted (but for the always-hidden folders), for the tools.
    pub fn open() -> Self {
        Self::default()
    }

    /// One deployment rule with these lists, for the tools.
    pub fn new(read: Option<&[String]>, write: Option<&[String]>, delete: Option<&[String]>) -> Result<Self, String> {
        Ok(Self::open().with_layer(vec![Rule::new(Layer::Deployment, "deployment", read, write, delete, false)?]))
    }

    /// This ACL narrowed by one more layer of rules (any of which may allow); no rules, no
    /// layer.
    pub fn with_layer(mut self, rules: Vec<Rule>) -> Self {
        if !rules.is_empty() {
            self.layers.push(rules);
        }
        self
    }

    /// This ACL with `folder` (and everything in it) closed to writes and deletes for every
    /// caller, whatever the rules say.
    pub fn with_immutable(mut self, folder: &str) -> Self {
        self.immutable.push(folder.trim_matches('/').to_lowercase());
        self
    }

    /// This ACL with the file `path` closed to every action unless the caller holds `scope`
    /// (the caller's scopes are known where the ACL is made, so a caller holding it gets no
    /// such entry).
    pub fn with_closed(mut self, path: &str, scope: &'static str) -> Self {
        self.closed.push((path.to_lowercase(), scope));
        self
    }

    /// The scope that would open `path`, when it is closed to this caller.
    pub fn closed_scope(&self, path: &str) -> Option<&'static str> {
        let lower = path.to_lowercase();
        self.closed.iter().find(|(p, _)| *p == lower).map(|(_, scope)| *scope)
    }

    /// The immutable folder `path` is in or is, if any.
    pub fn immutable_folder(&self, path: &str) -> Option<&str> {
        let lower = path.to_lowercase();
        self.immutable
            .iter()
            .find(|f| lower == **f || lower.strip_prefix(f.as_str()).is_some_and(|rest| rest.starts_with('/')))
            .map(String::as_str)
    }

    /// The same lists, read by `audience`.
    pub fn for_audience(mut self, audience: Audience) -> Self {
        self.audience = audience;
        self
    }

    pub fn audience(&self) -> Audience {
        self.audience
    }

    /// Every rule, layer by layer.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.layers.iter().flatten()
    }

    pub fn allows(&self, op: Op, path: &str) -> bool {
        self.audience.hides(path).is_none()
            && (op == Op::Read || self.immutable_folder(path).is_none())
            && self.closed_scope(path).is_none()
            && self.layers.iter().all(|rules| rules.iter().any(|r| r.allows(op, path)))
    }

    pub fn can_read(&self, path: &str) -> bool {
        self.allows(Op::Read, path)
    }

    /// Whether every layer has a rule that lets this caller read and write anywhere: what
    /// changing the vault's own settings (bookmarks, workspaces) takes, since they reach every
    /// folder.
    pub fn writes_everywhere(&self) -> bool {
        self.layers.iter().all(|rules| rules.iter().any(|r| !r.read_only && r.read.is_none() && r.write.is_none()))
    }

    pub fn can_write(&self, path: &str) -> bool {
        self.allows(Op::Write, path)
    }

    pub fn can_delete(&self, path: &str) -> bool {
        self.allows(Op::Delete, path)
    }

    /// Which rule decides `op` on `path`, and how.
    pub fn explain(&self, op: Op, path: &str) -> Verdict<'_> {
        if let Some(h) = self.audience.hides(path) {
            return Verdict::Hidden(h);
        }
        if let Some(scope) = self.closed_scope(path) {
            return Verdict::ScopeRequired(scope);
        }
        if op != Op::Read
            && let Some(folder) = self.immutable_folder(path)
        {
            return Verdict::Immutable(folder);
        }
        let mut by = Vec::new();
        for rules in &self.layers {
            match rules.iter().find(|r| r.allows(op, path)) {
                Some(rule) => by.push(rule),
                None => return Verdict::Denied(rules[0].layer, rules.iter().collect()),
            }
        }
        if by.is_empty() { Verdict::Unrestricted } else { Verdict::Allowed(by) }
    }

    /// The read ACL as anchored regular expressions for Postgres, a path readable when it
    /// matches one (None: unrestricted). Rules of one layer add their globs up; two restricted
    /// layers pair each glob of one with each of the other through a lookahead, which Postgres
    /// supports (Rust's regex crate does not; Rust matches with [`Acl::can_read`]). Closed
    /// paths become a negative lookahead in front of each expression.
    pub fn read_regexes(&self) -> Option<Vec<String>> {
        let open = self.rule_regexes();
        if self.closed.is_empty() {
            return open;
        }
        let closed: Vec<String> = self.closed.iter().map(|(p, _)| case_blind(p)).collect();
        let guard = format!("^(?!(?:{})$)", closed.join("|"));
        Some(match open {
            None => vec![guard],
            Some(list) => list.iter().map(|r| format!("{guard}{}", &r[1..])).collect(),
        })
    }

    fn rule_regexes(&self) -> Option<Vec<String>> {
        let mut out: Option<Vec<String>> = None;
        for rules in &self.layers {
            if rules.iter().any(|r| r.read.is_none()) {
                continue;
            }
            let layer: Vec<String> =
                rules.iter().flat_map(|r| r.read.iter().flatten()).map(|g| glob_regex(&g.pattern)).collect();
            out = Some(match out {
                None => layer,
                Some(before) => before
                    .iter()
                    .flat_map(|a| layer.iter().map(move |b| format!("^(?={}){}", &a[1..], &b[1..])))
                    .collect(),
            });
        }
        out
    }
}

/// `path` as a regular expression that matches it in any letter case (each cased letter a
/// class of both), escaped as [`glob_regex`] escapes, without anchors.
fn case_blind(path: &str) -> String {
    let mut out = String::new();
    for c in path.chars() {
        let (lower, upper): (String, String) = (c.to_lowercase().collect(), c.to_uppercase().collect());
        if lower != upper && lower.chars().count() == 1 && upper.chars().count() == 1 {
            out.push_str(&format!("[{lower}{upper}]"));
        } else if c == '<' || c == '>' {
            out.push_str(&format!("[{c}]"));
        } else if c.is_ascii_punctuation() && c != '/' && c != '_' && c != '-' {
            out.push('\\');
            out.push(c);
        } else {
            out.push(c);
        }
    }
    out
}

fn allows(list: &Option<Vec<Glob>>, path: &str) -> bool {
    list.as_ref().is_none_or(|globs| globs.iter().any(|g| g.regex.is_match(path)))
}

/// Whether `name` can name a group: 1–100 characters, letters, digits, space and `._@:-`, not
/// starting with punctuation (the `principal_groups` table's check).
pub fn is_group_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || " ._@:-".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_regex_says_what_hidden_says() {
        for audience in [Audience::Tools, Audience::Sync] {
            let re = regex::Regex::new(audience.hidden_regex()).unwrap();
            for path in [
                ".obsidian/app.json",
                ".trash/a.md",
                ".git/HEAD",
                ".gitx/a.md",
                "a/.git/x",
                ".obsidianx/y",
                "N.md",
                ".github/CONTRIBUTING.md",
                "Notes/.draft.md",
                "a.b/c.md",
                "Notes/x.md",
            ] {
                let hidden = audience.hides(path).is_some();
                assert_eq!(re.is_match(path), hidden, "{audience:?} {path}");
            }
        }
        for path in [".github/CONTRIBUTING.md", "Notes/.draft.md", "a/.git/x", ".gitx/a.md"] {
            assert_eq!(Audience::Tools.hides(path), Some(DOT_NAMES), "{path}");
            assert!(!Acl::open().can_read(path), "{path}");
        }
        for path in ["a.b/c.md", "Notes/x.y.md", "N.md"] {
            assert_eq!(Audience::Tools.hides(path), None, "{path}");
        }
    }

    #[test]
    fn a_closed_path_is_closed_to_every_action_and_to_the_queries() {
        let acl = Acl::open().with_closed("Wiki/log.md", "read:provenance");
        for op in [Op::Read, Op::Write, Op::Delete] {
            assert!(!acl.allows(op, "Wiki/log.md") && !acl.allows(op, "wiki/LOG.md"));
            assert!(acl.allows(op, "Wiki/index.md"));
        }
        assert_eq!(acl.explain(Op::Read, "wiki/log.md"), Verdict::ScopeRequired("read:provenance"));
        assert_eq!(acl.read_regexes().unwrap(), vec![r"^(?!(?:[wW][iI][kK][iI]/[lL][oO][gG]\.[mM][dD])$)"]);
        let listed =
            Acl::new(Some(&["Wiki/**".into()]), None, None).unwrap().with_closed("Wiki/log.md", "read:provenance");
        assert_eq!(listed.read_regexes().unwrap(), vec![r"^(?!(?:[wW][iI][kK][iI]/[lL][oO][gG]\.[mM][dD])$)Wiki/.*$"]);
    }

    #[test]
    fn globs_and_lists() {
        let acl = Acl::new(Some(&["Public/**".into(), "*.md".into(), "Notes/?.md".into()]), None, Some(&[])).unwrap();
        assert!(acl.can_read("Public/a/b.md"));
        assert!(acl.can_read("Top.md"));
        assert!(!acl.can_read("Private/x.md"));
        assert!(acl.can_read("Notes/a.md") && !acl.can_read("Notes/ab.md"));
        assert!(acl.can_write("Top.md"), "no write list: unrestricted");
        assert!(!acl.can_delete("Top.md"), "an empty list allows nothing");
        assert!(!Acl::open().can_read(".obsidian/app.json"));
        assert!(!Acl::open().can_read(".trash/x.md"));
        // The sync API carries Obsidian's settings, never the trash or git's folder, and the
        // lists still apply to it.
        let sync = Acl::open().for_audience(Audience::Sync);
        assert!(sync.can_read(".obsidian/app.json") && sync.can_write(".obsidian/app.json"));
        assert!(!sync.can_read(".trash/x.md") && !sync.can_write(".git/config") && !sync.can_delete(".trash/x.md"));
        let listed = Acl::new(Some(&["Public/**".into()]), None, None).unwrap().for_audience(Audience::Sync);
        assert!(!listed.can_read(".obsidian/app.json") && listed.can_read("Public/x.md"));
        assert_eq!(glob_regex("a.b/*(1)"), r"^a\.b/[^/]*\(1\)$");
        // Word-boundary escapes and non-ASCII text: literal, and valid.
        let acl = Acl::new(Some(&["Shared/<team>/**".into(), "📚 Books/**".into()]), None, None).unwrap();
        assert!(acl.can_read("Shared/<team>/x.md") && !acl.can_read("Shared/team/x.md"));
        assert!(acl.can_read("📚 Books/Dune.md"));
    }

    fn rule(layer: Layer, subject: &str, read: &[&str], write: Option<&[&str]>, read_only: bool) -> Rule {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Rule::new(layer, subject, Some(&list(read)), write.map(list).as_deref(), None, read_only).unwrap()
    }

    #[test]
    fn layers_all_must_allow_and_rules_in_a_layer_add_up() {
        let floor = rule(Layer::Deployment, "vault V", &["Team/**", "Public/**"], None, false);
        let eng = rule(Layer::Tenant, "group eng", &["Team/Eng/**"], None, false);
        let ops = rule(Layer::Tenant, "group ops", &["Team/Ops/**", "Private/**"], None, true);
        let acl = Acl::open().with_layer(vec![floor]).with_layer(vec![eng, ops]);
        assert!(acl.can_read("Team/Eng/a.md") && acl.can_write("Team/Eng/a.md"));
        assert!(acl.can_read("Team/Ops/a.md") && !acl.can_write("Team/Ops/a.md"), "ops is read-only");
        assert!(!acl.can_read("Private/x.md"), "the floor refuses what a tenant rule grants");
        assert!(!acl.can_read("Public/x.md"), "no tenant rule grants it");
        match acl.explain(Op::Write, "Team/Ops/a.md") {
            Verdict::Denied(Layer::Tenant, rules) => assert_eq!(rules.len(), 2),
            other => panic!("{other:?}"),
        }
        match acl.explain(Op::Read, "Team/Ops/a.md") {
            Verdict::Allowed(by) => {
                assert_eq!(by.iter().map(|r| r.subject()).collect::<Vec<_>>(), ["vault V", "group ops"])
            }
            other => panic!("{other:?}"),
        }
        assert!(!acl.explain(Op::Read, "Private/x.md").allowed());
        assert_eq!(Acl::open().explain(Op::Delete, "x.md"), Verdict::Unrestricted);
        assert_eq!(Acl::open().explain(Op::Read, ".trash/x.md"), Verdict::Hidden(".trash/"));
        // Postgres reads both layers at once: each floor glob paired with each tenant glob.
        let regexes = acl.read_regexes().unwrap();
        assert_eq!(regexes.len(), 6);
        assert_eq!(regexes[0], r"^(?=Team/.*$)Team/Eng/.*$");
        // A layer whose rule reads everything restricts nothing.
        let open_tenant = Acl::open()
            .with_layer(vec![rule(Layer::Deployment, "v", &["A/**"], None, false)])
            .with_layer(vec![Rule::new(Layer::Tenant, "everyone", None, None, None, false).unwrap()]);
        assert_eq!(open_tenant.read_regexes().unwrap(), [r"^A/.*$"]);
        assert_eq!(Acl::open().read_regexes(), None);
    }

    #[test]
    fn writing_everywhere_takes_a_rule_that_reads_and_writes_everything_in_every_layer() {
        assert!(Acl::open().writes_everywhere());
        let open = |layer| Rule::new(layer, "open", None, None, None, false).unwrap();
        let reads_a = rule(Layer::Tenant, "a", &["A/**"], None, false);
        let read_only = Rule::new(Layer::Tenant, "ro", None, None, None, true).unwrap();
        let writes_a = Rule::new(Layer::Tenant, "w", None, Some(&["A/**".to_string()]), None, false).unwrap();
        assert!(
            Acl::open()
                .with_layer(vec![open(Layer::Deployment)])
                .with_layer(vec![reads_a.clone(), open(Layer::Tenant)])
                .writes_everywhere()
        );
        for narrowing in [reads_a, read_only, writes_a] {
            let acl = Acl::open().with_layer(vec![open(Layer::Deployment)]).with_layer(vec![narrowing]);
            assert!(!acl.writes_everywhere());
        }
    }
}
