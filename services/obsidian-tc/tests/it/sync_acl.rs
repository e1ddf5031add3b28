//! The sync API under the folder ACL: a path the caller may not read is answered like a
//! missing one by every route (file, manifest pages, change feed, content by hash); commits put
//! and delete only where the ACL lets them; `.trash/` and `.git/` are never served while
//! `.obsidian/` syncs; and a commit names only content its caller uploaded to that vault or can
//! already read there, so a hash copies nothing across vaults and reveals nothing.

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::harness::{Tenant, TestApp};
use crate::sync::{api, upload};

const V: &str = "Notes";
const HIDDEN: &str = "the plan nobody may see\n";

/// What every test here starts from: vault Notes of tenant acme under an ACL that reads
/// Public/, Inbox/, Archive/ and `.obsidian/` (and names `.trash/` and `.git/`, which stay hidden
/// anyway), writes Inbox/ and `.obsidian/`, deletes in Inbox/; and files in each of those, put
/// there through the store (as an operator's import would).
async fn setup() -> (TestApp, Tenant, String) {
    let app = TestApp::spawn_with(|c| {
        c.acl.push(otc_config::AclEntry {
            tenant: Some("acme".into()),
            vault: V.into(),
            read_paths: Some(
                ["Public/**", "Inbox/**", "Archive/**", ".obsidian/**", ".trash/**", ".git/**"]
                    .map(String::from)
                    .to_vec(),
            ),
            write_paths: Some(vec!["Inbox/**".into(), ".obsidian/**".into()]),
            delete_paths: Some(vec!["Inbox/**".into()]),
        });
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(
        &token,
        V,
        &[
            ("Public/Open.md", Some("open to all\n")),
            ("Secret/Plan.md", Some(HIDDEN)),
            ("Archive/Old.md", Some("kept, not changed\n")),
            ("Inbox/Draft.md", Some("a draft\n")),
            (".obsidian/app.json", Some("{\"theme\": \"dark\"}")),
            (".trash/Gone.md", Some("deleted once\n")),
            (".git/config", Some("[core]\n")),
        ],
    )
    .await;
    // More history of hidden paths, so the end of the change log is hidden records only.
    for i in 0..4 {
        app.seed(&token, V, &[("Secret/Plan.md", Some(&format!("{HIDDEN}v{i}\n"))), (".trash/More.md", Some("x"))])
            .await;
    }
    (app, tenant, token)
}

/// The paths a caller of [`setup`]'s vault may see.
fn visible() -> BTreeSet<String> {
    ["Public/Open.md", "Archive/Old.md", "Inbox/Draft.md", ".obsidian/app.json"].map(String::from).into()
}

fn sha(text: &str) -> String {
    obsidian_tc::sync_client::sha256_hex(text.as_bytes())
}

async fn get(app: &TestApp, token: &str, path: &str) -> (StatusCode, Value) {
    api(app, token, Method::GET, path, None).await
}

/// The answer with the path it names left out, to compare a hidden path's with a missing one's.
fn without_path(mut body: Value) -> Value {
    if let Some(details) = body["error"]["details"].as_object_mut() {
        details.remove("path");
        details.remove("hash");
    }
    body
}

/// Every page of `/files` at `limit`: each full but the last, no cursor naming a hidden path.
async fn all_files(app: &TestApp, token: &str, limit: usize) -> Vec<String> {
    let mut paths = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..100 {
        let mut url = format!("/v1/vaults/{V}/files?limit={limit}");
        if let Some(a) = &after {
            url.push_str(&format!("&after={}", url::form_urlencoded::byte_serialize(a.as_bytes()).collect::<String>()));
        }
        let (status, page) = get(app, token, &url).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let files = page["files"].as_array().unwrap();
        paths.extend(files.iter().map(|f| f["path"].as_str().unwrap().to_string()));
        match page["next_after"].as_str() {
            Some(next) => {
                assert_eq!(files.len(), limit, "only the last page is short: {page}");
                assert!(visible().contains(next), "the cursor names a visible path: {page}");
                after = Some(next.to_string());
            }
            None => return paths,
        }
    }
    panic!("/files did not end");
}

/// Every page of `/changes` at `limit`: the paths in order, and the last page's next_since and
/// head. Fails when paging does not end.
async fn all_changes(app: &TestApp, token: &str, limit: usize) -> (Vec<String>, i64, i64) {
    let mut paths = Vec::new();
    let mut since = 0;
    for _ in 0..100 {
        let (status, page) = get(app, token, &format!("/v1/vaults/{V}/changes?since={since}&limit={limit}")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let changes = page["changes"].as_array().unwrap();
        assert!(changes.len() <= limit);
        paths.extend(changes.iter().map(|c| c["path"].as_str().unwrap().to_string()));
        let next = page["next_since"].as_i64().unwrap();
        assert!(next > since || page["more"] == false, "paging moves on: {page}");
        since = next;
        if page["more"] == false {
            return (paths, since, page["head"].as_i64().unwrap());
        }
    }
    panic!("/changes did not end");
}

#[tokio::test]
async fn a_path_the_acl_hides_is_not_served_listed_in_the_feed_or_downloadable() {
    let (app, _tenant, token) = setup().await;

    // By path: a hidden note, the trash and git's folder answer exactly as a missing file does.
    let (status, missing) = get(&app, &token, &format!("/v1/vaults/{V}/file?path=Secret/Nope.md")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for path in ["Secret/Plan.md", ".trash/Gone.md", ".git/config"] {
        let (status, body) = get(&app, &token, &format!("/v1/vaults/{V}/file?path={path}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(body["error"]["details"]["path"], path);
        assert_eq!(without_path(body), without_path(missing.clone()), "{path} reads like a missing file");
    }
    // Obsidian's settings sync; readable notes are served.
    for (path, text) in [(".obsidian/app.json", "{\"theme\": \"dark\"}"), ("Public/Open.md", "open to all\n")] {
        let response = app
            .http
            .get(app.url(&format!("/v1/vaults/{V}/file?path={path}")))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.text().await.unwrap(), text);
    }

    // The manifest: the visible paths only, at any page size, every page but the last full.
    for limit in [1, 2, 3, 1000] {
        let listed = all_files(&app, &token, limit).await;
        assert_eq!(listed.iter().cloned().collect::<BTreeSet<_>>(), visible(), "limit {limit}");
        assert_eq!(listed.len(), visible().len(), "each once");
    }
    // Nor is a hidden path's position given away by listing after it.
    let (_, page) = get(&app, &token, &format!("/v1/vaults/{V}/files?after=Public/Open.md")).await;
    assert_eq!(page["files"], json!([]), "nothing visible sorts after Public/Open.md: {page}");

    // The change feed: visible records only; paging ends (the log ends in hidden records) with
    // next_since at the head, so a client neither stops early nor loops.
    for limit in [1, 2, 1000] {
        let (paths, next, head) = all_changes(&app, &token, limit).await;
        assert_eq!(paths.iter().cloned().collect::<BTreeSet<_>>(), visible(), "limit {limit}");
        assert_eq!(paths.len(), visible().len(), "limit {limit}");
        assert_eq!(next, head, "limit {limit}");
    }
    let (_, head_page) = get(&app, &token, &format!("/v1/vaults/{V}/changes?since=1")).await;
    let head = head_page["head"].as_i64().unwrap();
    let (_, tail) = get(&app, &token, &format!("/v1/vaults/{V}/changes?since={}", head - 2)).await;
    assert_eq!(
        (tail["changes"].clone(), tail["next_since"].as_i64(), tail["more"].clone()),
        (json!([]), Some(head), json!(false))
    );

    // Content by hash: a hidden note's (current or past), the trash's and git's are not there,
    // answered as content the vault never held is.
    let (status, never) = get(&app, &token, &format!("/v1/vaults/{V}/blobs/{}", sha("never stored"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for text in [HIDDEN.to_string(), format!("{HIDDEN}v3\n"), "deleted once\n".into(), "[core]\n".into()] {
        let (status, body) = get(&app, &token, &format!("/v1/vaults/{V}/blobs/{}", sha(&text))).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{text:?}: {body}");
        assert_eq!(body, never, "{text:?}");
    }
    let readable = app
        .http
        .get(app.url(&format!("/v1/vaults/{V}/blobs/{}", sha("open to all\n"))))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(readable.status(), StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn commits_put_and_delete_only_where_the_acl_allows_and_apply_nothing_otherwise() {
    let (app, tenant, token) = setup().await;
    let commit =
        |changes: Value| api(&app, &token, Method::POST, "/v1/vaults/Notes/commit", Some(json!({"changes": changes})));
    let content = upload(&app, &token, V, b"new content\n").await;
    let head = || async {
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        let head = tx.head_seq(tenant.vault_id).await.unwrap();
        tx.commit().await.unwrap();
        head
    };
    let before = head().await;

    // One path outside write_paths refuses the whole batch.
    let (status, body) = commit(json!([
        {"path": "Inbox/New.md", "expect": "absent", "put": {"hash": content}},
        {"path": "Archive/Old.md", "expect": "any", "put": {"hash": content}},
    ]))
    .await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("acl_denied")), "{body}");
    assert_eq!(
        (body["error"]["details"]["path_index"].as_i64(), body["error"]["details"]["operation"].as_str()),
        (Some(1), Some("write"))
    );

    // Writes outside write_paths, wherever they point: a readable path, a hidden note (existing
    // or not: the same answer), the trash, git's folder.
    let mut refusals = Vec::new();
    for path in ["Public/Open.md", "Secret/Plan.md", "Secret/Nope.md", ".trash/Gone.md", ".git/config", "Top.md"] {
        let (status, body) = commit(json!([{"path": path, "expect": "any", "put": {"hash": content}}])).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("acl_denied")),
            "{path}: {body}"
        );
        refusals.push(without_path(body));
    }
    assert!(refusals.windows(2).all(|w| w[0] == w[1]), "every refused write reads alike: {refusals:?}");
    // Deletes outside delete_paths, and one in a batch with an allowed delete.
    for path in ["Archive/Old.md", "Public/Open.md", "Secret/Plan.md", ".trash/Gone.md", ".obsidian/app.json"] {
        let (status, body) = commit(json!([{"path": path, "expect": "any", "delete": true}])).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("acl_denied")),
            "{path}: {body}"
        );
        assert_eq!(body["error"]["details"]["operation"], "delete");
    }
    let (status, body) = commit(json!([
        {"path": "Inbox/Draft.md", "expect": "any", "delete": true},
        {"path": "Archive/Old.md", "expect": "any", "delete": true},
    ]))
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // Nothing of any of it was applied.
    assert_eq!(head().await, before, "no commit landed");
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    for (path, text) in [
        ("Secret/Plan.md", format!("{HIDDEN}v3\n")),
        ("Archive/Old.md", "kept, not changed\n".into()),
        ("Inbox/Draft.md", "a draft\n".into()),
        (".trash/Gone.md", "deleted once\n".into()),
    ] {
        let entry = tx.file(tenant.vault_id, path).await.unwrap().expect(path);
        assert_eq!(hex::encode(entry.hash), sha(&text), "{path} unchanged");
    }
    assert!(tx.file(tenant.vault_id, "Inbox/New.md").await.unwrap().is_none());
    assert!(tx.file(tenant.vault_id, "Secret/Nope.md").await.unwrap().is_none());
    tx.commit().await.unwrap();

    // Inside the lists it all works, Obsidian's settings included.
    let (status, body) = commit(json!([
        {"path": "Inbox/New.md", "expect": "absent", "put": {"hash": content}},
        {"path": "Inbox/Draft.md", "expect": sha("a draft\n"), "delete": true},
        {"path": ".obsidian/app.json", "expect": "any", "put": {"hash": upload(&app, &token, V, b"{}").await}},
    ]))
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["changed"], 3);
    app.stop().await;
}

/// A token of `principal` (made if need be) bound to `vault`, with every scope.
async fn bound_token(app: &TestApp, tenant: &Tenant, principal: &str, vault: Uuid) -> String {
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let who = tx.ensure_principal(otc_store::PrincipalKind::User, principal).await.unwrap();
    let issued = tx
        .issue_token(otc_store::NewToken {
            principal_id: who.id,
            name: format!("{principal} bound"),
            scopes: otc_auth::parse_scopes("*").unwrap(),
            vault_id: Some(vault),
            expires_at: None,
        })
        .await
        .unwrap();
    tx.commit().await.unwrap();
    issued.plaintext
}

#[tokio::test]
async fn a_commit_names_only_content_its_caller_uploaded_here_or_can_already_read_here() {
    let (owned, tenant, token) = setup().await;
    let app = &owned;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let other = tx.create_vault("Other").await.unwrap();
    tx.commit().await.unwrap();
    let x = bound_token(app, &tenant, "alice", tenant.vault_id).await;
    let y_bob = bound_token(app, &tenant, "bob", other.id).await;
    let y_alice = bound_token(app, &tenant, "alice", other.id).await;
    let commit = |token: &str, vault: &str, changes: Value| {
        let (token, path) = (token.to_string(), format!("/v1/vaults/{vault}/commit"));
        async move { api(app, &token, Method::POST, &path, Some(json!({"changes": changes}))).await }
    };

    // Bob's secret, uploaded to and committed in vault Other.
    let secret = upload(app, &y_bob, "Other", b"bob's secret\n").await;
    let (status, body) =
        commit(&y_bob, "Other", json!([{"path": "S.md", "expect": "absent", "put": {"hash": secret}}])).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Alice's upload to Other, never committed anywhere.
    let pending = upload(app, &y_alice, "Other", b"alice's upload to Other\n").await;

    // Through Notes, neither can be committed by hash alone, and the refusal is the one a hash
    // of nothing at all gets: no copy, and no way to tell what the tenant holds.
    let (status, nothing) =
        commit(&x, V, json!([{"path": "Inbox/S.md", "expect": "absent", "put": {"hash": sha("held nowhere")}}])).await;
    assert_eq!(
        (status, nothing["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_input")),
        "{nothing}"
    );
    assert_eq!(nothing["error"]["message"], "commit: content not uploaded; PUT the blob first");
    for (hash, what) in [
        (&secret, "another vault's file"),
        (&pending, "an upload to another vault"),
        (&sha(HIDDEN), "a hidden note's past content"),
        (&sha("deleted once\n"), "the trash's"),
    ] {
        for token in [&x, &token] {
            let (status, body) =
                commit(token, V, json!([{"path": "Inbox/S.md", "expect": "absent", "put": {"hash": hash}}])).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
            assert_eq!(without_path(body), without_path(nothing.clone()), "{what}");
        }
        // And it cannot be read back through Notes.
        let (status, _) = get(app, &x, &format!("/v1/vaults/{V}/blobs/{hash}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{what}");
    }
    let (status, _) = get(app, &x, &format!("/v1/vaults/{V}/file?path=Inbox/S.md")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Content the caller uploaded to Notes itself commits, even when the tenant also holds it
    // elsewhere (the caller has the bytes).
    let own = upload(app, &x, V, b"bob's secret\n").await;
    assert_eq!(own, secret);
    let (status, body) =
        commit(&x, V, json!([{"path": "Inbox/Mine.md", "expect": "absent", "put": {"hash": own}}])).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // So does content the caller can already read in Notes: a copy by hash, uploaded by no one.
    let (status, body) =
        commit(&x, V, json!([{"path": "Inbox/Copy.md", "expect": "absent", "put": {"hash": sha("open to all\n")}}]))
            .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let copy =
        app.http.get(app.url(&format!("/v1/vaults/{V}/file?path=Inbox/Copy.md"))).bearer_auth(&x).send().await.unwrap();
    assert_eq!(copy.text().await.unwrap(), "open to all\n");
    owned.stop().await;
}

/// What a vault no longer holds is not served by hash, even to the principal who deleted it:
/// a deleted note (now only in `.trash/` and the change log) and a replaced version answer 404
/// like content never stored, and cannot be copied back by hash into a readable path either.
#[tokio::test]
async fn content_the_vault_no_longer_holds_is_not_served_or_copied_by_hash() {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let write = |path: &str, content: &str| {
        let (app, token) = (&app, &token);
        let args = json!({"vault": V, "path": path, "content": content, "mode": "upsert"});
        async move { crate::write::ok(app, token, "write_note", args).await }
    };
    write("Inbox/Gone.md", "deleted by its writer\n").await;
    write("Inbox/Twice.md", "the first version\n").await;
    write("Inbox/Twice.md", "the second version\n").await;
    let gone =
        crate::write::ok(&app, &token, "delete_note", json!({"vault": V, "path": "Inbox/Gone.md", "permanent": false}))
            .await;
    assert_eq!(gone["trashed_to"], ".trash/Inbox/Gone.md", "{gone}");
    let (_, never) = get(&app, &token, &format!("/v1/vaults/{V}/blobs/{}", sha("never stored"))).await;
    for text in ["deleted by its writer\n", "the first version\n"] {
        let (status, body) = get(&app, &token, &format!("/v1/vaults/{V}/blobs/{}", sha(text))).await;
        assert_eq!((status, &body), (StatusCode::NOT_FOUND, &never), "{text:?}");
    }
    let (status, _) = get(&app, &token, &format!("/v1/vaults/{V}/blobs/{}", sha("the second version\n"))).await;
    assert_eq!(status, StatusCode::OK, "what the vault holds now is served");
    let copy = json!({"changes": [{"path": "Inbox/Back.md", "expect": "absent", "put": {"hash": sha("deleted by its writer\n")}}]});
    let (status, body) = api(&app, &token, Method::POST, &format!("/v1/vaults/{V}/commit"), Some(copy)).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_input")), "{body}");
    app.stop().await;
}
