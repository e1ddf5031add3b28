//! Row-level security: a transaction set to one tenant reaches none of another's rows, even
//! through queries with no WHERE clause.

use otc_store::testing::{
    Table, count_unfiltered, count_writable, insert_vault_owned_by, one_trip_read_then_settings, rls_status,
};
use uuid::Uuid;

use crate::harness::{Isolation, Tenant};

#[tokio::test]
async fn a_tenant_transaction_sees_none_of_another_tenants_rows() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let a = Tenant::create(&store, "tenant-a").await;
    let b = Tenant::create(&store, "tenant-b").await;
    // B gets more of everything, so a leak would change A's counts.
    a.token(&store, "read:notes", false, None).await;
    for _ in 0..3 {
        b.token(&store, "read:notes", true, None).await;
    }
    let mut tx = store.begin(b.id).await.unwrap();
    tx.create_vault("Second").await.unwrap();
    tx.ensure_principal(otc_store::PrincipalKind::Service, "ci").await.unwrap();
    tx.commit().await.unwrap();
    fill_storage(&store, &a, 1).await;
    fill_storage(&store, &b, 3).await;

    fill_access(&store, &a, 1).await;
    fill_access(&store, &b, 3).await;
    fill_oauth(&store, &a, 1).await;
    fill_oauth(&store, &b, 3).await;
    fill_memory(&store, &a, 1).await;
    fill_memory(&store, &b, 3).await;

    // [tenants, vaults, principals, api_tokens, vault_heads, vault_files, change_log, snapshots,
    //  trash, blobs, blob_uploads, jobs, reconcile_state, index_state, index_files, notes, links,
    //  note_tags, note_properties, note_tasks, chunks, acl_rules, principal_groups, audit_log,
    //  tenant_quotas, tenant_usage, tenant_idps, idp_domains, oauth_grants, oauth_codes,
    //  oauth_refresh_tokens, oauth_assertion_jtis, directory_groups, directory_group_members,
    //  chunk_vectors, embedding_cache, vault_embeddings, embedding_usage, memory_entities,
    //  memory_observations, memory_relations, capture_queue, work_sessions, goals, agent_episodes,
    //  episode_retrievals, knowledge_gaps, contradictions, tenant_llm, llm_usage, tenant_policies,
    //  tenant_domains, idempotency_records, upkeep_items, tenant_usage_daily, domain_claims,
    //  invitations]
    for (tenant, expected) in [
        (
            &a,
            [
                1, 1, 3, 2, 1, 1, 4, 2, 1, 3, 2, 4, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5, 1, 0, 0,
            ],
        ),
        (
            &b,
            [
                1, 2, 4, 6, 1, 3, 6, 2, 1, 5, 4, 6, 0, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 6, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3,
                3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 3, 3, 5, 1, 0, 0,
            ],
        ),
    ] {
        let mut tx = store.begin(tenant.id).await.unwrap();
        let mut seen = Vec::new();
        for table in Table::ALL {
            seen.push(count_unfiltered(&mut tx, table).await.unwrap());
        }
        assert_eq!(seen, expected, "tenant {} sees {:?}", tenant.slug, Table::ALL);
        for (table, n) in Table::ALL.into_iter().zip(expected) {
            assert_eq!(
                count_writable(&mut tx, table).await.unwrap(),
                n as u64,
                "{table:?} writable rows for {}",
                tenant.slug
            );
        }
        tx.commit().await.unwrap();
    }

    // A tenant that does not exist sees nothing at all.
    let mut tx = store.begin(Uuid::new_v4()).await.unwrap();
    for table in Table::ALL {
        assert_eq!(count_unfiltered(&mut tx, table).await.unwrap(), 0, "{table:?}");
    }
    tx.commit().await.unwrap();

    // Nor can a transaction write a row into another tenant.
    let mut tx = store.begin(a.id).await.unwrap();
    let err = insert_vault_owned_by(&mut tx, b.id, "Smuggled").await.unwrap_err();
    assert!(format!("{err:?}").contains("row-level security"), "{err:?}");
    drop(tx);
    let mut tx = store.begin(b.id).await.unwrap();
    assert!(tx.vault_by_name("Smuggled").await.unwrap().is_none());
    tx.commit().await.unwrap();
}

/// Access rows for `tenant`: k ACL rules (in its Notes vault, for k groups), k group
/// memberships, k audit records, and its own quotas.
/// A tenant's identity provider with `k` email domains, and one signed-in person with `k`
/// grants, each with a code, a refresh token and an access token, and `k` assertion ids.
/// Memory rows for `tenant`: k entities in its Notes vault, each with one observation and a
/// relation to itself, k captures, k work sessions and k goals, k gap findings and k
/// contradiction findings, a chat endpoint and its usage; and in each session one call (an audit record and its episode) that
/// retrieved one chunk.
async fn fill_memory(store: &otc_store::Store, tenant: &Tenant, k: usize) {
    let mut tx = store.begin(tenant.id).await.unwrap();
    let mut sessions = Vec::new();
    for i in 0..k {
        let entity = tx.create_entity(tenant.vault_id, "person", &format!("p{i}"), None, None).await.unwrap();
        let fact =
            otc_store::NewObservation { key: None, text: "x".into(), valid_from: chrono::Utc::now(), valid_to: None };
        tx.add_observation(tenant.vault_id, entity.id, &fact, None).await.unwrap();
        let relation = otc_store::Relation { source_id: entity.id, target_id: entity.id, relation_type: "self".into() };
        assert!(tx.link_entities(tenant.vault_id, &relation, None).await.unwrap());
        let capture = otc_store::NewCapture {
            content: "c".into(),
            title: None,
            tags: Vec::new(),
            source: None,
            target_path_hint: None,
            poison_assessment: "none".into(),
            poison_signals: Vec::new(),
            redactions: Vec::new(),
            content_hash: "h".into(),
        };
        tx.enqueue_capture(tenant.vault_id, &capture, None).await.unwrap();
        let session = tx.start_session(tenant.vault_id, Uuid::new_v4(), "agent", &serde_json::json!({})).await.unwrap();
        sessions.push(session.principal_id);
        let none = serde_json::json!([]);
        tx.record_gap(tenant.vault_id, session.principal_id, &format!("q{i}"), "q", None, true, &none, &none)
            .await
            .unwrap();
        let finding = otc_store::NewContradiction {
            path_a: "a.md",
            path_b: "b.md",
            hash_a: "h",
            hash_b: &format!("h{i}"),
            statement_a: "x",
            statement_b: "not x",
            rationale: "r",
            model: "m",
        };
        assert!(tx.add_contradiction(tenant.vault_id, &finding).await.unwrap());
        // One endpoint per tenant, its calls counted on one row per day and purpose.
        let llm = otc_store::TenantLlm {
            base_url: "http://127.0.0.1:9".into(),
            model: "m".into(),
            sealed_api_key: Some(vec![1, 2, 3]),
            daily_cap: 10,
            prompt_cost_per_mtok: 0.0,
            completion_cost_per_mtok: 0.0,
        };
        tx.set_tenant_llm(&llm).await.unwrap();
        assert!(tx.count_llm_call(chrono::Utc::now().date_naive(), "reflect", 10).await.unwrap().is_some());
        // One policy row per tenant, and k email domains.
        tx.set_confirm_in_client_clients(&[format!("client-{i}")]).await.unwrap();
        tx.add_tenant_domain(&format!("d{i}.{}.example", tenant.slug), "operator").await.unwrap();
        let until = chrono::Utc::now() + chrono::Duration::hours(1);
        tx.put_idempotency_record(&format!("idem:{i}"), "{}", until).await.unwrap();
        tx.set_goal(tenant.vault_id, "g", None, None).await.unwrap();
    }
    tx.commit().await.unwrap();
    let calls: Vec<otc_store::AuditRecord> = sessions
        .into_iter()
        .map(|principal| otc_store::AuditRecord {
            id: Uuid::now_v7(),
            at: chrono::Utc::now(),
            principal_id: Some(principal),
            principal_name: None,
            client_name: None,
            surface: "mcp".into(),
            class: None,
            action: "search_semantic".into(),
            vault: Some("Notes".into()),
            paths: Vec::new(),
            outcome: "ok".into(),
            duration_us: 1,
            episode: Some(otc_store::EpisodeFacts {
                kind: "tool_call".into(),
                summary: "search_semantic".into(),
                blocked: false,
                suspects: Vec::new(),
                retrievals: vec![otc_store::RetrievalFact {
                    vault: "Notes".into(),
                    path: "a.md".into(),
                    ord: 0,
                    rank: 1,
                    score: None,
                }],
                replay: None,
            }),
        })
        .collect();
    store.record_audit(tenant.id, &calls).await.unwrap();
}

async fn fill_oauth(store: &otc_store::Store, tenant: &Tenant, k: usize) {
    let mut tx = store.begin(tenant.id).await.unwrap();
    tx.set_idp(&otc_store::IdpConfig {
        issuer: format!("https://idp.{}.example", tenant.slug),
        client_id: "c".into(),
        sealed_secret: None,
        email_domains: (0..k).map(|i| format!("d{i}.{}.example", tenant.slug)).collect(),
        groups_claim: "groups".into(),
        default_scopes: vec!["read:*".into()],
        group_scopes: serde_json::json!({}),
        group_acl: serde_json::json!({}),
        cimd_hosts: vec![],
    })
    .await
    .unwrap();
    let expires = chrono::Utc::now() + chrono::Duration::hours(1);
    for i in 0..k {
        let grant = crate::harness::stored_grant(&mut tx, "sub-1").await;
        tx.store_code(&[i as u8 + 1; 32], grant.id, "https://c.example/cb", "challenge", expires).await.unwrap();
        tx.store_refresh_token(&[i as u8 + 101; 32], grant.id, expires).await.unwrap();
        let hash = otc_auth::TokenHash::of(&format!("access-{}-{i}", tenant.slug)).0;
        tx.record_access_token(otc_store::NewAccessToken {
            hash: &hash,
            hint: "abcd",
            grant: &grant,
            audience: "https://x.example/mcp",
            expires_at: expires,
        })
        .await
        .unwrap();
        assert!(tx.record_assertion_jti(&format!("jti-{i}"), expires).await.unwrap());
    }
    // k directory groups, the provisioned person in each.
    let member = tx.create_directory_user("member@example.test", None, true, &serde_json::json!({})).await.unwrap();
    for i in 0..k {
        let group = tx.create_directory_group(&format!("dg{i}"), None).await.unwrap();
        tx.change_directory_members(group, None, &[member.id], &[]).await.unwrap();
    }
    tx.commit().await.unwrap();
}

async fn fill_access(store: &otc_store::Store, tenant: &Tenant, k: usize) {
    let mut tx = store.begin(tenant.id).await.unwrap();
    let alice = tx.ensure_principal(otc_store::PrincipalKind::User, "alice").await.unwrap();
    let groups: Vec<String> = (0..k).map(|i| format!("g{i}")).collect();
    tx.set_groups(alice.id, &groups).await.unwrap();
    for group in &groups {
        tx.set_acl_rule(&otc_store::NewAclRule {
            vault_id: tenant.vault_id,
            subject: otc_store::Subject::Group(group.clone()),
            read_paths: Some(vec!["**".into()]),
            write_paths: None,
            delete_paths: None,
            read_only: false,
        })
        .await
        .unwrap();
    }
    tx.set_quotas(&otc_store::Quotas { notes: Some(10), ..Default::default() }).await.unwrap();
    tx.commit().await.unwrap();
    let records: Vec<otc_store::AuditRecord> = (0..k)
        .map(|_| otc_store::AuditRecord {
            id: Uuid::now_v7(),
            at: chrono::Utc::now(),
            principal_id: Some(alice.id),
            principal_name: Some("alice".into()),
            client_name: None,
            surface: "mcp".into(),
            class: None,
            action: "read_note".into(),
            vault: Some("Notes".into()),
            paths: vec![],
            outcome: "ok".into(),
            duration_us: 1,
            episode: None,
        })
        .collect();
    store.record_audit(tenant.id, &records).await.unwrap();
}

/// Storage rows for `tenant`: k+1 files created (each recorded as uploaded), the first updated,
/// the second deleted (three commits), each with its blob in the inventory.
async fn fill_storage(store: &otc_store::Store, tenant: &Tenant, k: usize) {
    use otc_store::{Action, Change, Expect, IndexFile, NewJob, NoteRecord, Provenance};
    let hash =
        |text: String| -> otc_store::Hash { otc_blobs::Blobs::hash_of(format!("{}:{text}", tenant.slug).as_bytes()) };
    let now = chrono::Utc::now();
    let job = [NewJob { kind: "index".into(), payload: serde_json::json!({}) }];
    let who = Provenance::default();
    let mut tx = store.begin(tenant.id).await.unwrap();
    let uploader = tx.ensure_principal(otc_store::PrincipalKind::User, "alice").await.unwrap();
    let mut creates = Vec::new();
    for i in 0..=k {
        let h = hash(format!("v1-{i}"));
        tx.record_blob(&h, 10).await.unwrap();
        tx.record_upload(tenant.vault_id, uploader.id, &h).await.unwrap();
        creates.push(Change {
            path: format!("f{i}.md"),
            expect: Expect::Absent,
            action: Action::Put { hash: h, size: 10, mtime: now },
        });
    }
    tx.commit_changes(tenant.vault_id, &creates, &who, &job).await.unwrap().unwrap();
    let h = hash("v2-0".into());
    tx.record_blob(&h, 11).await.unwrap();
    let update =
        Change { path: "f0.md".into(), expect: Expect::Any, action: Action::Put { hash: h, size: 11, mtime: now } };
    tx.commit_changes(tenant.vault_id, &[update], &who, &job).await.unwrap().unwrap();
    let delete = Change { path: "f1.md".into(), expect: Expect::Any, action: Action::Delete };
    tx.commit_changes(tenant.vault_id, &[delete], &who, &job).await.unwrap().unwrap();

    // Index rows for every file left: one of each kind per note.
    tx.lock_index(tenant.vault_id, true).await.unwrap();
    let files = tx.files(tenant.vault_id, None, 100).await.unwrap();
    let index_files: Vec<IndexFile> = files
        .iter()
        .map(|f| IndexFile {
            path: f.path.clone(),
            name_key: f.path.to_lowercase(),
            kind: "note".into(),
            hash: f.hash,
            size: f.size,
            mtime: f.mtime,
            excluded: false,
        })
        .collect();
    tx.put_index_files(tenant.vault_id, &index_files).await.unwrap();
    let notes: Vec<NoteRecord> = files
        .iter()
        .map(|f| {
            let text = "#tag [[Other]]\n- [ ] task\n";
            let entry = otc_store::FileEntry { kind: otc_store::FileKind::Note, ..f.clone() };
            let mut record = otc_indexer::extract::note_record(&entry, text.as_bytes());
            record.properties = vec![("up".into(), serde_json::json!("x"))];
            record
        })
        .collect();
    tx.replace_notes(tenant.vault_id, &notes, None).await.unwrap();
    // Embeddings: a vector per chunk, k cached vectors, k model sets (each queues its backfill
    // job) and k models' usage.
    let vectors: Vec<otc_store::ChunkVector> = files
        .iter()
        .map(|f| {
            let chunk = &notes.iter().find(|n| n.path == f.path).unwrap().chunks[0];
            otc_store::ChunkVector {
                path: f.path.clone(),
                ord: 0,
                start: chunk.start,
                end: chunk.end,
                embedding: vec![1.0, 0.0, 0.0],
            }
        })
        .collect();
    let blobs: Vec<(String, otc_store::Hash)> = files.iter().map(|f| (f.path.clone(), f.hash)).collect();
    let stored = tx.put_chunk_vectors(tenant.vault_id, "m", 3, &vectors, &blobs).await.unwrap();
    assert_eq!(stored as usize, files.len());
    let cached: Vec<(Vec<u8>, Vec<f32>)> = (0..k).map(|i| (vec![i as u8; 32], vec![0.0, 1.0, 0.0])).collect();
    tx.cache_vectors("m", &cached).await.unwrap();
    for i in 0..k {
        tx.start_vault_model(tenant.vault_id, &format!("m{i}"), 3).await.unwrap();
        tx.record_embedding_usage(&format!("m{i}"), 1, 10, 1, 0).await.unwrap();
    }
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn one_trip_reads_stay_in_their_tenant_and_leave_no_settings_behind() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let a = Tenant::create(&store, "tenant-a").await;
    let b = Tenant::create(&store, "tenant-b").await;
    fill_storage(&store, &a, 1).await;
    fill_storage(&store, &b, 1).await;

    let own = store.file(a.id, a.vault_id, "f0.md").await.unwrap().expect("A reads its own file");
    assert_eq!((own.path.as_str(), own.size), ("f0.md", 11));
    assert!(store.file(a.id, b.vault_id, "f0.md").await.unwrap().is_none(), "A reads B's file");
    assert!(store.file(b.id, a.vault_id, "f0.md").await.unwrap().is_none(), "B reads A's file");
    assert!(store.file(a.id, a.vault_id, "f1.md").await.unwrap().is_none(), "a deleted file");

    let (found, role, tenant) = one_trip_read_then_settings(&store, a.id, a.vault_id, "f0.md").await.unwrap();
    assert_eq!(found, 1);
    assert_ne!(role, "otc_app", "the role outlived the read");
    assert_eq!(tenant, "", "the tenant setting outlived the read");
}

#[tokio::test]
async fn every_tenant_table_has_row_level_security_enabled() {
    let iso = Isolation::new().await;
    let status = rls_status(&iso.store()).await.unwrap();
    assert!(status.len() >= Table::ALL.len(), "{status:?}");
    assert!(status.iter().any(|(table, _)| table == "fts_segments"), "{status:?}");
    for (table, enabled) in status {
        assert!(enabled, "{table} has row-level security off");
    }
}

/// The functions that reach past row-level security are the ones ARCHITECTURE.md names, each
/// returning ids (and counts or kinds) only: a new one has to be named there to pass.
#[tokio::test]
async fn the_cross_tenant_functions_are_the_ones_named() {
    let iso = Isolation::new().await;
    let found = otc_store::testing::security_definer_functions(&iso.store()).await.unwrap();
    let named = [
        "otc_claim_upkeep_of",
        "otc_due_job_vaults",
        "otc_outbox_stats",
        "otc_tenant_id_by_email_domain",
        "otc_tenant_id_by_slug",
        "otc_tenant_ids",
        "otc_tenant_ids_by_idp_issuer",
        "otc_tenant_upkeep",
        "otc_tenants_lacking_model",
        "otc_usage_today",
    ];
    assert_eq!(found, named);
    let architecture = std::fs::read_to_string(crate::tidy::root().join("ARCHITECTURE.md")).unwrap();
    let invariant = &architecture[architecture.find("- The only cross-tenant lookups are").unwrap()..];
    let invariant = &invariant[..invariant.find("\n- ").unwrap()];
    for name in named {
        assert!(invariant.contains(&format!("`{name}`")), "ARCHITECTURE.md's invariant names {name}");
    }
}

#[tokio::test]
async fn lookups_by_id_do_not_cross_tenants() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let a = Tenant::create(&store, "tenant-a").await;
    let b = Tenant::create(&store, "tenant-b").await;
    let (_, b_token) = b.token(&store, "read:notes", false, None).await;

    let mut tx = store.begin(a.id).await.unwrap();
    assert!(tx.vault(b.vault_id).await.unwrap().is_none(), "A reads B's vault by id");
    assert!(tx.vault_by_name("Notes").await.unwrap().is_some_and(|v| v.id == a.vault_id));
    assert!(matches!(tx.revoke_token(b_token).await, Err(otc_store::StoreError::NotFound(_))), "A revokes B's token");
    assert_eq!(tx.list_tokens().await.unwrap().len(), 0);
    tx.commit().await.unwrap();

    // B's token is untouched.
    let mut tx = store.begin(b.id).await.unwrap();
    assert!(tx.list_tokens().await.unwrap().iter().all(|t| t.revoked_at.is_none()));
    tx.commit().await.unwrap();
}
