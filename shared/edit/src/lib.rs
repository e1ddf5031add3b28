//! Text edits for the write tools, with no I/O: where an anchor (heading, block, frontmatter
//! field) sits and how to replace or extend it, frontmatter and tag edits that leave every
//! untouched byte as it was, link rewrites that are proven by parsing the result again, and
//! pipe-table edits (format, insert a row or a column, sort) that splice only the table, and
//! Kanban boards (cards added and moved between lanes).
//!
//! Every function takes the note's text and returns the new text (or a refusal as a
//! `ToolError` from the one error table); none of them reads or writes a vault.

pub mod anchor;
pub mod frontmatter;
pub mod kanban;
pub mod rewrite;
pub mod table;

#[cfg(test)]
mod corpus_tests;
