//! Tags: most are derived from what a tool declares, so they cannot drift; a few facts no
//! other field carries are declared. Registration refuses a tag outside the vocabulary, a
//! derived tag written by hand, and a declaration the derivation already makes.

use std::collections::BTreeSet;

use crate::def::{Sometimes, ToolSpec};

/// Tags only the derivation may set.
pub const DERIVED_ONLY: [&str; 6] = ["read-only", "writes", "destructive", "hitl", "bulk", "admin"];

/// Tags a tool may declare. `plugin-bridge` marks a tool that needs a live Obsidian app with its
/// companion plugin: this server works on the vault's files, so a scope that names a plugin
/// (`read:tasks`, `read:dataview`) does not make a tool a bridge; only a tool that cannot work
/// without the running app (the active file, the command palette) declares it.
pub const DECLARABLE: [&str; 12] = [
    "plugin-bridge",
    "external-network",
    "client-sampling",
    "experiential",
    "verdict",
    "knowledge",
    "search",
    "docs",
    "links",
    "graph",
    "provenance",
    "diagnostics",
];

/// Whether a scope lets the tool change the vault.
pub fn is_mutating_scope(scope: &str) -> bool {
    matches!(scope.split(':').next(), Some("write" | "delete" | "bulk" | "execute"))
}

/// Read-only: no write, delete, bulk or execute scope, and not destructive. The same test as
/// the MCP readOnlyHint.
pub fn is_read_only(spec: &ToolSpec) -> bool {
    !spec.scopes.iter().any(|s| is_mutating_scope(s)) && spec.destructive == Sometimes::Never
}

/// The tags derived from the declaration, before declared ones are added.
pub fn derived(spec: &ToolSpec) -> BTreeSet<String> {
    let mut tags = BTreeSet::new();
    tags.insert(if is_read_only(spec) { "read-only" } else { "writes" }.to_string());
    if spec.destructive != Sometimes::Never {
        tags.insert("destructive".into());
    }
    if spec.hitl != Sometimes::Never {
        tags.insert("hitl".into());
    }
    if spec.scopes.iter().any(|s| s.starts_with("bulk:")) {
        tags.insert("bulk".into());
    }
    if spec.scopes.iter().any(|s| s.starts_with("admin:")) {
        tags.insert("admin".into());
    }
    tags.insert(format!("domain:{}", spec.domain));
    tags
}

/// Whether `tag` is in the vocabulary at all.
pub fn is_known(tag: &str) -> bool {
    DERIVED_ONLY.contains(&tag)
        || DECLARABLE.contains(&tag)
        || tag.strip_prefix("domain:").is_some_and(|d| crate::def::Domain::parse(d).is_some())
}

/// Checks the declared tags and returns the full tag set, or why the declaration is refused.
pub fn resolve(spec: &ToolSpec) -> Result<BTreeSet<String>, String> {
    let mut tags = derived(spec);
    for &tag in spec.declared_tags {
        if !is_known(tag) {
            return Err(format!("tag {tag:?} is not in the vocabulary"));
        }
        if DERIVED_ONLY.contains(&tag) || tag.starts_with("domain:") {
            return Err(format!("tag {tag:?} is derived and may not be declared"));
        }
        if !tags.insert(tag.to_string()) {
            return Err(format!("tag {tag:?} is declared twice"));
        }
    }
    Ok(tags)
}
