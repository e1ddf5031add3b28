//! The workspace domain's tools (`Domain::Workspace`), one file each.

pub mod add_bookmark;
pub mod append_active_file;
pub mod append_to_periodic_note;
pub mod create_periodic_note;
pub mod delete_active_file;
pub mod find_or_create_periodic_note;
pub mod get_active_file;
pub mod get_periodic_note;
pub mod list_bookmarks;
pub mod list_periodic_notes;
pub mod list_workspaces;
pub mod open_workspace;
pub mod patch_active_file;
pub mod remove_bookmark;
pub mod resolve_daily_note;
pub mod save_workspace;
pub mod update_active_file;
