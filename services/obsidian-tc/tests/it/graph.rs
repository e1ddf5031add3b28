//! The graph tools against networkx on every corpus vault (tests/graph/graph_oracle.py builds
//! its edges with the tests' own link resolver), and their edges: the read ACL, Excluded files,
//! bad arguments, another tenant, and the quality report's flags on constructed notes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, cli, client_env, stderr, stdout};
use crate::mcp::{call, error_of};
use crate::sync::{corpus, remote_env, run_ok};
use crate::write::ok as tool;

const ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/graph/graph_oracle.py");

fn oracle(args: &[&str], input: Option<&str>) -> Value {
    use std::io::Write;
    let mut child = std::process::Command::new(client_env("OTC_TEST_PYTHON"))
        .arg(ORACLE)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the oracle runs");
    child.stdin.take().unwrap().write_all(input.unwrap_or("").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "oracle {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn close(a: &Value, b: f64, what: &str) {
    let a = a.as_f64().unwrap_or_else(|| panic!("{what}: {a} is no number"));
    assert!((a - b).abs() < 1e-9, "{what}: ours {a}, networkx {b}");
}

#[tokio::test]
async fn the_graph_tools_agree_with_networkx_on_every_corpus_vault() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let env = remote_env(&app, &token);
    for name in ["jsoncanvas", "kepano-obsidian", "obsidian-tasks-demo", "obsidian-tasks-docs", "starter-vault"] {
        let dir = corpus(name).display().to_string();
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        tx.create_vault(name).await.unwrap();
        tx.commit().await.unwrap();
        let (env2, dir2, vault) = (env.clone(), dir.clone(), name.to_string());
        tokio::task::spawn_blocking(move || run_ok(&env2, &["vault", "import", &dir2, "--vault", &vault, "--quiet"]))
            .await
            .unwrap();
        // The docs vault links densely: its cycles grow fivefold per link, so it is compared up
        // to 6 links (and 7 for the count just past the range).
        let bound: usize = if name == "obsidian-tasks-docs" { 7 } else { 11 };
        let want = oracle(&[&dir, &bound.to_string()], None);
        let v = json!(name);

        let health = tool(&app, &token, "vault_health_score", json!({"vault": v, "response_format": "detailed"})).await;
        for (ours, theirs) in
            [("notes", "nodes"), ("orphans", "orphans"), ("dead_ends", "dead_ends"), ("unresolved_links", "unresolved")]
        {
            assert_eq!(health[ours], want[theirs], "{name}: {ours}: {health}");
        }
        assert_eq!(health["total_links"], want["links"], "{name}: {health}");
        let sizes = want["components"].as_array().unwrap();
        assert_eq!(health["components"], sizes.len(), "{name}: {health}");
        let share = sizes[0].as_f64().unwrap() / want["nodes"].as_f64().unwrap();
        assert!((health["largest_component_share"].as_f64().unwrap() - share).abs() < 1e-3, "{name}: {health}");
        let taken: f64 = health["breakdown"].as_array().unwrap().iter().map(|p| p["points"].as_f64().unwrap()).sum();
        assert!((health["score"].as_f64().unwrap() - (100.0 - taken)).abs() < 0.01, "{name}: {health}");

        // Every metric, row by row, for every note it ranks.
        for (metric, key) in [
            ("pagerank", "pagerank"),
            ("betweenness", "betweenness"),
            ("in_degree", "in_degree"),
            ("out_degree", "out_degree"),
        ] {
            let ranked =
                tool(&app, &token, "graph_centrality", json!({"vault": v, "metric": metric, "limit": 200})).await;
            let rows = ranked["notes"].as_array().unwrap();
            assert_eq!(rows.len(), want["nodes"].as_u64().unwrap().min(200) as usize, "{name} {metric}");
            assert_eq!(ranked["graph_edges"], want["edges"], "{name}");
            assert!(ranked.get("sampled_sources").is_none(), "{name}: exact on a small vault");
            let mut last = f64::INFINITY;
            for row in rows {
                let path = row["path"].as_str().unwrap();
                close(&row["score"], want[key][path].as_f64().unwrap(), &format!("{name} {metric} {path}"));
                assert_eq!(row["incoming"], want["in_degree"][path], "{name} {path}");
                assert_eq!(row["outgoing"], want["out_degree"][path], "{name} {path}");
                let score = row["score"].as_f64().unwrap();
                assert!(score <= last, "{name} {metric}: ranked highest first");
                last = score;
            }
        }
        let hubs =
            tool(&app, &token, "graph_centrality", json!({"vault": v, "metric": "degree", "min_incoming_links": 3}))
                .await;
        assert!(hubs["notes"].as_array().unwrap().iter().all(|r| r["incoming"].as_u64().unwrap() >= 3), "{hubs}");

        // Cycles: the counts by length, and every cycle listed is one.
        let by_len = |len: usize| want["cycles"][len.to_string()].as_u64().unwrap_or(0) as usize;
        let max = bound - 1;
        let cycles = tool(
            &app,
            &token,
            "find_link_cycles",
            json!({"vault": v, "min_length": 2, "max_length": max, "limit": 100}),
        )
        .await;
        assert_eq!(cycles["truncated"], false, "{name}");
        assert_eq!(cycles["total"], (2..=max).map(by_len).sum::<usize>(), "{name}: {cycles}");
        assert_eq!(cycles["skipped_longer"], by_len(bound), "{name}");
        assert_eq!(cycles["skipped_shorter"], 0, "{name}");
        let edges: BTreeSet<(String, String)> = want["edge_list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e[0].as_str().unwrap().to_string(), e[1].as_str().unwrap().to_string()))
            .collect();
        let listed = cycles["cycles"].as_array().unwrap();
        assert_eq!(listed.len(), cycles["total"].as_u64().unwrap().min(100) as usize);
        for cycle in listed {
            let nodes: Vec<&str> = cycle.as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
            for (i, a) in nodes.iter().enumerate() {
                let b = nodes[(i + 1) % nodes.len()];
                assert!(edges.contains(&(a.to_string(), b.to_string())), "{name}: {a} -> {b} in {nodes:?}");
            }
            assert_eq!(nodes.iter().collect::<BTreeSet<_>>().len(), nodes.len(), "{name}: simple: {nodes:?}");
        }
        let shorter =
            tool(&app, &token, "find_link_cycles", json!({"vault": v, "min_length": 3, "max_length": max})).await;
        assert_eq!(shorter["skipped_shorter"], by_len(2), "{name}");
        assert!(shorter["cycles"].as_array().unwrap().iter().all(|c| c.as_array().unwrap().len() >= 3));

        // Communities: our partition's modularity as networkx computes it, and no worse than
        // networkx's own Louvain (best of five seeds) by more than a little.
        let found = tool(&app, &token, "graph_communities", json!({"vault": v, "limit": 50})).await;
        assert!(found["total"].as_u64().unwrap() <= 50, "{name}: every community of two or more is listed");
        let mut partition: Vec<Vec<String>> = Vec::new();
        let mut placed = BTreeSet::new();
        for c in found["communities"].as_array().unwrap() {
            assert!(c.get("more").is_none(), "{name}: whole communities on a small vault");
            let notes: Vec<String> =
                c["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().into()).collect();
            assert_eq!(c["size"], notes.len());
            placed.extend(notes.iter().cloned());
            partition.push(notes);
        }
        for path in want["pagerank"].as_object().unwrap().keys() {
            if !placed.contains(path) {
                partition.push(vec![path.clone()]);
            }
        }
        assert_eq!(found["notes_in_smaller"], want["nodes"].as_u64().unwrap() as usize - placed.len());
        let theirs = oracle(&[&dir, "--modularity"], Some(&serde_json::to_string(&partition).unwrap()));
        close(&found["modularity"], theirs["modularity"].as_f64().unwrap(), &format!("{name} modularity"));
        let best = want["louvain"].as_f64().unwrap();
        assert!(
            found["modularity"].as_f64().unwrap() >= best - 0.03,
            "{name}: {} vs networkx {best}",
            found["modularity"]
        );
        assert_eq!(found["meaningful"], found["modularity"].as_f64().unwrap() >= 0.3);
        assert_eq!(found.get("warning").is_some(), found["meaningful"] == false, "{name}: {found}");
        let again = tool(&app, &token, "graph_communities", json!({"vault": v, "limit": 50})).await;
        assert_eq!(again, found, "{name}: the same seed, the same communities");

        // Paths and strengths between sampled pairs.
        for pair in want["pairs"].as_array().unwrap() {
            let (from, to) = (&pair["from"], &pair["to"]);
            for (directed, key) in [(true, "directed"), (false, "undirected")] {
                let path = tool(
                    &app,
                    &token,
                    "graph_path_between",
                    json!({"vault": v, "from": from, "to": to, "directed": directed}),
                )
                .await;
                assert_eq!(path["found"], !pair[key].is_null(), "{name} {from}->{to} {key}: {path}");
                if !pair[key].is_null() {
                    assert_eq!(path["hops"], pair[key], "{name} {from}->{to} {key}");
                    let steps = path["path"].as_array().unwrap();
                    assert_eq!(steps.first(), Some(from));
                    assert_eq!(steps.last(), Some(to));
                    if directed {
                        for w in steps.windows(2) {
                            let e = (w[0].as_str().unwrap().to_string(), w[1].as_str().unwrap().to_string());
                            assert!(edges.contains(&e), "{name}: {e:?}");
                        }
                    }
                }
            }
            let s = tool(&app, &token, "get_link_strength", json!({"vault": v, "from": from, "to": to})).await;
            for key in ["forward", "backward"] {
                assert_eq!(s[format!("{key}_links")], pair[key], "{name} {from}->{to}: {s}");
            }
            for key in ["shared_targets", "shared_sources"] {
                assert_eq!(s[key], pair[key], "{name} {from}->{to}: {s}");
            }
            assert!((s["jaccard"].as_f64().unwrap() - pair["jaccard"].as_f64().unwrap()).abs() < 1e-6, "{name}: {s}");
            assert_eq!(s.get("distance").cloned().unwrap_or(Value::Null), pair["undirected"], "{name}: {s}");
        }
    }
    app.stop().await;
}

#[tokio::test]
async fn a_note_the_caller_cannot_read_or_an_excluded_one_is_not_a_node() {
    let app = TestApp::spawn_with(|c| {
        c.acl.push(crate::harness::read_acl(Some("acme"), "Notes", &["Open/**"]));
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    // a -> Secret -> b: with Secret unreadable there is no path from a to b; a's link to
    // "Secret" does not resolve among what the caller may read.
    app.seed(
        &token,
        "Notes",
        &[
            ("Open/a.md", Some("[[Secret]] [[c]]\n")),
            ("Closed/Secret.md", Some("[[b]]\n")),
            ("Open/b.md", Some("b\n")),
            ("Open/c.md", Some("[[a]]\n")),
            ("Open/Archive/old.md", Some("[[a]] [[b]]\n")),
            (".obsidian/app.json", Some(r#"{"userIgnoreFilters": ["Open/Archive/"]}"#)),
        ],
    )
    .await;
    let v = json!("Notes");
    let health = tool(&app, &token, "vault_health_score", json!({"vault": v, "response_format": "detailed"})).await;
    assert_eq!(health["notes"], 3, "{health}");
    assert_eq!(health["unresolved_links"], 1, "the link to the unreadable note is unresolved: {health}");
    let path =
        tool(&app, &token, "graph_path_between", json!({"vault": v, "from": "Open/a.md", "to": "Open/b.md"})).await;
    assert_eq!(path["found"], false, "{path}");
    for target in ["Closed/Secret.md", "Nowhere.md"] {
        let r =
            call(&app, "/mcp", &token, "graph_path_between", json!({"vault": v, "from": "Open/a.md", "to": target}))
                .await;
        assert_eq!(error_of(&r)["code"], "note_not_found", "{target}: {r}");
    }
    let r = call(
        &app,
        "/mcp",
        &token,
        "get_link_strength",
        json!({"vault": v, "from": "Open/Archive/old", "to": "Open/a"}),
    )
    .await;
    let err = error_of(&r);
    assert_eq!(
        (err["code"].as_str(), err["details"]["reason"].as_str()),
        (Some("invalid_input"), Some("excluded")),
        "{r}"
    );
    // .md is optional; the excluded note's links count nowhere.
    let s = tool(&app, &token, "get_link_strength", json!({"vault": v, "from": "Open/a", "to": "Open/c"})).await;
    assert_eq!((s["forward_links"].as_u64(), s["backward_links"].as_u64()), (Some(1), Some(1)), "{s}");
    let ranked = tool(&app, &token, "graph_centrality", json!({"vault": v, "metric": "in_degree"})).await;
    let paths: BTreeSet<&str> =
        ranked["notes"].as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(paths, BTreeSet::from(["Open/a.md", "Open/b.md", "Open/c.md"]));
    let a = ranked["notes"].as_array().unwrap().iter().find(|r| r["path"] == "Open/a.md").unwrap();
    assert_eq!(a["incoming"], 1, "the excluded note's link is not an edge: {ranked}");
    // The gateway keeps the graph while the vault is unchanged; a commit shows at once.
    app.seed(&token, "Notes", &[("Open/b.md", Some("b links [[a]]\n"))]).await;
    let ranked = tool(&app, &token, "graph_centrality", json!({"vault": v, "metric": "in_degree"})).await;
    let a = ranked["notes"].as_array().unwrap().iter().find(|r| r["path"] == "Open/a.md").unwrap();
    assert_eq!(a["incoming"], 2, "the new link counts: {ranked}");

    // Bad arguments are invalid_input naming the field; another tenant finds no vault.
    for (tool_name, args, field) in [
        ("find_link_cycles", json!({"vault": v, "min_length": 5, "max_length": 3}), "min_length"),
        ("find_link_cycles", json!({"vault": v, "max_length": 50}), "max_length"),
        ("graph_centrality", json!({"vault": v, "limit": 0}), "limit"),
        ("graph_communities", json!({"vault": v, "min_size": 0}), "min_size"),
        ("vault_health_score", json!({"vault": v, "hub_threshold": 1}), "hub_threshold"),
        ("note_quality_report", json!({"vault": v, "limit": 501}), "limit"),
    ] {
        let r = call(&app, "/mcp", &token, tool_name, args).await;
        let err = error_of(&r);
        assert_eq!(
            (err["code"].as_str(), err["details"]["field"].as_str()),
            (Some("invalid_input"), Some(field)),
            "{r}"
        );
    }
    let other = Tenant::create(&app.store, "globex").await;
    let (foreign, _) = other.token(&app.store, "*", false, None).await;
    // globex has a vault of the same name, empty: none of acme's notes is in its graph.
    let theirs = tool(&app, &foreign, "vault_health_score", json!({"vault": v})).await;
    assert_eq!((theirs["notes"].as_u64(), theirs["unresolved_links"].as_u64()), (Some(0), Some(0)), "{theirs}");
    let theirs = tool(&app, &foreign, "graph_centrality", json!({"vault": v})).await;
    assert_eq!(theirs["notes"], json!([]), "{theirs}");
    let theirs = tool(&app, &foreign, "note_quality_report", json!({"vault": v})).await;
    assert_eq!(theirs["flagged"], 0, "{theirs}");
    let r =
        call(&app, "/mcp", &foreign, "get_link_strength", json!({"vault": v, "from": "Open/a.md", "to": "Open/c.md"}))
            .await;
    assert_eq!(error_of(&r)["code"], "note_not_found", "{r}");
    let r = call(&app, "/mcp", &foreign, "graph_centrality", json!({"vault": "Elsewhere"})).await;
    assert_eq!(error_of(&r)["code"], "vault_not_found", "{r}");
    app.stop().await;
}

#[tokio::test]
async fn the_quality_report_flags_each_kind_of_note_and_concise_keeps_path_and_flags() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(
        &token,
        "Notes",
        &[
            ("Hub.md", Some("[[Twin A]] [[Twin B]] [[Empty]] [[Broken fm]] [[Gone]] [[Old]]\n")),
            ("Twin A.md", Some("same words\n[[Hub]]\n")),
            ("Twin B.md", Some("same words\n[[Hub]]\n")),
            ("Empty.md", Some("---\ntitle: nothing\n---\n\n")),
            ("Broken fm.md", Some("---\ntitle: [unclosed\n---\nbody [[Hub]]\n")),
            ("Lonely.md", Some("nobody links here [[Hub]]\n")),
        ],
    )
    .await;
    let long_ago = chrono::Utc::now() - chrono::Duration::days(400);
    app.seed_at(&token, "Notes", &[("Old.md", Some("from long ago [[Hub]]\n"))], long_ago).await;
    let report =
        tool(&app, &token, "note_quality_report", json!({"vault": "Notes", "response_format": "detailed"})).await;
    let flags: BTreeMap<&str, Vec<&str>> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (n["path"].as_str().unwrap(), n["flags"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect())
        })
        .collect();
    assert_eq!(flags["Twin A.md"], ["duplicate"], "{report}");
    assert_eq!(flags["Empty.md"], ["dead_end", "empty"], "{report}");
    assert_eq!(flags["Broken fm.md"], ["frontmatter_error"], "{report}");
    assert_eq!(flags["Lonely.md"], ["orphan"], "{report}");
    assert_eq!(flags["Old.md"], ["stale"], "{report}");
    assert_eq!(flags["Hub.md"], ["unresolved_links"], "{report}");
    let hub = report["notes"].as_array().unwrap().iter().find(|n| n["path"] == "Hub.md").unwrap();
    assert_eq!(hub["unresolved_links"], 1, "{hub}");
    let twin = report["notes"].as_array().unwrap().iter().find(|n| n["path"] == "Twin A.md").unwrap();
    assert_eq!(twin["duplicate_of"], json!(["Twin B.md"]));
    assert_eq!(report["counts"]["duplicate"], 2);
    assert_eq!(report["flagged"], 7);
    assert_eq!(report["skipped"][0]["check"], "contradiction", "{report}");
    // Most flags first.
    assert_eq!(report["notes"][0]["path"], "Empty.md", "{report}");

    let concise = tool(
        &app,
        &token,
        "note_quality_report",
        json!({"vault": "Notes", "flags": ["orphan", "stale"], "limit": 1, "response_format": "concise"}),
    )
    .await;
    assert_eq!(concise["flagged"], 2, "{concise}");
    assert_eq!(concise["truncated"], true);
    let only = concise["notes"].as_array().unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].as_object().unwrap().keys().collect::<Vec<_>>(), ["flags", "path"], "{concise}");
    assert!(concise.get("skipped").is_none(), "contradiction was not asked for: {concise}");
    app.stop().await;
}

#[tokio::test]
async fn prune_hub_links_previews_then_removes_dangling_and_repeated_links_only() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let hub = "---\nrelated:\n  - \"[[Gone two]]\"\n  - \"[[A]]\"\n---\n# Hub\n- [[A]]\n- [[Gone]]\n- [[A]]\n- [[B#Part]]\n- [[B]]\n\
               Read [[Missing|the old page]] here.\n![[nothing.png]]\n";
    app.seed(&token, "Notes", &[("Hub.md", Some(hub)), ("A.md", Some("a\n")), ("B.md", Some("# Part\nb\n"))]).await;
    let v = json!("Notes");
    let preview = tool(&app, &token, "prune_hub_links", json!({"vault": v, "path": "Hub.md"})).await;
    assert_eq!(preview["dry_run"], true, "a dry run unless asked: {preview}");
    let removed: Vec<(String, String, String)> = preview["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["link"].as_str().unwrap().into(),
                r["reason"].as_str().unwrap().into(),
                r["action"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want: Vec<(String, String, String)> = [
        ("[[Gone two]]", "unresolved", "line_removed"),
        ("[[Gone]]", "unresolved", "line_removed"),
        ("[[A]]", "duplicate", "line_removed"),
        ("[[Missing|the old page]]", "unresolved", "unlinked"),
        ("![[nothing.png]]", "unresolved", "line_removed"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(removed, want, "the property link to A is not the body's repeat; B#Part is not B: {preview}");
    assert!(preview.get("unresolved_kept").is_none(), "{preview}");
    let read = tool(&app, &token, "read_note", json!({"vault": v, "path": "Hub.md"})).await;
    assert_eq!(read["content"], hub, "a dry run writes nothing");

    // The real run needs a person's confirmation, and the preview's prev_hash pins the text.
    let real = json!({"vault": v, "path": "Hub.md", "dry_run": false, "prev_hash": preview["prev_hash"]});
    let r = call(&app, "/mcp", &token, "prune_hub_links", real.clone()).await;
    let err = error_of(&r);
    assert_eq!(err["code"], "elicit_required", "{r}");
    let command = err["details"]["command"].as_str().unwrap().to_string();
    let args: Vec<&str> = command.strip_prefix("obsidian-tc ").unwrap().split(' ').collect();
    let out = cli(&app.iso, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut confirmed = real.clone();
    confirmed["elicit_token"] = json!(stdout(&out).trim());
    let done = tool(&app, &token, "prune_hub_links", confirmed).await;
    assert_eq!(done["removed_count"], 5, "{done}");
    let after = tool(&app, &token, "read_note", json!({"vault": v, "path": "Hub.md"})).await;
    assert_eq!(
        after["content"],
        "---\nrelated:\n  - \"[[A]]\"\n---\n# Hub\n- [[A]]\n- [[B#Part]]\n- [[B]]\nRead the old page here.\n",
        "{after}"
    );
    assert_eq!(done["content_hash"], after["content_hash"]);
    // The old text is a snapshot restore_note can bring back.
    let snaps = tool(&app, &token, "list_snapshots", json!({"vault": v, "path": "Hub.md"})).await;
    assert!(!snaps["snapshots"].as_array().unwrap().is_empty(), "{snaps}");
    // A stale prev_hash writes nothing.
    let stale = call(&app, "/mcp", &token, "prune_hub_links", real).await;
    assert_eq!(error_of(&stale)["code"], "concurrent_modification", "{stale}");
    // Nothing left to prune: a real run is a no-op needing no confirmation.
    let again = tool(&app, &token, "prune_hub_links", json!({"vault": v, "path": "Hub.md", "dry_run": false})).await;
    assert_eq!(again["removed_count"], 0, "{again}");
    app.stop().await;

    // A caller that cannot read Closed/ cannot tell [[Secret]] (there, hidden) from [[Gone]]
    // (nowhere), and neither can the answer: both are kept, and it says why.
    let app = TestApp::spawn_with(|c| c.acl.push(crate::harness::read_acl(Some("acme"), "Notes", &["Open/**"]))).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let hub = "- [[Secret]]\n- [[Gone]]\n- [[A]]\n- [[A]]\n";
    app.seed(
        &token,
        "Notes",
        &[("Open/Hub.md", Some(hub)), ("Open/A.md", Some("a\n")), ("Closed/Secret.md", Some("s\n"))],
    )
    .await;
    let preview = tool(&app, &token, "prune_hub_links", json!({"vault": v, "path": "Open/Hub.md"})).await;
    assert_eq!(preview["unresolved_kept"], true, "{preview}");
    let links: Vec<&str> = preview["removed"].as_array().unwrap().iter().map(|r| r["link"].as_str().unwrap()).collect();
    assert_eq!(links, ["[[A]]"], "only the repeat goes: {preview}");
    let r = call(&app, "/mcp", &token, "prune_hub_links", json!({"vault": v, "path": "Closed/Secret.md"})).await;
    assert_eq!(error_of(&r)["code"], "note_not_found", "{r}");
    app.stop().await;
}

/// One series' value from this process's `/metrics` text.
fn metric(name: &str, cache: &str) -> f64 {
    let text = otc_telemetry::metrics().prometheus_text();
    let key = format!("{name}{{cache=\"{cache}\"}} ");
    let line = text.lines().find(|l| l.starts_with(&key)).unwrap_or_else(|| panic!("no {key} in\n{text}"));
    line[key.len()..].trim().parse().unwrap()
}

/// Graphs of many vaults stay cached while memory allows (the cache once held four and started
/// over), least recently used out first past `caches.graphs_bytes`.
#[tokio::test]
async fn graphs_of_many_vaults_stay_cached_within_their_byte_bound() {
    let app = TestApp::spawn_with(|c| c.caches.graphs_bytes = 64 << 10).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let mut names = vec!["Notes".to_string()];
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    for i in 1..8 {
        names.push(tx.create_vault(&format!("V{i}")).await.unwrap().name);
    }
    tx.commit().await.unwrap();
    for name in &names {
        app.seed(
            &token,
            name,
            &[("a.md", Some("[[b]] [[c]]\n")), ("b.md", Some("[[c]]\n")), ("c.md", Some("[[a]]\n"))],
        )
        .await;
    }
    let round = async || {
        for name in &names {
            tool(&app, &token, "graph_centrality", json!({"vault": name})).await;
        }
    };
    round().await;
    let hits = metric("otc_cache_hits_total", "graphs");
    round().await;
    assert_eq!(metric("otc_cache_hits_total", "graphs") - hits, 8.0, "every vault's graph came from memory");
    assert_eq!(metric("otc_cache_entries", "graphs"), 8.0);
    assert_eq!(metric("otc_cache_evictions_total", "graphs"), 0.0);
    app.stop().await;

    // A bound that holds two of them: the least recently used go, and the bytes stay within it.
    let app = TestApp::spawn_with(|c| c.caches.graphs_bytes = 1_000).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    for i in 1..4 {
        tx.create_vault(&format!("V{i}")).await.unwrap();
    }
    tx.commit().await.unwrap();
    for name in ["Notes", "V1", "V2", "V3"] {
        app.seed(&token, name, &[("a.md", Some("[[b]]\n")), ("b.md", Some("[[a]]\n"))]).await;
        tool(&app, &token, "graph_centrality", json!({"vault": name})).await;
    }
    assert!(metric("otc_cache_evictions_total", "graphs") >= 1.0);
    assert!(metric("otc_cache_bytes", "graphs") <= 1_000.0);
    assert!(metric("otc_cache_entries", "graphs") >= 1.0);
    app.stop().await;
}
