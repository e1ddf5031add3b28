//! One file per tool: its input, output, declaration and handler together.

pub mod call_capability;
pub mod cancel_task;
pub mod describe_capability;
pub mod find_capability;
pub mod find_orphans;
pub mod find_unresolved_links;
pub mod get_backlinks;
pub mod get_index_status;
pub mod get_note_tags;
pub mod get_outgoing_links;
pub mod get_server_config;
pub mod get_task_status;
pub mod get_vault;
pub mod index_vault;
pub mod inspect_visibility;
pub mod list_notes;
pub mod list_vaults;
pub mod note_exists;
pub mod read_frontmatter;
pub mod read_note;
pub mod server_health;
