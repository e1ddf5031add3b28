//! Obsidian's "Excluded files" (Settings → Files and links), kept in `.obsidian/app.json` as
//! `userIgnoreFilters`. Obsidian reads each entry as a case-insensitive path prefix, or, when it
//! is written `/like this/`, as a case-insensitive regular expression searched anywhere in the
//! path. An entry that is not a valid expression is skipped, as Obsidian skips it. Excluded
//! notes stay link targets; they are kept out of search.

/// Where Obsidian keeps the setting.
pub const APP_CONFIG: &str = ".obsidian/app.json";

#[derive(Debug, Clone, Default)]
pub struct Excluded {
    filters: Vec<Filter>,
}

#[derive(Debug, Clone)]
enum Filter {
    Prefix(String),
    Pattern(regex::Regex),
}

impl Excluded {
    /// About how many bytes the filters hold (a compiled pattern weighs far more than its text).
    pub fn weight(&self) -> usize {
        self.filters
            .iter()
            .map(|f| match f {
                Filter::Prefix(p) => p.len() + 32,
                Filter::Pattern(r) => r.as_str().len() * 16 + 1024,
            })
            .sum::<usize>()
            + 24
    }

    /// The filters of an `app.json` (anything unreadable there means no filters).
    pub fn from_app_config(json: &[u8]) -> Self {
        let value: serde_json::Value = serde_json::from_slice(json).unwrap_or_default();
        let entries = value.get("userIgnoreFilters").and_then(|v| v.as_array()).cloned().unwrap_or_default();
        Self::new(entries.iter().filter_map(|e| e.as_str()))
    }

    pub fn new<'a>(entries: impl IntoIterator<Item = &'a str>) -> Self {
        let filters = entries
            .into_iter()
            .filter_map(|entry| {
                if entry.len() > 2 && entry.starts_with('/') && entry.ends_with('/') {
                    regex::RegexBuilder::new(&entry[1..entry.len() - 1])
                        .case_insensitive(true)
                        .build()
                        .ok()
                        .map(Filter::Pattern)
                } else {
                    Some(Filter::Prefix(entry.to_lowercase()))
                }
            })
            .collect();
        Self { filters }
    }

    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// Whether the vault path is in Excluded files.
    pub fn contains(&self, path: &str) -> bool {
        if self.filters.is_empty() {
            return false;
        }
        let lower = path.to_lowercase();
        self.filters.iter().any(|f| match f {
            Filter::Prefix(prefix) => lower.starts_with(prefix.as_str()),
            Filter::Pattern(re) => re.is_match(path),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_patterns() {
        let ex = Excluded::from_app_config(
            br#"{"userIgnoreFilters": ["Archive/", "/\\.draft\\.md$/", "/[/", "Templates"]}"#,
        );
        assert!(ex.contains("Archive/old.md"));
        assert!(ex.contains("archive/Old.md"));
        assert!(ex.contains("Notes/x.DRAFT.md"));
        assert!(ex.contains("Templates.md"));
        assert!(ex.contains("Templates/Daily.md"));
        assert!(!ex.contains("Notes/Archive/x.md"));
        assert!(!ex.contains("Notes/x.md"));
        assert!(Excluded::from_app_config(b"not json").is_empty());
    }
}
