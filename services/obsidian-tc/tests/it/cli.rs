//! The binary's admin commands: migrate, tenant, token, doctor.

use reqwest::StatusCode;
use serde_json::Value;

use crate::harness::{Isolation, TestApp, cli, cli_with_env, closed_port, stderr, stdout};

#[tokio::test]
async fn migrate_applies_pending_migrations_then_reports_current() {
    // A brand-new empty database, not the migrated template.
    let iso = Isolation::new().await;
    let empty = format!("{}_empty", iso.database_url.rsplit('/').next().unwrap());
    let admin = iso.database_url.rsplit_once('/').unwrap().0.to_string();
    otc_store::testing::create_empty_database(&iso.database_url, &empty).await.expect("empty database");
    let mut env = iso.env();
    env.retain(|(k, _)| k != "OTC__DATABASE__URL");
    env.push(("OTC__DATABASE__URL".into(), format!("{admin}/{empty}")));
    let out = cli_with_env(env.clone(), &["migrate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("applied migration"), "{}", stdout(&out));
    let out = cli_with_env(env, &["migrate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "database schema is current");
}

#[tokio::test]
async fn token_create_list_revoke_through_the_binary() {
    let app = TestApp::spawn().await;
    let iso = &app.iso;
    let out = cli(iso, &["tenant", "create", "acme", "--name", "Acme Corp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli(iso, &["tenant", "create", "acme"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    let out = cli(iso, &["tenant", "create", "Not A Slug"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("invalid tenant slug"), "{}", stderr(&out));

    // Bad scopes and durations are refused before anything is written.
    let out = cli(iso, &["token", "create", "--tenant", "acme", "--scopes", "fly:notes"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("invalid scope \"fly:notes\""), "{}", stderr(&out));
    let out = cli(iso, &["token", "create", "--tenant", "acme", "--scopes", "read:notes", "--expires-in", "soon"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("invalid duration"), "{}", stderr(&out));
    let out = cli(iso, &["token", "create", "--tenant", "nobody", "--scopes", "read:notes"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("tenant nobody"), "{}", stderr(&out));
    let out = cli(iso, &["token", "create", "--tenant", "acme", "--scopes", "read:notes", "--vault", "Missing"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no vault named \"Missing\""), "{}", stderr(&out));

    let out = cli(
        iso,
        &[
            "token",
            "create",
            "--tenant",
            "acme",
            "--scopes",
            "read:notes,write:notes",
            "--name",
            "laptop",
            "--expires-in",
            "30d",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let token = stdout(&out).trim().to_string();
    assert!(token.starts_with("otc_") && !token.contains('\n'), "stdout is the token alone: {token:?}");
    assert!(!stderr(&out).contains(&token), "the token is printed once");

    // The gateway keeps the token once checked (from its tenant's second check on): the
    // revocation below must reach it.
    for _ in 0..2 {
        let status = app.http.get(app.url("/v1/whoami")).bearer_auth(&token).send().await.unwrap().status();
        assert_eq!(status, StatusCode::OK);
    }
    let me: Value = app.http.get(app.url("/v1/whoami")).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    assert_eq!(me["tenant"]["slug"], "acme");
    assert_eq!(me["principal"]["name"], "cli");
    assert_eq!(me["scopes"], serde_json::json!(["read:notes", "write:notes"]));
    let id = me["token_id"].as_str().unwrap().to_string();

    let list = cli(iso, &["token", "list", "--tenant", "acme"]);
    assert!(list.status.success(), "{}", stderr(&list));
    let listing = stdout(&list);
    assert!(listing.contains(&id) && listing.contains("laptop") && listing.contains("live until"), "{listing}");
    assert!(!listing.contains(&token[20..]), "the listing never shows the secret");

    let out = cli(iso, &["token", "revoke", "--tenant", "acme", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let after = app.http.get(app.url("/v1/whoami")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(after.status(), StatusCode::UNAUTHORIZED);
    assert!(stdout(&cli(iso, &["token", "list", "--tenant", "acme"])).contains("revoked"));
    let out = cli(iso, &["token", "revoke", "--tenant", "acme", &uuid::Uuid::new_v4().to_string()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no token"), "{}", stderr(&out));
    app.stop().await;
}

#[tokio::test]
async fn doctor_passes_when_everything_is_up() {
    let iso = Isolation::new().await;
    let out = cli(&iso, &["doctor"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(!text.contains("problem:"), "{text}");
    for subject in ["postgres", "redis", "object store", "database schema is current"] {
        assert!(text.lines().any(|l| l.starts_with("ok:") && l.contains(subject)), "no ok line for {subject}:\n{text}");
    }
}

#[tokio::test]
async fn doctor_names_postgres_in_one_line_when_it_is_down() {
    let iso = Isolation::new().await;
    let mut env = iso.env();
    env.retain(|(k, _)| k != "OTC__DATABASE__URL");
    env.push((
        "OTC__DATABASE__URL".into(),
        format!("postgres://postgres:secret-pw@127.0.0.1:{}/obsidian_tc", closed_port()),
    ));
    env.push(("OTC__DATABASE__CONNECT_TIMEOUT_SECS".into(), "1".into()));
    let out = cli_with_env(env, &["doctor"]);
    let text = stdout(&out);
    assert!(!out.status.success(), "{text}");
    let problems: Vec<&str> = text.lines().filter(|l| l.starts_with("problem:")).collect();
    assert_eq!(problems.len(), 1, "{text}");
    assert!(problems[0].contains("postgres") && problems[0].contains("scripts/services up"), "{text}");
    assert!(!text.contains("secret-pw"), "the password is never printed: {text}");
    assert!(text.lines().any(|l| l.starts_with("ok:") && l.contains("redis")), "{text}");
}

#[tokio::test]
async fn doctor_reports_unknown_keys_and_malformed_values() {
    let iso = Isolation::new().await;
    let mut env = iso.env();
    env.push(("OTC__SERVER__LISEN".into(), "127.0.0.1:1".into()));
    let out = cli_with_env(env, &["doctor"]);
    assert!(!out.status.success());
    let text = stdout(&out);
    let problems: Vec<&str> = text.lines().filter(|l| l.starts_with("problem:")).collect();
    assert_eq!(problems.len(), 1, "{text}");
    assert!(problems[0].contains("unknown configuration key OTC__SERVER__LISEN"), "{text}");

    let mut env = iso.env();
    env.push(("OTC__DATABASE__MAX_CONNECTIONS".into(), "lots".into()));
    let out = cli_with_env(env.clone(), &["doctor"]);
    assert!(!out.status.success());
    assert!(stdout(&out).contains("problem: configuration: OTC__DATABASE__MAX_CONNECTIONS"), "{}", stdout(&out));
    // The same value stops `serve` with exit code 2 and the key named.
    let out = cli_with_env(env, &["serve"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("OTC__DATABASE__MAX_CONNECTIONS"), "{}", stderr(&out));
}

#[tokio::test]
async fn doctor_reads_a_config_file_and_names_its_bad_keys() {
    let iso = Isolation::new().await;
    let file = std::env::temp_dir().join(format!("otc-doctor-{}.toml", uuid::Uuid::new_v4()));
    std::fs::write(&file, "[worker]\nsweep_interval_secs = 5\nfrobnicate = true\n").unwrap();
    let out = cli(&iso, &["--config", file.to_str().unwrap(), "doctor"]);
    std::fs::remove_file(&file).unwrap();
    let text = stdout(&out);
    assert!(!out.status.success());
    assert!(text.contains("ok: configuration file"), "{text}");
    assert!(text.contains("problem: unknown configuration key worker.frobnicate (config file"), "{text}");
}

#[tokio::test]
async fn doctor_warns_about_deprecated_facade_settings_and_refuses_unknown_tool_names() {
    let iso = Isolation::new().await;
    let mut env = iso.env();
    env.push(("OTC__TOOL_FACADE__MODE".into(), "auto".into()));
    let out = cli_with_env(env, &["doctor"]);
    let text = stdout(&out);
    assert!(out.status.success(), "a deprecation is a warning, not a problem: {text}");
    assert!(text.lines().any(|l| l.starts_with("warning:") && l.contains("\"auto\" is deprecated")), "{text}");

    let mut env = iso.env();
    env.push(("OTC__TOOL_FACADE__EXPLAIN_AUTO_MODE".into(), "true".into()));
    let text = stdout(&cli_with_env(env, &["doctor"]));
    assert!(text.contains("warning: tool_facade.explain_auto_mode has no effect"), "{text}");

    let file = std::env::temp_dir().join(format!("otc-doctor-{}.toml", uuid::Uuid::new_v4()));
    std::fs::write(&file, "[tool_visibility]\nhidden = [\"server_helth\"]\ndisabled_tags = [\"dangerous\"]\n").unwrap();
    let out = cli(&iso, &["--config", file.to_str().unwrap(), "doctor"]);
    std::fs::remove_file(&file).unwrap();
    let text = stdout(&out);
    assert!(!out.status.success());
    assert!(text.contains("problem: tool_visibility.hidden names \"server_helth\""), "{text}");
    assert!(text.contains("problem: tool_visibility.disabled_tags names \"dangerous\""), "{text}");
}
