//! The metadata domain's tools (`Domain::Metadata`), one file each.

pub mod add_tag;
pub mod bulk_set_property;
pub mod find_notes_by_property;
pub mod find_notes_by_tag;
pub mod get_note_tags;
pub mod list_properties;
pub mod list_tags;
pub mod read_frontmatter;
pub mod read_metadata_fields;
pub mod read_property;
pub mod remove_tag;
pub mod suggest_tags;
pub mod update_frontmatter;
