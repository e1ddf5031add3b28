//! The admin domain's tools (`Domain::Admin`), one file each.

pub mod acl_rules;
pub mod call_capability;
pub mod cancel_task;
pub mod describe_capability;
pub mod find_capability;
pub mod get_index_status;
pub mod get_metrics;
pub mod get_server_config;
pub mod get_task_status;
pub mod inspect_acl;
pub mod inspect_visibility;
pub mod server_health;
pub mod session_rerun;
