//! The registered tools, as plain data. A tool is added here and nowhere else.

use crate::tools::*;
use crate::{ToolEntry, entry};

/// Every tool this build registers.
pub fn all() -> Vec<ToolEntry> {
    vec![
        entry::<find_capability::FindCapability>(),
        entry::<describe_capability::DescribeCapability>(),
        entry::<call_capability::CallCapability>(),
        entry::<server_health::ServerHealth>(),
        entry::<get_server_config::GetServerConfig>(),
        entry::<inspect_visibility::InspectVisibility>(),
        entry::<read_note::ReadNote>(),
        entry::<read_notes::ReadNotes>(),
        entry::<write_note::WriteNote>(),
        entry::<append_note::AppendNote>(),
        entry::<patch_note::PatchNote>(),
        entry::<delete_note::DeleteNote>(),
        entry::<copy_note::CopyNote>(),
        entry::<move_note::MoveNote>(),
        entry::<snapshot_note::SnapshotNote>(),
        entry::<list_snapshots::ListSnapshots>(),
        entry::<read_snapshot::ReadSnapshot>(),
        entry::<restore_note::RestoreNote>(),
        entry::<get_provenance::GetProvenance>(),
        entry::<note_exists::NoteExists>(),
        entry::<list_notes::ListNotes>(),
        entry::<read_frontmatter::ReadFrontmatter>(),
        entry::<read_property::ReadProperty>(),
        entry::<update_frontmatter::UpdateFrontmatter>(),
        entry::<add_tag::AddTag>(),
        entry::<remove_tag::RemoveTag>(),
        entry::<get_note_tags::GetNoteTags>(),
        entry::<list_tags::ListTags>(),
        entry::<find_notes_by_tag::FindNotesByTag>(),
        entry::<list_properties::ListProperties>(),
        entry::<find_notes_by_property::FindNotesByProperty>(),
        entry::<get_outgoing_links::GetOutgoingLinks>(),
        entry::<get_backlinks::GetBacklinks>(),
        entry::<find_unresolved_links::FindUnresolvedLinks>(),
        entry::<find_orphans::FindOrphans>(),
        entry::<get_attachment::GetAttachment>(),
        entry::<list_attachments::ListAttachments>(),
        entry::<list_vaults::ListVaults>(),
        entry::<get_vault::GetVault>(),
        entry::<index_vault::IndexVault>(),
        entry::<get_index_status::GetIndexStatus>(),
        entry::<get_task_status::GetTaskStatus>(),
        entry::<cancel_task::CancelTask>(),
    ]
}
