//! The web console over HTTP (its pages in a real browser are `console_browser`): sessions and
//! their cookie, CSRF, the security headers, what a member may see, sign-out on every gateway,
//! sign-in through an invitation and through the tenant's identity provider, and another
//! tenant's ids in every URL answering as missing ones.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};

/// Every scope an organisation's first admin holds.
pub const ADMIN: &str = "*";

/// A browser's view of the console: no redirects followed, the session cookie sent by hand.
pub struct Visitor<'a> {
    pub app: &'a TestApp,
    pub http: reqwest::Client,
    pub cookie: String,
}

/// A console session for `person` of `tenant` with `scopes`, as a sign-in would start it.
pub async fn session(app: &TestApp, tenant: &Tenant, person: &str, scopes: &str) -> String {
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let principal = tx.ensure_principal(otc_store::PrincipalKind::User, person).await.unwrap();
    let issued = tx
        .issue_console_session(
            principal.id,
            otc_auth::parse_scopes(scopes).unwrap(),
            chrono::Utc::now() + chrono::Duration::hours(1),
        )
        .await
        .unwrap();
    tx.commit().await.unwrap();
    issued.plaintext
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Answer {
    pub fn location(&self) -> &str {
        self.headers.get("location").and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// The value the answer sets for cookie `name`, and the whole Set-Cookie line.
    pub fn set_cookie(&self, name: &str) -> Option<(String, String)> {
        self.headers.get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).find_map(|line| {
            let pair = line.split(';').next()?;
            let (k, v) = pair.split_once('=')?;
            (k.trim() == name).then(|| (v.to_string(), line.to_string()))
        })
    }
}

impl<'a> Visitor<'a> {
    pub fn new(app: &'a TestApp, cookie: &str) -> Self {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Visitor { app, http, cookie: cookie.to_string() }
    }

    async fn answer(response: reqwest::Response) -> Answer {
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap_or_default();
        Answer { status, headers, text }
    }

    pub async fn get(&self, path: &str) -> Answer {
        let response = self
            .http
            .get(self.app.url(path))
            .header("cookie", format!("otc_console={}", self.cookie))
            .send()
            .await
            .unwrap();
        Self::answer(response).await
    }

    /// Posts `fields` with this session's CSRF token (and a fresh idempotency key unless one
    /// is among them).
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Answer {
        let csrf = otc_gateway::console::session::csrf_of(&self.cookie);
        let key = uuid::Uuid::new_v4().to_string();
        let mut form: Vec<(&str, &str)> = vec![("csrf", &csrf)];
        if !fields.iter().any(|(k, _)| *k == "key") {
            form.push(("key", &key));
        }
        form.extend_from_slice(fields);
        self.post_raw(path, &form, None).await
    }

    pub async fn post_raw(&self, path: &str, form: &[(&str, &str)], origin: Option<&str>) -> Answer {
        let mut request =
            self.http.post(self.app.url(path)).header("cookie", format!("otc_console={}", self.cookie)).form(form);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        Self::answer(request.send().await.unwrap()).await
    }
}

async fn api(app: &TestApp, token: &str, path: &str) -> Value {
    app.http.get(app.url(path)).bearer_auth(token).send().await.unwrap().json().await.unwrap()
}

/// `api`'s answer as text (the trail's JSON lines).
async fn api_text(app: &TestApp, token: &str, path: &str) -> String {
    app.http.get(app.url(path)).bearer_auth(token).send().await.unwrap().text().await.unwrap()
}

/// The pages every signed-in person may open, and the admin's.
const MEMBER_PAGES: [&str; 3] = ["/console", "/console/tokens", "/console/connect"];
const ADMIN_PAGES: [&str; 6] = [
    "/console/vaults",
    "/console/members",
    "/console/access",
    "/console/audit",
    "/console/settings",
    "/console/members/alice",
];

#[tokio::test]
async fn every_page_answers_an_admin_with_strict_headers_and_nothing_without_a_session() {
    let app = TestApp::spawn().await;
    let acme = Tenant::create(&app.store, "acme").await;
    let visitor = Visitor::new(&app, &session(&app, &acme, "alice", ADMIN).await);
    for path in MEMBER_PAGES.iter().chain(&ADMIN_PAGES) {
        let page = visitor.get(path).await;
        assert_eq!(page.status, 200, "{path}: {}", page.text);
        assert!(page.text.contains("acme inc.") && page.text.contains("alice"), "{path}: {}", page.text);
        let csp = page.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("script-src 'self'") && csp.contains("style-src 'self'"), "{csp}");
        assert!(!csp.contains("unsafe-inline") && csp.contains("frame-ancestors 'none'"), "{csp}");
        assert_eq!(page.headers["x-frame-options"], "DENY");
        assert_eq!(page.headers["cache-control"], "no-store");
        // No inline script or style anywhere (the policy would block it).
        assert!(!page.text.contains("<script>") && !page.text.contains("style="), "{path}");
    }
    let overview = visitor.get("/console").await.text;
    assert!(overview.contains("<svg") && overview.contains("Calls per day"), "{overview}");
    assert!(overview.contains("Notes") && overview.contains("up to date"), "{overview}");
    for asset in ["/console/assets/console.css", "/console/assets/console.js"] {
        let got = visitor.get(asset).await;
        assert_eq!(got.status, 200, "{asset}");
    }

    // No cookie, a forged one, or a page that does not exist.
    let stranger = Visitor::new(&app, "");
    let sent = stranger.get("/console/vaults").await;
    assert_eq!((sent.status, sent.location()), (StatusCode::SEE_OTHER, "/console/sign-in"));
    let forged = Visitor::new(&app, "otc_forged");
    assert_eq!(forged.get("/console").await.location(), "/console/sign-in");
    let sign_in = stranger.get("/console/sign-in").await;
    assert_eq!(sign_in.status, 200);
    assert!(sign_in.text.contains("Accept your invitation"), "{}", sign_in.text);
    assert_eq!(visitor.get("/console/nothing-here").await.status, 404);
}

#[tokio::test]
async fn forms_need_this_origin_and_the_sessions_csrf_token_and_act_once_through_the_api() {
    let app = TestApp::spawn().await;
    let acme = Tenant::create(&app.store, "acme").await;
    let cookie = session(&app, &acme, "alice", ADMIN).await;
    let visitor = Visitor::new(&app, &cookie);
    let (admin, _) = acme.token(&app.store, ADMIN, false, None).await;
    let vault_names = || async {
        let listed = api(&app, &admin, "/v1/admin/vaults").await;
        listed["vaults"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };

    // Without the CSRF token, with another's, from another origin: refused, nothing made.
    let bare = visitor.post_raw("/console/vaults", &[("name", "Plans")], None).await;
    assert_eq!(bare.status, 403, "{}", bare.text);
    let other = otc_gateway::console::session::csrf_of("otc_someone_else");
    let wrong = visitor.post_raw("/console/vaults", &[("name", "Plans"), ("csrf", &other)], None).await;
    assert_eq!(wrong.status, 403);
    let csrf = otc_gateway::console::session::csrf_of(&cookie);
    let cross =
        visitor.post_raw("/console/vaults", &[("name", "Plans"), ("csrf", &csrf)], Some("https://evil.test")).await;
    assert_eq!(cross.status, 403);
    assert_eq!(vault_names().await, ["Notes"]);

    // The form: made once however often it is sent with its key, said on the next page.
    let sent = visitor.post("/console/vaults", &[("name", "Plans"), ("key", "form-1")]).await;
    assert_eq!((sent.status, sent.location()), (StatusCode::SEE_OTHER, "/console/vaults"));
    let (flash, line) = sent.set_cookie("otc_console_flash").expect("a message for the next page");
    assert!(line.contains("HttpOnly") && line.contains("Path=/console"), "{line}");
    let again = visitor.post("/console/vaults", &[("name", "Plans"), ("key", "form-1")]).await;
    assert_eq!(again.status, 303);
    assert_eq!(vault_names().await, ["Notes", "Plans"]);
    let shown = visitor
        .http
        .get(app.url("/console/vaults"))
        .header("cookie", format!("otc_console={cookie}; otc_console_flash={flash}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(shown.contains("Created the vault Plans."), "{shown}");

    // A refusal of the API is said, with its code.
    let taken = visitor.post("/console/vaults", &[("name", "Plans")]).await;
    let (flash, _) = taken.set_cookie("otc_console_flash").unwrap();
    let text =
        String::from_utf8(base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, flash).unwrap())
            .unwrap();
    assert!(text.contains("conflict"), "{text}");

    // Delete, then the undo the message offers.
    let plans = api(&app, &admin, "/v1/admin/vaults").await["vaults"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "Plans")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let deleted = visitor.post(&format!("/console/vaults/{plans}/delete"), &[]).await;
    let (flash, _) = deleted.set_cookie("otc_console_flash").unwrap();
    let text =
        String::from_utf8(base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, flash).unwrap())
            .unwrap();
    assert!(text.contains(&format!("\"undo_delete\":\"{plans}\"")), "{text}");
    assert_eq!(vault_names().await, ["Notes"]);
    assert_eq!(visitor.post(&format!("/console/vaults/{plans}/restore"), &[]).await.status, 303);
    assert_eq!(vault_names().await, ["Notes", "Plans"]);

    // Each was the API's own action, in the trail as the person's.
    let csv = app
        .http
        .get(app.url("/v1/audit?format=csv&action=POST%20/v1/admin/vaults"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    let csv = csv.text().await.unwrap();
    assert!(csv.starts_with("id,at,principal_id,principal,client,"), "{csv}");
    assert!(csv.lines().skip(1).any(|l| l.contains(",alice,") && l.contains("obsidian-tc console")), "{csv}");

    // The export, as a download.
    let export = visitor.get(&format!("/console/vaults/{plans}/export")).await;
    assert_eq!(export.status, 200);
    assert!(export.headers["content-disposition"].to_str().unwrap().starts_with("attachment;"));
    let trail = visitor.get("/console/audit/export?format=csv").await;
    assert_eq!(
        (trail.status, trail.headers["content-type"].to_str().unwrap()),
        (StatusCode::OK, "text/csv; charset=utf-8")
    );
}

#[tokio::test]
async fn a_member_sees_only_what_their_scopes_open() {
    let app = TestApp::spawn().await;
    let acme = Tenant::create(&app.store, "acme").await;
    let member = Visitor::new(&app, &session(&app, &acme, "bo", "read:notes,write:notes").await);
    let overview = member.get("/console").await;
    assert_eq!(overview.status, 200);
    assert!(overview.text.contains("Your vaults") && overview.text.contains("Notes"), "{}", overview.text);
    for hidden in [
        "href=\"/console/vaults\"",
        "href=\"/console/members\"",
        "href=\"/console/audit\"",
        "href=\"/console/settings\"",
    ] {
        assert!(!overview.text.contains(hidden), "{hidden}");
    }
    for path in MEMBER_PAGES {
        assert_eq!(member.get(path).await.status, 200, "{path}");
    }
    for path in ADMIN_PAGES {
        let refused = member.get(path).await;
        assert!(
            refused.status == 403 || refused.text.contains("Nothing here is yours"),
            "{path}: {} {}",
            refused.status,
            refused.text
        );
    }
    let connect = member.get("/console/connect").await.text;
    assert!(connect.contains(&app.url("/mcp")) && connect.contains("claude mcp add"), "{connect}");
    // A change the API refuses them is said, and nothing changes.
    let tried = member.post("/console/vaults", &[("name", "Mine")]).await;
    assert_eq!(tried.status, 303);
    let (flash, _) = tried.set_cookie("otc_console_flash").expect("the refusal is said");
    let said =
        String::from_utf8(base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, flash).unwrap())
            .unwrap();
    assert!(said.contains("this needs scope admin:vaults"), "{said}");
    let (admin, _) = acme.token(&app.store, ADMIN, false, None).await;
    assert_eq!(api(&app, &admin, "/v1/admin/vaults").await["vaults"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn signing_out_ends_the_session_on_every_gateway_and_everywhere_ends_them_all() {
    let app = TestApp::spawn().await;
    let acme = Tenant::create(&app.store, "acme").await;
    let (one, two) = (session(&app, &acme, "alice", ADMIN).await, session(&app, &acme, "alice", ADMIN).await);
    let bo = session(&app, &acme, "bo", ADMIN).await;
    let second = app.another_gateway(|_| {}).await;
    let on_second = |cookie: &str| {
        let url = format!("http://{}/console", second.addr);
        let cookie = cookie.to_string();
        async move {
            let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
            http.get(url).header("cookie", format!("otc_console={cookie}")).send().await.unwrap().status()
        }
    };
    // Each gateway has checked each session (and keeps the check).
    for c in [&one, &two, &bo] {
        assert_eq!(Visitor::new(&app, c).get("/console").await.status, 200);
        assert_eq!(on_second(c).await, 200);
    }
    let out = Visitor::new(&app, &one).post("/console/sign-out", &[]).await;
    assert_eq!(out.location(), "/console/sign-in");
    let (cleared, line) = out.set_cookie("otc_console").unwrap();
    assert!(cleared.is_empty() && line.contains("Max-Age=0"), "{line}");
    assert_eq!(Visitor::new(&app, &one).get("/console").await.location(), "/console/sign-in");
    assert_eq!(on_second(&one).await, 303);
    assert_eq!(on_second(&two).await, 200);

    let everywhere = Visitor::new(&app, &two).post("/console/sign-out-everywhere", &[]).await;
    assert_eq!(everywhere.location(), "/console/sign-in");
    assert_eq!(on_second(&two).await, 303);
    assert_eq!(on_second(&bo).await, 200, "another person's session goes on");
    second.stop().await.unwrap();
    // Both in the trail, as alice's: the one session through the API, all of them beside it.
    let (admin, _) = acme.token(&app.store, ADMIN, false, None).await;
    let trail = api_text(&app, &admin, "/v1/audit?principal=alice").await;
    assert!(
        trail.contains("\"DELETE /v1/me/tokens/{id}\"") && trail.contains("\"console sign-out everywhere\""),
        "{trail}"
    );
}

#[tokio::test]
async fn an_invitation_starts_the_first_admins_session_once() {
    let app = TestApp::spawn().await;
    let made =
        crate::harness::cli_with_env(app.iso.env(), &["tenant", "create", "initech", "--invite", "ann@initech.test"]);
    assert!(made.status.success(), "{}", crate::harness::stderr(&made));
    let out = crate::harness::stdout(&made);
    let code = out.lines().find(|l| l.starts_with("otci_")).unwrap().trim().to_string();
    let stranger = Visitor::new(&app, "");
    let page = stranger.get(&format!("/console/invitation?code={code}")).await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains(&format!("value=\"{code}\"")), "{}", page.text);
    assert_eq!(page.headers["referrer-policy"], "same-origin");

    let accepted = stranger.post_raw("/console/invitation", &[("code", &code)], None).await;
    assert_eq!(accepted.status, 200, "{}", accepted.text);
    assert!(accepted.text.contains("otc_") && accepted.text.contains("initech"), "{}", accepted.text);
    let (cookie, line) = accepted.set_cookie("otc_console").expect("a session cookie");
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/console", "Max-Age=28800"] {
        assert!(line.contains(flag), "{flag}: {line}");
    }
    let admin = Visitor::new(&app, &cookie);
    let overview = admin.get("/console").await;
    assert!(overview.status == 200 && overview.text.contains("ann@initech.test"), "{}", overview.text);
    // The session is a token of the person's, listed as a console session, expiring.
    let me = api(&app, &cookie, "/v1/whoami").await;
    assert_eq!(me["principal"]["name"], "ann@initech.test");
    let tokens = api(&app, &cookie, "/v1/me/tokens").await;
    let listed = tokens["tokens"].as_array().unwrap();
    assert!(listed.iter().any(|t| t["name"] == "console session" && !t["expires_at"].is_null()), "{tokens}");

    let trail = api_text(&app, &cookie, "/v1/audit?action=console%20sign-in").await;
    assert!(trail.contains("ann@initech.test"), "{trail}");
    // Once only.
    let again = stranger.post_raw("/console/invitation", &[("code", &code)], None).await;
    assert_eq!(again.status, 400);
    assert!(again.text.contains("no such invitation") && again.set_cookie("otc_console").is_none(), "{}", again.text);
}

/// Every console route that names something in its URL, with another tenant's id there: each
/// answers as a missing thing would, and nothing of the other tenant changes or shows.
#[tokio::test]
async fn another_tenants_ids_in_every_console_url_answer_as_missing_ones() {
    let app = TestApp::spawn().await;
    let acme = Tenant::create(&app.store, "acme").await;
    let globex = Tenant::create(&app.store, "globex").await;
    let visitor = Visitor::new(&app, &session(&app, &acme, "alice", ADMIN).await);
    let (globex_admin, globex_token) = globex.token(&app.store, ADMIN, false, None).await;
    let globex_grants_before = api(&app, &globex_admin, "/v1/oauth/grants").await;
    let claimed = app
        .http
        .post(app.url("/v1/admin/domains"))
        .bearer_auth(&globex_admin)
        .json(&json!({"domain": "globex.test"}))
        .send()
        .await
        .unwrap();
    assert_eq!(claimed.status(), 200);
    let (globex_person, globex_grant) = {
        let mut tx = app.store.begin(globex.id).await.unwrap();
        let p = tx.ensure_principal(otc_store::PrincipalKind::User, "gina").await.unwrap();
        let grant = tx
            .create_grant(otc_store::NewGrant {
                principal_id: p.id,
                client_id: "otcd_client",
                client_name: Some("A client"),
                scopes: &["read:notes".to_string()],
                resource: &app.url("/mcp"),
                via: "authorization_code",
            })
            .await
            .unwrap();
        tx.commit().await.unwrap();
        (p.id, grant.id)
    };
    let ids = [
        ("{vault}", globex.vault_id.to_string()),
        ("{principal}", globex_person.to_string()),
        ("{id}", globex_token.to_string()),
        ("{domain}", "globex.test".to_string()),
    ];
    let mut walked = 0;
    for (method, route) in otc_gateway::console::ROUTES {
        let Some((param, id)) = ids.iter().find(|(p, _)| route.contains(p)) else { continue };
        let id = if route.starts_with("/console/grants/") { globex_grant.to_string() } else { id.clone() };
        let path = route.replace(param, &id);
        let answer = if *method == "GET" {
            visitor.get(&path).await
        } else {
            visitor.post(&path, &[("name", "Taken"), ("add", "x"), ("remove", "y")]).await
        };
        assert_eq!(answer.status, 404, "{method} {path}: {}", answer.text);
        assert!(!answer.text.contains("globex"), "{method} {path}");
        walked += 1;
    }
    assert!(walked >= 10, "{walked} routes walked");
    // The same through the pages' queries.
    // Their person in our vault, and our person in their vault: neither is found.
    let access = visitor.get(&format!("/console/access?principal={globex_person}&vault=Notes")).await;
    assert!(access.status == 200 && access.text.contains("no principal of that name or id"), "{}", access.text);
    assert!(!access.text.contains("gina"));
    let access = visitor.get(&format!("/console/access?principal=alice&vault={}", globex.vault_id)).await;
    assert!(access.text.contains("vault_not_found"), "{}", access.text);
    let trail = visitor.get("/console/audit?vault=Notes").await;
    assert!(!trail.text.contains("globex"));
    // Nothing of globex's changed.
    let vaults = api(&app, &globex_admin, "/v1/admin/vaults").await;
    assert_eq!(vaults["vaults"][0]["name"], "Notes", "{vaults}");
    assert_eq!(api(&app, &globex_admin, "/v1/whoami").await["tenant"]["slug"], "globex");
    let domains = api(&app, &globex_admin, "/v1/admin/domains").await;
    assert_eq!(domains["claims"][0]["domain"], "globex.test", "{domains}");
    let tokens = api(&app, &globex_admin, "/v1/admin/tokens").await;
    assert!(tokens["tokens"].as_array().unwrap().iter().all(|t| t["revoked_at"].is_null()), "{tokens}");
    assert_eq!(api(&app, &globex_admin, "/v1/oauth/grants").await, globex_grants_before);
}

/// Sign-in through the tenant's own identity provider (a real OpenID provider), as a person's
/// browser would walk it: the work email picks the tenant; the session has what the person's
/// groups allow there.
#[tokio::test]
async fn a_person_signs_in_through_their_organisations_provider() {
    let w = crate::sso::world(|_| {}).await;
    let console = w.app.url("/console");
    // alice (acme: read:* and, in eng, write:notes): a member's console.
    let mut browser = crate::sso::Browser::new();
    let ended =
        browser.walk(&w.app.url("/console/sign-in"), &console, "alice@acme.test", ("alice", "pw-a"), "allow").await;
    assert!(matches!(ended, crate::sso::Ended::Client(_)), "{ended:?} {:?}", browser.pages);
    let cookie = browser.cookie(&w.app.url(""), "otc_console").expect("a console session");
    let alice = Visitor::new(&w.app, &cookie);
    let page = alice.get("/console").await;
    assert!(page.status == 200 && page.text.contains("Your vaults"), "{}", page.text);
    assert_eq!(alice.get("/console/vaults").await.status, 403);
    let me = api(&w.app, &cookie, "/v1/whoami").await;
    assert_eq!(me["tenant"]["slug"], "acme");
    let scopes: Vec<&str> = me["scopes"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(scopes.contains(&"write:notes") && !scopes.iter().any(|s| s.starts_with("admin")), "{scopes:?}");

    // bob (globex: every scope): the admin's console, of globex alone.
    let mut browser = crate::sso::Browser::new();
    let ended =
        browser.walk(&w.app.url("/console/sign-in"), &console, "bob@globex.test", ("bob", "pw-b"), "allow").await;
    assert!(matches!(ended, crate::sso::Ended::Client(_)), "{ended:?}");
    let bob = Visitor::new(&w.app, &browser.cookie(&w.app.url(""), "otc_console").unwrap());
    let vaults = bob.get("/console/vaults").await;
    assert!(vaults.status == 200 && vaults.text.contains("globex inc."), "{}", vaults.text);

    // A person whose groups grant nothing: the provider lets them in, we do not, and the
    // sign-in page says so (the refusal comes back there, as an OAuth client's would).
    crate::sso::set_acme_scopes(&w, &[]).await;
    let mut browser = crate::sso::Browser::new();
    let ended =
        browser.walk(&w.app.url("/console/sign-in"), &console, "alice@acme.test", ("alice", "pw-a"), "allow").await;
    let crate::sso::Ended::Client(params) = ended else { panic!("{ended:?}") };
    assert_eq!(params.get("error").map(String::as_str), Some("access_denied"), "{params:?}");
    assert!(browser.cookie(&w.app.url(""), "otc_console").is_none());
    let query: String = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(params.iter()).finish();
    let said = Visitor::new(&w.app, "").get(&format!("/console/sign-in?{query}")).await;
    assert!(said.text.contains("did not let you in"), "{}", said.text);
    // An address no organisation signs in: said on the form, no session.
    let stranger = Visitor::new(&w.app, "");
    let refused = stranger.post_raw("/console/sign-in", &[("email", "eve@nowhere.test")], None).await;
    assert!(refused.status == 200 && refused.text.contains("No organisation here"), "{}", refused.text);
    assert!(refused.set_cookie("otc_console").is_none());
    // A provider's refusal comes back as a fixed text (a crafted link's words are not shown).
    let crafted = stranger.get("/console/sign-in?error=access_denied&error_description=Call+555").await;
    assert!(crafted.text.contains("did not let you in") && !crafted.text.contains("555"), "{}", crafted.text);
}
