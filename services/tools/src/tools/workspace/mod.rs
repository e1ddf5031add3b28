//! The workspace domain's tools (`Domain::Workspace`), one file each.

pub mod append_active_file;
pub mod append_to_periodic_note;
pub mod create_periodic_note;
pub mod delete_active_file;
pub mod find_or_create_periodic_note;
pub mod get_active_file;
pub mod get_periodic_note;
pub mod list_periodic_notes;
pub mod patch_active_file;
pub mod resolve_daily_note;
pub mod update_active_file;
