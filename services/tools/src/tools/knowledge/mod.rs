//! The knowledge domain's tools (`Domain::Knowledge`), one file each.

pub mod add_observation;
pub mod audit_provenance;
pub mod close_goal;
pub mod commit_capture;
pub mod commit_wiki_page;
pub mod create_entity;
pub mod delete_entity;
pub mod draft_wiki_page;
pub mod end_session;
pub mod enqueue_capture;
pub mod find_existing_page;
pub mod get_entity;
pub mod get_session_traces;
pub mod link_entities;
pub mod lint_wiki;
pub mod list_capture_queue;
pub mod list_goals;
pub mod note_quality_report;
pub mod query_entity_graph;
pub mod rename_entity;
pub mod session_bootstrap;
pub mod set_goal;
pub mod start_session;
pub mod unlink_entities;
pub mod update_observation;
