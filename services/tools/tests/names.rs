//! Every tool a text names exists: the error hints (the catalogue's and the dispatcher's own),
//! every tool description (schemas' descriptions included), the domain meta-tools and the
//! server instructions. A hint may name a tool this build does not register only as an
//! alternative the dispatcher skips; these tests print which ones it skips.

use std::collections::BTreeSet;

use otc_catalog::facade::{self, FacadeSettings, Listing, Subset};
use otc_catalog::{Declaration, Registry};
use otc_errors::{Hint, TABLE, choose_hint};
use serde_json::Value;

fn registry() -> Registry {
    Registry::new(otc_tools::toolset::all().into_iter().map(|e| e.declaration)).expect("the catalogue registers")
}

/// Every tool name of the public implementation's catalogue (shared/spec/tool-catalog.tsv):
/// what a snake_case word in a text must be checked against.
const SPEC_TOOLS: &str = "add_bookmark add_kanban_card add_observation add_tag add_vault append_active_file append_note \
append_to_periodic_note audit_provenance bulk_create_notes bulk_move_notes bulk_set_property bundle_files bundle_folder \
close_goal commit_capture commit_wiki_page copy_note create_base create_canvas create_entity create_excalidraw \
create_periodic_note delete_active_file delete_attachment delete_entity delete_note diagnose_retrieval draft_wiki_page \
end_session enqueue_capture episode_stats eval_dataview_field execute_command execute_template explain_answer fetch \
find_existing_page find_link_cycles find_notes_by_property find_notes_by_tag find_or_create_periodic_note find_orphans \
find_unresolved_links format_table gap_report generate_uri get_active_file get_attachment get_backlinks get_entity \
get_index_status get_link_strength get_metrics get_note_tags get_outgoing_links get_periodic_note get_provenance \
get_server_config get_session_traces get_task_status get_vault git_commit git_diff git_log git_stage git_status \
graph_centrality graph_communities graph_path_between index_vault insert_table_column insert_table_row inspect_acl \
inspect_visibility knowledge_challenge knowledge_get_critical knowledge_search link_entities lint_wiki list_attachments \
list_bookmarks list_capture_queue list_commands list_contradictions list_goals list_kanban_boards list_notes \
list_periodic_notes list_properties list_quickadd_actions list_snapshots list_tags list_tasks list_templates list_vaults \
list_workspaces makemd_list_spaces makemd_query move_attachment move_kanban_card move_note note_exists \
note_quality_report ocr_attachment ocr_bulk open_workspace patch_active_file patch_note plur_get plur_recall \
plur_recall_hybrid plur_similarity_search prune_hub_links query_base query_canvas query_datacore query_entity_graph \
read_base read_canvas read_excalidraw read_frontmatter read_kanban_board read_metadata_fields read_note read_notes \
read_property read_resources read_snapshot record_retrieval_feedback reflect refresh_plugin_capabilities reload_vault \
remotely_save_status remotely_save_trigger remove_bookmark remove_tag rename_entity reset_vault_cache resolve_daily_note \
restore_note rewrite_link save_workspace search search_and_read search_dql search_jsonlogic search_omnisearch \
search_regex search_semantic search_text search_vault server_health session_bootstrap session_rerun set_goal \
show_file_in_obsidian snapshot_note sort_table_by_column start_session suggest_links suggest_tags tasks_filter \
trigger_quickadd unlink_entities update_active_file update_base update_canvas update_excalidraw update_frontmatter \
update_observation update_task validate_dql vault_context vault_graph_search vault_health_score work_episode_chain \
work_episodes work_forget work_result work_search write_attachment write_note";

/// Every name a text could mean as a tool: the spec's, ours and the hints' declared ones.
fn tool_names(registry: &Registry) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = SPEC_TOOLS.split_whitespace().map(String::from).collect();
    names.extend(registry.iter().map(|t| t.name().to_string()));
    names.extend(facade::TRIAD_TOOLS.iter().map(|t| t.to_string()));
    for (_, hints) in all_hint_sets() {
        names.extend(hints.iter().flat_map(|h| h.tools.iter().map(|t| t.to_string())));
    }
    names
}

/// The snake_case words of `text` (with at least one underscore) that name a tool.
fn named_tools(text: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.contains('_') && names.contains(*w))
        .map(String::from)
        .collect()
}

fn all_hint_sets() -> Vec<(String, &'static [Hint])> {
    let mut sets: Vec<(String, &'static [Hint])> = TABLE.iter().map(|r| (r.code.to_string(), r.hints)).collect();
    sets.extend(otc_kernel::OWN_HINTS.iter().enumerate().map(|(i, h)| (format!("own hint set {i}"), *h)));
    sets
}

#[test]
fn every_hint_names_exactly_its_tools_and_callers_get_only_registered_ones() {
    let registry = registry();
    let names = tool_names(&registry);
    let registered = |t: &str| registry.get(t).is_some();
    for (what, hints) in all_hint_sets() {
        assert!(hints.last().is_some_and(|h| h.tools.is_empty()), "{what}: the last hint names no tool");
        for hint in hints {
            let declared: BTreeSet<String> = hint.tools.iter().map(|t| t.to_string()).collect();
            assert_eq!(
                named_tools(hint.text, &names),
                declared,
                "{what}: {:?} names other tools than it declares",
                hint.text
            );
            let missing: Vec<&str> = hint.tools.iter().copied().filter(|t| !registered(t)).collect();
            if !missing.is_empty() {
                println!("{what}: skipped here (names {missing:?}, not registered): {:?}", hint.text);
            }
        }
        // What a caller who may call every registered tool is told.
        let chosen = choose_hint(hints, registered);
        for tool in named_tools(chosen, &names) {
            assert!(registered(&tool), "{what}: the hint a caller gets names {tool}, which is not registered");
        }
    }
}

#[test]
fn an_unknown_tool_is_pointed_at_find_capability() {
    let registry = registry();
    let hint = choose_hint(otc_kernel::UNKNOWN_TOOL_HINTS, |t| registry.get(t).is_some());
    assert!(hint.contains("find_capability"), "{hint}");
    let err = otc_kernel::unknown_tool("no_such_tool");
    assert_eq!(err.code, otc_errors::ErrorCode::NotFound);
    assert!(!err.hint().contains("note_exists"), "not the missing-note hint: {}", err.hint());
}

/// Every `description` string in a schema.
fn descriptions(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            if let Some(Value::String(d)) = map.get("description") {
                out.push(d.clone());
            }
            map.values().for_each(|v| descriptions(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| descriptions(v, out)),
        _ => {}
    }
}

#[test]
fn tool_descriptions_and_instructions_name_only_registered_tools() {
    let registry = registry();
    let names = tool_names(&registry);
    let settings = FacadeSettings::default();
    let mut texts: Vec<(String, String)> = Vec::new();
    for declaration in otc_tools::toolset::all().into_iter().map(|e| e.declaration) {
        let Declaration { spec, input_schema, output_schema } = declaration;
        texts.push((spec.name.to_string(), spec.description.to_string()));
        let mut found = Vec::new();
        descriptions(&input_schema, &mut found);
        if let Some(output) = &output_schema {
            descriptions(output, &mut found);
        }
        texts.extend(found.into_iter().map(|d| (format!("{} schema", spec.name), d)));
    }
    let visible = facade::listed(&registry, &settings, None);
    for tool in facade::domain_tools(&visible) {
        texts.push((format!("domain tool {}", tool.name), tool.description));
    }
    for listing in [Listing::Triad, Listing::Domain, Listing::Flat(Subset::Full), Listing::Flat(Subset::Essentials)] {
        for hidden in [0, 3] {
            texts.push((format!("instructions {listing:?}"), facade::instructions(listing, &visible, hidden)));
        }
    }
    for (what, text) in texts {
        for tool in named_tools(&text, &names) {
            assert!(registry.get(&tool).is_some(), "{what} names {tool}, which is not registered: {text:?}");
        }
    }
}

/// What each domain's purpose promises, and a registered tool that keeps each promise.
const PROMISES: &[(&str, &[(&str, &str)])] = &[
    (
        "Notes",
        &[
            ("Read", "read_note"),
            ("write", "write_note"),
            ("move", "move_note"),
            ("copy", "copy_note"),
            ("delete", "delete_note"),
            ("restore", "restore_note"),
        ],
    ),
    ("Metadata", &[("Frontmatter", "read_frontmatter"), ("properties", "list_properties"), ("tags", "list_tags")]),
    (
        "Links",
        &[
            ("Backlinks", "get_backlinks"),
            ("outgoing", "get_outgoing_links"),
            ("orphans", "find_orphans"),
            ("upkeep", "rewrite_link"),
            ("unresolved", "find_unresolved_links"),
        ],
    ),
    ("Vault", &[("vaults", "list_vaults"), ("index", "index_vault")]),
    ("Attachments", &[("files", "list_attachments")]),
    (
        "Search",
        &[
            ("Ranked", "search_vault"),
            ("text", "search_text"),
            ("regex", "search_regex"),
            ("JSONLogic", "search_jsonlogic"),
            ("Dataview", "search_dql"),
        ],
    ),
    (
        "Structured documents",
        &[
            ("Bases", "query_base"),
            ("canvases", "read_canvas"),
            ("drawings", "read_excalidraw"),
            ("Kanban", "read_kanban_board"),
            ("tables", "format_table"),
        ],
    ),
    (
        "Workspace",
        &[("Bookmarks", "list_bookmarks"), ("workspaces", "list_workspaces"), ("periodic", "list_periodic_notes")],
    ),
    (
        "Automation",
        &[
            ("Templates", "list_templates"),
            ("Dataview", "search_dql"),
            ("tasks", "list_tasks"),
            ("bundles", "bundle_folder"),
            ("links", "generate_uri"),
        ],
    ),
    ("Git", &[("history", "git_log")]),
    (
        "Knowledge",
        &[
            ("Provenance", "get_provenance"),
            ("wiki", "lint_wiki"),
            ("memory", "get_entity"),
            ("entities", "create_entity"),
            ("episodes", "work_episodes"),
        ],
    ),
    ("External docs", &[("documentation corpus", "knowledge_search")]),
    (
        "Admin",
        &[
            ("health", "server_health"),
            ("configuration", "get_server_config"),
            ("visibility", "inspect_visibility"),
            ("tasks", "get_task_status"),
        ],
    ),
];

#[test]
fn the_instructions_promise_only_what_the_callers_tools_do() {
    let registry = registry();
    let settings = FacadeSettings::default();
    // Every domain the instructions can show, its purpose checked against the tools.
    let visible = facade::listed(&registry, &settings, None);
    let shown: BTreeSet<otc_catalog::Domain> = visible.iter().map(|t| t.spec.domain).collect();
    for domain in shown {
        let (title, blurb) = domain.blurb();
        let promises = PROMISES
            .iter()
            .find(|(t, _)| *t == title)
            .unwrap_or_else(|| panic!("{title} is shown: list what its purpose {blurb:?} promises in PROMISES"))
            .1;
        for text in [blurb, domain.read_blurb()] {
            for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                if let Some((_, tool)) = promises.iter().find(|(w, _)| *w == word) {
                    assert!(registry.get(tool).is_some(), "{title} promises {word:?} but {tool} is not registered");
                }
            }
        }
    }
    // A caller who may only read is not promised writing, moving or deleting.
    let reader = otc_auth::parse_scopes("read:notes").unwrap();
    let visible = facade::listed(&registry, &settings, Some(&reader));
    let text = facade::instructions(Listing::Triad, &visible, 0).to_lowercase();
    for verb in ["write", "move", "copy", "delete", "upkeep"] {
        assert!(!text.contains(verb), "a read-only caller is promised {verb:?}: {text}");
    }
}
