//! move_note: every kind of link to the moved note is rewritten (aliases, headings, blocks,
//! embeds, markdown and property links kept), the index afterwards equals a full rebuild, and
//! a move whose rewrite cannot be proven, or that would touch a note the caller cannot see,
//! changes nothing.

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::index::links_by_note;
use crate::mcp::call;
use crate::write::{V, err, ok, text};

const TARGET: &str = "# Target\n## Head\ntext ^blk\n[rel](../Other.md)\n";
const A: &str = "See [[Target]], [[Target|the target]], [[Target#Head]] and [[Target#^blk|block]].\n![[Target]]\n";
const B: &str = "---\nup: \"[[Target]]\"\nrelated:\n  - \"[[Target#Head|h]]\"\n---\nA [md link](Docs/Target.md) and [[Docs/Target]].\n| col | [[Target\\|cell]] |\n";
const C: &str = "Nothing about it here, but [[Other]].\n";
const OTHER: &str = "# Other\n";

async fn vault(acl_read: Option<Vec<&str>>) -> (TestApp, String, Tenant) {
    let acl_read = acl_read.map(|l| l.into_iter().map(str::to_string).collect::<Vec<_>>());
    let app = TestApp::spawn_with(move |c| {
        c.tools.confirm_destructive = false;
        if let Some(read) = acl_read {
            c.acl.push(otc_config::AclEntry {
                tenant: Some("acme".into()),
                vault: V.into(),
                read_paths: Some(read),
                write_paths: None,
                delete_paths: None,
            });
        }
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(
        &token,
        V,
        &[
            ("Docs/Target.md", Some(TARGET)),
            ("A.md", Some(A)),
            ("Deep/B.md", Some(B)),
            ("C.md", Some(C)),
            ("Other.md", Some(OTHER)),
        ],
    )
    .await;
    (app, token, tenant)
}

/// Every link row of the vault now, and again after index_vault rebuilt it from the files.
async fn index_matches_a_rebuild(app: &TestApp, token: &str, tenant: &Tenant) {
    let incremental = links_by_note(app, tenant.id, tenant.vault_id).await;
    let rebuilt = call(app, "/mcp", token, "index_vault", json!({"vault": V})).await;
    assert_eq!(rebuilt["isError"], false, "{rebuilt}");
    let full = links_by_note(app, tenant.id, tenant.vault_id).await;
    assert_eq!(incremental, full, "the index after the move equals a full rebuild");
}

#[tokio::test]
async fn move_note_rewrites_every_kind_of_link_and_the_index_agrees_with_a_rebuild() {
    let (app, token, tenant) = vault(None).await;
    let moved =
        ok(&app, &token, "move_note", json!({"vault": V, "from": "Docs/Target.md", "to": "Archive/Renamed.md"})).await;
    assert_eq!(moved["moved"], true);
    assert_eq!(moved["backlinks_updated"], json!({"notes": 2, "links": 10}), "{moved}");
    assert_eq!(text(&app, &token, "Docs/Target.md").await, None);
    assert_eq!(
        text(&app, &token, "A.md").await.unwrap(),
        "See [[Renamed]], [[Renamed|the target]], [[Renamed#Head]] and [[Renamed#^blk|block]].\n![[Renamed]]\n"
    );
    assert_eq!(
        text(&app, &token, "Deep/B.md").await.unwrap(),
        "---\nup: \"[[Renamed]]\"\nrelated:\n  - \"[[Renamed#Head|h]]\"\n---\nA [md link](Archive/Renamed.md) and [[Archive/Renamed]].\n| col | [[Renamed\\|cell]] |\n"
    );
    assert_eq!(text(&app, &token, "C.md").await.as_deref(), Some(C), "a note without such links is untouched");
    // The moved note's own relative link still reaches Other.md from its new folder.
    let own = text(&app, &token, "Archive/Renamed.md").await.unwrap();
    assert_eq!(own, TARGET, "../Other.md still resolves from Archive/");
    assert_eq!(moved["content_hash"], obsidian_tc::sync_client::sha256_hex(own.as_bytes()));

    let back = ok(
        &app,
        &token,
        "get_backlinks",
        json!({"vault": V, "path": "Archive/Renamed.md", "response_format": "detailed"}),
    )
    .await;
    let sources: std::collections::BTreeSet<&str> =
        back["backlinks"].as_array().unwrap().iter().map(|b| b["source_path"].as_str().unwrap()).collect();
    assert_eq!(sources.into_iter().collect::<Vec<_>>(), ["A.md", "Deep/B.md"]);
    let unresolved = ok(&app, &token, "find_unresolved_links", json!({"vault": V})).await;
    assert_eq!(unresolved["links"].as_array().map_or(0, Vec::len), 0, "{unresolved}");
    index_matches_a_rebuild(&app, &token, &tenant).await;

    // Its history follows it through the move.
    let history = ok(&app, &token, "get_provenance", json!({"vault": V, "path": "Archive/Renamed.md"})).await;
    let records = history["records"].as_array().unwrap();
    assert_eq!((records[0]["op"].as_str(), records[0]["from"].as_str()), (Some("move"), Some("Docs/Target.md")));
    assert_eq!(records[1]["path"], "Docs/Target.md");
    // Each rewritten note's earlier text is a snapshot restore_note can bring back.
    let snaps = ok(&app, &token, "list_snapshots", json!({"vault": V, "path": "A.md"})).await;
    let read = ok(&app, &token, "read_snapshot", json!({"vault": V, "snapshot_id": snaps["snapshots"][0]["id"]})).await;
    assert_eq!(read["content"], A);
}

#[tokio::test]
async fn a_move_that_would_capture_a_link_keeps_it_on_its_note() {
    let (app, token, tenant) = vault(None).await;
    // C.md links [[Other]] (the root Other.md). Once that moves to Old/, the shorter
    // S/Other.md would win the bare name: C's link must be rewritten to keep its note.
    ok(&app, &token, "write_note", json!({"vault": V, "path": "S/Other.md", "content": "another other"})).await;
    ok(&app, &token, "move_note", json!({"vault": V, "from": "Other.md", "to": "Old/Other.md"})).await;
    let c = text(&app, &token, "C.md").await.unwrap();
    assert_eq!(c, "Nothing about it here, but [[Old/Other]].\n", "not captured by S/Other.md");
    let own = text(&app, &token, "Old/Other.md").await.unwrap();
    assert_eq!(own, OTHER);
    let target = text(&app, &token, "Docs/Target.md").await.unwrap();
    assert_eq!(
        target,
        TARGET.replace("../Other.md", "../Old/Other.md"),
        "a relative link to the moved note follows it"
    );
    index_matches_a_rebuild(&app, &token, &tenant).await;
}

#[tokio::test]
async fn refused_moves_change_nothing() {
    let (app, token, _tenant) = vault(None).await;
    let before: Vec<Option<String>> =
        futures::future::join_all(["Docs/Target.md", "A.md", "Deep/B.md"].map(|p| text(&app, &token, p))).await;

    // A markdown link cannot carry ')': the whole move is refused, naming the note.
    let e =
        err(&app, &token, "move_note", json!({"vault": V, "from": "Docs/Target.md", "to": "Docs/Report (final).md"}))
            .await;
    assert_eq!(e["code"], "invalid_input", "{e}");
    assert_eq!(e["details"]["note"], "Deep/B.md");
    // A new name with link syntax, an existing destination, a missing source.
    let e = err(&app, &token, "move_note", json!({"vault": V, "from": "Docs/Target.md", "to": "Docs/T#1.md"})).await;
    assert_eq!((e["code"].as_str(), e["details"]["field"].as_str()), (Some("invalid_input"), Some("to")));
    let e = err(&app, &token, "move_note", json!({"vault": V, "from": "Docs/Target.md", "to": "C.md"})).await;
    assert_eq!(e["code"], "note_exists");
    let e = err(&app, &token, "move_note", json!({"vault": V, "from": "Nope.md", "to": "Z.md"})).await;
    assert_eq!(e["code"], "note_not_found");
    let e = err(
        &app,
        &token,
        "move_note",
        json!({"vault": V, "from": "Docs/Target.md", "to": "Z.md", "prev_hash": obsidian_tc::sync_client::sha256_hex(b"old")}),
    )
    .await;
    assert_eq!(e["code"], "concurrent_modification");
    let after: Vec<Option<String>> =
        futures::future::join_all(["Docs/Target.md", "A.md", "Deep/B.md"].map(|p| text(&app, &token, p))).await;
    assert_eq!(before, after);
    assert_eq!(text(&app, &token, "Docs/Report (final).md").await, None);

    // Without update_backlinks only the note moves.
    let moved = ok(
        &app,
        &token,
        "move_note",
        json!({"vault": V, "from": "Docs/Target.md", "to": "Docs/Report (final).md", "update_backlinks": false}),
    )
    .await;
    assert_eq!(moved["backlinks_updated"], json!({"notes": 0, "links": 0}));
    assert_eq!(text(&app, &token, "A.md").await.as_deref(), Some(A));
}

#[tokio::test]
async fn a_note_the_caller_cannot_read_is_never_named_and_blocks_the_move() {
    let (app, token, _tenant) = vault(Some(vec!["Docs/**", "A.md", "C.md", "Other.md"])).await;
    let e = err(&app, &token, "move_note", json!({"vault": V, "from": "Docs/Target.md", "to": "Docs/Moved.md"})).await;
    assert_eq!(e["code"], "invalid_input", "{e}");
    assert_eq!(e["details"]["hidden_notes"], Value::Bool(true));
    assert!(!e.to_string().contains("Deep/B"), "the hidden note is never named: {e}");
    assert!(text(&app, &token, "Docs/Target.md").await.is_some());
    // A note no hidden note links to moves fine.
    ok(&app, &token, "move_note", json!({"vault": V, "from": "C.md", "to": "Docs/C.md"})).await;
}

/// Every link of the vault with the raw text, per source, from the index.
async fn raw_links(app: &TestApp, tenant: uuid::Uuid, vault: uuid::Uuid) -> Vec<(String, otc_store::LinkRecord)> {
    let mut tx = app.store.begin(tenant).await.unwrap();
    let mut out = Vec::new();
    let mut after: Option<(String, i32)> = None;
    loop {
        let page = tx.vault_links(vault, after.as_ref().map(|(p, o)| (p.as_str(), *o)), 1000).await.unwrap();
        if page.is_empty() {
            break;
        }
        let mut ord = std::collections::HashMap::new();
        for (source, link) in &page {
            *ord.entry(source.clone()).or_insert(0) += 1;
            let _ = link;
        }
        let (last, _) = page.last().unwrap().clone();
        let last_ord =
            out.iter().filter(|(s, _): &&(String, otc_store::LinkRecord)| *s == last).count() as i32 + ord[&last] - 1;
        out.extend(page);
        after = Some((last, last_ord));
    }
    tx.commit().await.unwrap();
    out
}

#[tokio::test]
async fn on_every_corpus_vault_the_most_linked_note_moves_with_every_backlink() {
    use crate::sync::{corpus, remote_env, run_ok};
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let env = remote_env(&app, &token);
    for name in ["jsoncanvas", "kepano-obsidian", "obsidian-tasks-demo", "obsidian-tasks-docs", "starter-vault"] {
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        let vault = tx.create_vault(name).await.unwrap();
        tx.commit().await.unwrap();
        let (env2, dir, vname) = (env.clone(), corpus(name).display().to_string(), name.to_string());
        tokio::task::spawn_blocking(move || run_ok(&env2, &["vault", "import", &dir, "--vault", &vname, "--quiet"]))
            .await
            .unwrap();
        let links = raw_links(&app, tenant.id, vault.id).await;
        // The note with the most backlinks from other notes.
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for (source, link) in &links {
            if let Some(target) = link.resolved_path.as_deref()
                && target.ends_with(".md")
                && target != source
                && !source.starts_with(".")
            {
                *counts.entry(target).or_default() += 1;
            }
        }
        // (A vault where no note links another, like jsoncanvas, moves its first note.)
        let (target, most) = match counts.iter().max_by_key(|(p, n)| (**n, std::cmp::Reverse(**p))) {
            Some((target, most)) => (target.to_string(), *most),
            None => {
                let listed = ok(&app, &token, "list_notes", json!({"vault": name})).await;
                (listed["notes"][0]["path"].as_str().unwrap().to_string(), 0)
            }
        };
        let before: Vec<(String, otc_store::LinkRecord)> = links
            .iter()
            .filter(|(s, l)| l.resolved_path.as_deref() == Some(&target) && *s != target)
            .cloned()
            .collect();
        assert_eq!(before.len(), most);

        // A move whose rewrite cannot be proven changes nothing: a markdown link cannot carry ')'.
        let stem = target.rsplit('/').next().unwrap().trim_end_matches(".md").to_string();
        let probe = format!("[probe]({})\n", target.replace(' ', "%20"));
        ok(&app, &token, "write_note", json!({"vault": name, "path": "zz-probe.md", "content": probe})).await;
        let files = |app: &TestApp| {
            let (store, tenant, vault) = (app.store.clone(), tenant.id, vault.id);
            async move {
                let mut tx = store.begin(tenant).await.unwrap();
                let files = tx.files(vault, None, 5000).await.unwrap();
                tx.commit().await.unwrap();
                files.into_iter().map(|f| (f.path, f.hash)).collect::<Vec<_>>()
            }
        };
        let manifest = files(&app).await;
        let e = err(
            &app,
            &token,
            "move_note",
            json!({"vault": name, "from": target, "to": format!("Moved/{stem} (x).md")}),
        )
        .await;
        // The probe cannot be rewritten, nor can any other markdown link to the target; which
        // of them the refusal names depends on the order the plan meets them.
        let refused = e["details"]["note"].as_str().unwrap_or_default();
        let markdown_sources: Vec<&str> =
            before.iter().filter(|(_, l)| !l.wiki).map(|(s, _)| s.as_str()).chain(["zz-probe.md"]).collect();
        assert_eq!(e["code"], "invalid_input", "{name}: {e}");
        assert!(markdown_sources.contains(&refused), "{name}: {e}");
        assert_eq!(files(&app).await, manifest, "{name}: a refused move changes nothing");

        // The real move: every former backlink (body, embed, property) resolves to the new path,
        // with its alias, heading or block and kind as they were.
        let to = format!("Moved/{stem} moved.md");
        let done = ok(&app, &token, "move_note", json!({"vault": name, "from": target, "to": to})).await;
        let after = raw_links(&app, tenant.id, vault.id).await;
        let mut kept = 0;
        for (source, old) in &before {
            let now: Vec<&otc_store::LinkRecord> = after
                .iter()
                .filter(|(s, l)| s == source && l.line == old.line && l.kind == old.kind && l.property == old.property)
                .map(|(_, l)| l)
                .filter(|l| l.col == old.col || l.resolved_path.as_deref() == Some(to.as_str()))
                .collect();
            let found = now
                .iter()
                .find(|l| {
                    l.resolved_path.as_deref() == Some(to.as_str())
                        && l.alias == old.alias
                        && l.subpath == old.subpath
                        && l.subpath_kind == old.subpath_kind
                })
                .unwrap_or_else(|| {
                    panic!("{name}: {source} line {} lost its link {:?}: now {now:?}", old.line, old.raw)
                });
            assert_eq!(found.wiki, old.wiki, "{name}: {source}");
            kept += 1;
        }
        assert_eq!(kept, before.len());
        let to_new = after.iter().filter(|(s, l)| l.resolved_path.as_deref() == Some(to.as_str()) && *s != to).count();
        assert_eq!(to_new, before.len() + 1, "{name}: the former backlinks and the probe, nothing else");
        assert!(done["backlinks_updated"]["notes"].as_u64().unwrap() >= 1, "{name}: the probe at least: {done}");
        eprintln!("{name}: moved {target} with {} backlinks: {done}", before.len());

        // The index after the move equals a full rebuild.
        let incremental = links_by_note(&app, tenant.id, vault.id).await;
        let rebuilt = crate::mcp::call(&app, "/mcp", &token, "index_vault", json!({"vault": name})).await;
        assert_eq!(rebuilt["isError"], false, "{rebuilt}");
        assert_eq!(incremental, links_by_note(&app, tenant.id, vault.id).await, "{name}: index equals a rebuild");
    }
}

/// A move reads the notes that link what moves from the index: it first brings the index up to
/// every commit (here nothing was indexed as it was written), and when that takes longer than
/// `index.rewrite_wait_ms` (another indexer holds the vault) it moves nothing and says so.
#[tokio::test]
async fn a_move_waits_for_the_index_to_cover_every_commit() {
    let app = TestApp::spawn_with(|c| {
        c.tools.confirm_destructive = false;
        c.index.inline_deadline_ms = 0;
        c.index.rewrite_wait_ms = 500;
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let notes = 20;
    for i in 0..notes {
        ok(
            &app,
            &token,
            "write_note",
            json!({"vault": V, "path": format!("n{i}.md"), "content": format!("[[T]] {i}\n")}),
        )
        .await;
    }
    ok(&app, &token, "write_note", json!({"vault": V, "path": "T.md", "content": "target\n"})).await;
    let index = |app: &TestApp| {
        let (store, tenant, vault) = (app.store.clone(), tenant.id, tenant.vault_id);
        async move {
            let mut tx = store.begin(tenant).await.unwrap();
            tx.index_progress(vault).await.unwrap()
        }
    };
    let (head, indexed) = index(&app).await;
    assert!(indexed < head, "nothing was indexed inline: {indexed} of {head}");

    // Another indexer holds the vault: the move waits its time, then refuses, moving nothing.
    let mut held = app.store.begin(tenant.id).await.unwrap();
    held.lock_index(tenant.vault_id, true).await.unwrap();
    let refused = err(&app, &token, "move_note", json!({"vault": V, "from": "T.md", "to": "U.md"})).await;
    assert_eq!(
        (refused["code"].as_str(), refused["details"]["dependency"].as_str()),
        (Some("service_unavailable"), Some("index")),
        "{refused}"
    );
    assert_eq!(refused["details"]["behind"], head - indexed, "{refused}");
    held.commit().await.unwrap();
    assert_eq!(text(&app, &token, "T.md").await.as_deref(), Some("target\n"));
    assert_eq!(text(&app, &token, "U.md").await, None);

    // Free to index, the move catches the index up and rewrites every link.
    let moved = ok(&app, &token, "move_note", json!({"vault": V, "from": "T.md", "to": "U.md"})).await;
    assert_eq!(moved["backlinks_updated"], json!({"notes": notes, "links": notes}), "{moved}");
    for i in 0..notes {
        assert_eq!(text(&app, &token, &format!("n{i}.md")).await.unwrap(), format!("[[U]] {i}\n"));
    }
    // rewrite_link reads the same index the same way.
    ok(&app, &token, "write_note", json!({"vault": V, "path": "late.md", "content": "[[U]] late\n"})).await;
    let retargeted =
        ok(&app, &token, "rewrite_link", json!({"vault": V, "from_target": "U", "to_target": "W", "dry_run": true}))
            .await;
    assert_eq!(retargeted["notes_changed"], notes + 1, "{retargeted}");
}
