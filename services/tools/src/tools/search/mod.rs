//! The search domain's tools (`Domain::Search`), one file each.

// The search domain holds a tool named search (the connector contract's).
pub mod dataview;
pub mod query_datacore;
pub mod scanning;
#[allow(clippy::module_inception)]
pub mod search;
pub mod search_and_read;
pub mod search_dql;
pub mod search_omnisearch;
pub mod search_semantic;
pub mod search_text;
pub mod search_vault;
pub mod semantic;
