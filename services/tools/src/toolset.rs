//! The registered tools, as plain data. A tool is added here and nowhere else.

use crate::tools::*;
use crate::{ToolEntry, entry};

/// Every tool this build registers.
pub fn all() -> Vec<ToolEntry> {
    vec![
        entry::<admin::find_capability::FindCapability>(),
        entry::<admin::describe_capability::DescribeCapability>(),
        entry::<admin::call_capability::CallCapability>(),
        entry::<admin::server_health::ServerHealth>(),
        entry::<admin::get_server_config::GetServerConfig>(),
        entry::<admin::get_metrics::GetMetrics>(),
        entry::<admin::inspect_acl::InspectAcl>(),
        entry::<admin::inspect_visibility::InspectVisibility>(),
        entry::<notes::read_note::ReadNote>(),
        entry::<notes::read_notes::ReadNotes>(),
        entry::<notes::read_resources::ReadResources>(),
        entry::<notes::fetch::Fetch>(),
        entry::<notes::write_note::WriteNote>(),
        entry::<notes::append_note::AppendNote>(),
        entry::<notes::patch_note::PatchNote>(),
        entry::<notes::delete_note::DeleteNote>(),
        entry::<notes::copy_note::CopyNote>(),
        entry::<notes::move_note::MoveNote>(),
        entry::<notes::bulk_create_notes::BulkCreateNotes>(),
        entry::<notes::bulk_move_notes::BulkMoveNotes>(),
        entry::<notes::snapshot_note::SnapshotNote>(),
        entry::<notes::list_snapshots::ListSnapshots>(),
        entry::<notes::read_snapshot::ReadSnapshot>(),
        entry::<notes::restore_note::RestoreNote>(),
        entry::<notes::get_provenance::GetProvenance>(),
        entry::<knowledge::audit_provenance::AuditProvenance>(),
        entry::<notes::note_exists::NoteExists>(),
        entry::<notes::list_notes::ListNotes>(),
        entry::<metadata::read_frontmatter::ReadFrontmatter>(),
        entry::<metadata::read_property::ReadProperty>(),
        entry::<metadata::update_frontmatter::UpdateFrontmatter>(),
        entry::<metadata::add_tag::AddTag>(),
        entry::<metadata::remove_tag::RemoveTag>(),
        entry::<metadata::bulk_set_property::BulkSetProperty>(),
        entry::<metadata::get_note_tags::GetNoteTags>(),
        entry::<metadata::list_tags::ListTags>(),
        entry::<metadata::find_notes_by_tag::FindNotesByTag>(),
        entry::<metadata::list_properties::ListProperties>(),
        entry::<metadata::find_notes_by_property::FindNotesByProperty>(),
        entry::<links::get_outgoing_links::GetOutgoingLinks>(),
        entry::<links::get_backlinks::GetBacklinks>(),
        entry::<links::find_unresolved_links::FindUnresolvedLinks>(),
        entry::<links::find_orphans::FindOrphans>(),
        entry::<links::suggest_links::SuggestLinks>(),
        entry::<links::rewrite_link::RewriteLink>(),
        entry::<links::graph_path_between::GraphPathBetween>(),
        entry::<links::get_link_strength::GetLinkStrength>(),
        entry::<links::graph_centrality::GraphCentrality>(),
        entry::<links::graph_communities::GraphCommunities>(),
        entry::<links::find_link_cycles::FindLinkCycles>(),
        entry::<links::vault_health_score::VaultHealthScore>(),
        entry::<links::prune_hub_links::PruneHubLinks>(),
        entry::<knowledge::note_quality_report::NoteQualityReport>(),
        entry::<knowledge::find_existing_page::FindExistingPage>(),
        entry::<knowledge::draft_wiki_page::DraftWikiPage>(),
        entry::<knowledge::commit_wiki_page::CommitWikiPage>(),
        entry::<knowledge::lint_wiki::LintWiki>(),
        entry::<search::search_regex::SearchRegex>(),
        entry::<search::search_jsonlogic::SearchJsonlogic>(),
        entry::<attachments::get_attachment::GetAttachment>(),
        entry::<attachments::list_attachments::ListAttachments>(),
        entry::<attachments::write_attachment::WriteAttachment>(),
        entry::<attachments::move_attachment::MoveAttachment>(),
        entry::<attachments::delete_attachment::DeleteAttachment>(),
        entry::<search::search::Search>(),
        entry::<search::search_vault::SearchVault>(),
        entry::<search::search_text::SearchText>(),
        entry::<search::search_and_read::SearchAndRead>(),
        entry::<search::search_semantic::SearchSemantic>(),
        entry::<vault::list_vaults::ListVaults>(),
        entry::<vault::get_vault::GetVault>(),
        entry::<vault::restore_vault::RestoreVault>(),
        entry::<vault::index_vault::IndexVault>(),
        entry::<admin::get_index_status::GetIndexStatus>(),
        entry::<admin::get_task_status::GetTaskStatus>(),
        entry::<admin::cancel_task::CancelTask>(),
    ]
}

#[cfg(test)]
mod tests {
    /// Each tool sits in the folder of its catalogue domain, in a file named after it
    /// (`tools/<domain>/<name>.rs`), so the folders group the tools as the catalogue does.
    #[test]
    fn every_tool_lives_in_its_domain_folder_under_its_own_name() {
        for entry in super::all() {
            let spec = &entry.declaration.spec;
            let want = format!("otc_tools::tools::{}::{}::", spec.domain.as_str(), spec.name);
            assert!(entry.type_name().starts_with(&want), "{} is {}, not under {want}", spec.name, entry.type_name());
        }
    }
}
