//! One file per tool: its input, output, declaration and handler together.

pub mod call_capability;
pub mod describe_capability;
pub mod find_capability;
pub mod get_server_config;
pub mod inspect_visibility;
pub mod server_health;
