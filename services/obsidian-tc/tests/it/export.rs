//! Export: a vault (over the admin API) and a whole tenant (the CLI) as tar archives that
//! Debian's tar reads, whose index names every file with its SHA-256, which import (POST /v1/admin/imports, `tenant import`) into another
//! tenant with the same content, memory and ACLs, and which carry the memory and the audit trail.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, cli_with_env, stderr, stdout};
use crate::mcp::call;
use crate::sync::{corpus, remote_env, run_ok, temp_dir};

fn sha256(bytes: &[u8]) -> String {
    obsidian_tc::sync_client::sha256_hex(bytes)
}

/// Unpacks `archive` into a fresh folder with Debian's tar.
fn untar(archive: &Path) -> std::path::PathBuf {
    let dir = temp_dir("export-out");
    let out = std::process::Command::new("tar").arg("-xf").arg(archive).arg("-C").arg(&dir).output().unwrap();
    assert!(out.status.success(), "tar -xf: {}", String::from_utf8_lossy(&out.stderr));
    dir
}

/// Every `index/files-*.jsonl` line under `root`: path to (size, sha256).
fn index_of(root: &Path) -> BTreeMap<String, (i64, String)> {
    let mut index = BTreeMap::new();
    let mut chunks: Vec<_> = std::fs::read_dir(root.join("index")).unwrap().map(|e| e.unwrap().path()).collect();
    chunks.sort();
    for chunk in chunks {
        for line in std::fs::read_to_string(chunk).unwrap().lines() {
            let row: Value = serde_json::from_str(line).unwrap();
            index.insert(
                row["path"].as_str().unwrap().to_string(),
                (row["size"].as_i64().unwrap(), row["sha256"].as_str().unwrap().to_string()),
            );
        }
    }
    index
}

fn rows(root: &Path, table: &str) -> Vec<Value> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root.join("data")).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with(&format!("{table}-")) {
            for line in std::fs::read_to_string(path).unwrap().lines() {
                found.push(serde_json::from_str(line).unwrap());
            }
        }
    }
    found
}

#[tokio::test]
async fn a_vault_exports_as_a_tar_whose_index_holds_and_which_imports_into_another_tenant() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (token, _) = a.token(&app.store, "*", false, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;
    let env = remote_env(&app, &token);
    let dir = corpus("starter-vault").display().to_string();
    tokio::task::spawn_blocking(move || run_ok(&env, &["vault", "import", &dir, "--vault", "Notes", "--quiet"]))
        .await
        .unwrap();
    // Names ustar alone cannot hold, and memory.
    let long = format!("{}/Réunion: notes.md", "a-very-long-folder-name".repeat(5));
    // (Through sync, which takes the names real vaults have.)
    let names = [(long.as_str(), Some("long and unicode")), ("Time 10:30.md", Some("colon"))];
    crate::index::commit(&app, &token, "Notes", &names).await;
    let made = call(
        &app,
        "/mcp",
        &token,
        "create_entity",
        json!({"vault": "Notes", "type": "person", "name": "Ana", "observations": ["in Lisbon"]}),
    )
    .await;
    assert_eq!(made["isError"], false, "{made}");

    let (status, rule) = crate::sync::api(
        &app,
        &token,
        reqwest::Method::PUT,
        "/v1/acl",
        Some(json!({"vault": "Notes", "group": "eng", "read_paths": ["Projects/**"]})),
    )
    .await;
    assert_eq!(status, 200, "{rule}");

    let response = app.http.get(app.url("/v1/admin/vaults/Notes/export")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-tar");
    let bytes = response.bytes().await.unwrap();
    let archive = temp_dir("export").join("notes.tar");
    std::fs::write(&archive, &bytes).unwrap();
    let root = untar(&archive);

    // The manifest, the end marker, and an index that holds for every file unpacked.
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(root.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        (manifest["format"].as_str(), manifest["vault"]["name"].as_str()),
        (Some("obsidian-tc-export/1"), Some("Notes"))
    );
    assert!(manifest["change_log_head"].as_i64().unwrap() > 100, "{manifest}");
    let end: Value = serde_json::from_str(&std::fs::read_to_string(root.join("END.json")).unwrap()).unwrap();
    assert_eq!(end["complete"], true);
    let index = index_of(&root);
    assert_eq!(index.len() as u64, end["carried"]["files"].as_u64().unwrap());
    assert!(index.len() > 100 && index.contains_key(&long) && index.contains_key("Time 10:30.md"), "{}", index.len());
    for (path, (size, hash)) in &index {
        let content = std::fs::read(root.join("files").join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!((content.len() as i64, &sha256(&content)), (*size, hash), "{path}");
    }
    // Memory and the audit trail ride along.
    let entities = rows(&root, "memory_entities");
    assert_eq!(entities.len(), 1);
    assert_eq!(entities[0]["name"], "Ana");
    assert_eq!(rows(&root, "memory_observations").len(), 1);
    assert!(rows(&root, "audit_log").iter().any(|r| r["action"] == "create_entity"));

    // Imported into another tenant (over the admin API), everything comes back: the files, the
    // memory and the folder ACL, under the new tenant and vault.
    let imported = app
        .http
        .post(app.url("/v1/admin/imports?name=Copy"))
        .bearer_auth(&other)
        .header("content-type", "application/x-tar")
        .body(bytes.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(imported.status(), 200);
    let imported: Value = imported.json().await.unwrap();
    assert_eq!(imported["vaults"], json!(["Copy"]), "{imported}");
    assert_eq!(imported["files"].as_u64(), Some(index.len() as u64), "{imported}");
    assert_eq!(imported["rows"]["memory_entities"], 1, "{imported}");
    assert_eq!(imported["rows"]["acl_rules"], 1, "{imported}");
    let again = app.http.get(app.url("/v1/admin/vaults/Copy/export")).bearer_auth(&other).send().await.unwrap();
    let copy = temp_dir("export").join("copy.tar");
    std::fs::write(&copy, again.bytes().await.unwrap()).unwrap();
    let copied_root = untar(&copy);
    let copied = index_of(&copied_root);
    let strip =
        |i: &BTreeMap<String, (i64, String)>| i.iter().map(|(p, (_, h))| (p.clone(), h.clone())).collect::<Vec<_>>();
    assert_eq!(strip(&copied), strip(&index), "the other tenant holds the same files");
    // The same rows but for the tenant and the vault they belong to.
    let without_owner = |rows: Vec<Value>, tenant: uuid::Uuid| {
        rows.into_iter()
            .map(|mut row| {
                let fields = row.as_object_mut().unwrap();
                assert_eq!(fields.remove("tenant_id"), Some(json!(tenant)), "{fields:?}");
                fields.remove("vault_id");
                row
            })
            .collect::<Vec<_>>()
    };
    for table in ["memory_entities", "memory_observations", "acl_rules"] {
        assert_eq!(without_owner(rows(&copied_root, table), b.id), without_owner(rows(&root, table), a.id), "{table}");
    }
    let found =
        call(&app, "/mcp", &other, "get_entity", json!({"vault": "Copy", "type": "person", "name": "Ana"})).await;
    assert_eq!(found["isError"], false, "the memory answers in the new vault: {found}");
    assert!(found.to_string().contains("in Lisbon"), "{found}");
    // The first tenant's vault, and its memory, are untouched and still its own.
    let theirs =
        call(&app, "/mcp", &token, "get_entity", json!({"vault": "Notes", "type": "person", "name": "Ana"})).await;
    assert_eq!(theirs["isError"], false, "{theirs}");

    // A cut archive, or one whose file differs from its index, is refused and leaves no vault.
    let cut = bytes.slice(..bytes.len() / 2);
    let mut damaged = bytes.to_vec();
    let at = damaged.windows(b"Time 10:30".len()).position(|w| w == b"Time 10:30").unwrap();
    let content_at = at - at % 512 + 512;
    damaged[content_at..content_at + 5].copy_from_slice(b"XXXXX");
    for (body, why) in [(cut.to_vec(), "stops"), (damaged, "differs"), (b"not a tar".to_vec(), "")] {
        let refused = app
            .http
            .post(app.url("/v1/admin/imports?name=Broken"))
            .bearer_auth(&other)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 400);
        let refused: Value = refused.json().await.unwrap();
        assert_eq!(refused["error"]["code"], "invalid_input", "{refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains(why), "{refused}");
        let listed: Value =
            app.http.get(app.url("/v1/admin/vaults")).bearer_auth(&other).send().await.unwrap().json().await.unwrap();
        assert!(
            listed["vaults"].as_array().unwrap().iter().all(|v| v["name"] != "Broken"),
            "nothing of a failed import is left: {listed}"
        );
    }
    // A name taken is a conflict.
    let taken = app
        .http
        .post(app.url("/v1/admin/imports?name=Copy"))
        .bearer_auth(&other)
        .body(bytes.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(taken.status(), 409);

    // Scopes, and another tenant's ids answer as missing.
    let (reader, _) = a.token(&app.store, "read:notes", false, None).await;
    let refused = app.http.get(app.url("/v1/admin/vaults/Notes/export")).bearer_auth(&reader).send().await.unwrap();
    assert_eq!(refused.status(), 403);
    let foreign = app.url(&format!("/v1/admin/vaults/{}/export", a.vault_id));
    assert_eq!(app.http.get(foreign).bearer_auth(&other).send().await.unwrap().status(), 404);
}

#[tokio::test]
async fn the_cli_exports_a_whole_tenant_with_every_vault_and_its_tables() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let (token, _) = a.token(&app.store, "*", false, None).await;
    let mut tx = app.store.begin(a.id).await.unwrap();
    tx.create_vault("Work").await.unwrap();
    tx.commit().await.unwrap();
    for vault in ["Notes", "Work"] {
        let wrote =
            call(&app, "/mcp", &token, "write_note", json!({"vault": vault, "path": "n.md", "content": vault})).await;
        assert_eq!(wrote["isError"], false, "{wrote}");
    }
    let out = temp_dir("export").join("acme.tar");
    let answer = cli_with_env(app.iso.env(), &["tenant", "export", "acme", "--out", out.to_str().unwrap()]);
    assert!(answer.status.success(), "{}{}", stdout(&answer), stderr(&answer));
    assert!(stdout(&answer).contains("2 files"), "{}", stdout(&answer));
    assert!(!out.with_extension("partial").exists());
    let root = untar(&out);
    let about: Value = serde_json::from_str(&std::fs::read_to_string(root.join("tenant.json")).unwrap()).unwrap();
    assert_eq!(about["tenant"]["slug"], "acme");
    assert_eq!(about["vaults"].as_array().unwrap().len(), 2);
    for vault in ["Notes", "Work"] {
        let base = root.join("vaults").join(vault);
        assert_eq!(std::fs::read_to_string(base.join("files/n.md")).unwrap(), vault);
        assert_eq!(index_of(&base).len(), 1);
    }
    assert!(root.join("END.json").exists());

    // The whole archive imports into a new tenant: each vault under its name, the same files.
    let c = Tenant::create(&app.store, "initech").await;
    let mut tx = app.store.begin(c.id).await.unwrap();
    let notes = tx.vault_by_name("Notes").await.unwrap().unwrap();
    tx.delete_vault(notes.id, std::time::Duration::ZERO).await.unwrap();
    tx.purge_vault_now(notes.id).await.unwrap();
    tx.commit().await.unwrap();
    otc_kernel::lifecycle::erase_deleted_vault(&app.store, &app.deps.kv, c.id, notes.id, None).await.unwrap();
    let answer = cli_with_env(app.iso.env(), &["tenant", "import", "initech", "--archive", out.to_str().unwrap()]);
    assert!(answer.status.success(), "{}{}", stdout(&answer), stderr(&answer));
    assert!(stdout(&answer).contains("vault(s) Notes, Work; 2 files"), "{}", stdout(&answer));
    let (theirs, _) = c.token(&app.store, "*", false, None).await;
    for vault in ["Notes", "Work"] {
        let read = call(&app, "/mcp", &theirs, "read_note", json!({"vault": vault, "path": "n.md"})).await;
        assert_eq!(read["isError"], false, "{read}");
        assert!(read.to_string().contains(vault), "{read}");
    }
    // A second import finds the names taken, says so, and changes nothing.
    let again = cli_with_env(app.iso.env(), &["tenant", "import", "initech", "--archive", out.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains("already has a vault named Notes"), "{}", stderr(&again));
}
