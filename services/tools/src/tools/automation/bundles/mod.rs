//! What bundle_files and bundle_folder share: several notes packed into one text for a model's
//! context, each under its path, within a byte budget.

pub mod bundle_files;
pub mod bundle_folder;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most bytes one bundle holds (the governor's ceiling on a result is 1 MiB).
pub const MAX_BUNDLE_BYTES: usize = 900_000;
pub const DEFAULT_BUNDLE_BYTES: usize = 200_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Under "# path" headings (default).
    #[default]
    Markdown,
    /// In <file path="..."> elements.
    Xml,
}

/// One file of a bundle, for the detailed answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Part {
    pub path: String,
    pub bytes: usize,
}

/// A bundle being packed.
pub struct Bundle {
    layout: Layout,
    include_frontmatter: bool,
    budget: usize,
    pub text: String,
    pub parts: Vec<Part>,
}

fn xml_attr(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;")
}

impl Bundle {
    pub fn new(layout: Layout, include_frontmatter: bool, budget: usize) -> Self {
        Bundle { layout, include_frontmatter, budget, text: String::new(), parts: Vec::new() }
    }

    /// Adds a file; false (and nothing added) when it would not fit the budget, unless the
    /// bundle is still empty, in which case it is cut to fit.
    pub fn add(&mut self, path: &str, content: &str) -> bool {
        let body =
            if self.include_frontmatter { content } else { &content[otc_parser::parse_head(content).body_start..] };
        let piece = match self.layout {
            Layout::Markdown => format!("# {path}\n\n{}\n\n---\n\n", body.trim_end()),
            Layout::Xml => format!("<file path=\"{}\">\n{}\n</file>\n", xml_attr(path), body.trim_end()),
        };
        let piece = if self.text.len() + piece.len() > self.budget {
            if !self.parts.is_empty() {
                return false;
            }
            piece[..piece.floor_char_boundary(self.budget)].to_string()
        } else {
            piece
        };
        self.parts.push(Part { path: path.to_string(), bytes: piece.len() });
        self.text.push_str(&piece);
        true
    }
}
