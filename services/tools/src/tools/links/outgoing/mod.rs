//! How the link tools show a link: one shape for get_outgoing_links, get_backlinks and
//! find_unresolved_links, concise or detailed. Property links carry `source: "property"` and
//! `property`; body links carry neither. A property link's line and column are positions in the
//! file; a body link's line counts from the first body line (both 1-based).

use otc_store::LinkRecord;
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Debug, Serialize, JsonSchema)]
pub struct LinkView {
    /// get_backlinks, find_unresolved_links: the note the link is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_path: Option<String>,
    /// The target as written (no #heading, no |alias).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub line: i32,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub col: Option<i32>,
    /// Detailed only: the link as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Detailed only: wikilink, markdown or embed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Detailed only: the alias or link text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// The #heading or #^block it points at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    /// get_outgoing_links: whether it resolves to a note you can read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<bool>,
    /// get_outgoing_links: the vault path it resolves to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_path: Option<String>,
    /// get_outgoing_links: every file the name could mean, best first, when more than one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<String>>,
    /// "property" for a link in a frontmatter value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// For a property link: the top-level property it sits under.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
}

/// A note whose frontmatter does not parse: it has no property links, its body links count.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Warning {
    pub path: String,
    /// frontmatter_yaml.
    pub reason: String,
    pub message: String,
}

pub fn warnings(failures: Vec<(String, String)>) -> Option<Vec<Warning>> {
    (!failures.is_empty()).then(|| {
        failures
            .into_iter()
            .map(|(path, message)| Warning { path, reason: "frontmatter_yaml".into(), message })
            .collect()
    })
}

/// The common fields of a link; the caller adds what its tool reports.
pub fn view(link: &LinkRecord, body_line: i32, detailed: bool) -> LinkView {
    let property = link.kind == "property";
    let line = if property { link.line + 1 } else { link.line - body_line + 1 };
    let kind = match (link.kind.as_str(), link.wiki) {
        ("embed", _) => "embed",
        (_, true) => "wikilink",
        _ => "markdown",
    };
    let heading = match (link.subpath_kind.as_deref(), &link.subpath) {
        (Some("block"), Some(b)) => Some(format!("^{b}")),
        (_, Some(h)) => Some(h.clone()),
        _ => None,
    };
    LinkView {
        source_path: None,
        target: None,
        line,
        col: detailed.then_some(link.col + 1),
        raw: detailed.then(|| link.raw.clone()),
        kind: detailed.then(|| kind.to_string()),
        display: if detailed { link.alias.clone() } else { None },
        heading,
        resolved: None,
        target_path: None,
        candidates: None,
        source: property.then(|| "property".to_string()),
        property: if property { link.property.clone() } else { None },
    }
}
