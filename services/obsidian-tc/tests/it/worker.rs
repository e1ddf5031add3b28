//! The worker: leader lease in Redis, and the token sweep.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use otc_kv::Kv;
use otc_worker::{SWEEP_LEASE, Worker, WorkerSettings, sweep_once};

use crate::harness::{Child, Isolation, Tenant};

fn settings(retention: chrono::Duration) -> WorkerSettings {
    WorkerSettings {
        sweep_interval: Duration::from_millis(200),
        lease_ttl: Duration::from_secs(3),
        token_retention: retention,
        audit_retention_days: 90,
        gc_grace: chrono::Duration::hours(24),
        snapshots_per_path: 10,
        reconcile: Vec::new(),
        oauth_client_retention: retention,
        maintenance: Default::default(),
        shutdown_grace: Duration::from_secs(10),
    }
}

fn blobs(iso: &Isolation) -> otc_blobs::Blobs {
    // Generous: under a full parallel test run the S3 server can be slow to answer, and a
    // time-out is not what these tests are about.
    otc_blobs::Blobs::from_config(&iso.config().object_store, Duration::from_secs(30)).unwrap()
}

fn kv(iso: &Isolation) -> Kv {
    let url = crate::harness::service_env().into_iter().find(|(k, _)| k == "OTC__REDIS__URL").unwrap().1;
    Kv::new(&url, &iso.redis_prefix, Duration::from_secs(5)).unwrap()
}

#[tokio::test]
async fn only_one_holder_gets_the_lease_until_it_lapses_or_is_released() {
    let iso = Isolation::new().await;
    let (one, two) = (kv(&iso), kv(&iso));
    let ttl = Duration::from_millis(2000);
    assert!(one.try_acquire_lease("l", "one", ttl).await.unwrap());
    assert!(!two.try_acquire_lease("l", "two", ttl).await.unwrap());
    assert!(!two.renew_lease("l", "two", ttl).await.unwrap(), "a non-holder cannot renew");
    assert!(one.renew_lease("l", "one", ttl).await.unwrap());
    two.release_lease("l", "two").await.unwrap();
    assert_eq!(one.lease_holder("l").await.unwrap().as_deref(), Some("one"), "a non-holder cannot release");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(two.try_acquire_lease("l", "two", ttl).await.unwrap(), "the lease lapses");
    assert!(!one.renew_lease("l", "one", ttl).await.unwrap(), "the old holder learns it lost the lease");
    two.release_lease("l", "two").await.unwrap();
    assert_eq!(one.lease_holder("l").await.unwrap(), None);
    // Another prefix is another deployment: its leases are separate.
    let elsewhere = Kv::new(
        &crate::harness::service_env().into_iter().find(|(k, _)| k == "OTC__REDIS__URL").unwrap().1,
        &format!("{}other:", iso.redis_prefix),
        Duration::from_secs(5),
    )
    .unwrap();
    assert!(one.try_acquire_lease("l", "one", ttl).await.unwrap());
    assert!(elsewhere.try_acquire_lease("l", "x", ttl).await.unwrap());
}

#[tokio::test]
async fn the_sweep_deletes_only_tokens_dead_longer_than_the_retention() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let a = Tenant::create(&store, "acme").await;
    let b = Tenant::create(&store, "globex").await;
    let (_, live) = a.token(&store, "read:notes", false, Some(Utc::now() + chrono::Duration::days(1))).await;
    let (_, expired) = a.token(&store, "read:notes", false, Some(Utc::now() - chrono::Duration::seconds(5))).await;
    let (_, revoked) = b.token(&store, "read:notes", false, None).await;
    let mut tx = store.begin(b.id).await.unwrap();
    tx.revoke_token(revoked).await.unwrap();
    // An authorization code and a refresh token past their expiry, a live refresh token, and an
    // assertion id past its assertion's expiry.
    let grant = crate::harness::stored_grant(&mut tx, "s").await;
    let past = Utc::now() - chrono::Duration::seconds(5);
    tx.store_code(&[1; 32], grant.id, "https://c.example/cb", "ch", past).await.unwrap();
    tx.store_refresh_token(&[2; 32], grant.id, past).await.unwrap();
    tx.store_refresh_token(&[3; 32], grant.id, Utc::now() + chrono::Duration::days(1)).await.unwrap();
    assert!(tx.record_assertion_jti("j", past).await.unwrap());
    tx.commit().await.unwrap();
    // A registered OAuth client no token request has named since.
    store
        .put_oauth_client(&otc_store::OAuthClient {
            client_id: "otcd_unused".into(),
            kind: "dcr".into(),
            client_name: None,
            redirect_uris: vec!["https://c.example/cb".into()],
            token_endpoint_auth_method: "none".into(),
            secret_hash: None,
            metadata: serde_json::json!({}),
            created_at: Utc::now(),
            fetched_at: None,
        })
        .await
        .unwrap();

    // A long retention keeps them all (but the assertion id, dead at its own expiry).
    let blobs = blobs(&iso);
    let report = sweep_once(&store, &blobs, &settings(chrono::Duration::days(30))).await.unwrap();
    assert_eq!((report.tenants, report.tokens_purged, report.tenants_failed), (2, 0, 0));
    assert_eq!((report.oauth_secrets_purged, report.oauth_clients_purged), (1, 0));

    tokio::time::sleep(Duration::from_millis(50)).await;
    let report = sweep_once(&store, &blobs, &settings(chrono::Duration::zero())).await.unwrap();
    assert_eq!((report.tenants, report.tokens_purged), (2, 2));
    assert_eq!(report.oauth_secrets_purged, 2, "the expired code and refresh token, not the live one");
    assert_eq!(report.oauth_clients_purged, 1);
    assert!(store.oauth_client("otcd_unused").await.unwrap().is_none());
    let mut tx = store.begin(a.id).await.unwrap();
    let left: Vec<_> = tx.list_tokens().await.unwrap().into_iter().map(|t| t.id).collect();
    tx.commit().await.unwrap();
    assert_eq!(left, vec![live]);
    assert_ne!(live, expired);
}

#[tokio::test]
async fn a_worker_takes_the_lease_sweeps_and_hands_it_back_on_shutdown() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (_, revoked) = tenant.token(&store, "read:notes", false, None).await;
    let mut tx = store.begin(tenant.id).await.unwrap();
    tx.revoke_token(revoked).await.unwrap();
    tx.commit().await.unwrap();

    let kv = Arc::new(kv(&iso));
    let settings = settings(chrono::Duration::zero());
    let worker = Worker::new(store.clone(), kv.clone(), blobs(&iso), settings.clone());
    let holder = worker.holder().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(worker.run(async {
        let _ = stopped.await;
    }));
    // A second worker stands by.
    let standby = Worker::new(store.clone(), kv.clone(), blobs(&iso), settings);
    let standby_holder = standby.holder().to_string();
    let (stop_standby, standby_stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let standby_task = tokio::spawn(standby.run(async {
        let _ = standby_stopped.await;
    }));

    let mut swept = false;
    for _ in 0..50 {
        let mut tx = store.begin(tenant.id).await.unwrap();
        swept = tx.list_tokens().await.unwrap().is_empty();
        tx.commit().await.unwrap();
        if swept {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(swept, "the leader swept the revoked token");
    assert_eq!(kv.lease_holder(SWEEP_LEASE).await.unwrap().as_deref(), Some(holder.as_str()));

    // The leader stops: it releases the lease and the standby takes over.
    stop.send(()).unwrap();
    task.await.unwrap();
    let mut taken = false;
    for _ in 0..50 {
        if kv.lease_holder(SWEEP_LEASE).await.unwrap().as_deref() == Some(standby_holder.as_str()) {
            taken = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(taken, "the standby took over the lease");
    stop_standby.send(()).unwrap();
    standby_task.await.unwrap();
    assert_eq!(kv.lease_holder(SWEEP_LEASE).await.unwrap(), None);
}

#[tokio::test]
async fn the_worker_binary_runs_and_stops_on_sigterm() {
    let iso = Isolation::new().await;
    let mut env = iso.env();
    env.push(("OTC__WORKER__SWEEP_INTERVAL_SECS".into(), "1".into()));
    let mut worker = Child::start(env, &["worker"], false);
    let kv = kv(&iso);
    let mut led = false;
    for _ in 0..100 {
        if kv.lease_holder(SWEEP_LEASE).await.unwrap().is_some() {
            led = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(led, "the worker took the lease; log:\n{}", worker.log_text());
    worker.signal("TERM");
    let status = tokio::task::spawn_blocking(move || worker.wait(Duration::from_secs(20))).await.unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(kv.lease_holder(SWEEP_LEASE).await.unwrap(), None, "the lease was handed back");
}

#[tokio::test]
async fn the_sweep_collects_unreferenced_blobs_after_the_grace_and_prunes_snapshots() {
    use otc_store::{Action, Change, Expect, Provenance};
    let iso = Isolation::new().await;
    let store = iso.store();
    let blobs = blobs(&iso);
    let tenant = Tenant::create(&store, "acme").await;
    let mut tx = store.begin(tenant.id).await.unwrap();
    let uploader = tx.ensure_principal(otc_store::PrincipalKind::User, "alice").await.unwrap();
    tx.commit().await.unwrap();
    let mut hashes = Vec::new();
    for text in ["v1", "v2", "v3", "orphan"] {
        let hash = otc_blobs::Blobs::hash_of(text.as_bytes());
        blobs.put_blob(tenant.id, &hash, bytes::Bytes::from(text)).await.unwrap();
        let mut tx = store.begin(tenant.id).await.unwrap();
        tx.record_blob(&hash, text.len() as i64).await.unwrap();
        tx.record_upload(tenant.vault_id, uploader.id, &hash).await.unwrap();
        tx.commit().await.unwrap();
        hashes.push(hash);
    }
    // Three versions of one note: two snapshots; the orphan was never committed.
    let mut tx = store.begin(tenant.id).await.unwrap();
    for hash in &hashes[..3] {
        let change = Change {
            path: "n.md".into(),
            expect: Expect::Any,
            action: Action::Put { hash: *hash, size: 2, mtime: Utc::now() },
        };
        tx.commit_changes(tenant.vault_id, &[change], &Provenance::default(), &[]).await.unwrap().unwrap();
    }
    tx.commit().await.unwrap();

    // Within the grace nothing is collected.
    let report = sweep_once(&store, &blobs, &settings(chrono::Duration::days(30))).await.unwrap();
    assert_eq!((report.blobs_collected, report.uploads_forgotten), (0, 0));
    let mut strict = settings(chrono::Duration::days(30));
    strict.gc_grace = chrono::Duration::zero();
    strict.snapshots_per_path = 1;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let report = sweep_once(&store, &blobs, &strict).await.unwrap();
    assert_eq!(report.snapshots_pruned, 1, "two snapshots, one kept");
    // v1 lost its last snapshot and the orphan never had a reference: both collected.
    assert_eq!(report.blobs_collected, 2, "{report:?}");
    assert_eq!(report.uploads_forgotten, 4, "upload records past the grace go too: {report:?}");
    assert!(matches!(blobs.get_blob(tenant.id, &hashes[0]).await, Err(otc_blobs::BlobError::NotFound)));
    assert!(matches!(blobs.get_blob(tenant.id, &hashes[3]).await, Err(otc_blobs::BlobError::NotFound)));
    assert_eq!(blobs.get_blob(tenant.id, &hashes[1]).await.unwrap().as_ref(), b"v2", "a snapshot keeps its blob");
    assert_eq!(blobs.get_blob(tenant.id, &hashes[2]).await.unwrap().as_ref(), b"v3", "the current version stays");
}

#[tokio::test]
async fn reconcile_mode_imports_plain_objects_written_by_an_outside_tool() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let blobs = blobs(&iso);
    let kv = std::sync::Arc::new(kv(&iso));
    let tenant = Tenant::create(&store, "acme").await;
    let target = otc_config::ReconcileTarget {
        tenant: "acme".into(),
        vault: "Notes".into(),
        prefix: "outside/acme-notes".into(),
    };
    // Names Windows cannot store, link syntax and '%' are a vault's files like any other, under
    // their own keys; per-device state is not.
    for (path, text) in [
        ("Inbox.md", "first"),
        ("Folder/Deep.md", "deep"),
        (".obsidian/app.json", "{}"),
        ("Talk: what next?.md", "x"),
        ("C# notes [draft] 100%.md", "c"),
        (".obsidian/workspace.json", "{}"),
    ] {
        blobs.put_plain(&target.prefix, path, bytes::Bytes::from(text)).await.unwrap();
    }
    let generation = kv.generation(otc_kv::Generation::Vault(tenant.vault_id)).await.unwrap();
    let report = otc_worker::reconcile_once(&store, &kv, &blobs, &target).await.unwrap();
    assert_eq!((report.imported, report.skipped), (5, 1), "{report:?}");
    assert_ne!(
        kv.generation(otc_kv::Generation::Vault(tenant.vault_id)).await.unwrap(),
        generation,
        "a reconcile commit moves the vault's generation on (gateways' cached rows go stale)"
    );
    let mut tx = store.begin(tenant.id).await.unwrap();
    let files: Vec<String> = tx.files(tenant.vault_id, None, 100).await.unwrap().into_iter().map(|f| f.path).collect();
    assert_eq!(
        files,
        [".obsidian/app.json", "C# notes [draft] 100%.md", "Folder/Deep.md", "Inbox.md", "Talk: what next?.md"]
    );
    let log = tx.changes_since(tenant.vault_id, 0, 10).await.unwrap();
    assert!(log.iter().all(|r| r.tool.as_deref() == Some("reconcile")));
    tx.commit().await.unwrap();

    // Unchanged objects are not imported again; a change and a deletion are.
    let report = otc_worker::reconcile_once(&store, &kv, &blobs, &target).await.unwrap();
    assert_eq!((report.imported, report.unchanged), (0, 5));
    blobs.put_plain(&target.prefix, "Inbox.md", bytes::Bytes::from("second")).await.unwrap();
    blobs.delete_plain(&target.prefix, "Folder/Deep.md").await.unwrap();
    let report = otc_worker::reconcile_once(&store, &kv, &blobs, &target).await.unwrap();
    assert_eq!((report.imported, report.deleted), (1, 1), "{report:?}");
    let mut tx = store.begin(tenant.id).await.unwrap();
    let inbox = tx.file(tenant.vault_id, "Inbox.md").await.unwrap().unwrap();
    assert_eq!(inbox.hash, otc_blobs::Blobs::hash_of(b"second"));
    assert!(tx.file(tenant.vault_id, "Folder/Deep.md").await.unwrap().is_none());
    tx.commit().await.unwrap();
    assert_eq!(blobs.get_blob(tenant.id, &inbox.hash).await.unwrap().as_ref(), b"second");
}

/// Upkeep items: claims across tenants never overlap, a held item is not claimed again, a claim
/// that lapsed is taken by the next worker, and the worker whose claim lapsed can neither renew
/// nor hand back the item.
#[tokio::test]
async fn an_upkeep_item_is_held_by_one_claim_at_a_time_and_taken_over_when_it_lapses() {
    use otc_store::upkeep::SWEEP;
    let iso = Isolation::new().await;
    let store = iso.store();
    let mut tenants = Vec::new();
    for i in 0..20 {
        tenants.push(Tenant::create(&store, &format!("t{i}")).await.id);
    }
    let hold = Duration::from_secs(30);
    let (one, two) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    let tenants_of = |claimed: Vec<(uuid::Uuid, String)>| -> Vec<uuid::Uuid> {
        assert!(claimed.iter().all(|(_, kind)| kind == SWEEP), "{claimed:?}");
        claimed.into_iter().map(|(tenant, _)| tenant).collect()
    };
    let (a, b) = tokio::join!(store.claim_upkeep(&[SWEEP], one, 15, hold), store.claim_upkeep(&[SWEEP], two, 15, hold));
    let (a, b) = (tenants_of(a.unwrap()), tenants_of(b.unwrap()));
    assert!(a.iter().all(|t| !b.contains(t)), "two claims never hold the same item: {a:?} {b:?}");
    let mut all: Vec<_> = a.iter().chain(&b).copied().collect();
    all.sort();
    tenants.sort();
    assert_eq!(all, tenants, "every due item is claimed once");
    assert!(store.claim_upkeep(&[SWEEP], uuid::Uuid::new_v4(), 100, hold).await.unwrap().is_empty(), "all are held");

    // A worker that claimed and died: its claim lapses and the next claim takes the item.
    let late = Tenant::create(&store, "late").await.id;
    let dead = uuid::Uuid::new_v4();
    assert_eq!(tenants_of(store.claim_upkeep(&[SWEEP], dead, 1, Duration::from_millis(300)).await.unwrap()), [late]);
    assert!(store.claim_upkeep(&[SWEEP], uuid::Uuid::new_v4(), 1, hold).await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(400)).await;
    let next = uuid::Uuid::new_v4();
    assert_eq!(
        tenants_of(store.claim_upkeep(&[SWEEP], next, 1, hold).await.unwrap()),
        [late],
        "the lapsed claim is taken over"
    );
    let mut tx = store.begin(late).await.unwrap();
    assert!(!tx.renew_upkeep(SWEEP, dead, hold).await.unwrap(), "the old claim cannot renew");
    let later = Utc::now() + chrono::Duration::hours(1);
    assert!(!tx.finish_upkeep(SWEEP, dead, Some(later), None).await.unwrap(), "nor hand it back");
    assert!(tx.renew_upkeep(SWEEP, next, hold).await.unwrap());
    assert!(tx.finish_upkeep(SWEEP, next, Some(later), None).await.unwrap());
    let (due, runs) = tx.upkeep_item(SWEEP).await.unwrap().unwrap();
    let due = due.expect("a periodic item is due again");
    tx.commit().await.unwrap();
    assert_eq!(runs, 1);
    assert!((due - later).num_milliseconds().abs() < 1, "due when handed back: {due} {later}");
}

/// Two workers share the tenants' sweeps: each tenant's item runs once in its period (its run
/// count is 1 and it is due a period later), and a tenant made meanwhile is swept too. Nothing
/// visits a tenant before its item is due.
#[tokio::test]
async fn two_workers_sweep_every_tenant_once_in_its_period() {
    use otc_store::upkeep::SWEEP;
    let iso = Isolation::new().await;
    let store = iso.store();
    let kv = Arc::new(kv(&iso));
    let mut tenants = Vec::new();
    for i in 0..30 {
        let tenant = Tenant::create(&store, &format!("t{i}")).await;
        let (_, revoked) = tenant.token(&store, "read:notes", false, None).await;
        let mut tx = store.begin(tenant.id).await.unwrap();
        tx.revoke_token(revoked).await.unwrap();
        tx.commit().await.unwrap();
        tenants.push(tenant.id);
    }
    let settings = WorkerSettings { sweep_interval: Duration::from_secs(3600), ..settings(chrono::Duration::zero()) };
    let mut stops = Vec::new();
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let worker = Worker::new(store.clone(), kv.clone(), blobs(&iso), settings.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tasks.push(tokio::spawn(worker.run(async {
            let _ = stopped.await;
        })));
        stops.push(stop);
    }
    let late = Tenant::create(&store, "late").await;
    tenants.push(late.id);
    let started = Utc::now();
    let mut remaining = tenants.clone();
    for _ in 0..100 {
        let mut left = Vec::new();
        for tenant in &remaining {
            let mut tx = store.begin(*tenant).await.unwrap();
            let (_, runs) = tx.upkeep_item(SWEEP).await.unwrap().unwrap();
            tx.commit().await.unwrap();
            if runs == 0 {
                left.push(*tenant);
            }
        }
        remaining = left;
        if remaining.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(remaining.is_empty(), "{} tenants not swept", remaining.len());
    for stop in stops {
        stop.send(()).unwrap();
    }
    for task in tasks {
        task.await.unwrap();
    }
    for tenant in &tenants {
        let mut tx = store.begin(*tenant).await.unwrap();
        let (due, runs) = tx.upkeep_item(SWEEP).await.unwrap().unwrap();
        let due = due.expect("due again");
        let tokens = tx.list_tokens().await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(runs, 1, "once in its period");
        assert!(due > started + chrono::Duration::minutes(59), "due a period later: {due}");
        assert!(tokens.is_empty(), "swept");
    }
}

/// Every statement the upkeep items run (the sweep, the merge's search, the embedding upkeep),
/// and the claims of due items and jobs, has an index to use: planned
/// with sequential scans priced out, none scans a table whole (each table holds every tenant's
/// rows, so a whole scan grows with the tenant count).
#[tokio::test]
async fn the_upkeep_statements_have_indexes_to_use() {
    use otc_store::testing::{plan_without_seq_scans, statements_of};
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let sources = [
        ("shared/store/src/tokens.rs", "purge_dead_tokens"),
        ("shared/store/src/oauth.rs", "purge_dead_oauth_secrets"),
        ("shared/store/src/audit_log.rs", "purge_audit"),
        ("shared/store/src/files.rs", "prune_snapshots"),
        ("shared/store/src/visible.rs", "forget_uploads"),
        ("shared/store/src/files.rs", "unreferenced_blobs"),
        ("shared/store/src/files.rs", "forget_blobs"),
        ("shared/store/src/upkeep.rs", "renew_upkeep"),
        ("shared/store/src/upkeep.rs", "finish_upkeep"),
        ("shared/store/src/upkeep.rs", "request_upkeep"),
        ("shared/store/src/fulltext.rs", "fts_vaults_to_merge"),
        ("shared/store/src/embeddings.rs", "revive_embed_jobs"),
        ("shared/store/src/embeddings.rs", "purge_embedding_cache"),
    ];
    let mut statements: Vec<(String, String)> = Vec::new();
    for (file, function) in sources {
        let source = std::fs::read_to_string(crate::tidy::root().join(file)).unwrap();
        let found = statements_of(&source, function);
        assert!(!found.is_empty(), "no statement found in {function}");
        statements.extend(found.into_iter().map(|sql| (function.to_string(), sql)));
    }
    // The claims' searches across tenants, as migrations/20261230000001_claims_across_tenants.sql
    // has them: due upkeep items, and the vaults with due jobs.
    statements.push((
        "otc_claim_upkeep_of".into(),
        "SELECT i.tenant_id, i.kind FROM upkeep_items i WHERE i.due_at <= now() AND i.kind = ANY ($1::text[]) \
         AND (i.claimed_until IS NULL OR i.claimed_until < now()) ORDER BY i.due_at LIMIT $2 FOR UPDATE SKIP LOCKED"
            .into(),
    ));
    statements.push((
        "otc_due_job_vaults".into(),
        "SELECT j.tenant_id, j.vault_id FROM jobs j WHERE j.kind = $1 AND j.state = 'queued' \
         AND j.run_after <= now() AND j.vault_id IS NOT NULL GROUP BY j.tenant_id, j.vault_id \
         ORDER BY min(j.run_after) LIMIT $2"
            .into(),
    ));
    let mut tx = store.begin(tenant.id).await.unwrap();
    for (function, sql) in &statements {
        let plan = plan_without_seq_scans(&mut tx, sql).await.unwrap_or_else(|e| panic!("{function}: {e}\n{sql}"));
        assert!(!plan.contains("Seq Scan"), "{function} scans a whole table:\n{sql}\n{plan}");
    }
    tx.commit().await.unwrap();
    assert!(statements.len() >= 12, "{statements:?}");
}

/// An item asked for by an event runs when asked and then waits for the next ask; asked again
/// while it runs, it runs once more after.
#[tokio::test]
async fn an_item_asked_for_runs_when_asked_and_once_more_when_asked_while_it_runs() {
    use otc_store::upkeep::FTS_MERGE;
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await.id;
    let hold = Duration::from_secs(30);
    let claim = |store: otc_store::Store| async move {
        let id = uuid::Uuid::new_v4();
        let claimed = store.claim_upkeep(&[FTS_MERGE], id, 10, hold).await.unwrap();
        (id, claimed)
    };
    let item = |store: otc_store::Store| async move {
        let mut tx = store.begin(tenant).await.unwrap();
        let item = tx.upkeep_item(FTS_MERGE).await.unwrap();
        tx.commit().await.unwrap();
        item
    };
    assert_eq!(item(store.clone()).await, None, "never asked for");
    assert!(claim(store.clone()).await.1.is_empty());

    let ask = |store: otc_store::Store| async move {
        let mut tx = store.begin(tenant).await.unwrap();
        tx.request_upkeep(FTS_MERGE).await.unwrap();
        tx.commit().await.unwrap();
    };
    ask(store.clone()).await;
    let (first, claimed) = claim(store.clone()).await;
    assert_eq!(claimed, [(tenant, FTS_MERGE.to_string())]);
    // Asked again while it runs: handed back, it is due at once.
    ask(store.clone()).await;
    let mut tx = store.begin(tenant).await.unwrap();
    assert!(tx.finish_upkeep(FTS_MERGE, first, None, None).await.unwrap());
    tx.commit().await.unwrap();
    let (due, runs) = item(store.clone()).await.unwrap();
    assert!(due.is_some_and(|d| d <= Utc::now()) && runs == 1, "{due:?} {runs}");
    let (second, claimed) = claim(store.clone()).await;
    assert_eq!(claimed.len(), 1);
    let mut tx = store.begin(tenant).await.unwrap();
    assert!(tx.finish_upkeep(FTS_MERGE, second, None, None).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(item(store.clone()).await, Some((None, 2)), "not due until asked again");
    assert!(claim(store.clone()).await.1.is_empty());
}

/// A merge too large for a commit's path is asked of the workers (the tenant's fts_merge
/// item), and a worker with an indexer runs it: the vault is left with one segment.
#[tokio::test]
async fn a_merge_too_large_for_a_commit_is_run_by_a_worker_when_asked_for() {
    use otc_store::upkeep::FTS_MERGE;
    let app = crate::harness::TestApp::spawn_with(|c| c.index.inline_deadline_ms = 0).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let small = otc_indexer::IndexerSettings { inline_merge_notes: 2, ..otc_indexer::IndexerSettings::default() };
    let indexer = otc_indexer::Indexer::new(app.store.clone(), app.deps.blobs.clone(), small);
    let segments = || async {
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        let n = tx.fts_segments(tenant.vault_id).await.unwrap().len();
        tx.commit().await.unwrap();
        n
    };
    for i in 0..otc_indexer::fulltext::TIER_FANOUT {
        let args = serde_json::json!({"vault": "Notes", "path": format!("n{i}.md"), "content": format!("note {i}\n")});
        let out = crate::mcp::call(&app, "/mcp", &token, "write_note", args).await;
        assert_eq!(out["isError"], false, "{out}");
        indexer.catch_up(tenant.id, tenant.vault_id).await.unwrap();
    }
    assert_eq!(segments().await, otc_indexer::fulltext::TIER_FANOUT, "too many live notes to merge inline");
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let (due, runs) = tx.upkeep_item(FTS_MERGE).await.unwrap().expect("asked for");
    tx.commit().await.unwrap();
    assert!(due.is_some() && runs == 0);

    let kv = Arc::new(kv(&app.iso));
    let worker = Worker::new(app.store.clone(), kv, app.deps.blobs.clone(), settings(chrono::Duration::days(1)))
        .with_indexer(indexer);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(worker.run(async {
        let _ = stopped.await;
    }));
    let mut merged = false;
    for _ in 0..100 {
        if segments().await == 1 {
            merged = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.send(()).unwrap();
    task.await.unwrap();
    assert!(merged, "the worker merged the vault's segments: {}", segments().await);
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    assert_eq!(tx.upkeep_item(FTS_MERGE).await.unwrap(), Some((None, 1)), "done, not due until asked again");
    tx.commit().await.unwrap();
}

/// Work that must run once at a time runs while its lease is renewed, and stops when the lease
/// is taken: two holders never run it at once.
#[tokio::test]
async fn leader_work_stops_when_its_lease_is_lost() {
    let iso = Isolation::new().await;
    let (one, two) = (kv(&iso), kv(&iso));
    let ttl = Duration::from_millis(900);
    assert!(one.try_acquire_lease("w", "one", ttl).await.unwrap());
    // Outliving the lease's period several times over, the work keeps it.
    let done = otc_worker::while_leading(&one, "w", "one", ttl, tokio::time::sleep(ttl * 3)).await;
    assert!(done.is_some(), "renewed while it ran");
    assert_eq!(one.lease_holder("w").await.unwrap().as_deref(), Some("one"));

    // Another takes the lease (as after a pause that let it lapse): the work stops within a
    // renewal period, long before it would have finished.
    let started = std::time::Instant::now();
    let steal = async {
        tokio::time::sleep(ttl / 2).await;
        one.release_lease("w", "one").await.unwrap();
        assert!(two.try_acquire_lease("w", "two", ttl * 10).await.unwrap());
    };
    let (done, ()) = tokio::join!(
        otc_worker::while_leading(&one, "w", "one", ttl, tokio::time::sleep(Duration::from_secs(30))),
        steal
    );
    assert!(done.is_none(), "stopped when the lease was lost");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(one.lease_holder("w").await.unwrap().as_deref(), Some("two"));
}
