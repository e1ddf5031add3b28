//! The architecture invariants that a scan of the source can check (ARCHITECTURE.md): SQL only in
//! the store, rmcp only at the edge, one commit path, models and embedding providers only in the
//! embed crate.

use std::path::{Path, PathBuf};

/// The repository root (sources are read from it, as the tidy tests do).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Every Rust source file under services/ and shared/, with its path relative to the root.
fn sources() -> Vec<(String, String)> {
    let root = root();
    let mut out = Vec::new();
    let mut stack = vec![root.join("services"), root.join("shared")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                // A build's output (shared/fuzz/target when the fuzzers were built) is not source.
                if !path.ends_with("target") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    assert!(out.len() > 100, "found the sources");
    out
}

fn offenders(allowed: &[&str], needle: &str) -> Vec<String> {
    sources()
        .into_iter()
        .filter(|(path, _)| !allowed.iter().any(|a| path.starts_with(a)))
        .filter(|(path, _)| !path.contains("/tests/"))
        .filter(|(_, text)| text.contains(needle))
        .map(|(path, _)| path)
        .collect()
}

#[test]
fn only_the_store_has_sql() {
    for needle in ["sqlx::", "SELECT ", "INSERT INTO", "DELETE FROM"] {
        let found = offenders(&["shared/store/"], needle);
        assert!(found.is_empty(), "{needle:?} outside shared/store: {found:?}");
    }
}

/// Every in-process cache is an `otc_cache::Bounded` (a configured bound, eviction, figures on
/// `/metrics`): a map behind a lock anywhere else must be one that gives its entries back by
/// itself, listed here with how.
#[test]
fn every_cache_is_bounded_and_evicts() {
    let keeps_itself_small = [
        // A principal's open listen streams: removed when the count falls to zero.
        "services/gateway/src/mcp.rs",
        // Rate-limit budgets: forgotten once unused for a while.
        "services/kernel/src/rate_limits.rs",
        // Vaults indexed inline now: the last holder removes its slot.
        "services/indexer/src/lib.rs",
        // Tenants' and principals' places for heavy work: pruned to those held.
        "services/kernel/src/fair_share.rs",
        // One embedder per configured model; tenants' permits pruned to those in use.
        "shared/embed/src/lib.rs",
        "shared/embed/src/http.rs",
        // The building block itself.
        "shared/cache/",
    ];
    let mut found = Vec::new();
    for needle in ["Mutex<HashMap", "Mutex<std::collections::HashMap", "RwLock<HashMap", "Mutex<BTreeMap"] {
        found.extend(offenders(&keeps_itself_small, needle).into_iter().map(|path| format!("{path}: {needle}")));
    }
    assert!(found.is_empty(), "a map behind a lock outside otc_cache: {found:?}");
}

#[test]
fn the_tools_crate_root_holds_only_the_registration() {
    let lib = std::fs::read_to_string(root().join("services/tools/src/lib.rs")).unwrap();
    let modules: Vec<&str> =
        lib.lines().filter_map(|l| l.strip_prefix("pub mod ").or(l.strip_prefix("mod "))).collect();
    assert_eq!(modules, ["compat;", "tools;", "toolset;"], "the tools crate's root modules");
    let flat: Vec<String> = std::fs::read_dir(root().join("services/tools/src"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs") && !["lib.rs", "toolset.rs"].contains(&name.as_str()))
        .collect();
    assert!(flat.is_empty(), "helpers beside the root instead of in their feature's folder: {flat:?}");
}

#[test]
fn only_the_gateway_knows_rmcp() {
    let found = offenders(&["services/gateway/", "services/obsidian-tc/src/bin/otc-conformance-server.rs"], "rmcp::");
    assert!(found.is_empty(), "rmcp outside the gateway: {found:?}");
}

#[test]
fn every_commit_goes_through_the_one_commit_path() {
    let found = offenders(
        &["shared/store/", "services/indexer/src/commit.rs", "services/worker/src/lib.rs"],
        ".commit_changes",
    );
    assert!(found.is_empty(), "commits outside otc_indexer::commit: {found:?}");
}

#[test]
fn only_the_identity_crate_talks_to_identity_providers_and_picks_outbound_addresses() {
    let found = offenders(&["services/identity/"], "openidconnect::");
    assert!(found.is_empty(), "openidconnect outside services/identity: {found:?}");
    // The guarded resolver (otc-egress) is the one way to reach an address someone else chose.
    let found = offenders(&["shared/egress/"], ".dns_resolver(");
    assert!(found.is_empty(), "another resolver: {found:?}");
}

#[test]
fn the_codes_said_never_to_be_raised_are_not_and_every_other_code_is() {
    let text: String = sources()
        .into_iter()
        .filter(|(path, _)| !path.starts_with("shared/errors/") && !path.contains("/tests/"))
        .map(|(_, text)| text)
        .collect();
    let constructed = |code: otc_errors::ErrorCode| {
        let variant = format!("{code:?}");
        text.match_indices(&format!("ErrorCode::{variant}"))
            .any(|(i, m)| !text[i + m.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    for (code, _) in otc_errors::NOT_RAISED {
        assert!(!constructed(*code), "{code} is listed as never raised, but the code constructs it");
    }
    for row in otc_errors::TABLE {
        let listed = otc_errors::NOT_RAISED.iter().any(|(c, _)| *c == row.code);
        assert!(listed || constructed(row.code), "{} is never raised: raise it or list it in NOT_RAISED", row.code);
    }
}

#[test]
fn only_the_embed_crate_runs_models_and_calls_embedding_providers() {
    for needle in [" ort::", "(ort::", "/embeddings\""] {
        let found = offenders(&["shared/embed/"], needle);
        assert!(found.is_empty(), "{needle:?} outside shared/embed: {found:?}");
    }
}

#[test]
fn only_the_telemetry_crate_knows_opentelemetry() {
    for needle in ["opentelemetry::", "opentelemetry_sdk::", "opentelemetry_otlp::", "tracing_opentelemetry::"] {
        let found = offenders(&["shared/telemetry/"], needle);
        assert!(found.is_empty(), "{needle:?} outside shared/telemetry: {found:?}");
    }
}

/// The modules of the crate under `src` (its files: `a/b.rs` and `a/b/mod.rs` are `a::b`) and,
/// for each, the modules it names through `crate::` paths (`use crate::{a, b::c}` included).
/// A test module (`#[cfg(test)] mod tests { … }` at a file's end) is not counted.
fn module_graph(src: &Path) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut files = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let module_of = |path: &Path| {
        let rel = path.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
            parts.pop();
        }
        parts.join("::")
    };
    let modules: BTreeMap<String, &PathBuf> = files.iter().map(|f| (module_of(f), f)).collect();
    let longest_module = |path: &str| {
        let parts: Vec<&str> = path.split("::").collect();
        (1..=parts.len()).rev().map(|k| parts[..k].join("::")).find(|m| modules.contains_key(m))
    };
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(i) => &text[..i],
            None => &text[..],
        };
        let mut named = Vec::new();
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                named.extend(inner.split(',').map(|item| item.trim().split(' ').next().unwrap_or("").to_string()));
            } else {
                named.push(rest[..rest.find(|c: char| !word(c)).unwrap_or(rest.len())].to_string());
            }
        }
        let edges = graph.entry(module.clone()).or_default();
        for path in named {
            if let Some(target) = longest_module(path.trim_end_matches(':'))
                && target != *module
                && !module.starts_with(&format!("{target}::"))
                && !target.starts_with(&format!("{module}::"))
            {
                edges.insert(target);
            }
        }
    }
    graph
}

/// The strongly connected groups of more than one module (Tarjan's algorithm).
fn cycles(graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>) -> Vec<Vec<String>> {
    use std::collections::HashMap;
    struct State<'a> {
        graph: &'a std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        index: HashMap<&'a str, usize>,
        low: HashMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: std::collections::HashSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                group.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.out.push(group);
            }
        }
    }
    let mut state = State {
        graph,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: Default::default(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.out
}

#[test]
fn no_crate_has_an_import_cycle_between_its_files() {
    let root = root();
    let mut found = Vec::new();
    for group in ["services", "shared"] {
        for entry in std::fs::read_dir(root.join(group)).unwrap() {
            let src = entry.unwrap().path().join("src");
            if !src.is_dir() {
                continue;
            }
            let krate = format!("{group}/{}", src.parent().unwrap().file_name().unwrap().to_string_lossy());
            for cycle in cycles(&module_graph(&src)) {
                found.push(format!("{krate}: {}", cycle.join(" ↔ ")));
            }
        }
    }
    assert!(found.is_empty(), "import cycles between files: {found:#?}");
    // The detector sees one: a cycle made on purpose is reported.
    let mut graph = std::collections::BTreeMap::new();
    graph.insert("a".to_string(), ["b".to_string()].into());
    graph.insert("b".to_string(), ["a".to_string()].into());
    assert_eq!(cycles(&graph), [vec!["a".to_string(), "b".to_string()]]);
}

#[test]
fn the_gateway_and_the_workers_reach_the_tools_crate_only_for_its_public_api() {
    // What the hosts may name of `otc_tools`: the toolset, what the features hand the kernel,
    // the background passes, and the ACL and restore verbs the CLI and the admin API share.
    // Everything else every call shares is the kernel's.
    let allowed = [
        "toolset::all",
        "toolset::with_catalogue",
        "features",
        "tools::knowledge::wiki::pages::run_jobs",
        "tools::knowledge::wiki::pages::queue_tenant",
        "tools::knowledge::maintenance::lint_tenant",
        "tools::knowledge::maintenance::detect_contradictions",
        "tools::admin::acl_rules",
        "tools::vault::restore",
    ];
    let hosts = ["services/gateway/src/", "services/worker/src/", "services/obsidian-tc/src/"];
    let mut found = Vec::new();
    for (path, text) in sources().into_iter().filter(|(p, _)| hosts.iter().any(|h| p.starts_with(h))) {
        for (i, _) in text.match_indices("otc_tools::") {
            let rest = &text[i + "otc_tools::".len()..];
            let named = rest
                [..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len())]
                .trim_end_matches(':');
            if !allowed.iter().any(|a| named == *a || named.starts_with(&format!("{a}::"))) {
                found.push(format!("{path}: otc_tools::{named}"));
            }
        }
    }
    assert!(found.is_empty(), "the hosts reach into the tools crate: {found:#?}");
}

/// The workers visit a tenant only as one of its upkeep items comes due, or its outbox holds due
/// jobs: the only passes over every tenant in the services are `sweep_once` and
/// `Embedding::maintain` (for tests and operators), which nothing in the services calls.
#[test]
fn the_worker_visits_every_tenant_only_in_the_operators_passes() {
    let services: Vec<(String, String)> =
        sources().into_iter().filter(|(path, _)| path.starts_with("services/") && path.contains("/src/")).collect();
    let passes = [
        ("services/worker/src/lib.rs", "pub async fn sweep_once("),
        ("services/indexer/src/embedding.rs", "pub async fn maintain("),
    ];
    let mut listing: Vec<&str> =
        services.iter().filter(|(_, text)| text.contains("tenant_ids()")).map(|(path, _)| path.as_str()).collect();
    listing.sort();
    assert_eq!(listing, ["services/indexer/src/embedding.rs", "services/worker/src/lib.rs"], "who lists every tenant");
    for (path, start) in passes {
        let text = &services.iter().find(|(p, _)| p == path).unwrap().1;
        let pass = &text[text.find(start).unwrap_or_else(|| panic!("{start} in {path}"))..];
        let body = &pass[..pass.find("\n    }\n").or_else(|| pass.find("\n}\n")).unwrap()];
        assert_eq!(text.matches("tenant_ids()").count(), 1, "{path}");
        assert!(body.contains("tenant_ids()"), "the listing in {path} is {start}'s");
    }
    let calls: usize = services.iter().map(|(_, text)| text.matches("sweep_once(").count()).sum();
    assert_eq!(calls, 1, "sweep_once is defined in the worker and called by nothing there");
    let calls: usize = services.iter().map(|(_, text)| text.matches(".maintain()").count()).sum();
    assert_eq!(calls, 0, "Embedding::maintain is called by nothing in the services");
}

/// The console reaches a tenant's data only through the HTTP API (in process, with the person's
/// session token): no page opens a transaction or calls the kernel. Only `session.rs` touches the
/// store, to start and end sessions.
#[test]
fn the_console_reaches_data_only_through_the_api() {
    let console: Vec<(String, String)> =
        sources().into_iter().filter(|(path, _)| path.starts_with("services/gateway/src/console/")).collect();
    assert!(console.len() >= 10, "found the console's files");
    for (path, text) in &console {
        for needle in [".store", "dispatcher", "otc_kernel", "otc_tools", ".begin("] {
            if path.ends_with("/session.rs") && [".store", ".begin("].contains(&needle) {
                continue;
            }
            assert!(!text.contains(needle), "{path} reaches {needle:?} beside the API");
        }
    }
}
