//! Folder ACLs as tenant data: rules per vault for a principal, a group or everyone, managed
//! from the CLI and the admin API, obeyed by every gateway before the change returns, combined
//! with the deployment's `[[acl]]` floor, and explained by inspect_acl.

use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, cli, stderr, stdout};
use crate::mcp::{call_on, error_of};
use crate::sync::api;
use crate::write::{err, ok};

pub(crate) fn run(app: &TestApp, args: &[&str]) -> String {
    let out = cli(&app.iso, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// A token for principal `name` in `tenant` with these scopes.
pub(crate) async fn token_for(app: &TestApp, tenant: &Tenant, name: &str, scopes: &str) -> String {
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let principal = tx.ensure_principal(otc_store::PrincipalKind::User, name).await.unwrap();
    let issued = tx
        .issue_token(otc_store::NewToken {
            principal_id: principal.id,
            name: "test".into(),
            scopes: otc_auth::parse_scopes(scopes).unwrap(),
            vault_id: None,
            expires_at: None,
        })
        .await
        .unwrap();
    tx.commit().await.unwrap();
    issued.plaintext
}

fn code(result: &Value) -> String {
    if result["isError"] == true { error_of(result)["code"].as_str().unwrap().to_string() } else { "ok".into() }
}

#[tokio::test]
async fn a_rule_changed_on_the_command_line_is_obeyed_by_every_gateway_before_it_returns() {
    let app = TestApp::spawn().await;
    let second = app.another_gateway(|_| {}).await;
    let (a, b) = (app.url(""), format!("http://{}", second.addr));
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(&token, "Notes", &[("Secret/Plan.md", Some("plan\n")), ("Public/Open.md", Some("open\n"))]).await;
    let read = |path: &str| json!({"vault": "Notes", "path": path});
    // Both gateways have checked the token and keep it.
    for base in [&a, &b] {
        assert_eq!(code(&call_on(&app, base, &token, "read_note", read("Secret/Plan.md")).await), "ok");
    }

    run(&app, &["acl", "set", "acme", "--vault", "Notes", "--principal", "alice", "--read", "Public/**"]);
    for base in [&a, &b] {
        assert_eq!(code(&call_on(&app, base, &token, "read_note", read("Secret/Plan.md")).await), "note_not_found");
        assert_eq!(code(&call_on(&app, base, &token, "read_note", read("Public/Open.md")).await), "ok");
    }
    let listed = run(&app, &["acl", "list", "acme"]);
    assert!(listed.contains("Notes  principal alice") && listed.contains("read: Public/**  write: any"), "{listed}");

    run(&app, &["acl", "remove", "acme", "--vault", "Notes", "--principal", "alice"]);
    for base in [&a, &b] {
        assert_eq!(code(&call_on(&app, base, &token, "read_note", read("Secret/Plan.md")).await), "ok");
    }
    // Refused before anything changes: no subject, two subjects, an unknown principal or vault,
    // a bad group name, a rule that is not there.
    for bad in [
        &["acl", "set", "acme", "--vault", "Notes", "--read", "x"][..],
        &["acl", "set", "acme", "--vault", "Notes", "--everyone", "--group", "g"],
        &["acl", "set", "acme", "--vault", "Notes", "--principal", "nobody"],
        &["acl", "set", "acme", "--vault", "Nope", "--everyone"],
        &["acl", "set", "acme", "--vault", "Notes", "--group", "-bad"],
        &["acl", "remove", "acme", "--vault", "Notes", "--everyone"],
    ] {
        let out = cli(&app.iso, bad);
        assert!(!out.status.success(), "{bad:?} accepted: {}", stdout(&out));
    }
    assert!(run(&app, &["acl", "list", "acme"]).contains("no rules"));
    second.stop().await.unwrap();
}

#[tokio::test]
async fn the_most_specific_subject_decides_within_the_deployment_floor_and_inspect_acl_says_which_rule() {
    let app = TestApp::spawn_with(|c| {
        c.tools.confirm_destructive = false;
        c.acl.push(crate::harness::read_acl(Some("acme"), "Notes", &["Team/**", "Public/**", "Vault/**"]));
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let admin = token_for(&app, &tenant, "root", "*").await;
    let bob = token_for(&app, &tenant, "bob", "*").await;
    let carol = token_for(&app, &tenant, "carol", "*").await;
    let dave = token_for(&app, &tenant, "dave", "*").await;
    app.seed(
        &admin,
        "Notes",
        &[
            ("Team/Eng/a.md", Some("eng\n")),
            ("Team/Ops/b.md", Some("ops\n")),
            ("Public/p.md", Some("public\n")),
            ("Vault/v.md", Some("vault\n")),
            ("Other/o.md", Some("other\n")),
        ],
    )
    .await;
    let put = |body: Value| {
        let admin = admin.clone();
        let app = &app;
        async move {
            let (status, answer) = api(app, &admin, Method::PUT, "/v1/acl", Some(body)).await;
            assert_eq!(status, 200, "{answer}");
            assert_eq!(answer["gateways_told"], true);
            answer["rule"].clone()
        }
    };
    // Everyone: Public only. Group eng: Team/Eng. Group ops: Team/Ops, read-only. Carol: her
    // own rule, all of Team and Other (the floor still hides Other).
    put(json!({"vault": "Notes", "everyone": true, "read_paths": ["Public/**"]})).await;
    put(json!({"vault": "Notes", "group": "eng", "read_paths": ["Team/Eng/**"]})).await;
    let ops = put(json!({"vault": "Notes", "group": "ops", "read_paths": ["Team/Ops/**"], "read_only": true})).await;
    assert_eq!((ops["subject"].clone(), ops["read_only"].clone()), (json!("group ops"), json!(true)));
    put(json!({"vault": "Notes", "principal": "carol", "read_paths": ["Team/**", "Other/**"], "delete_paths": []}))
        .await;
    let (status, groups) =
        api(&app, &admin, Method::POST, "/v1/principals/bob/groups", Some(json!({"add": ["eng", "ops"]}))).await;
    assert_eq!((status.as_u16(), groups["groups"].clone()), (200, json!(["eng", "ops"])));
    api(&app, &admin, Method::POST, "/v1/principals/carol/groups", Some(json!({"add": ["eng"]}))).await;

    let readable = |token: &String| {
        let (app, token) = (&app, token.clone());
        async move {
            let listed = ok(app, &token, "list_notes", json!({"vault": "Notes", "recursive": true})).await;
            let mut paths: Vec<String> =
                listed["notes"].as_array().unwrap().iter().map(|n| n["path"].as_str().unwrap().to_string()).collect();
            paths.sort();
            paths
        }
    };
    // Bob: his groups' rules add up (everyone's does not apply to him any more).
    assert_eq!(readable(&bob).await, ["Team/Eng/a.md", "Team/Ops/b.md"]);
    // Carol: her own rule only (not her group's), cut by the floor.
    assert_eq!(readable(&carol).await, ["Team/Eng/a.md", "Team/Ops/b.md"]);
    // Dave: no group, so everyone's rule.
    assert_eq!(readable(&dave).await, ["Public/p.md"]);
    // The root admin too: rules bind admins alike.
    assert_eq!(readable(&admin).await, ["Public/p.md"]);

    // Writes: bob may write where eng reads, not where only the read-only ops rule reads.
    ok(&app, &bob, "write_note", json!({"vault": "Notes", "path": "Team/Eng/new.md", "content": "x"})).await;
    let refused =
        err(&app, &bob, "write_note", json!({"vault": "Notes", "path": "Team/Ops/new.md", "content": "x"})).await;
    assert_eq!((refused["code"].clone(), refused["details"]["layer"].clone()), (json!("acl_denied"), json!("tenant")));
    let refused = err(&app, &carol, "delete_note", json!({"vault": "Notes", "path": "Team/Eng/a.md"})).await;
    assert_eq!(refused["code"], "acl_denied", "{refused}");

    // inspect_acl, for another principal, names the deciding rule and layer.
    let inspect = |principal: &str, path: &str, op: &str| {
        let args = json!({"vault": "Notes", "path": path, "op": op, "principal": principal});
        let (app, admin) = (&app, admin.clone());
        async move { ok(app, &admin, "inspect_acl", args).await }
    };
    let v = inspect("bob", "Team/Ops/b.md", "read").await;
    assert_eq!((v["allowed"].clone(), v["decided_by"].clone()), (json!(true), json!("allowed_by_rules")));
    assert_eq!(v["rules"][1]["subject"], "group ops", "{v}");
    assert_eq!(v["rules"][0]["layer"], "deployment", "{v}");
    assert_eq!(v["principal"]["groups"], json!(["eng", "ops"]));
    assert!(v.get("scope").is_none(), "another principal's scopes are not judged unless given: {v}");
    let v = inspect("bob", "Team/Ops/b.md", "write").await;
    assert_eq!((v["allowed"].clone(), v["decided_by"].clone()), (json!(false), json!("denied_by_rules")));
    assert_eq!(v["rules"].as_array().unwrap().len(), 2, "both of bob's group rules refuse: {v}");
    let v = inspect("carol", "Other/o.md", "read").await;
    assert_eq!(v["allowed"], false);
    assert_eq!(v["rules"][0]["layer"], "deployment", "the floor refuses what carol's rule grants: {v}");
    let v = inspect("dave", ".obsidian/app.json", "read").await;
    assert_eq!(v["decided_by"], "hidden_folder");
    let v = ok(
        &app,
        &admin,
        "inspect_acl",
        json!({"vault": "Notes", "path": "Public/p.md", "op": "write", "scopes": ["read:notes"]}),
    )
    .await;
    assert_eq!((v["allowed"].clone(), v["decided_by"].clone()), (json!(false), json!("missing_scope")));
    assert_eq!(v["scope"], json!({"required": "write:notes", "granted": false}));
    let e =
        err(&app, &admin, "inspect_acl", json!({"vault": "Notes", "path": "a.md", "op": "read", "principal": "zed"}))
            .await;
    assert_eq!(e["code"], "not_found");
    // get_vault shows each caller the rules it works under.
    let vault = ok(&app, &bob, "get_vault", json!({"vault": "Notes"})).await;
    let subjects: Vec<&str> =
        vault["acl"]["rules"].as_array().unwrap().iter().map(|r| r["subject"].as_str().unwrap()).collect();
    assert_eq!(subjects, ["[[acl]] for vault Notes", "group eng", "group ops"], "{vault}");

    // Dropping bob from ops takes effect at once.
    api(&app, &admin, Method::POST, "/v1/principals/bob/groups", Some(json!({"remove": ["ops"]}))).await;
    assert_eq!(readable(&bob).await, ["Team/Eng/a.md", "Team/Eng/new.md"]);
}

#[tokio::test]
async fn the_admin_api_refuses_bad_rules_and_callers_without_the_scope_or_the_vault() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let admin = token_for(&app, &tenant, "root", "*").await;
    let reader = token_for(&app, &tenant, "rita", "read:*").await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.create_vault("Other").await.unwrap();
    let root = tx.ensure_principal(otc_store::PrincipalKind::User, "root").await.unwrap();
    let bound = tx
        .issue_token(otc_store::NewToken {
            principal_id: root.id,
            name: "bound".into(),
            scopes: otc_auth::parse_scopes("admin:acl").unwrap(),
            vault_id: Some(tenant.vault_id),
            expires_at: None,
        })
        .await
        .unwrap()
        .plaintext;
    tx.commit().await.unwrap();

    let long = "x".repeat(600);
    let many: Vec<String> = (0..101).map(|i| format!("F{i}/**")).collect();
    for (body, field) in [
        (json!({"vault": "Notes", "read_paths": ["a"]}), "subject"),
        (json!({"vault": "Notes", "everyone": true, "group": "g"}), "subject"),
        (json!({"vault": "Notes", "group": "bad/name"}), "group"),
        (json!({"vault": "Notes", "everyone": true, "read_paths": [""]}), "read_paths"),
        (json!({"vault": "Notes", "everyone": true, "write_paths": [long]}), "write_paths"),
        (json!({"vault": "Notes", "everyone": true, "delete_paths": ["a\u{0}b"]}), "delete_paths"),
        (json!({"vault": "Notes", "everyone": true, "read_paths": many}), "read_paths"),
    ] {
        let (status, answer) = api(&app, &admin, Method::PUT, "/v1/acl", Some(body.clone())).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "invalid_input", "{answer}");
        assert_eq!(answer["error"]["details"]["field"], field, "{answer}");
        assert!(answer.to_string().len() < 2000, "the error echoes a bounded input: {answer}");
    }
    let (status, answer) =
        api(&app, &admin, Method::PUT, "/v1/acl", Some(json!({"vault": "Notes", "everyone": true, "nope": 1}))).await;
    assert_eq!((status.as_u16(), answer["error"]["code"].clone()), (400, json!("validation_error")), "{answer}");
    let (status, answer) =
        api(&app, &admin, Method::PUT, "/v1/acl", Some(json!({"vault": "Zed", "everyone": true}))).await;
    assert_eq!((status.as_u16(), answer["error"]["code"].clone()), (404, json!("vault_not_found")));
    let (status, answer) =
        api(&app, &admin, Method::POST, "/v1/principals/nobody/groups", Some(json!({"add": ["a"]}))).await;
    assert_eq!((status.as_u16(), answer["error"]["code"].clone()), (404, json!("not_found")));
    let (status, _) = api(&app, &admin, Method::DELETE, "/v1/acl?vault=Notes&everyone=true", None).await;
    assert_eq!(status, 404, "no such rule");

    // Without admin:acl: 403 naming the scope; the tool is not even listed.
    for (method, path, body) in [
        (Method::GET, "/v1/acl", None),
        (Method::PUT, "/v1/acl", Some(json!({"vault": "Notes", "everyone": true}))),
        (Method::GET, "/v1/principals/rita/groups", None),
    ] {
        let (status, answer) = api(&app, &reader, method, path, body).await;
        assert_eq!(status, 403, "{path}: {answer}");
        assert_eq!(answer["error"]["details"]["required"], json!(["admin:acl"]), "{answer}");
    }
    let e = err(&app, &reader, "inspect_acl", json!({"vault": "Notes", "path": "a.md", "op": "read"})).await;
    assert_eq!(e["code"], "forbidden");

    // A credential bound to Notes manages Notes' rules only, and no groups.
    let (status, _) = api(
        &app,
        &bound,
        Method::PUT,
        "/v1/acl",
        Some(json!({"vault": "Notes", "everyone": true, "read_paths": ["**"]})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, answer) =
        api(&app, &bound, Method::PUT, "/v1/acl", Some(json!({"vault": "Other", "everyone": true}))).await;
    assert_eq!((status.as_u16(), answer["error"]["code"].clone()), (404, json!("vault_not_found")));
    api(&app, &admin, Method::PUT, "/v1/acl", Some(json!({"vault": "Other", "group": "g", "read_only": true}))).await;
    let (_, seen) = api(&app, &bound, Method::GET, "/v1/acl", None).await;
    assert_eq!(seen["rules"].as_array().unwrap().len(), 1, "only Notes' rule: {seen}");
    let (_, all) = api(&app, &admin, Method::GET, "/v1/acl", None).await;
    assert_eq!(all["rules"].as_array().unwrap().len(), 2, "{all}");
    let (status, _) = api(&app, &bound, Method::GET, "/v1/principals/rita/groups", None).await;
    assert_eq!(status, 403);
    let (status, answer) = api(&app, &admin, Method::DELETE, "/v1/acl?vault=Other&group=g", None).await;
    assert_eq!((status.as_u16(), answer["removed"].clone()), (200, json!(true)));
}
