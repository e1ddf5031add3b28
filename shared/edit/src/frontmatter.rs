//! Frontmatter and tag edits (see the crate docs).
