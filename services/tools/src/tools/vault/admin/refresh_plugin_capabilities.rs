//! refresh_plugin_capabilities: what this hosted server can do for the plugins a vault uses.
//! Nothing is probed over a network (there is no running Obsidian): the vault's own
//! `.obsidian/community-plugins.json` and `core-plugins.json` say which plugins it enables, and
//! a table here says how far the server serves each from the files alone (`headless`: `full`,
//! `partial`, or `none`: it needs the running app) and with which tools. The answer is
//! compared with the last one for the vault (kept 30 days) and the difference is its payload.

use std::collections::BTreeMap;
use std::time::Duration;

use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use otc_kernel::reading::View;
use otc_kernel::{CallContext, Tool};

pub struct RefreshPluginCapabilities;

/// How long the last answer is kept to compare the next with.
const KEPT: Duration = Duration::from_secs(30 * 24 * 3600);
/// The settings files read at most (a plugin list is a few hundred bytes).
const MAX_SETTINGS_BYTES: i64 = 256 * 1024;

/// How far the server serves a plugin's features from the vault's files.
struct Known {
    id: &'static str,
    name: &'static str,
    /// full, partial or none.
    headless: &'static str,
    tools: &'static [&'static str],
    core: bool,
}

const KNOWN: &[Known] = &[
    Known {
        id: "bases",
        name: "Bases",
        headless: "full",
        tools: &["read_base", "query_base", "create_base", "update_base"],
        core: true,
    },
    Known {
        id: "canvas",
        name: "Canvas",
        headless: "full",
        tools: &["read_canvas", "query_canvas", "create_canvas", "update_canvas"],
        core: true,
    },
    Known {
        id: "bookmarks",
        name: "Bookmarks",
        headless: "full",
        tools: &["list_bookmarks", "add_bookmark", "remove_bookmark"],
        core: true,
    },
    Known {
        id: "daily-notes",
        name: "Daily notes",
        headless: "full",
        tools: &["get_periodic_note", "resolve_daily_note", "create_periodic_note", "append_to_periodic_note"],
        core: true,
    },
    Known {
        id: "templates",
        name: "Templates",
        headless: "full",
        tools: &["list_templates", "execute_template"],
        core: true,
    },
    Known {
        id: "workspaces",
        name: "Workspaces",
        headless: "partial",
        tools: &["list_workspaces", "save_workspace", "open_workspace"],
        core: true,
    },
    Known {
        id: "dataview",
        name: "Dataview",
        headless: "full",
        tools: &["search_dql", "validate_dql", "eval_dataview_field"],
        core: false,
    },
    Known {
        id: "obsidian-tasks-plugin",
        name: "Tasks",
        headless: "full",
        tools: &["list_tasks", "tasks_filter", "update_task"],
        core: false,
    },
    Known {
        id: "templater-obsidian",
        name: "Templater",
        headless: "partial",
        tools: &["list_templates", "execute_template"],
        core: false,
    },
    Known {
        id: "periodic-notes",
        name: "Periodic Notes",
        headless: "full",
        tools: &["get_periodic_note", "create_periodic_note", "find_or_create_periodic_note", "list_periodic_notes"],
        core: false,
    },
    Known {
        id: "obsidian-kanban",
        name: "Kanban",
        headless: "full",
        tools: &["list_kanban_boards", "read_kanban_board", "add_kanban_card", "move_kanban_card"],
        core: false,
    },
    Known {
        id: "obsidian-excalidraw-plugin",
        name: "Excalidraw",
        headless: "full",
        tools: &["read_excalidraw", "create_excalidraw", "update_excalidraw"],
        core: false,
    },
    Known {
        id: "obsidian-git",
        name: "Obsidian Git",
        headless: "partial",
        tools: &["git_log", "git_diff", "git_status"],
        core: false,
    },
    Known { id: "quickadd", name: "QuickAdd", headless: "none", tools: &["list_quickadd_actions"], core: false },
    Known {
        id: "make-md",
        name: "Make.md",
        headless: "none",
        tools: &["makemd_list_spaces", "makemd_query"],
        core: false,
    },
    Known {
        id: "remotely-save",
        name: "Remotely Save",
        headless: "none",
        tools: &["remotely_save_status"],
        core: false,
    },
    Known { id: "omnisearch", name: "Omnisearch", headless: "none", tools: &["search_omnisearch"], core: false },
    Known { id: "datacore", name: "Datacore", headless: "none", tools: &["query_datacore"], core: false },
];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plugin {
    pub id: String,
    pub name: String,
    /// core or community.
    pub kind: String,
    /// full (served from the files), partial, none (needs the running app), or unknown (a
    /// plugin this server has no tools for).
    pub headless: String,
    /// The tools that serve it here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub refreshed_at: String,
    /// The plugins the vault enables, by id.
    pub plugins: Vec<Plugin>,
    /// Since the last refresh (none before: every plugin is added).
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Plugins whose headless support changed (this server's, after an upgrade).
    pub changed: Vec<String>,
    /// What could not be read (a settings file that is not JSON), each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The plugin ids a settings file enables: a list of ids (`community-plugins.json`, and
/// `core-plugins.json` before Obsidian 1.5), or a map of id to on/off (`core-plugins.json` since).
fn enabled(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Array(ids) => Some(ids.iter().filter_map(Value::as_str).map(String::from).collect()),
        Value::Object(map) => {
            Some(map.iter().filter(|(_, on)| on.as_bool() == Some(true)).map(|(id, _)| id.clone()).collect())
        }
        _ => None,
    }
}

async fn settings(
    ctx: &CallContext<'_>,
    view: &View,
    file: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<String>, ToolError> {
    let path = format!(".obsidian/{file}");
    let Some(entry) = otc_kernel::reading::file_entry(ctx, view.vault.id, &path).await? else { return Ok(Vec::new()) };
    if entry.size > MAX_SETTINGS_BYTES {
        warnings.push(format!("{path} is larger than {MAX_SETTINGS_BYTES} bytes; not read"));
        return Ok(Vec::new());
    }
    let bytes = otc_kernel::writing::blob(ctx, &entry.hash).await?;
    match serde_json::from_slice::<Value>(&bytes).ok().as_ref().and_then(enabled) {
        Some(ids) => Ok(ids.into_iter().take(500).collect()),
        None => {
            warnings.push(format!("{path} is not a list or map of plugin ids; its plugins are left out"));
            Ok(Vec::new())
        }
    }
}

fn describe(id: &str, core: bool) -> Plugin {
    match KNOWN.iter().find(|k| k.id == id && k.core == core) {
        Some(k) => Plugin {
            id: id.to_string(),
            name: k.name.to_string(),
            kind: if core { "core" } else { "community" }.into(),
            headless: k.headless.into(),
            tools: k.tools.iter().map(|t| t.to_string()).collect(),
        },
        None => Plugin {
            id: id.to_string(),
            name: id.to_string(),
            kind: if core { "core" } else { "community" }.into(),
            headless: "unknown".into(),
            tools: Vec::new(),
        },
    }
}

impl Tool for RefreshPluginCapabilities {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["admin:vault"],
        scope_class: ScopeClass::Admin,
        core: false,
        response_format: Format::Fixed {
            why: "the capability list and its difference from the last, which is the payload",
        },
        ..ToolSpec::base(
            "refresh_plugin_capabilities",
            "Refresh plugin capabilities",
            "Lists the vault's enabled plugins, how far this server serves each without a running Obsidian (full, \
             partial, none) and by which tools, and changes since the last refresh.",
            Domain::Vault,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let mut warnings = Vec::new();
        let mut plugins: Vec<Plugin> = Vec::new();
        for id in settings(ctx, &view, "core-plugins.json", &mut warnings).await? {
            plugins.push(describe(&id, true));
        }
        for id in settings(ctx, &view, "community-plugins.json", &mut warnings).await? {
            plugins.push(describe(&id, false));
        }
        plugins.sort_by(|a, b| (&a.id, &a.kind).cmp(&(&b.id, &b.kind)));
        plugins.dedup_by(|a, b| a.kind == b.kind && a.id == b.id);
        let kv = &ctx.services().kv;
        let record = format!("plugin_caps:{}:{}", ctx.caller.tenant_id, view.vault.id);
        let unreachable =
            |e: otc_kv::KvError| otc_kernel::redis_unavailable("keeping the last plugin capabilities", &e);
        let last: Vec<Plugin> = kv
            .get_record(&record)
            .await
            .map_err(unreachable)?
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let key = |p: &Plugin| format!("{}:{}", p.kind, p.id);
        let before: BTreeMap<String, &Plugin> = last.iter().map(|p| (key(p), p)).collect();
        let now: BTreeMap<String, &Plugin> = plugins.iter().map(|p| (key(p), p)).collect();
        let added = now.keys().filter(|k| !before.contains_key(*k)).cloned().collect();
        let removed = before.keys().filter(|k| !now.contains_key(*k)).cloned().collect();
        let changed =
            now.iter().filter(|(k, p)| before.get(*k).is_some_and(|b| b != *p)).map(|(k, _)| k.clone()).collect();
        let stored = serde_json::to_string(&plugins).map_err(|e| otc_kernel::internal(ctx.tool, &e))?;
        kv.put_record(&record, &stored, KEPT).await.map_err(unreachable)?;
        Ok(Output {
            vault: view.vault.name.clone(),
            refreshed_at: chrono::Utc::now().to_rfc3339(),
            plugins,
            added,
            removed,
            changed,
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_settings_shapes_are_read() {
        assert_eq!(enabled(&serde_json::json!(["dataview", "quickadd"])).unwrap(), ["dataview", "quickadd"]);
        let map = serde_json::json!({"canvas": true, "graph": false, "bases": true});
        assert_eq!(enabled(&map).unwrap(), ["bases", "canvas"]);
        assert!(enabled(&serde_json::json!("x")).is_none());
        assert_eq!(describe("quickadd", false).headless, "none");
        assert_eq!(describe("no-such-plugin", false).headless, "unknown");
    }

    #[test]
    fn every_tool_the_table_names_is_registered() {
        let names: Vec<&str> = crate::toolset::all().iter().map(|e| e.declaration.spec.name).collect();
        for known in KNOWN {
            for tool in known.tools {
                assert!(names.contains(tool), "{} names {tool}", known.id);
            }
        }
    }
}
