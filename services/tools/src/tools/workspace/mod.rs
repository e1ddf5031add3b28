//! The workspace domain's tools (`Domain::Workspace`), one file each.

pub mod add_bookmark;
pub mod append_active_file;
pub mod delete_active_file;
pub mod get_active_file;
pub mod list_bookmarks;
pub mod list_workspaces;
pub mod open_workspace;
pub mod patch_active_file;
pub mod periodic;
pub mod remove_bookmark;
pub mod save_workspace;
pub mod update_active_file;
