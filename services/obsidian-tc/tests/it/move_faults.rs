//! A move and its link rewrites are one transaction: SIGKILL of the server at any point during a
//! move with 1,000 backlink rewrites leaves the vault exactly as before or exactly as after,
//! index included; and two gateways moving and editing the same notes lose no update.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use otc_indexer::{Indexer, IndexerSettings};
use serde_json::{Value, json};

use crate::harness::{Child, Isolation, Tenant, TestApp};
use crate::write::{V, ok, text};

const NOTES: usize = 1000;

fn linking(target: &str, i: usize) -> String {
    format!("Note {i} links [[{target}]] and [[{target}#Part|the part]].\n")
}

/// One MCP tools/call against a base URL; the JSON-RPC reply, or None when the server died.
pub(crate) async fn mcp_call(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    name: &str,
    args: Value,
) -> Option<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}});
    let response = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .ok()?;
    response.json::<Value>().await.ok()
}

/// The vault's state: where the target is, and which version of the linking notes each path holds.
async fn state(store: &otc_store::Store, tenant: &Tenant) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut tx = store.begin(tenant.id).await.unwrap();
    let files = tx.files(tenant.vault_id, None, 5000).await.unwrap();
    assert_eq!(tx.verify_chain(tenant.vault_id).await.unwrap(), None, "the change log chains");
    tx.commit().await.unwrap();
    let targets: BTreeSet<String> =
        files.iter().filter(|f| f.path.starts_with("Target")).map(|f| f.path.clone()).collect();
    let versions: BTreeSet<String> =
        files.iter().filter(|f| f.path.starts_with("n/")).map(|f| hex::encode(f.hash)).collect();
    (targets, versions)
}

#[tokio::test]
async fn sigkill_during_a_move_with_a_thousand_rewrites_leaves_it_before_or_after() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "*", false, None).await;
    let mut env = iso.env();
    env.push(("OTC__TOOLS__CONFIRM_DESTRUCTIVE".into(), "false".into()));
    let http = reqwest::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();

    // The vault: Target A.md and 1,000 notes linking it twice each.
    let mut server = Child::start(env.clone(), &["serve"], true);
    let base = server.url("");
    let items: Vec<Value> =
        (0..NOTES).map(|i| json!({"path": format!("n/{i:04}.md"), "content": linking("Target A", i)})).collect();
    let made = mcp_call(&http, &base, &token, "bulk_create_notes", json!({"vault": V, "items": items})).await.unwrap();
    assert_eq!(made["result"]["isError"], false, "{made}");
    let made =
        mcp_call(&http, &base, &token, "write_note", json!({"vault": V, "path": "Target A.md", "content": "# Part\n"}))
            .await
            .unwrap();
    assert_eq!(made["result"]["isError"], false, "{made}");
    let expected = |target: &str| -> BTreeSet<String> {
        (0..NOTES).map(|i| obsidian_tc::sync_client::sha256_hex(linking(target, i).as_bytes())).collect()
    };

    // Trial 0 runs to completion and measures how long a move takes; the 20 trials after it
    // kill the server at points spread over that time (and a little past it).
    let started = Instant::now();
    let moved =
        mcp_call(&http, &base, &token, "move_note", json!({"vault": V, "from": "Target A.md", "to": "Target B.md"}))
            .await
            .unwrap();
    let took = started.elapsed();
    assert_eq!(
        moved["result"]["structuredContent"]["backlinks_updated"],
        json!({"notes": NOTES, "links": 2 * NOTES}),
        "{moved}"
    );
    assert_eq!(state(&store, &tenant).await, (BTreeSet::from(["Target B.md".to_string()]), expected("Target B")));
    server.signal("KILL");
    let _ = server.wait(Duration::from_secs(10));
    eprintln!("a move with {} rewrites took {took:?}", 2 * NOTES);

    let config = iso.config();
    let blobs = otc_blobs::Blobs::from_config(&config.object_store, Duration::from_secs(5)).unwrap();
    let indexer = Indexer::new(store.clone(), blobs, IndexerSettings::default());
    let (mut before, mut after) = (0, 0);
    let mut current = "Target B";
    for trial in 1..=20u32 {
        let mut server = Child::start(env.clone(), &["serve"], true);
        let base = server.url("");
        let next = if current == "Target A" { "Target B" } else { "Target A" };
        let request = tokio::spawn({
            let (http, base, token) = (http.clone(), base.clone(), token.clone());
            let args = json!({"vault": V, "from": format!("{current}.md"), "to": format!("{next}.md")});
            async move { mcp_call(&http, &base, &token, "move_note", args).await }
        });
        tokio::time::sleep(took.mul_f64(f64::from(trial) / 17.0)).await;
        server.signal("KILL");
        let _ = request.await.unwrap();
        let _ = server.wait(Duration::from_secs(10));

        let found = state(&store, &tenant).await;
        if found == (BTreeSet::from([format!("{current}.md")]), expected(current)) {
            before += 1;
        } else if found == (BTreeSet::from([format!("{next}.md")]), expected(next)) {
            after += 1;
            current = next;
        } else {
            panic!("trial {trial}: a half-applied move: targets {:?}, {} note versions", found.0, found.1.len());
        }
        // Index included: whatever the killed gateway did not index, the queued job brings in;
        // then every link resolves to where the target is.
        indexer.catch_up(tenant.id, tenant.vault_id).await.unwrap();
        let mut tx = store.begin(tenant.id).await.unwrap();
        let status = tx.index_status(tenant.vault_id).await.unwrap();
        let links = tx.backlinks(tenant.vault_id, &format!("{current}.md"), None, None, 5000).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!((status.queued_jobs, status.indexed_seq), (0, status.head_seq), "trial {trial}: index caught up");
        assert_eq!(links.len(), 2 * NOTES, "trial {trial}: every link resolves to {current}");
        assert_eq!(status.unresolved, 0, "trial {trial}");
    }
    eprintln!("SIGKILL during a move: {before} trials left the vault as before, {after} as after");
    assert_eq!(before + after, 20);
}

#[tokio::test]
async fn two_gateways_moving_and_editing_the_same_notes_lose_no_update() {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let second = app.another_gateway(|c| c.tools.confirm_destructive = false).await;
    let notes = 8;
    for i in 0..notes {
        ok(
            &app,
            &token,
            "write_note",
            json!({"vault": V, "path": format!("n{i}.md"), "content": format!("[[T0]] note {i}\n")}),
        )
        .await;
    }
    ok(&app, &token, "write_note", json!({"vault": V, "path": "T0.md", "content": "target"})).await;
    let url2 = format!("http://{}", second.addr);
    let rounds = 6;
    // Gateway 1 renames the target round after round (rewriting every note); gateway 2 appends
    // a line to every note meanwhile. A move whose linking notes keep changing under it is
    // refused (concurrent_modification, nothing moved) after one re-plan, and the mover tries
    // again, as a client would.
    let mover = {
        let (http, base, token) = (app.http.clone(), format!("http://{}", app.addr), token.clone());
        tokio::spawn(async move {
            let mut refused = 0;
            for r in 0..rounds {
                let args = json!({"vault": V, "from": format!("T{r}.md"), "to": format!("T{}.md", r + 1)});
                loop {
                    let reply = mcp_call(&http, &base, &token, "move_note", args.clone()).await.unwrap();
                    if reply["result"]["isError"] == false {
                        break;
                    }
                    assert_eq!(reply["result"]["structuredContent"]["code"], "concurrent_modification", "{reply}");
                    refused += 1;
                    assert!(refused < 200, "the mover never got through");
                }
            }
            refused
        })
    };
    let editor = {
        let (http, token) = (app.http.clone(), token.clone());
        tokio::spawn(async move {
            let mut appended = Vec::new();
            for round in 0..rounds {
                for i in 0..notes {
                    let line = format!("edit {round}.{i}\n");
                    let args = json!({"vault": V, "path": format!("n{i}.md"), "content": line});
                    let reply = mcp_call(&http, &url2, &token, "append_note", args).await.unwrap();
                    if reply["result"]["isError"] == false {
                        appended.push((i, line));
                    } else {
                        assert_eq!(reply["result"]["structuredContent"]["code"], "concurrent_modification", "{reply}");
                    }
                }
            }
            appended
        })
    };
    let refused = mover.await.unwrap();
    eprintln!("moves refused while notes changed under them: {refused}");
    let appended = editor.await.unwrap();
    assert!(appended.len() > notes, "most appends land: {}", appended.len());
    for i in 0..notes {
        let now = text(&app, &token, &format!("n{i}.md")).await.unwrap();
        assert!(now.starts_with(&format!("[[T{rounds}]] note {i}\n")), "the link follows every move: {now}");
        for (_, line) in appended.iter().filter(|(n, _)| *n == i) {
            assert!(now.contains(line.as_str()), "n{i}.md lost {line:?}: {now}");
        }
    }
}
