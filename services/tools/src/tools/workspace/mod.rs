//! The workspace domain's tools (`Domain::Workspace`), one file each.

pub mod append_active_file;
pub mod bookmarks;
pub mod delete_active_file;
pub mod get_active_file;
pub mod list_workspaces;
pub mod live_app;
pub mod open_workspace;
pub mod patch_active_file;
pub mod periodic;
pub mod save_workspace;
pub mod settings;
pub mod update_active_file;
