//! Through PgBouncer in transaction pooling mode (`database.transaction_pooler`), with fewer
//! server connections than clients: the core flows work (writes, reads, search, a move with its
//! link rewrites, the sync API, concurrent writers, the workers' claims) and a tenant still
//! reaches none of another's rows, although consecutive transactions of one client land on
//! different server connections that other clients used before. Migrations, which hold a
//! session lock, run on `database.migrate_url` or are refused.

use otc_config::{Config, Secret};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::harness::{Tenant, TestApp};
use crate::move_faults::mcp_call;
use crate::sync::{api, upload};
use crate::write::{V, err, ok, text};

/// Points the gateway's database at PgBouncer (same database, its port).
fn through_pgbouncer(c: &mut Config) {
    let bouncer = std::env::var("OTC_TEST_PGBOUNCER_URL").expect(
        "OTC_TEST_PGBOUNCER_URL is not set: run the tests with scripts/test (scripts/services starts PgBouncer)",
    );
    let direct = c.database.url.expose().to_string();
    let database = direct.rsplit('/').next().unwrap().to_string();
    c.database.url = Secret::new(format!("{bouncer}/{database}"));
    c.database.transaction_pooler = true;
    c.database.max_connections = 12;
    c.tools.confirm_destructive = false;
}

#[tokio::test]
async fn the_core_flows_run_through_a_transaction_pooler() {
    let app = TestApp::spawn_with(through_pgbouncer).await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (token, _) = a.token(&app.store, "*", false, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;

    // Writes, reads and search.
    let items: Vec<_> = (0..40)
        .map(|i| json!({"path": format!("n/{i:02}.md"), "content": format!("Note {i} about kayaks links [[Target]].\n")}))
        .collect();
    ok(&app, &token, "bulk_create_notes", json!({"vault": V, "items": items})).await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Target.md", "content": "# Target\n"})).await;
    assert_eq!(text(&app, &token, "n/07.md").await.unwrap(), "Note 7 about kayaks links [[Target]].\n");
    let found = ok(&app, &token, "search_vault", json!({"vault": V, "query": "kayaks", "limit": 100})).await;
    assert_eq!(found["total_count"], 40, "{found}");
    let back = ok(&app, &token, "get_backlinks", json!({"vault": V, "path": "Target.md", "limit": 100})).await;
    assert_eq!(back["backlinks"].as_array().unwrap().len(), 40, "{back}");

    // A move with its rewrites, one batch.
    let moved = ok(&app, &token, "move_note", json!({"vault": V, "from": "Target.md", "to": "Moved.md"})).await;
    assert_eq!(moved["backlinks_updated"], json!({"notes": 40, "links": 40}), "{moved}");
    assert_eq!(text(&app, &token, "n/07.md").await.unwrap(), "Note 7 about kayaks links [[Moved]].\n");

    // Sixteen writers at once, more than PgBouncer's server connections: every append lands.
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let (http, base, token) = (app.http.clone(), format!("http://{}", app.addr), token.clone());
            tokio::spawn(async move {
                for k in 0..5 {
                    let args = json!({"vault": V, "path": format!("w/{w}.md"), "content": format!("line {k}\n")});
                    let reply = mcp_call(&http, &base, &token, "append_note", args).await.expect("an answer");
                    assert_eq!(reply["result"]["isError"], false, "{reply}");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    for w in 0..16 {
        assert_eq!(text(&app, &token, &format!("w/{w}.md")).await.unwrap(), "line 0\nline 1\nline 2\nline 3\nline 4\n");
    }

    // The sync API: an upload, then a commit.
    let hash = upload(&app, &token, V, b"# Synced\n").await;
    let (status, body) = api(
        &app,
        &token,
        Method::POST,
        &format!("/v1/vaults/{V}/commit"),
        Some(json!({"changes": [{"path": "Synced.md", "expect": "absent", "put": {"hash": hash}}]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(text(&app, &token, "Synced.md").await.unwrap(), "# Synced\n");

    // Another tenant sees none of it.
    let refused = err(&app, &other, "read_note", json!({"vault": V, "path": "n/07.md"})).await;
    assert_eq!(refused["code"], "note_not_found", "{refused}");
    let found = ok(&app, &other, "search_vault", json!({"vault": V, "query": "kayaks"})).await;
    assert_eq!(found["total_count"], 0, "{found}");

    // The workers' claims go through it too.
    let claimed = app
        .deps
        .store
        .claim_upkeep(&[otc_store::upkeep::SWEEP], uuid::Uuid::new_v4(), 10, std::time::Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 2, "{claimed:?}");
    app.deps.indexer.run_once().await.unwrap();
}

#[tokio::test]
async fn migrations_behind_a_transaction_pooler_run_on_the_direct_url_or_are_refused() {
    let iso = crate::harness::Isolation::new().await;
    let mut config = iso.config();
    let direct = config.database.url.clone();
    through_pgbouncer(&mut config);
    let deps = obsidian_tc::app::Deps::new(&config).unwrap();
    let refused = deps.store.migrate().await.unwrap_err().to_string();
    assert!(refused.contains("database.migrate_url"), "{refused}");
    config.database.migrate_url = Some(direct);
    let deps = obsidian_tc::app::Deps::new(&config).unwrap();
    deps.store.migrate().await.unwrap();
    assert!(deps.store.pending_migrations().await.unwrap().is_empty());
    assert!(deps.store.missing_extensions().await.unwrap().is_empty());
    deps.store.ping().await.unwrap();
}
