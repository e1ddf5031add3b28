//! Link resolution as Obsidian does it (`MetadataCache.getFirstLinkpathDest`).
//!
//! Obsidian documents the function only as "the best match for a linkpath". The rule below was
//! read from the app itself (the `getLinkpathDest` method of the shipped bundle, 1.12 and
//! later) and is reproduced step by step, quirks included:
//!
//! 1. An empty target (`[[#Heading]]`) is the source note itself.
//! 2. Candidates are the files whose *file name* matches, case-insensitively. When the target's
//!    last segment contains a `.`, that name is looked up as written (`image.png`,
//!    `v1.2`); when it has no `.`, or nothing is called that, the target gains `.md`.
//!    No candidate: unresolved. (Aliases play no part: Obsidian resolves by file name only.)
//! 3. `./x` and `../x` are resolved against the source note's folder; a candidate with exactly
//!    that path wins.
//! 4. One leading `/` is dropped; a candidate whose whole path equals the target wins
//!    (a vault-absolute path, with or without `.md`). So for a bare name, a file of that name
//!    at the vault root wins from anywhere.
//! 5. A target written with a leading `/` that did not match exactly is unresolved: there is
//!    no fuzzy fallback for it.
//! 6. Otherwise every candidate whose path *ends with* the target (a plain string suffix:
//!    `b/Note` also matches `ab/Note.md`) qualifies. Those whose path starts with the source's
//!    folder (again a plain prefix, so a note at the root prefers nothing) come first, then
//!    the rest; each group shortest path first. The first one is the target.
//!
//! Ties of equal length: Obsidian keeps its file table's insertion order, which is the order
//! the vault happened to load in. We break them by bytewise path order instead, so every
//! server resolves a link the same way. This is the one point where we choose.

use std::collections::HashMap;

/// The key candidates are looked up by: the lower-cased file name (last segment, extension
/// included).
pub fn name_key(path: &str) -> String {
    file_name(path).to_lowercase()
}

/// The keys a link target can be looked up by: its own file name when that contains a `.`,
/// and the name with `.md` added. Empty for a same-note link.
pub fn lookup_keys(target: &str) -> Vec<String> {
    if target.is_empty() {
        return Vec::new();
    }
    let name = file_name(target).to_lowercase();
    let mut keys = Vec::with_capacity(2);
    if name.contains('.') {
        keys.push(name.clone());
    }
    keys.push(format!("{name}.md"));
    keys
}

/// The link keys a file's appearance or disappearance can change the resolution of: links
/// whose target's file name is the file's name, or the name without `.md`.
pub fn affected_link_keys(path: &str) -> Vec<String> {
    let key = name_key(path);
    let mut keys = vec![key.clone()];
    if let Some(stem) = key.strip_suffix(".md") {
        keys.push(stem.to_string());
    }
    keys
}

/// The lower-cased file name of a link target, as stored on the link for re-resolution.
pub fn link_key(target: &str) -> String {
    if target.is_empty() { String::new() } else { name_key(target) }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The folder of a path ("" at the root).
fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |at| &path[..at])
}

/// The files a link can resolve to, grouped by name key.
#[derive(Debug, Default, Clone)]
pub struct Resolver {
    by_name: HashMap<String, Vec<(String, String)>>, // key -> [(path, lower-cased path)]
}

impl Resolver {
    pub fn new<I, S>(paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut resolver = Self::default();
        for path in paths {
            resolver.add(path.into());
        }
        resolver
    }

    pub fn add(&mut self, path: String) {
        let lower = path.to_lowercase();
        self.by_name.entry(name_key(&path)).or_default().push((path, lower));
    }

    pub fn len(&self) -> usize {
        self.by_name.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The file `target` (a link's path part, no `#subpath`) resolves to from the note at
    /// `source`, or `None` when it is unresolved.
    pub fn resolve<'a>(&'a self, target: &str, source: &'a str) -> Option<&'a str> {
        if target.is_empty() {
            return Some(source);
        }
        self.candidates(target, source).into_iter().next()
    }

    /// Every file `target` could mean from `source`, best first (the first is what it
    /// resolves to). More than one means the name is ambiguous.
    pub fn candidates<'a>(&'a self, target: &str, source: &str) -> Vec<&'a str> {
        let mut wanted = target.to_lowercase();
        let mut found = None;
        let name = file_name(&wanted).to_string();
        if name.contains('.') {
            found = self.by_name.get(&name);
        }
        if found.is_none() {
            wanted.push_str(".md");
            found = self.by_name.get(&format!("{name}.md"));
        }
        let Some(files) = found else { return Vec::new() };

        let mut dir = parent(source).to_lowercase();
        if wanted.starts_with("./") || wanted.starts_with("../") {
            if wanted.starts_with("./../") {
                wanted.drain(..2);
            }
            if let Some(rest) = wanted.strip_prefix("./") {
                if !dir.is_empty() {
                    dir.push('/');
                }
                wanted = format!("{dir}{rest}");
            } else {
                while let Some(rest) = wanted.strip_prefix("../") {
                    wanted = rest.to_string();
                    dir = parent(&dir).to_string();
                }
                if !dir.is_empty() {
                    dir.push('/');
                }
                wanted = format!("{dir}{wanted}");
            }
            if let Some((path, _)) = files.iter().find(|(_, lower)| *lower == wanted) {
                return vec![path.as_str()];
            }
        }
        if let Some(rest) = wanted.strip_prefix('/') {
            wanted = rest.to_string();
        }
        if let Some((path, _)) = files.iter().find(|(_, lower)| *lower == wanted) {
            return vec![path.as_str()];
        }
        if target.starts_with('/') {
            return Vec::new();
        }
        let mut near: Vec<&(String, String)> = Vec::new();
        let mut far: Vec<&(String, String)> = Vec::new();
        for file in files.iter().filter(|(_, lower)| lower.ends_with(&wanted)) {
            if file.1.starts_with(&dir) { near.push(file) } else { far.push(file) }
        }
        let order = |a: &&(String, String), b: &&(String, String)| a.0.len().cmp(&b.0.len()).then(a.0.cmp(&b.0));
        near.sort_by(order);
        far.sort_by(order);
        near.into_iter().chain(far).map(|(path, _)| path.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vault() -> Resolver {
        Resolver::new([
            "Note.md",
            "Tasks.md",
            "Projects/Tasks.md",
            "Projects/Alpha/Tasks.md",
            "Archive/2024/Tasks.md",
            "ab/Note.md",
            "b/Note.md",
            "images/Photo.PNG",
            "v1.2.md",
            "Folder/Other.md",
            "Sub/Deep/Page.md",
            "Sub/Page.md",
        ])
    }

    #[test]
    fn names_resolve_case_insensitively_with_or_without_md() {
        let v = vault();
        assert_eq!(v.resolve("note", "x.md"), Some("Note.md"));
        assert_eq!(v.resolve("Note.md", "x.md"), Some("Note.md"));
        assert_eq!(v.resolve("other", "x.md"), Some("Folder/Other.md"));
        assert_eq!(v.resolve("photo.png", "x.md"), Some("images/Photo.PNG"));
        assert_eq!(v.resolve("v1.2", "x.md"), Some("v1.2.md"));
        assert_eq!(v.resolve("Missing", "x.md"), None);
        assert_eq!(v.resolve("", "Folder/Other.md"), Some("Folder/Other.md"));
    }

    #[test]
    fn vault_absolute_and_relative_paths() {
        let v = vault();
        assert_eq!(v.resolve("Projects/Tasks", "x.md"), Some("Projects/Tasks.md"));
        assert_eq!(v.resolve("/Projects/Tasks.md", "x.md"), Some("Projects/Tasks.md"));
        assert_eq!(v.resolve("./Page", "Sub/Deep/x.md"), Some("Sub/Deep/Page.md"));
        assert_eq!(v.resolve("../Page", "Sub/Deep/x.md"), Some("Sub/Page.md"));
        assert_eq!(v.resolve("./../Page", "Sub/Deep/x.md"), Some("Sub/Page.md"));
        // A leading slash that does not match a whole path has no fallback.
        assert_eq!(v.resolve("/Alpha/Tasks", "x.md"), None);
        // Without it, a path suffix is enough.
        assert_eq!(v.resolve("Alpha/Tasks", "x.md"), Some("Projects/Alpha/Tasks.md"));
    }

    #[test]
    fn a_root_file_wins_a_bare_name_then_the_source_folder_then_the_shortest_path() {
        let v = vault();
        // "Tasks" is the whole path of the root file: it wins from anywhere.
        assert_eq!(v.resolve("Tasks", "Projects/Alpha/x.md"), Some("Tasks.md"));
        assert_eq!(v.candidates("Tasks", "Projects/x.md"), ["Tasks.md"]);
        // No root file: candidates under the source's folder first, each group shortest first.
        assert_eq!(v.resolve("Page", "Sub/Deep/x.md"), Some("Sub/Deep/Page.md"));
        assert_eq!(v.candidates("Page", "Sub/Deep/x.md"), ["Sub/Deep/Page.md", "Sub/Page.md"]);
        assert_eq!(v.candidates("Page", "Sub/x.md"), ["Sub/Page.md", "Sub/Deep/Page.md"]);
        assert_eq!(v.resolve("Page", "Folder/x.md"), Some("Sub/Page.md"));
        assert_eq!(v.resolve("Page", "x.md"), Some("Sub/Page.md"));
        // Equal lengths: bytewise path order (our choice; Obsidian uses its load order).
        let same = Resolver::new(["b/Same.md", "a/Same.md"]);
        assert_eq!(same.candidates("Same", "x.md"), ["a/Same.md", "b/Same.md"]);
    }

    #[test]
    fn the_suffix_and_folder_tests_are_plain_string_tests() {
        // An exact path wins outright.
        assert_eq!(vault().candidates("b/Note", "x.md"), ["b/Note.md"]);
        // "b/Note" is a suffix of "ab/Note.md" and "cb/Note.md": no boundary is checked.
        let v = Resolver::new(["ab/Note.md", "cb/Note.md"]);
        assert_eq!(v.candidates("b/Note", "x.md"), ["ab/Note.md", "cb/Note.md"]);
        // A source folder "c" is a prefix of "cb/": that counts as the source's folder.
        assert_eq!(v.resolve("Note", "c/x.md"), Some("cb/Note.md"));
    }

    #[test]
    fn keys() {
        assert_eq!(lookup_keys("Photo.PNG"), ["photo.png", "photo.png.md"]);
        assert_eq!(lookup_keys("Folder/Note"), ["note.md"]);
        assert!(lookup_keys("").is_empty());
        assert_eq!(affected_link_keys("A/Note.md"), ["note.md", "note"]);
        assert_eq!(link_key("A/Ärger"), "ärger");
    }
}
