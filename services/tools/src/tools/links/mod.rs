//! The links domain's tools (`Domain::Links`), one file each.

pub mod find_link_cycles;
pub mod find_orphans;
pub mod find_unresolved_links;
pub mod get_backlinks;
pub mod get_link_strength;
pub mod get_outgoing_links;
pub mod graph_centrality;
pub mod graph_communities;
pub mod graph_path_between;
pub mod outgoing;
pub mod prune_hub_links;
pub mod rewrite_link;
pub mod suggest_links;
pub mod vault_health_score;
