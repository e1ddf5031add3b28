//! Guards over the whole catalogue, and the committed snapshot of every advertised definition.
//! No services needed: these read the declarations and the registry alone.

use std::collections::BTreeSet;
use std::path::PathBuf;

use otc_catalog::facade::{self, FacadeSettings, Listing, Subset};
use otc_catalog::{Declaration, Domain, Registry, ResponseFormat, ScopeClass, Sometimes, ToolSpec, schema, tags};
use serde_json::{Value, json};

fn declarations() -> Vec<Declaration> {
    otc_tools::toolset::all().into_iter().map(|e| e.declaration).collect()
}

/// The `/mcp/compat/obsidian` surface's own tools.
fn compat_declarations() -> Vec<Declaration> {
    otc_tools::compat::obsidian::entries().into_iter().map(|e| e.declaration).collect()
}

fn registry() -> Registry {
    Registry::new(declarations()).expect("the catalogue registers")
}

/// The catalogue and each compat surface's registry: the guards hold for every advertised tool.
fn registries() -> Vec<Registry> {
    vec![registry(), Registry::new(compat_declarations()).expect("the compat tools register")]
}

#[test]
fn names_are_unique_snake_case() {
    let names: Vec<&str> = declarations().iter().chain(&compat_declarations()).map(|d| d.spec.name).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "duplicate names in {names:?}");
    for name in names {
        assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{name}");
        assert!(!name.starts_with('_') && !name.ends_with('_') && !name.contains("__"), "{name}");
        // The connector `search` shares its name with the search domain's meta-tool: the
        // dispatcher calls the meta-tool on the domain surface and the tool everywhere else.
        assert!(name == "search" || Domain::parse(name).is_none(), "{name} collides with a domain meta-tool");
    }
}

#[test]
fn every_tool_has_a_domain_scopes_and_a_matching_scope_class() {
    for tool in registries().iter().flat_map(Registry::iter) {
        let spec = &tool.spec;
        assert!(Domain::ALL.contains(&spec.domain), "{}", spec.name);
        for scope in spec.scopes {
            let action = scope.split(':').next().unwrap();
            assert!(ScopeClass::of_action(action).is_some(), "{}: {scope}", spec.name);
        }
        let highest = spec.scopes.iter().filter_map(|s| ScopeClass::of_action(s.split(':').next().unwrap())).max();
        assert_eq!(spec.scope_class, highest.unwrap_or(ScopeClass::Read), "{}", spec.name);
        assert!(tool.tags.contains(&format!("domain:{}", spec.domain)), "{}", spec.name);
    }
}

#[test]
fn read_only_truth_is_explicit_and_agrees_everywhere() {
    for tool in registries().iter().flat_map(Registry::iter) {
        let mutating = tool.spec.scopes.iter().any(|s| tags::is_mutating_scope(s));
        let read_only = !mutating && tool.spec.destructive == Sometimes::Never;
        assert_eq!(tool.annotations.read_only, read_only, "{}", tool.name());
        assert_eq!(tool.tags.contains("read-only"), read_only, "{}", tool.name());
        assert_eq!(tool.tags.contains("writes"), !read_only, "{}", tool.name());
        assert_eq!(tool.annotations.destructive, tool.spec.destructive != Sometimes::Never, "{}", tool.name());
        assert_eq!(tool.annotations.open_world, tool.tags.contains("external-network"), "{}", tool.name());
        for tag in &tool.tags {
            assert!(tags::is_known(tag), "{}: {tag}", tool.name());
        }
    }
}

#[test]
fn advertised_schemas_are_portable() {
    for tool in registries().iter().flat_map(Registry::iter) {
        let problems = schema::portability_problems(&tool.advertised_input);
        assert!(problems.is_empty(), "{} input: {problems:?}", tool.name());
        if let Some(output) = &tool.advertised_output {
            let problems = schema::portability_problems(output);
            assert!(problems.is_empty(), "{} output: {problems:?}", tool.name());
        }
        // No bare `true`/`false` where a schema belongs, and every property says what it is.
        assert_no_untyped(&Value::Object(tool.advertised_input.clone()), tool.name());
    }
}

fn assert_no_untyped(node: &Value, tool: &str) {
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (name, schema) in props {
            assert!(schema.is_object(), "{tool}.{name}: bare boolean schema");
            let typed = ["type", "enum", "anyOf", "properties", "items"].iter().any(|k| schema.get(k).is_some());
            assert!(typed, "{tool}.{name}: untyped schema {schema}");
            assert_no_untyped(schema, tool);
        }
    }
}

#[test]
fn every_tool_is_in_exactly_one_response_format_group() {
    for declaration in declarations().into_iter().chain(compat_declarations()) {
        let takes = declaration.input_schema.pointer("/properties/response_format").is_some();
        match declaration.spec.response_format {
            ResponseFormat::Takes => assert!(takes, "{} says it takes response_format", declaration.spec.name),
            ResponseFormat::Fixed { why } => {
                assert!(!takes, "{} has response_format but says it does not", declaration.spec.name);
                assert!(!why.trim().is_empty(), "{} must say why it takes no response_format", declaration.spec.name);
            }
        }
        if takes {
            assert!(
                declaration.input_schema.pointer("/properties/verbosity").is_some(),
                "{}: verbosity alias",
                declaration.spec.name
            );
        }
    }
}

#[test]
fn essentials_are_few_core_and_need_no_plugin() {
    let registry = registry();
    let essentials: Vec<_> = registry.iter().filter(|t| t.spec.essentials).collect();
    assert!(essentials.len() <= facade::ESSENTIALS_MAX);
    for tool in essentials {
        assert!(tool.spec.core && !tool.is_plugin_bridge(), "{}", tool.name());
    }
}

/// A spec for the refusal tests.
fn probe(spec: ToolSpec) -> Result<Registry, otc_catalog::RegistrationError> {
    let input = json!({"type": "object", "properties": {}, "additionalProperties": false});
    Registry::new([Declaration { spec, input_schema: input, output_schema: None }])
}

const BASE: ToolSpec = ToolSpec {
    response_format: ResponseFormat::Fixed { why: "test" },
    ..ToolSpec::base("probe_tool", "Probe", "A probe.", Domain::Notes)
};

#[test]
fn registration_refuses_bad_declarations() {
    assert!(probe(BASE).is_ok());
    let refused = |spec: ToolSpec, expect: &str| {
        let err = probe(spec).expect_err(expect).to_string();
        assert!(err.contains(expect), "{err} should mention {expect}");
    };
    refused(ToolSpec { declared_tags: &["shiny"], ..BASE }, "not in the vocabulary");
    refused(ToolSpec { declared_tags: &["read-only"], ..BASE }, "derived");
    refused(ToolSpec { declared_tags: &["domain:notes"], ..BASE }, "derived");
    refused(ToolSpec { declared_tags: &["search", "search"], ..BASE }, "twice");
    refused(ToolSpec { scopes: &["write:notes"], ..BASE }, "scope class");
    refused(ToolSpec { scopes: &["read:*"], ..BASE }, "wildcard");
    refused(ToolSpec { scopes: &["fly:notes"], ..BASE }, "invalid scope");
    refused(ToolSpec { name: "ProbeTool", ..BASE }, "snake_case");
    refused(ToolSpec { response_format: ResponseFormat::Takes, ..BASE }, "response_format");
    refused(ToolSpec { response_format: ResponseFormat::Fixed { why: " " }, ..BASE }, "say why");
    refused(ToolSpec { essentials: true, declared_tags: &["plugin-bridge"], ..BASE }, "companion plugin");
    // A declared tag that is not derivable is fine.
    let ok = probe(ToolSpec { declared_tags: &["external-network"], ..BASE }).unwrap();
    assert!(ok.get("probe_tool").unwrap().annotations.open_world);
    let err = Registry::new([
        Declaration { spec: BASE, input_schema: json!({"type": "object"}), output_schema: None },
        Declaration { spec: BASE, input_schema: json!({"type": "object"}), output_schema: None },
    ])
    .unwrap_err();
    assert!(err.to_string().contains("twice"));
    let err = Registry::new([Declaration { spec: BASE, input_schema: json!({"type": "string"}), output_schema: None }])
        .unwrap_err();
    assert!(err.to_string().contains("plain object"), "{err}");
}

/// Sorted keys, two-space indent, trailing newline.
fn canonical(value: &Value) -> String {
    fn sort(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sort(&map[k]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    format!("{}\n", serde_json::to_string_pretty(&sort(value)).unwrap())
}

/// Every advertised definition (each tool flat, and the domain meta-tools for a caller who sees
/// everything) against `snapshots/`. `UPDATE_SNAPSHOTS=1` rewrites them.
#[test]
fn advertised_definitions_match_the_committed_snapshots() {
    let registry = registry();
    // With the output schemas, which describe_capability answers (and tools/list where asked).
    let settings = FacadeSettings { list_output_schemas: true, ..FacadeSettings::default() };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots");
    let mut expected = Vec::new();
    for tool in registry.iter() {
        let advertised = facade::advertise_tool(tool, &settings, facade::is_facade_tool(tool.name()));
        expected.push((
            root.join("tools").join(format!("{}.json", tool.name())),
            serde_json::to_value(&advertised).unwrap(),
        ));
    }
    let visible = facade::listed(&registry, &settings, None);
    for tool in facade::domain_tools(&visible) {
        expected.push((root.join("domain").join(format!("{}.json", tool.name)), serde_json::to_value(&tool).unwrap()));
    }
    let compat = Registry::new(compat_declarations()).unwrap();
    for tool in compat.iter() {
        let advertised = facade::advertise_tool(tool, &settings, false);
        expected.push((
            root.join("compat_obsidian").join(format!("{}.json", tool.name())),
            serde_json::to_value(&advertised).unwrap(),
        ));
    }
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some();
    let mut stale = Vec::new();
    for (path, value) in &expected {
        let text = canonical(value);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, &text).unwrap();
        } else if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    // No snapshot without a tool.
    for dir in ["tools", "domain", "compat_obsidian"] {
        for file in std::fs::read_dir(root.join(dir)).into_iter().flatten().flatten() {
            if !expected.iter().any(|(p, _)| *p == file.path()) {
                if update {
                    std::fs::remove_file(file.path()).unwrap();
                } else {
                    stale.push(format!("{} (no such tool)", file.path().display()));
                }
            }
        }
    }
    assert!(stale.is_empty(), "snapshots differ (run with UPDATE_SNAPSHOTS=1 and review the diff): {stale:#?}");
}

/// A listing leaves output schemas to describe_capability unless `list_output_schemas`; either
/// way the shared parameters are bare (the instructions explain them once) and `verbosity`, still
/// taken, is not listed.
#[test]
fn listings_leave_output_schemas_and_shared_parameter_text_out() {
    let registry = registry();
    let lean = facade::advertise(&registry, &FacadeSettings::default(), Listing::Flat(Subset::Full), None);
    assert!(lean.iter().all(|t| t.output_schema.is_none()));
    let asked = FacadeSettings { list_output_schemas: true, ..FacadeSettings::default() };
    let with = facade::advertise(&registry, &asked, Listing::Flat(Subset::Full), None);
    let described = with.iter().filter(|t| t.output_schema.is_some()).count();
    assert!(described > 100, "{described} tools list an output schema when asked");
    for tool in &with {
        assert_eq!(tool.output_schema, registry.get(&tool.name).unwrap().advertised_output, "{}", tool.name);
        let none = json!({});
        let properties = tool.input_schema.get("properties").unwrap_or(&none);
        assert!(properties.get("verbosity").is_none(), "{}", tool.name);
        for shared in ["response_format", "idempotency_key"] {
            assert!(properties.get(shared).is_none_or(|p| p.get("description").is_none()), "{}", tool.name);
        }
        // The full schema still takes the alias and checks it.
        let full = registry.get(&tool.name).unwrap().input_schema.get("properties").unwrap_or(&none);
        assert_eq!(full.get("verbosity").is_some(), properties.get("response_format").is_some(), "{}", tool.name);
    }
    let visible = facade::listed(&registry, &FacadeSettings::default(), None);
    assert!(facade::instructions(Listing::Flat(Subset::Full), &visible, 0).contains(facade::SHARED_PARAMETERS));
}

#[test]
fn subsets_and_listings_hold_what_they_promise() {
    let registry = registry();
    let settings = FacadeSettings::default();
    let names = |listing| -> Vec<String> {
        facade::advertise(&registry, &settings, listing, None).into_iter().map(|t| t.name).collect()
    };
    assert_eq!(names(Listing::Triad), ["find_capability", "describe_capability", "call_capability", "search", "fetch"]);
    let full = names(Listing::Flat(Subset::Full));
    assert!(full.iter().all(|n| !facade::is_facade_tool(n)), "flat lists no facade tool: {full:?}");
    // Every tool but the three facade tools and those that need a live Obsidian app (hidden
    // unless tool_visibility.show_live_app_tools).
    let live_app = registry.iter().filter(|t| t.is_plugin_bridge()).count();
    assert_eq!(full.len(), registry.len() - 3 - live_app);
    let domains = names(Listing::Domain);
    assert_eq!(
        domains,
        [
            "notes",
            "metadata",
            "links",
            "search",
            "vault",
            "attachments",
            "structured",
            "workspace",
            "automation",
            "git",
            "knowledge",
            "docs",
            "admin"
        ]
    );
    let essentials = names(Listing::Flat(Subset::Essentials));
    assert!(essentials.len() <= facade::ESSENTIALS_MAX);
    for triad in facade::advertise(&registry, &settings, Listing::Triad, None) {
        assert_eq!(triad.meta.get("anthropic/alwaysLoad"), Some(&Value::Bool(true)), "{}", triad.name);
        let whole = triad.meta.get("anthropic/maxResultSizeChars").is_some();
        assert_eq!(whole, triad.name == "fetch", "{}: only the whole-note reader carries it", triad.name);
    }
    for flat in facade::advertise(&registry, &settings, Listing::Flat(Subset::Full), None) {
        assert!(flat.meta.get("anthropic/alwaysLoad").is_none(), "{}", flat.name);
    }
}

#[test]
fn instructions_open_with_one_routing_sentence_inside_512_characters() {
    let registry = registry();
    let visible = facade::listed(&registry, &FacadeSettings::default(), None);
    for listing in [Listing::Triad, Listing::Domain, Listing::Flat(Subset::Full), Listing::Flat(Subset::Essentials)] {
        let text = facade::instructions(listing, &visible, 0);
        let routing = facade::routing_sentence(listing);
        assert!(text.starts_with(routing), "{listing:?}");
        assert!(routing.len() < 512 && routing.ends_with('.'), "{listing:?}: {routing}");
        let head: String = text.chars().take(512).collect();
        assert!(head.contains(routing), "the routing sentence is complete within 512 characters");
    }
}

#[test]
fn the_hot_path_and_whole_note_readers_carry_their_meta() {
    let input = json!({"type": "object", "properties": {}, "additionalProperties": false});
    let spec = |name: &'static str, whole: bool| ToolSpec {
        scopes: &["read:notes"],
        whole_note_reader: whole,
        response_format: ResponseFormat::Fixed { why: "test" },
        ..ToolSpec::base(name, "T", "A test tool.", Domain::Notes)
    };
    // The real search and fetch connectors, read_note, search_vault, write_note and list_notes.
    let _ = (spec, input);
    let registry = registry();
    let names = |settings: &FacadeSettings| -> Vec<String> {
        facade::advertise(&registry, settings, Listing::Triad, None).into_iter().map(|t| t.name).collect()
    };
    let plain = FacadeSettings::default();
    assert_eq!(
        names(&plain),
        ["find_capability", "describe_capability", "call_capability", "search", "fetch"],
        "connectors ride along"
    );
    let hot = FacadeSettings { triad_hot_path: true, ..FacadeSettings::default() };
    assert_eq!(
        names(&hot),
        [
            "find_capability",
            "describe_capability",
            "call_capability",
            "search",
            "fetch",
            "read_note",
            "search_vault",
            "write_note",
            "list_notes"
        ]
    );
    for tool in facade::advertise(&registry, &hot, Listing::Triad, None) {
        assert_eq!(tool.meta.get("anthropic/alwaysLoad"), Some(&Value::Bool(true)), "{}", tool.name);
    }
    let hidden = FacadeSettings {
        rules: otc_catalog::VisibilityRules { hidden: vec!["search".into()], ..Default::default() },
        ..FacadeSettings::default()
    };
    assert!(!names(&hidden).contains(&"search".to_string()), "toolVisibility.hidden removes the connectors too");
    assert!(names(&hidden).contains(&"fetch".to_string()));
    for tool in facade::advertise(&registry, &plain, Listing::Flat(Subset::Full), None) {
        let size = tool.meta.get("anthropic/maxResultSizeChars");
        let whole = registry.get(&tool.name).is_some_and(|t| t.spec.whole_note_reader);
        assert_eq!(size.is_some(), whole, "{}: only whole-note readers carry it", tool.name);
        let readers = ["read_note", "read_notes", "read_resources", "read_snapshot", "fetch", "search_and_read"];
        assert_eq!(whole, readers.contains(&tool.name.as_str()), "{}", tool.name);
    }
}

/// What each listing costs a conversation, printed (`cargo test -p otc-tools --test catalog
/// listing_sizes -- --nocapture`) and held under its budget: the flat list of every tool (the
/// live-app ones shown too) 120 KB, the domain facade 20 KB, the triad with search and fetch
/// 1.8 KB. A tool that needs more room takes it from another's prose.
#[test]
fn listing_sizes_are_printed_and_do_not_grow() {
    let registry = registry();
    let settings = FacadeSettings::default();
    let bytes = |listing| {
        let tools = facade::advertise(&registry, &settings, listing, None);
        (tools.len(), serde_json::to_vec(&tools).unwrap().len())
    };
    let every = FacadeSettings {
        rules: otc_catalog::VisibilityRules { show_live_app_tools: true, ..Default::default() },
        ..FacadeSettings::default()
    };
    let bytes_of_every = |listing| {
        let tools = facade::advertise(&registry, &every, listing, None);
        (tools.len(), serde_json::to_vec(&tools).unwrap().len())
    };
    for (what, (tools, size), ceiling) in [
        ("flat (every tool)", bytes_of_every(Listing::Flat(Subset::Full)), 120_000),
        ("flat (full)", bytes(Listing::Flat(Subset::Full)), 120_000),
        ("domain facade", bytes(Listing::Domain), 20_000),
        ("triad, search and fetch", bytes(Listing::Triad), 1_800),
    ] {
        println!("{what}: {tools} tools, {size} bytes ({} per tool)", size / tools.max(1));
        assert!(size <= ceiling, "{what} grew to {size} bytes, past its ceiling of {ceiling}");
    }
}
