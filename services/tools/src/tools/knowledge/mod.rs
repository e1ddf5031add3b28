//! The knowledge domain's tools (`Domain::Knowledge`), one file each.

pub mod audit_provenance;
pub mod close_goal;
pub mod commit_capture;
pub mod end_session;
pub mod enqueue_capture;
pub mod explain_answer;
pub mod gap_report;
pub mod get_session_traces;
pub mod list_capture_queue;
pub mod list_contradictions;
pub mod list_goals;
pub mod maintenance;
pub mod memory;
pub mod note_quality_report;
pub mod plur;
pub mod retrieval;
pub mod session_bootstrap;
pub mod set_goal;
pub mod start_session;
pub mod wiki;
pub mod work;
