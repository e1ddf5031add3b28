//! Names as real vaults have them: import, sync and dev carry every file a vault holds (`a:b.md`,
//! `What? Why*.md`, an NFC and an NFD spelling of one name, `Case.md` beside `case.md`, link
//! syntax, invisible characters), warning once per file; a file that cannot be carried is left
//! out and counted, never aborting the rest. The write tools refuse a NEW name that macOS or
//! Windows could not hold beside an existing one, naming it only when the caller may read it.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Child, Isolation, Tenant, TestApp, cli_with_env, stderr, stdout};
use crate::index::commit;
use crate::sync::{api, remote_env, run_ok, temp_dir};
use crate::write::{V, err, ok, setup_with};

const NFC: &str = "Notes/caf\u{e9}.md";
const NFD: &str = "Notes/cafe\u{301}.md";

/// What a community vault may hold, and whether each name is warned about on import.
const NAMES: [(&str, bool); 9] = [
    ("a:b.md", true),
    ("What? Why*.md", true),
    (NFC, true),
    (NFD, true),
    ("Case.md", true),
    ("case.md", true),
    ("Zero\u{200B}width.md", true),
    ("C# notes [draft].md", false),
    ("Plain.md", false),
];

fn write_vault(root: &Path) {
    for (name, _) in NAMES {
        let full = root.join(name);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, format!("# {name}\n")).unwrap();
    }
}

/// Lines of `log` that warn about exactly `path`.
fn warnings_about(log: &str, path: &str) -> usize {
    let prefix = format!("obsidian-tc: warning: {path}: ");
    log.lines().filter(|l| l.starts_with(&prefix)).count()
}

async fn manifest(app: &TestApp, token: &str) -> BTreeSet<String> {
    let (_, files) = api(app, token, reqwest::Method::GET, "/v1/vaults/Notes/files", None).await;
    files["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect()
}

fn expected() -> BTreeSet<String> {
    NAMES.iter().map(|(n, _)| n.to_string()).collect()
}

#[tokio::test]
async fn import_stores_every_name_warns_once_each_and_reports_what_it_could_not_store() {
    let app = TestApp::spawn_with(|c| c.sync.max_blob_bytes = 4096).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "read:notes,write:notes,delete:notes", false, None).await;
    let env = remote_env(&app, &token);
    let root = temp_dir("names");
    let src = root.join("vault");
    write_vault(&src);
    let s = src.display().to_string();

    let e = env.clone();
    let a = s.clone();
    let out = tokio::task::spawn_blocking(move || cli_with_env(e, &["vault", "import", &a, "--vault", "Notes"]))
        .await
        .unwrap();
    let (o, log) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "every file stored: exit 0\n{o}\n{log}");
    assert!(o.starts_with("imported 9 files"), "{o}");
    assert!(o.contains("7 stored under a name other systems cannot hold"), "{o}");
    for (name, warned) in NAMES {
        assert_eq!(warnings_about(&log, name), usize::from(warned), "{name:?}:\n{log}");
    }
    assert!(log.contains("Windows cannot store"), "{log}");
    assert!(log.contains("the same name in another Unicode normalization"), "{log}");
    assert!(log.contains("U+200B"), "{log}");
    assert_eq!(manifest(&app, &token).await, expected(), "every name stored byte for byte");

    // A rerun sends nothing and warns about nothing.
    let e = env.clone();
    let a = s.clone();
    let again = tokio::task::spawn_blocking(move || cli_with_env(e, &["vault", "import", &a, "--vault", "Notes"]))
        .await
        .unwrap();
    assert!(again.status.success());
    assert!(stdout(&again).starts_with("imported 0 files") && stdout(&again).contains("9 already there"));
    assert!(!stderr(&again).contains("warning"), "{}", stderr(&again));

    // One file too large for the server and one name that is no path: both left out and
    // reported, the rest stored, and the exit status says the copy is incomplete.
    std::fs::write(src.join("Big.bin"), vec![7u8; 10_000]).unwrap();
    std::fs::write(src.join("bad\u{1}name.md"), "x").unwrap();
    std::fs::write(src.join("Later: notes.md"), "later\n").unwrap();
    let e = env.clone();
    let a = s.clone();
    let partial = tokio::task::spawn_blocking(move || cli_with_env(e, &["vault", "import", &a, "--vault", "Notes"]))
        .await
        .unwrap();
    let (o, log) = (stdout(&partial), stderr(&partial));
    assert_eq!(partial.status.code(), Some(1), "incomplete: exit 1\n{o}\n{log}");
    assert!(o.starts_with("imported 1 files") && o.contains("9 already there"), "{o}");
    assert!(
        log.contains("import incomplete: the vault holds 10 of the folder's 12 files; 2 could not be stored"),
        "{log}"
    );
    assert_eq!(warnings_about(&log, "Big.bin"), 1, "{log}");
    assert!(log.contains("Big.bin: not imported: refused by the server"), "{log}");
    assert!(log.contains("not imported: not a name a vault can hold"), "{log}");
    assert_eq!(warnings_about(&log, "Later: notes.md"), 1, "{log}");
    let mut want = expected();
    want.insert("Later: notes.md".into());
    assert_eq!(manifest(&app, &token).await, want);

    // Synced back into an empty folder (on Linux every name can be written): the same files.
    let back = root.join("back");
    let b = back.display().to_string();
    let e = env.clone();
    let synced = tokio::task::spawn_blocking(move || run_ok(&e, &["sync", &b, "--vault", "Notes"])).await.unwrap();
    assert!(synced.starts_with("pulled 10"), "{synced}");
    for name in &want {
        assert_eq!(
            std::fs::read(back.join(name)).unwrap(),
            std::fs::read(src.join(name)).unwrap(),
            "{name:?} came back byte for byte"
        );
    }
    let _ = std::fs::remove_dir_all(root);
    app.stop().await;
}

/// `dev --vault` on a folder whose names Windows or macOS could not hold starts, imports all of
/// it and warns once per file, not once per pass. A file it cannot carry (a name that is no
/// path) makes the start say "partly imported", never "imported".
#[tokio::test]
async fn dev_starts_on_a_vault_with_names_other_systems_cannot_hold() {
    let iso = Isolation::new().await;
    let root = temp_dir("dev-names");
    let vault = root.join("Community");
    write_vault(&vault);
    std::fs::write(vault.join("bad\u{1}name.md"), "x").unwrap();
    let mut env = iso.env();
    env.push(("OTC__OBJECT_STORE__KIND".into(), "local".into()));
    let data = root.join("state");
    let dev = Child::start(
        env,
        &["dev", "--vault", &vault.display().to_string(), "--data-dir", &data.display().to_string()],
        true,
    );
    let token = std::fs::read_to_string(data.join("dev-token")).unwrap();
    let mut imported = false;
    for _ in 0..200 {
        if dev.log_text().contains("vault folder partly imported") {
            imported = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = dev.log_text();
    assert!(imported && log.contains("1 could not be carried"), "log:\n{log}");
    assert!(!log.contains("vault folder imported"), "log:\n{log}");
    let http = reqwest::Client::new();
    let listed: Value =
        http.get(dev.url("/v1/vaults/Community/files")).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    let paths: BTreeSet<String> =
        listed["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect();
    assert_eq!(paths, expected(), "log:\n{}", dev.log_text());

    // A new file with such a name reaches the vault too; passes later, still one warning each.
    std::fs::write(vault.join("Q: what next?.md"), "q\n").unwrap();
    let mut reached = false;
    for _ in 0..100 {
        let response = http
            .get(dev.url("/v1/vaults/Community/file?path=Q%3A%20what%20next%3F.md"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        if response.status() == reqwest::StatusCode::OK {
            reached = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reached, "log:\n{}", dev.log_text());
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let log = dev.log_text();
    for (name, warned) in NAMES {
        assert_eq!(warnings_about(&log, name), usize::from(warned), "{name:?}:\n{log}");
    }
    assert_eq!(warnings_about(&log, "Q: what next?.md"), 1, "{log}");
    assert_eq!(log.matches("not synced: not a name a vault can hold").count(), 1, "{log}");
    drop(dev);
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn a_new_name_that_would_clash_on_macos_or_windows_is_refused_naming_the_file() {
    let (app, token) = setup_with(false, None).await;
    commit(&app, &token, V, &[(NFC, Some("café\n")), ("Notes/x.md", Some("x\n")), ("a.md", Some("see [[b]]\n"))]).await;
    let write = |path: &str| json!({"vault": V, "path": path, "content": "new\n"});

    // Another normalization of an existing name.
    let e = err(&app, &token, "write_note", write(NFD)).await;
    assert_eq!(e["code"], "conflict", "{e}");
    assert_eq!((e["details"]["existing"].as_str(), e["details"]["field"].as_str()), (Some(NFC), Some("path")));
    assert_eq!(e["details"]["clash"], "file");
    // Another case.
    let e = err(&app, &token, "write_note", write("NOTES/x.md")).await;
    assert_eq!((e["code"].as_str(), e["details"]["existing"].as_str()), (Some("conflict"), Some("Notes/x.md")), "{e}");
    // A folder spelled otherwise.
    let e = err(&app, &token, "write_note", write("NOTES/y.md")).await;
    assert_eq!((e["code"].as_str(), e["details"]["existing"].as_str()), (Some("conflict"), Some("Notes")), "{e}");
    assert_eq!(e["details"]["clash"], "folder");
    // The same through the other tools that make names.
    let e = err(&app, &token, "copy_note", json!({"vault": V, "from": "a.md", "to": "notes/X.md"})).await;
    assert_eq!((e["code"].as_str(), e["details"]["field"].as_str()), (Some("conflict"), Some("to")), "{e}");
    let e = err(&app, &token, "append_note", json!({"vault": V, "path": "A.md", "content": "x"})).await;
    assert_eq!((e["code"].as_str(), e["details"]["existing"].as_str()), (Some("conflict"), Some("a.md")), "{e}");
    let e = err(
        &app,
        &token,
        "bulk_create_notes",
        json!({"vault": V, "items": [{"path": "New.md", "content": "1"}, {"path": "new.md", "content": "2"}]}),
    )
    .await;
    assert_eq!((e["code"].as_str(), e["details"]["index"].as_u64()), (Some("conflict"), Some(1)), "{e}");
    // Invisible and bidi-control characters, and a name Windows cannot store.
    let e = err(&app, &token, "write_note", write("Zero\u{200B}width.md")).await;
    assert_eq!((e["code"].as_str(), e["details"]["characters"][0].as_str()), (Some("path_invalid"), Some("U+200B")));
    let e = err(&app, &token, "write_note", write("evil\u{202E}dm.txt.md")).await;
    assert_eq!(e["code"], "path_invalid", "{e}");
    assert_eq!(err(&app, &token, "write_note", write("a:b.md")).await["code"], "path_invalid");
    // Nothing was written.
    let (_, files) = api(&app, &token, reqwest::Method::GET, "/v1/vaults/Notes/files", None).await;
    assert_eq!(files["files"].as_array().unwrap().len(), 4, "{files}");

    // A case-only rename of the file itself stays allowed, links and all.
    let moved = ok(&app, &token, "move_note", json!({"vault": V, "from": "a.md", "to": "A.md"})).await;
    assert_eq!(moved["to"], "A.md", "{moved}");
    assert_eq!(ok(&app, &token, "note_exists", json!({"vault": V, "path": "A.md"})).await["exists"], true);
    assert_eq!(ok(&app, &token, "note_exists", json!({"vault": V, "path": "a.md"})).await["exists"], false);
    // An existing file with a clashing name stays writable under its own name.
    ok(&app, &token, "write_note", json!({"vault": V, "path": NFC, "content": "still\n", "mode": "upsert"})).await;
    app.stop().await;
}

#[tokio::test]
async fn a_clash_with_a_file_the_caller_cannot_read_is_refused_without_naming_it() {
    let app = TestApp::spawn_with(|c| {
        c.tools.confirm_destructive = false;
        c.acl.push(otc_config::AclEntry {
            tenant: Some("acme".into()),
            vault: V.into(),
            read_paths: Some(vec!["Public/**".into(), "hidden/**".into()]),
            write_paths: None,
            delete_paths: None,
        });
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    // The sync API refuses paths the caller cannot read, so the hidden file is seeded directly.
    app.seed(&token, V, &[("Hidden/Plan.md", Some("secret\n")), ("Public/A.md", Some("a\n"))]).await;

    let e = err(&app, &token, "write_note", json!({"vault": V, "path": "hidden/plan.md", "content": "x"})).await;
    assert_eq!(e["code"], "conflict", "{e}");
    assert!(e["details"].get("existing").is_none(), "a hidden file is never named: {e}");
    assert!(!e.to_string().contains("Hidden"), "{e}");
    let e = err(&app, &token, "write_note", json!({"vault": V, "path": "hidden/Other.md", "content": "x"})).await;
    assert_eq!(e["code"], "conflict", "{e}");
    assert_eq!(e["details"]["clash"], "folder");
    assert!(e["details"].get("existing").is_none() && !e.to_string().contains("Hidden"), "{e}");
    // A readable one is named.
    let e = err(&app, &token, "write_note", json!({"vault": V, "path": "Public/a.md", "content": "x"})).await;
    assert_eq!(e["details"]["existing"], "Public/A.md", "{e}");
    app.stop().await;
}

/// The client's clash key (Rust) and the server's (the SQL the index holds) agree on every
/// character both know (Rust 1.95 is at Unicode 17, Postgres 18 at 16: a letter Unicode 17 added
/// folds only in Rust) and on decomposed spellings.
#[tokio::test]
async fn the_clash_key_is_the_same_in_rust_and_in_postgres() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let mut inputs: Vec<String> =
        (1u32..=0x10FFFF).filter_map(char::from_u32).filter(|c| !c.is_control()).map(|c| format!("x{c}")).collect();
    inputs.extend(
        ["Notes/cafe\u{301}.md", "A\u{30A}", "\u{1E9B}\u{323}", "ΟΔΟΣ", "Ωmega", "ǅ", "ﬅ", "İstanbul"]
            .map(String::from),
    );
    let server = otc_store::testing::clash_keys(&store, &inputs).await.unwrap();
    let known = server.iter().filter(|(_, assigned)| *assigned).count();
    assert!(known > 150_000, "the comparison covers every assigned character: {known}");
    let differ: Vec<String> = inputs
        .iter()
        .zip(&server)
        .filter(|(input, (key, assigned))| *assigned && otc_vault::clash_key(input) != *key)
        .map(|(input, (key, _))| (input, key))
        .map(|(input, key)| format!("{input:?}: rust {:?}, postgres {key:?}", otc_vault::clash_key(input)))
        .collect();
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.iter().take(50).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// Writers racing to create `Race.md`, `race.md`, `RACE.md` and `rAce.md` at once: exactly one
/// lands, whatever the interleaving, because the commit checks the clash key under the vault's
/// lock; the others answer the clash. restore_note brings a deleted note back only under a name
/// nothing has taken meanwhile.
#[tokio::test]
async fn clashing_names_written_at_once_land_only_one() {
    let (app, token) = setup_with(false, None).await;
    for trial in 0..6 {
        let spellings = [
            format!("Race{trial}.md"),
            format!("race{trial}.md"),
            format!("RACE{trial}.md"),
            format!("rAce{trial}.md"),
        ];
        let calls = spellings.iter().map(|path| {
            let (app, token) = (&app, &token);
            async move {
                crate::mcp::call(app, "/mcp", token, "write_note", json!({"vault": V, "path": path, "content": "x\n"}))
                    .await
            }
        });
        let results = futures::future::join_all(calls).await;
        let landed = results.iter().filter(|r| r["isError"] == false).count();
        assert_eq!(landed, 1, "trial {trial}: {results:?}");
        for refused in results.iter().filter(|r| r["isError"] == true) {
            assert_eq!(crate::mcp::error_of(refused)["code"], "conflict", "trial {trial}: {refused}");
        }
        let files = manifest_paths(&app, &token).await;
        let kept: Vec<_> = files.iter().filter(|p| p.to_lowercase() == format!("race{trial}.md")).collect();
        assert_eq!(kept.len(), 1, "trial {trial}: {files:?}");
    }

    // A deleted note, its name taken in another case meanwhile: the restore is refused.
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Gone.md", "content": "old\n"})).await;
    ok(&app, &token, "delete_note", json!({"vault": V, "path": "Gone.md", "permanent": false})).await;
    let snaps = ok(&app, &token, "list_snapshots", json!({"vault": V, "path": "Gone.md"})).await;
    let id = snaps["snapshots"][0]["id"].as_str().unwrap().to_string();
    ok(&app, &token, "write_note", json!({"vault": V, "path": "GONE.md", "content": "new\n"})).await;
    let e = err(&app, &token, "restore_note", json!({"vault": V, "path": "Gone.md", "snapshot_id": id})).await;
    assert_eq!((e["code"].as_str(), e["details"]["existing"].as_str()), (Some("conflict"), Some("GONE.md")), "{e}");
    assert!(!manifest_paths(&app, &token).await.contains("Gone.md"));
    app.stop().await;
}

async fn manifest_paths(app: &TestApp, token: &str) -> BTreeSet<String> {
    let (_, files) = api(app, token, reqwest::Method::GET, "/v1/vaults/Notes/files", None).await;
    files["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect()
}
