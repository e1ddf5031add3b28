//! The console in a real browser (Debian's Chromium through chromedriver, `webdriver`): a new
//! organisation's whole onboarding, from the operator's invitation through its identity
//! provider (a real OpenID provider), the proof of its domain (a real DNS server), a vault, a
//! token, an export and a deletion undone, then its people signing in through that provider and
//! connecting a client. Each step saves a screenshot under the test's output folder
//! (`$CARGO_TARGET_TMPDIR/console-browser`), axe-core checks every page for serious and
//! critical violations, and every page is shown at 1440 and at 390 pixels wide (a phone), where
//! nothing may overflow sideways. `UPDATE_SCREENSHOTS=1` copies the overview's and the vaults'
//! screenshots to `docs/console/`, which the README shows.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::admin_api::Dns;
use crate::harness::TestApp;
use crate::webdriver::Browser;

/// Checks the page the browser shows: no serious or critical accessibility violation, and
/// nothing wider than the window.
async fn check(browser: &Browser, step: &str) -> PathBuf {
    let violations = browser.axe().await;
    assert!(violations.is_empty(), "{step}: axe found {}", serde_json::to_string_pretty(&violations).unwrap());
    let overflow = browser.execute("return [document.documentElement.scrollWidth, window.innerWidth];", vec![]).await;
    let (content, window) = (overflow[0].as_i64().unwrap(), overflow[1].as_i64().unwrap());
    assert!(content <= window + 1, "{step}: the page is {content}px wide in a {window}px window");
    browser.screenshot(step).await
}

/// The flash message the page shows (or the empty string).
async fn flash(browser: &Browser) -> String {
    match browser.try_find(".flash").await {
        Some(_) => browser.text(".flash").await,
        None => String::new(),
    }
}

/// Signs in through the console's sign-in page and the provider's login form.
async fn sign_in(browser: &Browser, app: &TestApp, email: &str, login: &str, password: &str) {
    browser.goto(&app.url("/console/sign-in")).await;
    browser.fill("#email", email).await;
    browser.submit("form[action='/console/sign-in'] button[type=submit]").await;
    // The provider's own login page.
    browser.fill("input[name=login]", login).await;
    browser.fill("input[name=password]", password).await;
    browser.submit("button[type=submit]").await;
    let at = browser.current_url().await;
    assert_eq!(at, app.url("/console"), "{email} ends on the overview");
}

fn output() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-browser")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organisation_is_onboarded_and_its_people_connect_in_a_real_browser() {
    let dns_port = Dns::free_port();
    let app = TestApp::spawn_with(|c| {
        crate::sso::oauth_on(c);
        c.domains.resolver = format!("127.0.0.1:{dns_port}");
    })
    .await;
    let idp = crate::sso::start_idp(
        &app.url(""),
        "obsidian-tc-initech",
        json!([{"sub": "ann-1", "login": "ann", "password": "pw-ann", "email": "ann@initech.test", "name": "Ann", "groups": ["admins"]},
               {"sub": "max-2", "login": "max", "password": "pw-max", "email": "max@initech.test", "name": "Max", "groups": ["staff"]}]),
    )
    .await;
    // The operator makes the organisation and invites its first admin.
    let made =
        crate::harness::cli_with_env(app.iso.env(), &["tenant", "create", "initech", "--invite", "ann@initech.test"]);
    assert!(made.status.success(), "{}", crate::harness::stderr(&made));
    let stdout = crate::harness::stdout(&made);
    let code = stdout.lines().find(|l| l.starts_with("otci_")).unwrap().trim().to_string();
    let out = output();
    let _ = std::fs::remove_dir_all(&out);
    let wide = Browser::start(&out.join("1440"), 1440, 900).await;

    // 1. The invitation.
    wide.goto(&app.url(&format!("/console/invitation?code={code}"))).await;
    check(&wide, "invitation").await;
    wide.submit("form[action='/console/invitation'] button[type=submit]").await;
    let welcome = wide.text("main").await;
    assert!(welcome.contains("You are the administrator of initech"), "{welcome}");
    let admin_token = wide.text("#admin-token").await;
    assert!(admin_token.starts_with("otc_"), "{admin_token}");
    check(&wide, "welcome").await;

    // 2. The identity provider, and its connection test.
    wide.goto(&app.url("/console/settings")).await;
    wide.fill("#idp-issuer", &idp.issuer).await;
    wide.fill("#idp-client", "obsidian-tc-initech").await;
    wide.fill("#idp-secret", "idp-client-secret").await;
    wide.fill("#idp-defaults", "read:notes").await;
    wide.fill("#idp-group-scopes", "admins: admin:*, read:*, write:*, delete:*\nstaff: read:notes, write:notes").await;
    wide.submit("form[action='/console/settings/idp'] button[type=submit]").await;
    assert!(flash(&wide).await.contains("Saved the identity provider"), "{}", flash(&wide).await);
    wide.submit("form[action='/console/settings/idp/test'] button[type=submit]").await;
    let tested = flash(&wide).await;
    assert!(tested.contains("The connection test passed"), "{tested}");
    check(&wide, "identity-provider").await;

    // 3. The domain: claimed, its TXT record published in DNS, proved.
    wide.fill("#new-domain", "initech.test").await;
    wide.submit("form[action='/console/settings/domains'] button[type=submit]").await;
    let record_value = wide.text("#txt-0").await;
    let record_name = wide.text(".card dl.facts dd code").await;
    check(&wide, "domain-challenge").await;
    let _dns = Dns::start(dns_port, &[(record_name.trim(), record_value.trim())]);
    wide.submit("form[action='/console/settings/domains/initech.test/verify'] button[type=submit]").await;
    assert!(flash(&wide).await.contains("Proved initech.test"), "{}", flash(&wide).await);
    // Sign-in by email now routes the domain to the provider.
    wide.fill("#idp-domains", "initech.test").await;
    wide.submit("form[action='/console/settings/idp'] button[type=submit]").await;
    assert!(flash(&wide).await.contains("Saved"), "{}", flash(&wide).await);
    check(&wide, "domain-proved").await;

    // 4. A vault.
    wide.goto(&app.url("/console/vaults")).await;
    wide.fill("#new-vault", "Handbook").await;
    wide.submit("form[action='/console/vaults'] button[type=submit]").await;
    assert!(flash(&wide).await.contains("Created the vault Handbook"));
    let vaults_shot = check(&wide, "vaults").await;

    // 5. A token, shown once.
    wide.goto(&app.url("/console/tokens")).await;
    wide.fill("#token-name", "ci").await;
    wide.submit("form[action='/console/tokens'] button[type=submit]").await;
    assert!(wide.try_find("#new-token").await.is_some(), "{}", flash(&wide).await);
    let token = wide.text("#new-token").await;
    assert!(token.starts_with("otc_"), "{token}");
    check(&wide, "token-created").await;
    let who: Value =
        app.http.get(app.url("/v1/whoami")).bearer_auth(token.trim()).send().await.unwrap().json().await.unwrap();
    assert_eq!(who["tenant"]["slug"], "initech");

    // 6. The export: the page's link, fetched as the browser would with its session.
    wide.goto(&app.url("/console/vaults")).await;
    let href = wide.attr("a[download]", "href").await.expect("an export link");
    let session = wide
        .cookies()
        .await
        .into_iter()
        .find(|c| c["name"] == "otc_console")
        .and_then(|c| c["value"].as_str().map(str::to_string))
        .expect("the session cookie");
    let cookie = wide.cookies().await.into_iter().find(|c| c["name"] == "otc_console").unwrap();
    assert_eq!((cookie["httpOnly"].as_bool(), cookie["sameSite"].as_str()), (Some(true), Some("Lax")));
    let export = app.http.get(app.url(&href)).header("cookie", format!("otc_console={session}")).send().await.unwrap();
    assert_eq!(export.status(), 200);
    assert!(export.headers()["content-disposition"].to_str().unwrap().contains(".tar"));
    let tar = export.bytes().await.unwrap();
    assert!(tar.len() > 1024 && tar.windows(8).any(|w| w == b"END.json"), "{} bytes", tar.len());

    // 7. A deletion, undone from the message it leaves.
    wide.submit("form[action$='/delete'] button").await;
    assert!(flash(&wide).await.contains("Deleted the vault"), "{}", flash(&wide).await);
    check(&wide, "vault-deleted").await;
    wide.submit(".flash form button").await;
    assert!(flash(&wide).await.contains("Restored the vault"), "{}", flash(&wide).await);

    // 8. The other pages.
    for (path, step) in [
        ("/console", "overview"),
        ("/console/members", "members"),
        ("/console/access", "access"),
        ("/console/audit", "audit"),
        ("/console/connect", "connect-admin"),
    ] {
        wide.goto(&app.url(path)).await;
        check(&wide, step).await;
    }
    let overview_shot = out.join("1440").join(
        std::fs::read_dir(out.join("1440"))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
            .find(|n| n.ends_with("-overview.png"))
            .unwrap(),
    );
    wide.submit("form[action='/console/sign-out'] button").await;
    assert_eq!(wide.current_url().await, app.url("/console/sign-in"));

    // 9. Ann signs in through the provider now, and sees every page at a phone's width too.
    sign_in(&wide, &app, "ann@initech.test", "ann", "pw-ann").await;
    assert!(wide.text("nav.main").await.contains("Settings"));
    wide.set_size(390, 844).await;
    for (path, step) in [
        ("/console", "phone-overview"),
        ("/console/vaults", "phone-vaults"),
        ("/console/members", "phone-members"),
        ("/console/access", "phone-access"),
        ("/console/tokens", "phone-tokens"),
        ("/console/audit", "phone-audit"),
        ("/console/settings", "phone-settings"),
        ("/console/connect", "phone-connect"),
    ] {
        wide.goto(&app.url(path)).await;
        check(&wide, step).await;
    }
    wide.goto(&app.url("/console/members")).await;
    assert!(wide.text("main").await.contains("ann@initech.test"));
    wide.quit().await;

    // 10. A member signs in on a phone and connects a client.
    let phone = Browser::start(&out.join("390"), 390, 844).await;
    phone.goto(&app.url("/console/sign-in")).await;
    check(&phone, "sign-in").await;
    sign_in(&phone, &app, "max@initech.test", "max", "pw-max").await;
    assert!(phone.text("main").await.contains("Your vaults"));
    assert!(!phone.text("nav.main").await.contains("Settings"), "a member sees no admin page");
    check(&phone, "member-overview").await;
    phone.goto(&app.url("/console/connect")).await;
    assert_eq!(phone.text("#mcp-url").await.trim(), app.url("/mcp"));
    check(&phone, "member-connect").await;
    phone.goto(&app.url("/console/vaults")).await;
    assert!(phone.text("main").await.contains("scope"), "an admin page refuses a member");
    phone.quit().await;

    if std::env::var_os("UPDATE_SCREENSHOTS").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/console");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::copy(&overview_shot, docs.join("overview.png")).unwrap();
        std::fs::copy(&vaults_shot, docs.join("vaults.png")).unwrap();
    }
}
