//! Egress exclusion: the globs of notes whose text is never sent to a model (the deployment's
//! `egress.exclude_paths` and the tenant's own). One anchored regular expression that means the
//! same in Rust and in Postgres ([`crate::acl::glob_regex`]), so the embedding queue leaves the
//! chunks out in SQL and the tools leave the notes out in memory alike.

/// A compiled egress exclusion (empty: nothing excluded).
#[derive(Debug, Clone, Default)]
pub struct Exclusion {
    source: Option<String>,
    regex: Option<regex::Regex>,
}

impl Exclusion {
    /// The exclusion of `globs`. A glob with no wildcard also covers what is under it (a
    /// folder's name excludes the folder).
    pub fn new<'a>(globs: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut parts = Vec::new();
        for glob in globs {
            let glob = glob.trim().trim_start_matches('/');
            if glob.is_empty() {
                continue;
            }
            parts.push(format!("(?:{})", crate::acl::glob_regex(glob)));
            if !glob.contains(['*', '?']) {
                parts.push(format!("(?:{})", crate::acl::glob_regex(&format!("{}/**", glob.trim_end_matches('/')))));
            }
        }
        if parts.is_empty() {
            return Ok(Self::default());
        }
        let source = parts.join("|");
        let regex = regex::Regex::new(&source).map_err(|e| e.to_string())?;
        Ok(Self { source: Some(source), regex: Some(regex) })
    }

    /// The deployment's globs and a tenant's. A glob that does not compile excludes everything:
    /// a policy meant to keep text in never lets it out by being malformed.
    pub fn of(deployment: &[String], tenant: &[String]) -> Self {
        Self::new(deployment.iter().chain(tenant).map(String::as_str))
            .unwrap_or_else(|_| Self::new(["**"]).expect("** compiles"))
    }

    /// Whether `path`'s text must not leave.
    pub fn excludes(&self, path: &str) -> bool {
        self.regex.as_ref().is_some_and(|r| r.is_match(path))
    }

    /// The expression, for a query to leave excluded paths out (`path !~ source`); none when
    /// nothing is excluded.
    pub fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }

    pub fn is_empty(&self) -> bool {
        self.regex.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_folders_are_excluded_and_nothing_else() {
        let e = Exclusion::new(["Private/**", "HR", "*.secret.md", "  "]).unwrap();
        for path in ["Private/a.md", "Private/deep/b.md", "HR/pay.md", "HR", "x.secret.md"] {
            assert!(e.excludes(path), "{path}");
        }
        for path in ["Public/a.md", "HRM/a.md", "a/x.secret.md", "PrivateNotes.md"] {
            assert!(!e.excludes(path), "{path}");
        }
        assert!(Exclusion::new([]).unwrap().is_empty());
        assert!(!Exclusion::new(Vec::<&str>::new()).unwrap().excludes("a.md"));
    }
}
