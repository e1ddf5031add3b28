//! The knowledge domain's tools (`Domain::Knowledge`), one file each.

pub mod audit_provenance;
pub mod commit_wiki_page;
pub mod draft_wiki_page;
pub mod find_existing_page;
pub mod lint_wiki;
pub mod note_quality_report;
