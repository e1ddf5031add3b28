//! The automation domain's tools (`Domain::Automation`), one file each.

pub mod bundles;
pub mod eval_dataview_field;
pub mod execute_command;
pub mod execute_template;
pub mod generate_uri;
pub mod list_commands;
pub mod list_quickadd_actions;
pub mod list_templates;
pub mod makemd_list_spaces;
pub mod makemd_query;
pub mod remotely_save_status;
pub mod remotely_save_trigger;
pub mod show_file_in_obsidian;
pub mod tasks;
pub mod trigger_quickadd;
pub mod validate_dql;
