//! The notes domain's tools (`Domain::Notes`), one file each.

pub mod append_note;
pub mod bulk_create_notes;
pub mod bulk_move_notes;
pub mod copy_note;
pub mod delete_note;
pub mod fetch;
pub mod get_provenance;
pub mod list_notes;
pub mod list_snapshots;
pub mod move_note;
pub mod moving;
pub mod note_exists;
pub mod patch_note;
pub mod read_note;
pub mod read_notes;
pub mod read_resources;
pub mod read_snapshot;
pub mod restore_note;
pub mod snapshot_note;
pub mod write_note;
