//! A vault's folder ACL: which paths a caller may read, write and delete. Each list holds globs
//! over vault paths (`*` one segment's characters, `**` anything, `?` one character but `/`);
//! a list that is absent leaves that action unrestricted. Some folders are hidden whatever the
//! lists say, and which depends on who reads ([`Audience`]): the trash and git's folder
//! (`.trash/`, `.git/`) from everyone, Obsidian's own settings (`.obsidian/`) from the tools only.
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

    /// [`Audience::hidden`] as one Postgres (and Rust) regular expression, for the store's
    /// queries: a path it matches is left out.
    pub fn hidden_regex(self) -> &'static str {
        match self {
            Audience::Tools => r"^\.(obsidian|trash|git)/",
            Audience::Sync => r"^\.(trash|git)/",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Acl {
    read: Option<Vec<Glob>>,
    write: Option<Vec<Glob>>,
    delete: Option<Vec<Glob>>,
    audience: Audience,
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

    /// The lists, for the tools.
    pub fn new(read: Option<&[String]>, write: Option<&[String]>, delete: Option<&[String]>) -> Result<Self, String> {
        Ok(Self { read: compile(read)?, write: compile(write)?, delete: compile(delete)?, audience: Audience::Tools })
    }

    /// The same lists, read by `audience`.
    pub fn for_audience(mut self, audience: Audience) -> Self {
        self.audience = audience;
        self
    }

    pub fn audience(&self) -> Audience {
        self.audience
    }

    pub fn can_read(&self, path: &str) -> bool {
        !self.audience.hidden().iter().any(|h| path.starts_with(h)) && allows(&self.read, path)
    }

    pub fn can_write(&self, path: &str) -> bool {
        self.can_read(path) && allows(&self.write, path)
    }

    pub fn can_delete(&self, path: &str) -> bool {
        self.can_read(path) && allows(&self.delete, path)
    }

    /// The read globs as given (None: unrestricted).
    pub fn read_paths(&self) -> Option<Vec<String>> {
        self.read.as_ref().map(|l| l.iter().map(|g| g.pattern.clone()).collect())
    }

    pub fn write_paths(&self) -> Option<Vec<String>> {
        self.write.as_ref().map(|l| l.iter().map(|g| g.pattern.clone()).collect())
    }

    pub fn delete_paths(&self) -> Option<Vec<String>> {
        self.delete.as_ref().map(|l| l.iter().map(|g| g.pattern.clone()).collect())
    }
}

fn allows(list: &Option<Vec<Glob>>, path: &str) -> bool {
    list.as_ref().is_none_or(|globs| globs.iter().any(|g| g.regex.is_match(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_regex_says_what_hidden_says() {
        for audience in [Audience::Tools, Audience::Sync] {
            let re = regex::Regex::new(audience.hidden_regex()).unwrap();
            for path in
                [".obsidian/app.json", ".trash/a.md", ".git/HEAD", ".gitx/a.md", "a/.git/x", ".obsidianx/y", "N.md"]
            {
                let hidden = audience.hidden().iter().any(|h| path.starts_with(h));
                assert_eq!(re.is_match(path), hidden, "{audience:?} {path}");
            }
        }
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
}
