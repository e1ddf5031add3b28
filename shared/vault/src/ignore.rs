//! What sync leaves alone: `.otcignore` patterns (gitignore-style globs, one per line, `#`
//! comments) plus files no vault should carry: Obsidian's per-device workspace state, the trash,
//! sync's own state and conflict markers, and OS litter.

/// Always ignored, whatever `.otcignore` says.
pub const BUILT_IN: [&str; 8] = [
    ".otc-sync/",
    ".trash/",
    ".obsidian/workspace.json",
    ".obsidian/workspace-mobile.json",
    ".obsidian/cache",
    ".DS_Store",
    "Thumbs.db",
    ".git/",
];

/// A compiled ignore list.
#[derive(Debug, Clone, Default)]
pub struct Ignore {
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    glob: String,
    /// Only matches a directory (and so everything below it).
    dir_only: bool,
    /// Contains a `/` before its end: matched against the whole path, not any segment.
    anchored: bool,
}

impl Ignore {
    /// The built-in rules plus the lines of an `.otcignore` file.
    pub fn new(otcignore: &str) -> Self {
        let lines = BUILT_IN.iter().copied().chain(otcignore.lines());
        let patterns = lines
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|line| {
                let dir_only = line.ends_with('/');
                let body = line.trim_end_matches('/');
                let anchored = body.trim_start_matches('/').contains('/') || line.starts_with('/');
                Pattern { glob: body.trim_start_matches('/').to_string(), dir_only, anchored }
            })
            .collect();
        Self { patterns }
    }

    /// Whether the vault-relative `path` (a file) is ignored.
    pub fn is_ignored(&self, path: &str) -> bool {
        let segments: Vec<&str> = path.split('/').collect();
        self.patterns.iter().any(|p| {
            if p.anchored {
                // The pattern names a path from the root: it, or a folder above the file.
                (0..segments.len()).any(|end| {
                    let prefix = segments[..=end].join("/");
                    let is_dir = end + 1 < segments.len();
                    glob(&p.glob, &prefix) && (!p.dir_only || is_dir)
                })
            } else {
                segments.iter().enumerate().any(|(i, seg)| {
                    let is_dir = i + 1 < segments.len();
                    glob(&p.glob, seg) && (!p.dir_only || is_dir)
                })
            }
        })
    }
}

/// `*` (any run within a segment), `?` (one character); everything else literal.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' && t[ti] != '/' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star
            && t[mark] != '/'
        {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_and_patterns() {
        let ignore = Ignore::new("# comment\n*.tmp\nPrivate/\n/Drafts/old-*.md\n");
        for p in [
            ".trash/x.md",
            ".obsidian/workspace.json",
            ".otc-sync/state.json",
            "a/.DS_Store",
            "x.tmp",
            "Deep/y.tmp",
            "Private/a.md",
            "Sub/Private/b.md",
            "Drafts/old-1.md",
        ] {
            assert!(ignore.is_ignored(p), "{p}");
        }
        for p in [".obsidian/app.json", "Note.md", "Private.md", "Sub/Drafts/old-1.md", "Drafts/new.md", "x.tmpl"] {
            assert!(!ignore.is_ignored(p), "{p}");
        }
    }
}
