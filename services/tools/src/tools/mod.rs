//! One file per tool: its input, output, declaration and handler together.

pub mod call_capability;
pub mod cancel_task;
pub mod describe_capability;
pub mod find_capability;
pub mod get_index_status;
pub mod get_server_config;
pub mod get_task_status;
pub mod index_vault;
pub mod inspect_visibility;
pub mod server_health;
