//! The links domain's tools (`Domain::Links`), one file each.

pub mod find_orphans;
pub mod find_unresolved_links;
pub mod get_backlinks;
pub mod get_outgoing_links;
pub mod rewrite_link;
pub mod suggest_links;
