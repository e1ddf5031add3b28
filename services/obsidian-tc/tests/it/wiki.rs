//! The wiki workflow: find_existing_page's verdicts and evidence on constructed cases, and the
//! raw sources folder no tool may change.

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::mcp::{call, error_of};

async fn tool(app: &TestApp, token: &str, name: &str, args: Value) -> Value {
    let result = call(app, "/mcp", token, name, args.clone()).await;
    assert_ne!(result["isError"], true, "{name} {args}: {result}");
    result["structuredContent"].clone()
}

/// An app whose vaults keep their wiki in wiki/ (raw sources in raw/), with Private/ unreadable.
async fn wiki_app() -> (TestApp, String) {
    let app = TestApp::spawn_with(|c| {
        c.wiki.folder = Some("wiki".into());
        c.tools.confirm_destructive = false;
        c.acl.push(otc_config::AclEntry {
            tenant: Some("acme".into()),
            vault: "Notes".into(),
            read_paths: Some(vec![
                "wiki/**".into(),
                "raw/**".into(),
                "Notes/**".into(),
                "Archive/**".into(),
                "rawness/**".into(),
                ".obsidian/**".into(),
            ]),
            write_paths: None,
            delete_paths: None,
        });
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(
        &token,
        "Notes",
        &[
            ("wiki/Spaced repetition.md", Some("# Spaced repetition\nReview at growing intervals.\n")),
            ("wiki/SRS.md", Some("---\naliases: [Leitner system]\n---\nBoxes of cards.\n")),
            ("wiki/concepts/c1.md", Some("# Forgetting curve\nEbbinghaus.\n")),
            ("wiki/people/Adams.md", Some("---\nwikidata: https://www.wikidata.org/wiki/Q42\n---\nAuthor.\n")),
            ("wiki/Loci.md", Some("---\ntitle: Memory palace\n---\nPlaces.\n")),
            ("wiki/a/Index card.md", Some("one\n")),
            ("wiki/b/Index card.md", Some("two\n")),
            ("wiki/Active recall.md", Some("Testing yourself.\n")),
            ("wiki/index.md", Some("---\ngenerated_by: obsidian-tc\n---\n")),
            ("Notes/Study.md", Some("Try [[Active recall|retrieval practice]] and [[Interleaving]].\n")),
            ("Notes/Plan.md", Some("Then [[interleaving]].\n")),
            ("raw/Clip.md", Some("A clipping about memory.\n")),
            ("raw/On loci.md", Some("See [[Loci]].\n")),
            ("Notes/Places.md", Some("Also [[Loci]].\n")),
            ("Archive/Old topic.md", Some("old\n")),
            ("Private/Secret plan.md", Some("hidden\n")),
            (".obsidian/app.json", Some(r#"{"userIgnoreFilters": ["Archive/"]}"#)),
        ],
    )
    .await;
    (app, token)
}

fn evidence(c: &Value) -> Vec<&str> {
    c["evidence"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn find_existing_page_gives_each_verdict_on_its_evidence() {
    let (app, token) = wiki_app().await;
    let find = |topic: &'static str| {
        let (app, token) = (&app, &token);
        async move { tool(app, token, "find_existing_page", json!({"vault": "Notes", "topic": topic})).await }
    };
    for (topic, path, kind) in [
        ("spaced-repetition", "wiki/Spaced repetition.md", "file_name"),
        ("wiki/Spaced repetition", "wiki/Spaced repetition.md", "path"),
        ("Leitner  system", "wiki/SRS.md", "alias"),
        ("forgetting curve", "wiki/concepts/c1.md", "h1"),
        ("Douglas Adams (Q42)", "wiki/people/Adams.md", "wikidata"),
        ("Memory palace", "wiki/Loci.md", "title"),
    ] {
        let found = find(topic).await;
        assert_eq!(found["verdict"], "exists", "{topic}: {found}");
        let first = &found["candidates"][0];
        assert_eq!(first["path"], path, "{topic}: {found}");
        assert!(evidence(first).contains(&kind), "{topic}: {found}");
        assert_eq!(first["identity"], true);
    }
    // The file name and the H1 name the same page: still one page, exists, both listed.
    let both = find("Spaced repetition").await;
    assert_eq!(evidence(&both["candidates"][0]), ["file_name", "h1"], "{both}");

    // Two pages of one name: ambiguous.
    let two = find("index card").await;
    assert_eq!(two["verdict"], "ambiguous", "{two}");
    assert_eq!(two["candidates"].as_array().unwrap().len(), 2);

    // Soft evidence only (other notes link the text): ambiguous, never exists.
    let soft = find("retrieval practice").await;
    assert_eq!(soft["verdict"], "ambiguous", "{soft}");
    assert_eq!(soft["candidates"][0]["path"], "wiki/Active recall.md");
    assert_eq!(evidence(&soft["candidates"][0]), ["link_text"]);
    assert_eq!(soft["candidates"][0]["identity"], false);

    // Nothing names it, but notes link it to nothing: new, and wanted.
    let wanted = find("Interleaving").await;
    assert_eq!(wanted["verdict"], "new", "{wanted}");
    assert_eq!(wanted["wanted_by"]["count"], 2, "{wanted}");
    assert_eq!(wanted["suggested_action"], "create the page");

    // A raw source and a generated page are never candidates; a note the caller cannot read
    // is as missing; an excluded note's name is taken, and it says so.
    for topic in ["clip", "index", "secret plan"] {
        assert_eq!(find(topic).await["verdict"], "new", "{topic}");
    }
    let old = find("old topic").await;
    assert_eq!(old["verdict"], "exists", "{old}");
    assert_eq!(old["candidates"][0]["excluded"], true, "{old}");

    // Without an embedding provider the semantic check is listed as skipped; the judge too
    // when asked for. concise drops the evidence's detail.
    let asked = tool(
        &app,
        &token,
        "find_existing_page",
        json!({"vault": "Notes", "topic": "Douglas Adams (Q42)", "judge": true, "response_format": "concise"}),
    )
    .await;
    let skipped: Vec<&str> =
        asked["skipped"].as_array().unwrap().iter().map(|s| s["check"].as_str().unwrap()).collect();
    assert_eq!(skipped, ["semantic", "judge"], "{asked}");
    assert!(asked["candidates"][0]["evidence"][0].get("detail").is_none(), "{asked}");
    let folder =
        tool(&app, &token, "find_existing_page", json!({"vault": "Notes", "topic": "index card", "folder": "wiki/a"}))
            .await;
    assert_eq!(folder["verdict"], "exists", "only pages under the folder count: {folder}");
    let r = call(&app, "/mcp", &token, "find_existing_page", json!({"vault": "Notes", "topic": "  - "})).await;
    assert_eq!(error_of(&r)["code"], "invalid_input", "{r}");
    app.stop().await;
}

#[tokio::test]
async fn no_tool_changes_the_raw_sources_folder_but_a_person_s_sync_can() {
    let (app, token) = wiki_app().await;
    let v = json!("Notes");
    for (name, args) in [
        ("write_note", json!({"vault": v, "path": "raw/New.md", "content": "x"})),
        ("append_note", json!({"vault": v, "path": "raw/Clip.md", "content": "more"})),
        ("delete_note", json!({"vault": v, "path": "raw/Clip.md"})),
        ("move_note", json!({"vault": v, "from": "raw/Clip.md", "to": "wiki/Clip.md"})),
        ("move_note", json!({"vault": v, "from": "wiki/Loci.md", "to": "raw/Loci.md"})),
        ("write_note", json!({"vault": v, "path": "RAW/Other.md", "content": "case-blind"})),
    ] {
        let r = call(&app, "/mcp", &token, name, args.clone()).await;
        let err = error_of(&r);
        assert_eq!(err["code"], "acl_denied", "{name} {args}: {r}");
        assert_eq!(err["details"]["reason"], "immutable_raw_folder", "{name} {args}: {r}");
    }
    // Reads work; inspect_acl says why a write does not.
    let read = tool(&app, &token, "read_note", json!({"vault": v, "path": "raw/Clip.md"})).await;
    assert_eq!(read["content"], "A clipping about memory.\n");
    let why = tool(&app, &token, "inspect_acl", json!({"vault": v, "path": "raw/Clip.md", "op": "write"})).await;
    assert_eq!(
        (why["decided_by"].as_str(), why["allowed"].as_bool()),
        (Some("immutable_folder"), Some(false)),
        "{why}"
    );
    // A sibling sharing the prefix is an ordinary folder.
    tool(&app, &token, "write_note", json!({"vault": v, "path": "rawness/Note.md", "content": "fine"})).await;
    // The sync API (a person's Obsidian, a web clipper) adds sources.
    crate::index::commit(&app, &token, "Notes", &[("raw/Added.md", Some("new source\n"))]).await;
    let read = tool(&app, &token, "read_note", json!({"vault": v, "path": "raw/Added.md"})).await;
    assert_eq!(read["content"], "new source\n");

    // A move repoints every link but a raw source's, goes ahead, and says which it left.
    let moved =
        tool(&app, &token, "move_note", json!({"vault": v, "from": "wiki/Loci.md", "to": "wiki/Method of loci.md"}))
            .await;
    assert_eq!(moved["backlinks_updated"]["notes"], 1, "{moved}");
    assert_eq!(moved["immutable_not_updated"], json!(["raw/On loci.md"]), "{moved}");
    assert_eq!(moved["immutable_not_updated_hidden"], 0, "{moved}");
    assert!(moved["immutable_warning"].as_str().is_some(), "{moved}");
    let raw = tool(&app, &token, "read_note", json!({"vault": v, "path": "raw/On loci.md"})).await;
    assert_eq!(raw["content"], "See [[Loci]].\n", "the raw note is as it was");
    let other = tool(&app, &token, "read_note", json!({"vault": v, "path": "Notes/Places.md"})).await;
    assert_eq!(other["content"], "Also [[Method of loci]].\n");
    let plain =
        tool(&app, &token, "move_note", json!({"vault": v, "from": "Notes/Places.md", "to": "Notes/Spots.md"})).await;
    assert!(plain.get("immutable_not_updated").is_none(), "no raw note involved: {plain}");
    app.stop().await;
}
