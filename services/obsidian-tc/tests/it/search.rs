//! The scanning search tools (search_regex, search_jsonlogic) through the MCP surface: every
//! parameter, paging over every page, a folder the ACL hides and Obsidian's Excluded files never
//! surfacing (not in hits, totals or cursors), the compute budget, malformed input with its typed
//! error, and search answering the new state right after a write, a move and a delete.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::write::{err, ok};

const V: &str = "Notes";
const A: &str = "---\nstatus: open\npriority: 2\ntags: [work]\n---\n# A\nTODO: call Bob\nSee [[Target Note|it]]\n";
const B: &str = "---\nstatus: done\n---\nNothing to do here, todo in lower case.\n";
const P1: &str = "---\nstatus: open\n---\n#work TODO first\nTODO second\nTODO third\n";
const P2: &str = "links [[Target Note]] once\n";
const SECRET: &str = "---\nstatus: open\ntags: [work]\n---\nTODO secret [[Target Note]]\n";

/// An app where the ACL hides Secret/ and every Many/*-h.md, with the notes above, an Excluded
/// Archive/ and a trashed note; confirmation off. `tweak` adjusts the configuration.
async fn setup(tweak: impl FnOnce(&mut otc_config::Config) + Send + 'static) -> (TestApp, String) {
    let app = TestApp::spawn_with(move |c| {
        c.tools.confirm_destructive = false;
        c.acl.push(otc_config::AclEntry {
            tenant: Some("acme".into()),
            vault: V.into(),
            read_paths: Some(
                ["*.md", "Projects/**", "Archive/**", "Many/*-v.md", "Moved/**", "Big/**"].map(String::from).to_vec(),
            ),
            write_paths: None,
            delete_paths: None,
        });
        tweak(c);
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    // Through the store: the token may not write the paths its ACL hides.
    app.seed(
        &token,
        V,
        &[
            ("A.md", Some(A)),
            ("B.md", Some(B)),
            ("Projects/P1.md", Some(P1)),
            ("Projects/Sub/P2.md", Some(P2)),
            ("Secret/S.md", Some(SECRET)),
            ("Archive/Old.md", Some("---\nstatus: open\n---\nTODO archived [[Target Note]]\n")),
            (".trash/Gone.md", Some("TODO in the trash")),
            ("pic.png", Some("TODO in an attachment")),
            (".obsidian/app.json", Some(r#"{"userIgnoreFilters": ["Archive/"]}"#)),
        ],
    )
    .await;
    (app, token)
}

fn paths(result: &Value) -> Vec<String> {
    result["hits"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap().to_string()).collect()
}

fn hit<'a>(result: &'a Value, path: &str) -> &'a Value {
    result["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["path"] == path)
        .unwrap_or_else(|| panic!("{path} in {result}"))
}

#[tokio::test]
async fn search_regex_takes_every_parameter() {
    let (app, token) = setup(|_| {}).await;
    let regex = |args: Value| {
        let (app, token) = (&app, &token);
        async move {
            let mut all = json!({"vault": V});
            all.as_object_mut().unwrap().extend(args.as_object().unwrap().clone());
            ok(app, token, "search_regex", all).await
        }
    };
    // Hidden (Secret/), Excluded (Archive/), trashed and non-note files never match.
    let todo = regex(json!({"pattern": "TODO"})).await;
    assert_eq!(paths(&todo), ["A.md", "Projects/P1.md"]);
    assert_eq!(todo["total_count"], 2);
    assert!(todo.get("next_cursor").is_none());
    let p1 = hit(&todo, "Projects/P1.md");
    assert_eq!(p1["total_matches"], 3);
    assert!(p1.get("truncated").is_none());
    // The default format is detailed: line, column, the line's text and the match.
    assert_eq!(p1["matches"][0], json!({"line": 4, "column": 7, "text": "#work TODO first", "match": "TODO"}));
    assert_eq!(
        hit(&todo, "A.md")["matches"],
        json!([{"line": 7, "column": 1, "text": "TODO: call Bob", "match": "TODO"}])
    );

    let concise = regex(json!({"pattern": "TODO", "response_format": "concise"})).await;
    assert_eq!(hit(&concise, "Projects/P1.md")["matches"][1], json!({"line": 5, "text": "TODO second"}));
    let terse = regex(json!({"pattern": "TODO", "verbosity": "terse"})).await;
    assert_eq!(terse, concise, "verbosity terse is concise");
    let full = regex(json!({"pattern": "TODO", "verbosity": "full", "response_format": "concise"})).await;
    assert_eq!(full, concise, "response_format wins over verbosity");

    // flags: i, m, s, x.
    assert_eq!(paths(&regex(json!({"pattern": "todo", "flags": "i"})).await), ["A.md", "B.md", "Projects/P1.md"]);
    let lines = regex(json!({"pattern": "^TODO", "flags": "m"})).await;
    let lines: Vec<(String, u64)> = lines["hits"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|h| {
            h["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| (h["path"].as_str().unwrap().into(), m["line"].as_u64().unwrap()))
        })
        .collect();
    assert_eq!(lines, [("A.md".into(), 7), ("Projects/P1.md".into(), 5), ("Projects/P1.md".into(), 6)]);
    assert_eq!(regex(json!({"pattern": "first.TODO"})).await["total_count"], 0);
    assert_eq!(paths(&regex(json!({"pattern": "first.TODO", "flags": "s"})).await), ["Projects/P1.md"]);
    assert_eq!(paths(&regex(json!({"pattern": "T O D O  # spaced", "flags": "x"})).await), ["A.md", "Projects/P1.md"]);
    assert_eq!(paths(&regex(json!({"pattern": "todo", "flags": "im"})).await).len(), 3);

    // root, max_matches_per_file, limit.
    let rooted = regex(json!({"pattern": "TODO|Target", "root": "Projects"})).await;
    assert_eq!(paths(&rooted), ["Projects/P1.md", "Projects/Sub/P2.md"]);
    assert_eq!(regex(json!({"pattern": "Target", "root": "/Projects/Sub/"})).await["total_count"], 1);
    assert_eq!(regex(json!({"pattern": "TODO", "root": "Secret"})).await["total_count"], 0, "a hidden root is empty");
    assert_eq!(regex(json!({"pattern": "TODO", "root": "Archive"})).await["total_count"], 0, "Excluded files");
    let clipped = regex(json!({"pattern": "TODO", "root": "Projects", "max_matches_per_file": 2})).await;
    let p1 = hit(&clipped, "Projects/P1.md");
    assert_eq!(
        (p1["matches"].as_array().unwrap().len(), &p1["truncated"], &p1["total_matches"]),
        (2, &json!(true), &json!(3))
    );
    let first = regex(json!({"pattern": "TODO|Target", "limit": 1})).await;
    assert_eq!((paths(&first), &first["total_count"]), (vec!["A.md".to_string()], &json!(3)));
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = regex(json!({"pattern": "TODO|Target", "limit": 1, "cursor": cursor})).await;
    assert_eq!((paths(&second), &second["total_count"]), (vec!["Projects/P1.md".to_string()], &json!(3)));
    let third = regex(json!({"pattern": "TODO|Target", "limit": 1, "cursor": second["next_cursor"]})).await;
    assert_eq!(paths(&third), ["Projects/Sub/P2.md"]);
    assert!(third.get("next_cursor").is_none());
    app.stop().await;
}

#[tokio::test]
async fn search_jsonlogic_takes_every_parameter() {
    let (app, token) = setup(|_| {}).await;
    let logic = |rule: Value, extra: Value| {
        let (app, token) = (&app, &token);
        async move {
            let mut all = json!({"vault": V, "logic": rule});
            all.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            ok(app, token, "search_jsonlogic", all).await
        }
    };
    let open = logic(json!({"==": [{"var": "frontmatter.status"}, "open"]}), json!({})).await;
    assert_eq!(paths(&open), ["A.md", "Projects/P1.md"], "not Secret/ (hidden) nor Archive/ (Excluded)");
    assert_eq!(open["total_count"], 2);
    // Detailed (the default) carries frontmatter, tags and mtime; concise only the path.
    let a = hit(&open, "A.md");
    assert_eq!(a["frontmatter"], json!({"status": "open", "priority": 2, "tags": ["work"]}));
    assert_eq!(a["tags"], json!(["work"]));
    assert!(a["mtime"].as_str().unwrap().contains('T'));
    let concise =
        logic(json!({"==": [{"var": "frontmatter.status"}, "open"]}), json!({"response_format": "concise"})).await;
    assert_eq!(concise["hits"], json!([{"path": "A.md"}, {"path": "Projects/P1.md"}]));
    let terse = logic(json!({"==": [{"var": "frontmatter.status"}, "open"]}), json!({"verbosity": "terse"})).await;
    assert_eq!(terse, concise);

    let cases = [
        (json!({"in": ["work", {"var": "tags"}]}), vec!["A.md", "Projects/P1.md"]),
        (json!({"glob": ["Projects/**", {"var": "path"}]}), vec!["Projects/P1.md", "Projects/Sub/P2.md"]),
        (json!({"glob": ["Projects/*.md", {"var": "path"}]}), vec!["Projects/P1.md"]),
        (
            json!({"regexp": ["\\[\\[Target Note(\\||#|\\]\\])", {"var": "content"}]}),
            vec!["A.md", "Projects/Sub/P2.md"],
        ),
        (json!({"in": ["TODO", {"var": "content"}]}), vec!["A.md", "Projects/P1.md"]),
        (json!({">": [{"var": "frontmatter.priority"}, 1]}), vec!["A.md"]),
        (json!({"<": [{"var": "stat.size"}, 40]}), vec!["Projects/Sub/P2.md"]),
        (
            json!({"and": [{">": [{"var": "stat.mtime"}, 0]}, {"<=": [{"var": "stat.ctime"}, {"var": "stat.mtime"}]}]}),
            vec!["A.md", "B.md", "Projects/P1.md", "Projects/Sub/P2.md"],
        ),
        (
            json!({"and": [{"glob": ["Projects/**", {"var": "path"}]}, {"==": [{"var": "frontmatter.status"}, "open"]}, {"in": ["work", {"var": "tags"}]}]}),
            vec!["Projects/P1.md"],
        ),
        (json!({"and": [{"glob": ["A*", {"var": "path"}]}, {"glob": ["P*", {"var": "path"}]}]}), vec![]),
        (
            json!({"or": [{"==": [{"var": "frontmatter.status"}, "done"]}, {"in": ["once", {"var": "content"}]}]}),
            vec!["B.md", "Projects/Sub/P2.md"],
        ),
        (json!({"missing": ["frontmatter.status"]}), vec!["Projects/Sub/P2.md"]),
    ];
    for (rule, expected) in cases {
        let result = logic(rule.clone(), json!({})).await;
        assert_eq!(paths(&result), expected, "{rule}");
        assert_eq!(result["total_count"], expected.len(), "{rule}");
    }
    let rooted = logic(json!({"in": ["TODO", {"var": "content"}]}), json!({"root": "Projects"})).await;
    assert_eq!(paths(&rooted), ["Projects/P1.md"]);
    let narrowed = logic(json!({"glob": ["Projects/Sub/**", {"var": "path"}]}), json!({"root": "Projects"})).await;
    assert_eq!(paths(&narrowed), ["Projects/Sub/P2.md"]);
    let apart = logic(json!({"glob": ["Projects/**", {"var": "path"}]}), json!({"root": "Other"})).await;
    assert_eq!(apart["total_count"], 0);
    let everything = json!({"!!": [{"var": "path"}]});
    let first = logic(everything.clone(), json!({"limit": 3})).await;
    assert_eq!((paths(&first).len(), &first["total_count"]), (3, &json!(4)));
    let rest = logic(everything, json!({"limit": 3, "cursor": first["next_cursor"]})).await;
    assert_eq!(paths(&rest), ["Projects/Sub/P2.md"]);
    assert!(rest.get("next_cursor").is_none());
    app.stop().await;
}

/// Every page of a search: (paths in order, the total_count of each page).
async fn walk(app: &TestApp, token: &str, tool: &str, args: Value) -> (Vec<String>, BTreeSet<u64>, usize) {
    let mut all = Vec::new();
    let mut totals = BTreeSet::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut call = args.clone();
        if let Some(c) = &cursor {
            call["cursor"] = json!(c);
        }
        let page = ok(app, token, tool, call).await;
        pages += 1;
        all.extend(paths(&page));
        totals.insert(page["total_count"].as_u64().unwrap());
        match page.get("next_cursor").and_then(Value::as_str) {
            Some(next) => {
                // The cursor names only a path the caller can read.
                let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(next).unwrap();
                let decoded = String::from_utf8(decoded).unwrap();
                assert!(!decoded.contains("-h.md") && !decoded.contains("Secret"), "{decoded}");
                cursor = Some(next.to_string());
            }
            None => return (all, totals, pages),
        }
        assert!(pages < 100, "paging ends");
    }
}

#[tokio::test]
async fn paging_walks_every_page_without_gaps_or_repeats_and_hidden_notes_never_count() {
    let (app, token) = setup(|_| {}).await;
    // 60 numbered notes: the ACL hides every -h one, interleaved with the visible -v ones; two
    // in three hold the needle.
    let mut notes = Vec::new();
    for i in 0..60 {
        let body = if i % 3 == 0 { format!("plain {i}\n") } else { format!("---\nn: {i}\n---\nneedle {i}\n") };
        notes.push((format!("Many/N{i:03}-v.md"), body.clone()));
        notes.push((format!("Many/N{i:03}-h.md"), body));
    }
    let seed: Vec<(&str, Option<&str>)> = notes.iter().map(|(p, b)| (p.as_str(), Some(b.as_str()))).collect();
    app.seed(&token, V, &seed).await;
    let expected: Vec<String> = (0..60).filter(|i| i % 3 != 0).map(|i| format!("Many/N{i:03}-v.md")).collect();
    assert_eq!(expected.len(), 40);

    // The default page is 25.
    let first = ok(&app, &token, "search_regex", json!({"vault": V, "pattern": "needle"})).await;
    assert_eq!((first["hits"].as_array().unwrap().len(), &first["total_count"]), (25, &json!(40)));
    let first =
        ok(&app, &token, "search_jsonlogic", json!({"vault": V, "logic": {"in": ["needle", {"var": "content"}]}}))
            .await;
    assert_eq!((first["hits"].as_array().unwrap().len(), &first["total_count"]), (25, &json!(40)));

    let searches = [
        ("search_regex", json!({"vault": V, "pattern": "needle \\d+", "limit": 7})),
        (
            "search_regex",
            json!({"vault": V, "pattern": "needle", "root": "Many", "limit": 3, "response_format": "concise"}),
        ),
        ("search_jsonlogic", json!({"vault": V, "logic": {"in": ["needle", {"var": "content"}]}, "limit": 7})),
        (
            "search_jsonlogic",
            json!({"vault": V, "logic": {"and": [{"glob": ["Many/**", {"var": "path"}]}, {"!!": {"var": "frontmatter.n"}}]}, "limit": 6}),
        ),
        ("search_jsonlogic", json!({"vault": V, "logic": {">=": [{"var": "frontmatter.n"}, 1]}, "limit": 1000})),
    ];
    for (tool, args) in searches {
        let (all, totals, pages) = walk(&app, &token, tool, args.clone()).await;
        assert_eq!(all, expected, "{tool} {args}: every page in order, no gap, no repeat");
        assert_eq!(totals, BTreeSet::from([40]), "{tool} {args}: one total on every page");
        let limit = args["limit"].as_u64().unwrap() as usize;
        assert_eq!(pages, 40usize.div_ceil(limit).max(1), "{tool} {args}");
    }
    app.stop().await;
}

#[tokio::test]
async fn the_compute_budget_ends_a_scan_quickly() {
    // A budget of 200 bytes of note text: the vault holds more.
    let (app, token) = setup(|c| c.tools.search_scan_bytes = 200).await;
    let started = Instant::now();
    // No literal word to narrow by through the full-text index: every note in scope is read.
    let e = err(&app, &token, "search_regex", json!({"vault": V, "pattern": "\\w+DO"})).await;
    assert_eq!(e["code"], "compute_budget_exceeded");
    assert_eq!(e["retryable"], false);
    let d = &e["details"];
    assert_eq!((d["limit"].as_str(), d["max_scan_bytes"].as_u64()), (Some("scan_bytes"), Some(200)));
    assert_eq!(d["notes_in_scope"], 4, "hidden and Excluded notes are not in scope");
    assert!(d["bytes_in_scope"].as_u64().unwrap() > 200);
    assert!(d["bytes_scanned"].is_u64() && d["notes_scanned"].is_u64());
    assert!(d["suggestion"].as_str().unwrap().contains("root"), "{d}");
    let e =
        err(&app, &token, "search_jsonlogic", json!({"vault": V, "logic": {"regexp": ["\\w{4}", {"var": "content"}]}}))
            .await;
    assert_eq!(e["code"], "compute_budget_exceeded");
    // Narrowed by root, the same search fits; rules that do not read content never count bytes.
    let narrowed = ok(&app, &token, "search_regex", json!({"vault": V, "pattern": "Target", "root": "Projects"})).await;
    assert_eq!(paths(&narrowed), ["Projects/Sub/P2.md"]);
    let meta = ok(
        &app,
        &token,
        "search_jsonlogic",
        json!({"vault": V, "logic": {"==": [{"var": "frontmatter.status"}, "open"]}}),
    )
    .await;
    assert_eq!(meta["total_count"], 2);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    app.stop().await;

    // No time at all: the deadline.
    let (app, token) = setup(|c| c.tools.search_deadline_ms = 0).await;
    let started = Instant::now();
    for (tool, args) in [
        ("search_regex", json!({"vault": V, "pattern": "(a*)*b"})),
        // (No literal a full-text index could narrow the notes by: every note is read.)
        ("search_jsonlogic", json!({"vault": V, "logic": {"regexp": ["\\w{4}", {"var": "content"}]}})),
        ("search_jsonlogic", json!({"vault": V, "logic": {"in": ["work", {"var": "tags"}]}})),
    ] {
        let e = err(&app, &token, tool, args).await;
        assert_eq!(
            (e["code"].as_str(), e["details"]["limit"].as_str()),
            (Some("compute_budget_exceeded"), Some("deadline"))
        );
        assert_eq!(e["details"]["deadline_ms"], 0);
    }
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    app.stop().await;

    // Catastrophic patterns: refused as too large, or answered in linear time.
    let (app, token) = setup(|_| {}).await;
    let mut big = Vec::new();
    for i in 0..20 {
        big.push((format!("Big/{i}.md"), format!("{}{}", "a".repeat(50_000), "x".repeat(50_000))));
    }
    let seed: Vec<(&str, Option<&str>)> = big.iter().map(|(p, b)| (p.as_str(), Some(b.as_str()))).collect();
    app.seed(&token, V, &seed).await;
    let e = err(&app, &token, "search_regex", json!({"vault": V, "pattern": "a{1000}{1000}"})).await;
    assert_eq!(
        (e["code"].as_str(), e["details"]["limit"].as_str()),
        (Some("compute_budget_exceeded"), Some("regex_size"))
    );
    let e = err(
        &app,
        &token,
        "search_jsonlogic",
        json!({"vault": V, "logic": {"regexp": ["(x{500}){500}{20}", {"var": "content"}]}}),
    )
    .await;
    assert_eq!(e["code"], "compute_budget_exceeded");
    for pattern in ["(a*)*b", "(x+x+)+y", "(a|aa)+$"] {
        let started = Instant::now();
        let result = call_any(&app, &token, "search_regex", json!({"vault": V, "pattern": pattern})).await;
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(8), "{pattern}: {elapsed:?}");
        assert!(
            result["isError"] == false || result["structuredContent"]["code"] == "compute_budget_exceeded",
            "{pattern}: {result}"
        );
    }
    app.stop().await;
}

async fn call_any(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    crate::mcp::call(app, "/mcp", token, tool, args).await
}

#[tokio::test]
async fn malformed_input_answers_its_typed_error() {
    let (app, token) = setup(|_| {}).await;
    let regex = [
        (json!({"pattern": "(unclosed"}), "invalid_input", "pattern"),
        (json!({"pattern": "x", "flags": "g"}), "invalid_input", "flags"),
        (json!({"pattern": "x", "flags": "ii"}), "invalid_input", "flags"),
        (json!({"pattern": "x", "max_matches_per_file": 0}), "invalid_input", "max_matches_per_file"),
        (json!({"pattern": "x", "max_matches_per_file": 101}), "invalid_input", "max_matches_per_file"),
        (json!({"pattern": "x", "limit": 0}), "invalid_input", "limit"),
        (json!({"pattern": "x", "limit": 1001}), "invalid_input", "limit"),
        (json!({"pattern": "x", "cursor": "not a cursor"}), "invalid_input", "cursor"),
        (json!({"pattern": "x", "root": "../up"}), "path_invalid", "root"),
        (json!({"pattern": "x", "response_format": "loud"}), "validation_error", "response_format"),
        (json!({"pattern": "x", "colour": "red"}), "validation_error", ""),
        (json!({"pattern": "a{1000}{1000}"}), "compute_budget_exceeded", "pattern"),
    ];
    for (args, code, field) in regex {
        let mut all = json!({"vault": V});
        all.as_object_mut().unwrap().extend(args.as_object().unwrap().clone());
        let e = err(&app, &token, "search_regex", all).await;
        assert_eq!(e["code"], code, "{args}: {e}");
        if !field.is_empty() {
            assert_eq!(e["details"]["field"], field, "{args}: {e}");
        }
    }
    let syntax = err(&app, &token, "search_regex", json!({"vault": V, "pattern": "(unclosed"})).await;
    assert!(syntax["details"]["error"].as_str().unwrap().contains("unclosed group"), "{syntax}");
    let missing = err(&app, &token, "search_regex", json!({"vault": "Nope", "pattern": "x"})).await;
    assert_eq!(missing["code"], "vault_not_found");
    // A cursor from another tool is not this one's.
    let page =
        ok(&app, &token, "search_jsonlogic", json!({"vault": V, "logic": {"!!": {"var": "path"}}, "limit": 1})).await;
    let foreign =
        err(&app, &token, "search_regex", json!({"vault": V, "pattern": "x", "cursor": page["next_cursor"]})).await;
    assert_eq!(
        (foreign["code"].as_str(), foreign["details"]["field"].as_str()),
        (Some("invalid_input"), Some("cursor"))
    );

    let rules = [
        (json!("TODO"), "not_an_object"),
        (json!([{"var": "path"}]), "not_an_object"),
        (json!({"nope": [1]}), "unknown_operator"),
        (json!({"and": [{"==": [1]}]}), "wrong_arity"),
        (json!({"==": [1, 2], "!=": [1, 2]}), "not_an_operation"),
        (json!({"glob": [{"var": "path"}, "Projects/*.md"]}), "pattern_not_literal"),
        (json!({"regexp": ["(bad", {"var": "content"}]}), "invalid_regexp"),
        (json!({"var": ["a", "b", "c"]}), "wrong_arity"),
    ];
    for (rule, reason) in rules {
        let e = err(&app, &token, "search_jsonlogic", json!({"vault": V, "logic": rule})).await;
        assert_eq!(
            (e["code"].as_str(), e["details"]["reason"].as_str()),
            (Some("jsonlogic_error"), Some(reason)),
            "{rule}: {e}"
        );
    }
    let mut deep = json!(true);
    for _ in 0..40 {
        deep = json!({"!": [deep]});
    }
    let e = err(&app, &token, "search_jsonlogic", json!({"vault": V, "logic": deep})).await;
    assert_eq!(e["details"]["reason"], "too_deep");
    let e = err(
        &app,
        &token,
        "search_jsonlogic",
        json!({"vault": V, "logic": {"in": ["x".repeat(20_000), {"var": "content"}]}}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "too_large");
    let e = err(&app, &token, "search_jsonlogic", json!({"vault": V, "logic": {"!!": 1}, "limit": 0})).await;
    assert_eq!(e["code"], "invalid_input");
    app.stop().await;
}

#[tokio::test]
async fn search_answers_the_new_state_right_after_a_write_a_move_and_a_delete() {
    let (app, token) = setup(|_| {}).await;
    let regex = |pattern: &'static str| {
        let (app, token) = (&app, &token);
        async move { paths(&ok(app, token, "search_regex", json!({"vault": V, "pattern": pattern})).await) }
    };
    let open = || {
        let (app, token) = (&app, &token);
        async move {
            let rule = json!({"==": [{"var": "frontmatter.status"}, "open"]});
            paths(
                &ok(app, token, "search_jsonlogic", json!({"vault": V, "logic": rule, "response_format": "concise"}))
                    .await,
            )
        }
    };
    ok(
        &app,
        &token,
        "write_note",
        json!({"vault": V, "path": "New.md", "content": "---\nstatus: open\n---\nfresh zebra\n"}),
    )
    .await;
    assert_eq!(regex("zebra").await, ["New.md"]);
    assert_eq!(open().await, ["A.md", "New.md", "Projects/P1.md"]);

    ok(
        &app,
        &token,
        "update_frontmatter",
        json!({"vault": V, "path": "New.md", "operation": "set", "key": "status", "value": "done"}),
    )
    .await;
    assert_eq!(open().await, ["A.md", "Projects/P1.md"]);
    ok(&app, &token, "append_note", json!({"vault": V, "path": "New.md", "content": "and a yak\n"})).await;
    assert_eq!(regex("yak").await, ["New.md"]);

    ok(&app, &token, "move_note", json!({"vault": V, "from": "New.md", "to": "Moved/New.md"})).await;
    assert_eq!(regex("zebra").await, ["Moved/New.md"]);
    let moved =
        ok(&app, &token, "search_jsonlogic", json!({"vault": V, "logic": {"glob": ["Moved/**", {"var": "path"}]}}))
            .await;
    assert_eq!(paths(&moved), ["Moved/New.md"]);

    ok(&app, &token, "delete_note", json!({"vault": V, "path": "Moved/New.md"})).await;
    assert!(regex("zebra").await.is_empty(), "the trash is never searched");

    // The Excluded files setting changes what is searched as soon as it is written.
    app.seed(&token, V, &[(".obsidian/app.json", Some(r#"{"userIgnoreFilters": []}"#))]).await;
    assert_eq!(regex("archived").await, ["Archive/Old.md"]);
    app.seed(&token, V, &[(".obsidian/app.json", Some(r#"{"userIgnoreFilters": ["Projects/"]}"#))]).await;
    assert_eq!(regex("TODO").await, ["A.md", "Archive/Old.md"]);
    app.stop().await;
}

/// Not a check but a measurement (`--run-ignored only --no-capture`): the corpus's notes grown
/// tenfold (each copy made unique), then each kind of scan timed on a gateway whose blob cache is
/// cold and again once it is warm.
#[tokio::test]
#[ignore]
async fn measure_scan_times() {
    let (app, token) = setup(|_| {}).await;
    let mut notes = Vec::new();
    for vault in ["kepano-obsidian", "obsidian-tasks-demo", "obsidian-tasks-docs", "starter-vault"] {
        let root = crate::sync::corpus(vault);
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "md") {
                    let rel = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
                    notes.push((format!("{vault}/{rel}"), std::fs::read_to_string(&path).unwrap_or_default()));
                }
            }
        }
    }
    let mut grown = Vec::new();
    for copy in 0..10 {
        for (path, text) in &notes {
            grown.push((format!("Projects/c{copy}/{path}"), format!("{text}\ncopy {copy}\n")));
        }
    }
    let bytes: usize = grown.iter().map(|(_, t)| t.len()).sum();
    let started = Instant::now();
    for chunk in grown.chunks(1000) {
        let seed: Vec<(&str, Option<&str>)> = chunk.iter().map(|(p, t)| (p.as_str(), Some(t.as_str()))).collect();
        app.seed(&token, V, &seed).await;
    }
    println!("seeded {} notes, {} bytes, in {:?}", grown.len(), bytes, started.elapsed());
    let searches = [
        ("search_regex", json!({"vault": V, "pattern": "TODO"})),
        ("search_regex", json!({"vault": V, "pattern": "(?i)due date"})),
        ("search_regex", json!({"vault": V, "pattern": "\\[\\[[^\\]]+\\]\\]", "max_matches_per_file": 3})),
        ("search_regex", json!({"vault": V, "pattern": "no such phrase anywhere"})),
        ("search_jsonlogic", json!({"vault": V, "logic": {"in": ["task", {"var": "tags"}]}})),
        ("search_jsonlogic", json!({"vault": V, "logic": {"glob": ["Projects/c3/**", {"var": "path"}]}})),
        ("search_jsonlogic", json!({"vault": V, "logic": {"regexp": ["(?i)recurr", {"var": "content"}]}})),
    ];
    for (tool, args) in searches {
        // A gateway of its own: its blob cache starts empty.
        let gateway = app.another_gateway(|_| {}).await;
        for (label, addr) in [("cold", gateway.addr), ("warm", gateway.addr), ("warm", gateway.addr)] {
            let started = Instant::now();
            let body =
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
            let response: Value = app
                .http
                .post(format!("http://{addr}/mcp"))
                .bearer_auth(&token)
                .header("accept", "application/json, text/event-stream")
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let result = &response["result"]["structuredContent"];
            println!(
                "{tool} {label} {:>6} ms  total_count {} {} {}  {}",
                started.elapsed().as_millis(),
                result["total_count"],
                result["code"],
                result["details"]["notes_scanned"],
                args
            );
        }
        gateway.stop().await.unwrap();
    }
    app.stop().await;
}
