//! Enterprise SSO end to end: obsidian-tc as the OAuth 2.1 authorization server of its MCP
//! endpoints, federating sign-in to each tenant's identity provider. The providers are real
//! OpenID Connect servers (the npm package oidc-provider, `tests/idp/idp.mjs`, one per tenant);
//! the client is the Python MCP SDK's own OAuth client (`tests/clients/oauth_flow.py`) or, for
//! the refusals, requests made here with a small browser that follows the same pages.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};
use sha2::Digest;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::harness::{Tenant, TestApp, client_env};

/// 32 bytes, base64: the deployment's secret key in these tests.
pub const SECRET_KEY: &str = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";
const CLIENT_SECRET: &str = "idp-client-secret";

/// The authorization server on, allowed to reach loopback (where the providers run).
pub fn oauth_on(c: &mut otc_config::Config) {
    c.oauth.secret_key = Some(otc_config::Secret::new(SECRET_KEY));
    c.oauth.private_hosts = vec!["127.0.0.1:*".into()];
    // Tests register many clients from one address; one test holds the default's burst.
    c.oauth.registrations_per_hour = 6000;
}

/// A running identity provider.
pub struct Idp {
    pub issuer: String,
    _child: tokio::process::Child,
}

/// Starts a provider whose one client (`client_id`) returns to `gateway`'s callback, with these
/// users (`[{"sub","login","password","email","name","groups"}]`).
pub async fn start_idp(gateway: &str, client_id: &str, users: Value) -> Idp {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/idp/idp.mjs");
    let config = json!({
        "port": 0,
        "clients": [{"client_id": client_id, "client_secret": CLIENT_SECRET, "redirect_uris": [format!("{gateway}/oauth/callback")]}],
        "users": users,
    });
    let mut child = tokio::process::Command::new(format!("{}/node", client_env("OTC_TEST_NODE_BIN")))
        .arg(script)
        .arg(config.to_string())
        .env("OTC_TEST_IDP_MODULES", client_env("OTC_TEST_IDP_MODULES"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the test identity provider starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the identity provider is ready within 30 s")
        .unwrap()
        .expect("the identity provider printed its issuer");
    let ready: Value = serde_json::from_str(&line).expect("a JSON ready line");
    Idp { issuer: ready["issuer"].as_str().unwrap().to_string(), _child: child }
}

/// An identity assertion (ID-JAG) signed by the provider, crafted through its test endpoint.
pub async fn id_jag(idp: &Idp, claims: Value) -> String {
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/test/id-jag", idp.issuer))
        .json(&claims)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["id_jag"].as_str().expect("an ID-JAG").to_string()
}

/// Two tenants, each with its provider: acme (alice@acme.test, in group eng) and globex
/// (bob@globex.test). acme's people may grant `read:*` and eng members `write:notes`; globex's
/// people everything.
pub struct World {
    pub app: TestApp,
    pub acme: Tenant,
    pub globex: Tenant,
    pub acme_idp: Idp,
    pub globex_idp: Idp,
}

pub async fn world(tweak: impl FnOnce(&mut otc_config::Config)) -> World {
    let app = TestApp::spawn_with(|c| {
        oauth_on(c);
        tweak(c);
    })
    .await;
    let acme = Tenant::create(&app.store, "acme").await;
    let globex = Tenant::create(&app.store, "globex").await;
    // Each organisation's email domain, as an operator lists it (`obsidian-tc tenant domains`).
    for (tenant, domain) in [(&acme, "acme.test"), (&globex, "globex.test")] {
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        tx.add_tenant_domain(domain, "operator").await.unwrap();
        tx.commit().await.unwrap();
    }
    let gateway = app.url("");
    let acme_idp = start_idp(
        &gateway,
        "obsidian-tc-acme",
        json!([{"sub": "alice-1", "login": "alice", "password": "pw-a", "email": "alice@acme.test", "name": "Alice", "groups": ["eng", "finance"]},
               {"sub": "mallory-9", "login": "mallory", "password": "pw-m", "email": "mallory@evil.test", "name": "Mallory", "groups": []}]),
    )
    .await;
    let globex_idp = start_idp(
        &gateway,
        "obsidian-tc-globex",
        json!([{"sub": "bob-2", "login": "bob", "password": "pw-b", "email": "bob@globex.test", "name": "Bob", "groups": ["staff"]}]),
    )
    .await;
    // acme's provider is set with the command line, globex's through the library.
    let config_file = std::env::temp_dir().join(format!("otc-sso-{}.toml", uuid::Uuid::new_v4().simple()));
    std::fs::write(
        &config_file,
        format!("[oauth]\nsecret_key = \"{SECRET_KEY}\"\nprivate_hosts = [\"127.0.0.1:*\"]\n"),
    )
    .unwrap();
    let mut env = app.iso.env();
    env.push(("OTC_TEST_IDP_SECRET".into(), CLIENT_SECRET.into()));
    let out = crate::harness::cli_with_env(
        env,
        &[
            "--config",
            config_file.to_str().unwrap(),
            "idp",
            "set",
            "acme",
            "--issuer",
            &acme_idp.issuer,
            "--client-id",
            "obsidian-tc-acme",
            "--client-secret-env",
            "OTC_TEST_IDP_SECRET",
            "--domain",
            "acme.test",
            "--scope",
            "read:*",
            "--group-scope",
            "eng=write:notes",
            "--group-acl",
            "eng=engineering",
        ],
    );
    assert!(out.status.success(), "idp set: {}", crate::harness::stderr(&out));
    let shown = crate::harness::stdout(&out);
    assert!(shown.contains("\"has_client_secret\": true") && !shown.contains(CLIENT_SECRET), "{shown}");
    let _ = std::fs::remove_file(&config_file);
    let identity = identity(&app);
    identity
        .set_idp(
            globex.id,
            otc_identity::admin::IdpInput {
                issuer: globex_idp.issuer.clone(),
                client_id: "obsidian-tc-globex".into(),
                client_secret: Some(CLIENT_SECRET.into()),
                email_domains: vec!["globex.test".into()],
                default_scopes: vec!["*".into()],
                ..Default::default()
            },
            otc_identity::admin::Changer::Operator,
        )
        .await
        .unwrap();
    World { app, acme, globex, acme_idp, globex_idp }
}

/// The authorization server over the test app's clients.
/// The operator resets acme's provider to grant everyone `scopes` and no group anything.
pub async fn set_acme_scopes(w: &World, scopes: &[&str]) {
    identity(&w.app)
        .set_idp(
            w.acme.id,
            otc_identity::admin::IdpInput {
                issuer: w.acme_idp.issuer.clone(),
                client_id: "obsidian-tc-acme".into(),
                keep_secret: true,
                email_domains: vec!["acme.test".into()],
                default_scopes: scopes.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            },
            otc_identity::admin::Changer::Operator,
        )
        .await
        .unwrap();
}

pub fn identity(app: &TestApp) -> std::sync::Arc<otc_identity::Identity> {
    let mut config = app.iso.config();
    oauth_on(&mut config);
    obsidian_tc::app::identity(&config, &app.deps.store, &app.deps.kv).unwrap().unwrap()
}

/// Runs the Python SDK's OAuth flow (`tests/clients/oauth_flow.py`) with `config` and `steps`.
pub async fn sdk_flow(config: Value, steps: Value) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/oauth_flow.py");
    let mut child = tokio::process::Command::new(client_env("OTC_TEST_PYTHON"))
        .arg(script)
        .arg(config.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .current_dir(std::env::temp_dir())
        .spawn()
        .expect("python client");
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(steps.to_string().as_bytes()).await.unwrap();
    }
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("client finished")
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "client output is not JSON: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

// ---------------------------------------------------------------------------------------------
// A browser for the refusal tests: follows redirects by hand, keeps cookies per host, and fills
// the three forms of the flow (our work-email form, the provider's login, our consent).

pub struct Browser {
    http: reqwest::Client,
    cookies: HashMap<String, HashMap<String, String>>,
    pub pages: Vec<String>,
}

/// Where a walk ended.
#[derive(Debug)]
pub enum Ended {
    /// Redirected to the client: the query parameters.
    Client(HashMap<String, String>),
    /// A page without a form we know: its status and text.
    Page(u16, String),
}

impl Default for Browser {
    fn default() -> Self {
        Self::new()
    }
}

impl Browser {
    pub fn new() -> Self {
        Browser {
            http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
            cookies: HashMap::new(),
            pages: Vec::new(),
        }
    }

    async fn send(&mut self, method: Method, url: &str, form: Option<Vec<(String, String)>>) -> reqwest::Response {
        let parsed = url::Url::parse(url).unwrap();
        let host = format!("{}:{}", parsed.host_str().unwrap(), parsed.port_or_known_default().unwrap());
        let mut request = self.http.request(method, url);
        if let Some(jar) = self.cookies.get(&host) {
            let header = jar.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
            request = request.header("cookie", header);
        }
        if let Some(form) = form {
            request = request.form(&form);
        }
        let response = request.send().await.unwrap();
        for cookie in response.headers().get_all("set-cookie") {
            let text = cookie.to_str().unwrap();
            let pair = text.split(';').next().unwrap();
            if let Some((k, v)) = pair.split_once('=') {
                self.cookies.entry(host.clone()).or_default().insert(k.trim().to_string(), v.to_string());
            }
        }
        self.pages.push(format!("{} {}", response.status().as_u16(), url));
        response
    }

    /// The cookie `name` this browser holds for `url`'s host.
    pub fn cookie(&self, url: &str, name: &str) -> Option<String> {
        let parsed = url::Url::parse(url).unwrap();
        let host = format!("{}:{}", parsed.host_str().unwrap(), parsed.port_or_known_default().unwrap());
        self.cookies.get(&host)?.get(name).filter(|v| !v.is_empty()).cloned()
    }

    /// Walks from `url` until a redirect to `client_prefix`, signing in as `email` with `login`
    /// and `password` and answering consent with `decision`.
    pub async fn walk(
        &mut self,
        url: &str,
        client_prefix: &str,
        email: &str,
        login: (&str, &str),
        decision: &str,
    ) -> Ended {
        let mut next = (Method::GET, url.to_string(), None);
        for _ in 0..30 {
            let (method, at, form) = next;
            let response = self.send(method, &at, form).await;
            let status = response.status().as_u16();
            if (300..400).contains(&status) {
                let location = response.headers()["location"].to_str().unwrap().to_string();
                let target = url::Url::parse(&at).unwrap().join(&location).unwrap().to_string();
                if target.starts_with(client_prefix) {
                    let parsed = url::Url::parse(&target).unwrap();
                    return Ended::Client(parsed.query_pairs().into_owned().collect());
                }
                next = (Method::GET, target, None);
                continue;
            }
            let text = response.text().await.unwrap();
            let attr = |name: &str| -> Option<String> {
                let marker = format!("name=\"{name}\" value=\"");
                let start = text.find(&marker)? + marker.len();
                Some(text[start..start + text[start..].find('"')?].to_string())
            };
            let action = text
                .find("action=\"")
                .map(|i| text[i + 8..i + 8 + text[i + 8..].find('"').unwrap()].replace("&amp;", "&"));
            let Some(action) = action.filter(|_| status == 200) else { return Ended::Page(status, text) };
            let target = url::Url::parse(&at).unwrap().join(&action).unwrap().to_string();
            let mut fields: Vec<(String, String)> = attr("flow").map(|f| vec![("flow".into(), f)]).unwrap_or_default();
            if text.contains("class=\"error\"") {
                // A form shown again with what to correct: where the walk ends.
                return Ended::Page(status, text);
            }
            if text.contains("name=\"email\"") {
                fields.push(("email".into(), email.into()));
            } else if text.contains("name=\"login\"") {
                fields.push(("login".into(), login.0.into()));
                fields.push(("password".into(), login.1.into()));
            } else if text.contains("name=\"decision\"") {
                fields.push(("decision".into(), decision.into()));
            } else {
                return Ended::Page(status, text);
            }
            next = (Method::POST, target, Some(fields));
        }
        panic!("the walk did not end: {:?}", self.pages)
    }
}

/// PKCE: a verifier and its S256 challenge.
pub fn pkce() -> (String, String) {
    let verifier = format!("v{}", uuid::Uuid::new_v4().simple()).repeat(2);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// Registers a public client returning to `redirect`.
pub async fn register(app: &TestApp, redirect: &str, extra: Value) -> String {
    let mut body = json!({"client_name": "Test Client", "redirect_uris": [redirect], "token_endpoint_auth_method": "none",
                          "grant_types": ["authorization_code", "refresh_token", otc_identity::JWT_BEARER]});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let answer: Value =
        app.http.post(app.url("/oauth/register")).json(&body).send().await.unwrap().json().await.unwrap();
    answer["client_id"].as_str().unwrap_or_else(|| panic!("registered: {answer}")).to_string()
}

/// The authorization URL for `client`.
pub fn authorize_url(
    app: &TestApp,
    client: &str,
    redirect: &str,
    challenge: &str,
    scope: &str,
    resource: &str,
) -> String {
    let mut url = url::Url::parse(&app.url("/oauth/authorize")).unwrap();
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", client)
        .append_pair("redirect_uri", redirect)
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", "st-1")
        .append_pair("scope", scope)
        .append_pair("resource", resource);
    url.to_string()
}

/// POSTs a form to the token endpoint: (status, answer).
pub async fn token(app: &TestApp, form: &[(&str, &str)]) -> (u16, Value) {
    let response = app.http.post(app.url("/oauth/token")).form(form).send().await.unwrap();
    let status = response.status().as_u16();
    assert_eq!(response.headers()["cache-control"], "no-store");
    (status, response.json().await.unwrap())
}

/// Signs alice in (browser and code exchange) for `client`; returns the token answer.
pub async fn sign_in_alice(w: &World, client: &str, redirect: &str, resource: &str) -> Value {
    sign_in(w, client, redirect, "read:notes write:notes", resource, "alice@acme.test", ("alice", "pw-a")).await
}

/// Signs a person in (browser and code exchange) for `client`, asking for `scope` and
/// `resource`; returns the token answer.
pub async fn sign_in(
    w: &World,
    client: &str,
    redirect: &str,
    scope: &str,
    resource: &str,
    email: &str,
    login: (&str, &str),
) -> Value {
    let (verifier, challenge) = pkce();
    let url = authorize_url(&w.app, client, redirect, &challenge, scope, resource);
    let ended = Browser::new().walk(&url, redirect, email, login, "allow").await;
    let Ended::Client(params) = ended else { panic!("{ended:?}") };
    let code = params.get("code").unwrap_or_else(|| panic!("{params:?}"));
    let (status, answer) = token(
        &w.app,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect),
            ("client_id", client),
            ("code_verifier", &verifier),
            ("resource", resource),
        ],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// An MCP tools/call with `token` at `path`: (status, body).
pub async fn mcp_call(app: &TestApp, path: &str, token: &str, tool: &str, args: Value) -> (u16, Value) {
    let response = app
        .http
        .post(app.url(path))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A note in acme's vault, written with an operator's API token.
async fn seed_acme(w: &World) {
    let (token, _) = w.acme.token(&w.app.store, "*", false, None).await;
    w.app.seed(&token, "Notes", &[("Hello.md", Some("# Hello\nacme's note\n"))]).await;
}

pub(crate) fn redirect_uri() -> String {
    format!("http://127.0.0.1:{}/callback", crate::harness::closed_port())
}

#[tokio::test]
async fn the_python_sdk_signs_in_through_the_tenants_provider_registered_dynamically_and_refreshes() {
    let w = world(|_| {}).await;
    seed_acme(&w).await;
    let redirect = redirect_uri();
    let out = sdk_flow(
        json!({
            "server_url": w.app.url("/mcp"),
            "redirect_uri": redirect,
            "registration": "dcr",
            "browser": [{"fields": {"email": "alice@acme.test"}}, {"fields": {"login": "alice", "password": "pw-a"}}, {"fields": {"decision": "allow"}}],
            "refresh": true,
        }),
        json!([{"op": "list_tools"}, {"op": "call", "name": "read_note", "args": {"vault": "Notes", "path": "Hello.md", "format": "content"}}]),
    )
    .await;
    assert!(out["error"].is_null(), "{out:#}");
    // Discovery came from the 401's challenge; the client registered, then PKCE S256 with the
    // MCP endpoint as the resource.
    let log = out["http_log"].to_string();
    assert!(log.contains("/.well-known/oauth-protected-resource/mcp") && log.contains("/oauth/register"), "{log}");
    let asked = &out["authorize_requests"][0];
    assert_eq!(asked["code_challenge_method"], "S256", "{asked}");
    assert_eq!(asked["resource"], w.app.url("/mcp"), "{asked}");
    // The tools and a call, with what alice's groups allow and nothing more.
    let tools = out["results"][0].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "fetch"), "{}", out["results"][0]);
    assert!(out["results"][1].to_string().contains("acme's note"), "{}", out["results"][1]);
    let granted = out["tokens"][0]["scope"].as_str().unwrap().to_string();
    assert!(granted.contains("read:notes") && granted.contains("write:notes"), "{granted}");
    assert!(!granted.contains("admin:") && !granted.contains("delete:"), "{granted}");
    // Refresh rotated both tokens.
    assert_eq!(out["refreshed"], true, "{out:#}");
    assert_eq!(out["refresh_rotated"], true, "{out:#}");
    let last = out["tokens"].as_array().unwrap().last().unwrap().clone();
    let access = last["access_token"].as_str().unwrap();
    // The access token is an ES256 JWT for this resource, verifiable with the published keys.
    let jwks: Value = w.app.http.get(w.app.url("/oauth/jwks")).send().await.unwrap().json().await.unwrap();
    let parsed = otc_auth::jwt::Unverified::parse(access).unwrap();
    parsed.verify_es256(jwks["keys"].as_array().unwrap()).expect("signed by a published key");
    assert_eq!(parsed.header["typ"], "at+jwt");
    assert_eq!(parsed.claims["aud"], w.app.url("/mcp"));
    assert_eq!(parsed.claims["iss"], w.app.url(""));
    assert_eq!(parsed.claims["tid"], w.acme.id.to_string());
    let lifetime = parsed.claims["exp"].as_i64().unwrap() - parsed.claims["iat"].as_i64().unwrap();
    assert!(lifetime <= 900, "short-lived: {lifetime}");
    let (status, _) = mcp_call(&w.app, "/mcp", access, "list_vaults", json!({})).await;
    assert_eq!(status, 200);

    // The person is the tenant's principal with the provider's groups, mapped: only through the
    // tenant's mapping ("finance", though an ACL group's name, is not mapped and grants nothing).
    let mut tx = w.app.store.begin(w.acme.id).await.unwrap();
    let alice = tx.find_principal("alice@acme.test").await.unwrap().expect("alice signed in as a principal");
    let access_rules = tx.access(alice.id).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(access_rules.groups, ["engineering"]);

    // Revoking the refresh token ends the grant: the access token stops at once.
    let client_id = out["client_info"]["client_id"].as_str().unwrap();
    let revoked = w
        .app
        .http
        .post(w.app.url("/oauth/revoke"))
        .form(&[("token", last["refresh_token"].as_str().unwrap()), ("client_id", client_id)])
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    let (status, _) = mcp_call(&w.app, "/mcp", access, "list_vaults", json!({})).await;
    assert_eq!(status, 401, "a revoked grant's access token");
}

/// A small server for a client's metadata document.
async fn serve_document(doc: impl Fn(&str) -> Value + Send + Sync + 'static) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/client.json", listener.local_addr().unwrap());
    let body = doc(&url);
    let router = axum::Router::new().route("/client.json", axum::routing::get(move || async move { axum::Json(body) }));
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}

#[tokio::test]
async fn the_python_sdk_registers_by_a_client_id_metadata_document() {
    let w = world(|_| {}).await;
    seed_acme(&w).await;
    let redirect = redirect_uri();
    let r = redirect.clone();
    let document = serve_document(move |url| {
        json!({"client_id": url, "client_name": "Metadata Client", "redirect_uris": [r],
               "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"]})
    })
    .await;
    let out = sdk_flow(
        json!({
            "server_url": w.app.url("/mcp"),
            "redirect_uri": redirect,
            "registration": "cimd",
            "client_metadata_url": document,
            "browser": [{"fields": {"email": "alice@acme.test"}}, {"fields": {"login": "alice", "password": "pw-a"}}, {"fields": {"decision": "allow"}}],
        }),
        json!([{"op": "call", "name": "read_note", "args": {"vault": "Notes", "path": "Hello.md", "format": "content"}}]),
    )
    .await;
    assert!(out["error"].is_null(), "{out:#}");
    assert!(!out["http_log"].to_string().contains("/oauth/register"), "no registration");
    assert_eq!(out["client_info"]["client_id"], document.as_str());
    assert!(out["results"][0].to_string().contains("acme's note"), "{}", out["results"][0]);
    // The consent page named the client by its document.
    let grants = identity(&w.app).grants(w.acme.id, None, false).await.unwrap();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].client_name.as_deref(), Some("Metadata Client"));
    assert_eq!(grants[0].client_id, document);
}

#[tokio::test]
async fn the_authorization_server_is_discovered_from_the_challenge_and_describes_itself() {
    let w = world(|_| {}).await;
    let challenge = w.app.http.post(w.app.url("/mcp")).send().await.unwrap();
    assert_eq!(challenge.status(), 401);
    let header = challenge.headers()["www-authenticate"].to_str().unwrap().to_string();
    assert!(
        header.contains(&format!("resource_metadata=\"{}", w.app.url("/.well-known/oauth-protected-resource/mcp"))),
        "{header}"
    );
    let resource: Value = w
        .app
        .http
        .get(w.app.url("/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resource["authorization_servers"][0], w.app.url(""), "{resource}");
    for path in ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"] {
        let meta: Value = w.app.http.get(w.app.url(path)).send().await.unwrap().json().await.unwrap();
        assert_eq!(meta["issuer"], w.app.url(""), "{meta}");
        assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(meta["client_id_metadata_document_supported"], true);
        assert!(meta["grant_types_supported"].to_string().contains("jwt-bearer"), "{meta}");
        assert_eq!(meta["token_endpoint"], w.app.url("/oauth/token"));
    }
    let jwks: Value = w.app.http.get(w.app.url("/oauth/jwks")).send().await.unwrap().json().await.unwrap();
    assert_eq!(jwks["keys"][0]["alg"], "ES256", "{jwks}");
    assert!(jwks["keys"][0].get("d").is_none(), "never the private half");
    // Without oauth.secret_key there is no authorization server, and the metadata says so.
    let plain = TestApp::spawn().await;
    let resource: Value =
        plain.http.get(plain.url("/.well-known/oauth-protected-resource")).send().await.unwrap().json().await.unwrap();
    assert_eq!(resource["authorization_servers"], json!([]));
    assert_eq!(
        plain.http.get(plain.url("/.well-known/oauth-authorization-server")).send().await.unwrap().status(),
        404
    );
}

#[tokio::test]
async fn codes_pkce_redirects_and_refresh_tokens_are_held_to_the_rules() {
    let w = world(|_| {}).await;
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({})).await;
    let mcp = w.app.url("/mcp");

    // An unregistered redirect URI is never redirected to: a page, no Location.
    let (_, challenge) = pkce();
    let evil = authorize_url(&w.app, &client, "https://evil.example/cb", &challenge, "read:notes", &mcp);
    let response = w.app.http.get(&evil).send().await.unwrap();
    assert_eq!(response.status(), 400);
    assert!(response.headers().get("location").is_none());
    assert!(response.text().await.unwrap().contains("Unexpected return address"));
    // Registration refuses an http redirect off loopback and a fragment.
    for bad in ["http://evil.example/cb", "https://a.example/cb#x"] {
        let answer =
            w.app.http.post(w.app.url("/oauth/register")).json(&json!({"redirect_uris": [bad]})).send().await.unwrap();
        assert_eq!(answer.status(), 400, "{bad}");
        assert_eq!(answer.json::<Value>().await.unwrap()["error"], "invalid_redirect_uri");
    }
    // No PKCE, or plain: an error at the client's redirect URI, with its state and our issuer.
    let mut url = url::Url::parse(&authorize_url(&w.app, &client, &redirect, &challenge, "read:notes", &mcp)).unwrap();
    let without: Vec<(String, String)> =
        url.query_pairs().filter(|(k, _)| k != "code_challenge_method").map(|(k, v)| (k.into(), v.into())).collect();
    url.query_pairs_mut().clear().extend_pairs(without).append_pair("code_challenge_method", "plain");
    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let response = no_redirects.get(url.as_str()).send().await.unwrap();
    let location = response.headers()["location"].to_str().unwrap().to_string();
    assert!(
        location.starts_with(&redirect)
            && location.contains("error=invalid_request")
            && location.contains("state=st-1"),
        "{location}"
    );
    assert!(location.contains(&format!("iss={}", urlencoding(&w.app.url("")))), "{location}");
    // A resource this server does not serve.
    let other = authorize_url(&w.app, &client, &redirect, &challenge, "read:notes", "https://elsewhere.example/mcp");
    let location = no_redirects.get(&other).send().await.unwrap().headers()["location"].to_str().unwrap().to_string();
    assert!(location.contains("error=invalid_target"), "{location}");

    // PKCE mismatch: refused, and the code is spent.
    let (verifier, challenge) = pkce();
    let url = authorize_url(&w.app, &client, &redirect, &challenge, "read:notes", &mcp);
    let Ended::Client(params) =
        Browser::new().walk(&url, &redirect, "alice@acme.test", ("alice", "pw-a"), "allow").await
    else {
        panic!("no code")
    };
    let code = params["code"].clone();
    assert_eq!(params["iss"], w.app.url(""));
    let exchange = |code: String, verifier: String| {
        let (app, redirect, client, mcp) = (&w.app, redirect.clone(), client.clone(), mcp.clone());
        async move {
            token(
                app,
                &[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", &redirect),
                    ("client_id", &client),
                    ("code_verifier", &verifier),
                    ("resource", &mcp),
                ],
            )
            .await
        }
    };
    let (status, answer) = exchange(code.clone(), pkce().0).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
    assert!(answer["error_description"].as_str().unwrap().contains("PKCE"), "{answer}");
    let (status, answer) = exchange(code, verifier).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "a spent code: {answer}");

    // A code used twice: the second use revokes what the first got.
    let first = sign_in_alice(&w, &client, &redirect, &mcp).await;
    let access = first["access_token"].as_str().unwrap().to_string();
    assert_eq!(mcp_call(&w.app, "/mcp", &access, "list_vaults", json!({})).await.0, 200);
    let (verifier, challenge) = pkce();
    let url = authorize_url(&w.app, &client, &redirect, &challenge, "read:notes", &mcp);
    let Ended::Client(params) =
        Browser::new().walk(&url, &redirect, "alice@acme.test", ("alice", "pw-a"), "allow").await
    else {
        panic!("no code")
    };
    let (status, issued) = exchange(params["code"].clone(), verifier.clone()).await;
    assert_eq!(status, 200, "{issued}");
    let replay_victim = issued["access_token"].as_str().unwrap().to_string();
    let (status, answer) = exchange(params["code"].clone(), verifier).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
    assert_eq!(
        mcp_call(&w.app, "/mcp", &replay_victim, "list_vaults", json!({})).await.0,
        401,
        "the replayed code's tokens"
    );
    assert_eq!(mcp_call(&w.app, "/mcp", &access, "list_vaults", json!({})).await.0, 200, "another grant is untouched");

    // The wrong audience: a token for /mcp is refused at another surface and at /v1.
    assert_eq!(mcp_call(&w.app, "/mcp/full", &access, "list_vaults", json!({})).await.0, 401);
    let whoami = w.app.http.get(w.app.url("/v1/whoami")).bearer_auth(&access).send().await.unwrap();
    assert_eq!(whoami.status(), 401);
    // A token for the whole server reaches both.
    let whole = sign_in_alice(&w, &client, &redirect, &w.app.url("")).await;
    let whole = whole["access_token"].as_str().unwrap();
    assert_eq!(mcp_call(&w.app, "/mcp/full", whole, "list_vaults", json!({})).await.0, 200);
    assert_eq!(w.app.http.get(w.app.url("/v1/whoami")).bearer_auth(whole).send().await.unwrap().status(), 200);
    // A tampered token (its audience widened) is refused.
    let (head, rest) = access.split_once('.').unwrap();
    let (_, sig) = rest.split_once('.').unwrap();
    let mut claims = otc_auth::jwt::Unverified::parse(&access).unwrap().claims;
    claims["aud"] = json!(w.app.url(""));
    let forged =
        format!("{head}.{}.{sig}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string()));
    assert_eq!(w.app.http.get(w.app.url("/v1/whoami")).bearer_auth(&forged).send().await.unwrap().status(), 401);

    // Refresh: rotated; the old one presented again revokes the grant.
    let refresh = first["refresh_token"].as_str().unwrap();
    let (status, rotated) =
        token(&w.app, &[("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", &client)]).await;
    assert_eq!(status, 200, "{rotated}");
    assert_ne!(rotated["refresh_token"], first["refresh_token"]);
    let fresh_access = rotated["access_token"].as_str().unwrap();
    assert_eq!(mcp_call(&w.app, "/mcp", fresh_access, "list_vaults", json!({})).await.0, 200);
    // Another client may not use it.
    let thief = register(&w.app, &redirect, json!({"client_name": "Thief"})).await;
    let new_refresh = rotated["refresh_token"].as_str().unwrap();
    let (status, answer) =
        token(&w.app, &[("grant_type", "refresh_token"), ("refresh_token", new_refresh), ("client_id", &thief)]).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
    // A wider scope may not be asked for.
    let (status, answer) = token(
        &w.app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", new_refresh),
            ("client_id", &client),
            ("scope", "admin:acl"),
        ],
    )
    .await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_scope")), "{answer}");
    let (status, answer) =
        token(&w.app, &[("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", &client)]).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
    assert!(answer["error_description"].as_str().unwrap().contains("revoked"), "{answer}");
    assert_eq!(
        mcp_call(&w.app, "/mcp", fresh_access, "list_vaults", json!({})).await.0,
        401,
        "the whole grant is revoked"
    );
    let (status, _) =
        token(&w.app, &[("grant_type", "refresh_token"), ("refresh_token", new_refresh), ("client_id", &client)]).await;
    assert_eq!(status, 400, "the successor too");

    // Unknown grants and clients, repeated parameters.
    let (status, answer) = token(&w.app, &[("grant_type", "password"), ("client_id", &client)]).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("unsupported_grant_type")));
    let (status, answer) =
        token(&w.app, &[("grant_type", "refresh_token"), ("refresh_token", "x"), ("client_id", "nobody")]).await;
    assert_eq!((status, answer["error"].as_str()), (401, Some("invalid_client")));
    let (status, answer) =
        token(&w.app, &[("grant_type", "refresh_token"), ("client_id", &client), ("client_id", &client)]).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_request")));
}

fn urlencoding(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn a_sign_in_is_refused_for_another_tenants_provider_a_foreign_email_and_a_private_metadata_url() {
    let w = world(|_| {}).await;
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({})).await;
    let mcp = w.app.url("/mcp");
    let callback = w.app.url("/oauth/callback");

    // Two flows, each stopped where its provider sends the person back to us.
    let (_, challenge) = pkce();
    let url = authorize_url(&w.app, &client, &redirect, &challenge, "read:notes", &mcp);
    let mut acme_browser = Browser::new();
    let Ended::Client(acme_back) =
        acme_browser.walk(&url, &callback, "alice@acme.test", ("alice", "pw-a"), "allow").await
    else {
        panic!("acme's provider did not send alice back")
    };
    let mut globex_browser = Browser::new();
    let Ended::Client(globex_back) =
        globex_browser.walk(&url, &callback, "bob@globex.test", ("bob", "pw-b"), "allow").await
    else {
        panic!("globex's provider did not send bob back")
    };
    // globex's code delivered to acme's flow: acme's provider does not know it; refused.
    let mut crossed = url::Url::parse(&callback).unwrap();
    crossed.query_pairs_mut().append_pair("state", &acme_back["state"]).append_pair("code", &globex_back["code"]);
    let Ended::Page(status, text) =
        acme_browser.walk(crossed.as_str(), &redirect, "alice@acme.test", ("alice", "pw-a"), "allow").await
    else {
        panic!("a crossed code was accepted")
    };
    assert_eq!(status, 400);
    assert!(text.contains("The sign-in failed"), "{text}");
    // A flow's callback in another browser (no flow cookie) is refused.
    let mut other = url::Url::parse(&callback).unwrap();
    other.query_pairs_mut().append_pair("state", &globex_back["state"]).append_pair("code", &globex_back["code"]);
    let Ended::Page(status, text) = Browser::new().walk(other.as_str(), &redirect, "", ("", ""), "allow").await else {
        panic!("a flow continued in another browser")
    };
    assert_eq!(status, 400);
    assert!(text.contains("another browser"), "{text}");

    // Mallory is known to acme's provider but not of acme's email domain.
    let Ended::Page(status, text) =
        Browser::new().walk(&url, &redirect, "alice@acme.test", ("mallory", "pw-m"), "allow").await
    else {
        panic!("mallory got in")
    };
    assert_eq!(status, 400);
    assert!(text.contains("Wrong organisation"), "{text}");
    // An email domain nobody signs in with: the form again, with why.
    let Ended::Page(status, text) = Browser::new().walk(&url, &redirect, "eve@nowhere.test", ("", ""), "allow").await
    else {
        panic!("an unknown domain got in")
    };
    assert_eq!(status, 200);
    assert!(text.contains("No organisation here signs in people with nowhere.test addresses"), "{text}");
    // A denied consent goes back to the client as access_denied.
    let Ended::Client(denied) =
        Browser::new().walk(&url, &redirect, "alice@acme.test", ("alice", "pw-a"), "deny").await
    else {
        panic!("no answer to the client")
    };
    assert_eq!(denied["error"], "access_denied");

    // Client ID Metadata Documents at private addresses are never fetched.
    for document in [
        "https://10.1.2.3/client.json",
        "https://169.254.169.254/latest/client.json",
        "https://localhost/c.json",
        "https://[::1]/c.json",
    ] {
        let url = authorize_url(&w.app, document, &redirect, &challenge, "read:notes", &mcp);
        let response = w.app.http.get(&url).send().await.unwrap();
        assert_eq!(response.status(), 400, "{document}");
        assert!(response.headers().get("location").is_none());
        let text = response.text().await.unwrap();
        assert!(text.contains("not a public address"), "{document}: {text}");
    }
}

#[tokio::test]
async fn an_identity_assertion_from_the_tenants_provider_is_redeemed_once_for_its_audience_and_client() {
    let w = world(|_| {}).await;
    seed_acme(&w).await;
    let confidential = || async {
        let answer: Value = w
            .app
            .http
            .post(w.app.url("/oauth/register"))
            .json(&json!({"client_name": "Agent", "redirect_uris": [redirect_uri()], "token_endpoint_auth_method": "client_secret_basic",
                          "grant_types": [otc_identity::JWT_BEARER]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (answer["client_id"].as_str().unwrap().to_string(), answer["client_secret"].as_str().unwrap().to_string())
    };
    let (client, secret) = confidential().await;
    let issuer = w.app.url("");
    let mcp = w.app.url("/mcp");
    let assertion = |overrides: Value| {
        let mut claims = json!({"sub": "alice-1", "audience": issuer, "client_id": client, "resource": mcp,
                                "scope": "read:notes write:notes admin:acl", "jti": uuid::Uuid::new_v4().to_string()});
        for (k, v) in overrides.as_object().unwrap() {
            claims[k] = v.clone();
        }
        id_jag(&w.acme_idp, claims)
    };
    let redeem_as = |jag: String, client: String, secret: String| {
        let app = &w.app;
        async move {
            let response = app
                .http
                .post(app.url("/oauth/token"))
                .basic_auth(&client, Some(&secret))
                .form(&[("grant_type", otc_identity::JWT_BEARER), ("assertion", &jag)])
                .send()
                .await
                .unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };
    let redeem = |jag: String, client: String| redeem_as(jag, client, secret.clone());
    let jag = assertion(json!({"jti": "jti-1"})).await;
    let (status, answer) = redeem(jag.clone(), client.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.get("refresh_token").is_none(), "no refresh token for an assertion: {answer}");
    // The asserted scopes, as far as the tenant lets alice grant them: the assertion names no
    // groups and alice never signed in, so the tenant's defaults only (read:*).
    assert_eq!(answer["scope"], "read:notes");
    // Once she signed in, the groups her provider named then count (eng: write:notes); never
    // admin:acl, which nothing grants her.
    let redirect = redirect_uri();
    let interactive = register(&w.app, &redirect, json!({})).await;
    sign_in_alice(&w, &interactive, &redirect, &mcp).await;
    let (status, answer) = redeem(assertion(json!({})).await, client.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["scope"], "read:notes write:notes");
    let access = answer["access_token"].as_str().unwrap();
    let (status, body) = mcp_call(
        &w.app,
        "/mcp",
        access,
        "read_note",
        json!({"vault": "Notes", "path": "Hello.md", "format": "content"}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.to_string().contains("acme's note"), "{body}");
    // Once only.
    let (status, answer) = redeem(jag, client.clone()).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
    assert!(answer["error_description"].as_str().unwrap().contains("already used"), "{answer}");
    // Another audience, another client, expired, a resource not served here, unsigned.
    let elsewhere = assertion(json!({"audience": "https://elsewhere.example"})).await;
    let (status, answer) = redeem(elsewhere, client.clone()).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
    assert!(answer["error_description"].as_str().unwrap().contains("audience"), "{answer}");
    let (other_client, other_secret) = confidential().await;
    let theirs = assertion(json!({})).await;
    let (status, answer) = redeem_as(theirs, other_client, other_secret).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
    // A public client may not redeem one at all: an assertion would be a bearer credential.
    let public = register(&w.app, &redirect_uri(), json!({})).await;
    let jag = assertion(json!({})).await;
    let (status, answer) =
        token(&w.app, &[("grant_type", otc_identity::JWT_BEARER), ("assertion", &jag), ("client_id", &public)]).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("unauthorized_client")), "{answer}");
    // Valid for more than an hour: refused.
    let (status, answer) = redeem(assertion(json!({"exp_offset_seconds": 7200})).await, client.clone()).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
    let expired = assertion(json!({"exp_offset_seconds": -120})).await;
    let (status, answer) = redeem(expired, client.clone()).await;
    assert!(answer["error_description"].as_str().unwrap().contains("expired"), "{status} {answer}");
    let foreign = assertion(json!({"resource": "https://elsewhere.example/mcp"})).await;
    let (status, answer) = redeem(foreign, client.clone()).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_target")), "{answer}");
    let good = assertion(json!({})).await;
    let (head, rest) = good.split_once('.').unwrap();
    let (claims, _) = rest.split_once('.').unwrap();
    let (status, answer) = redeem(format!("{head}.{claims}.AAAA"), client.clone()).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
    assert!(answer["error_description"].as_str().unwrap().contains("verify"), "{answer}");
    // An assertion from globex's provider about a user acme's provider vouches for is globex's
    // tenant's business: it lands in globex (whose provider signed it), never in acme.
    let globex_jag = id_jag(&w.globex_idp, json!({"sub": "bob-2", "audience": issuer, "client_id": client, "resource": mcp, "scope": "read:notes", "jti": "g-1"})).await;
    let (status, answer) = redeem(globex_jag, client.clone()).await;
    assert_eq!(status, 200, "{answer}");
    let claims = otc_auth::jwt::Unverified::parse(answer["access_token"].as_str().unwrap()).unwrap().claims;
    assert_eq!(claims["tid"], w.globex.id.to_string());
    let (_, body) = mcp_call(
        &w.app,
        "/mcp",
        answer["access_token"].as_str().unwrap(),
        "read_note",
        json!({"vault": "Notes", "path": "Hello.md"}),
    )
    .await;
    assert!(!body.to_string().contains("acme's note"), "{body}");
}

#[tokio::test]
async fn a_person_signed_in_through_one_tenants_provider_reaches_nothing_of_another_tenant() {
    let w = world(|c| c.tools.confirm_destructive = false).await;
    let secrets = crate::isolation::seed_secrets(&w.app, "initech").await;
    // bob signs in through globex's provider for the whole server (MCP and /v1), every scope.
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({})).await;
    let answer = sign_in(&w, &client, &redirect, "*", &w.app.url(""), "bob@globex.test", ("bob", "pw-b")).await;
    assert_eq!(answer["scope"], "*");
    let bob = answer["access_token"].as_str().unwrap();
    crate::isolation::reaches_nothing_of(&w.app, &secrets, bob).await;
    // And his own tenant's vault is his.
    let (status, body) = mcp_call(&w.app, "/mcp/full", bob, "list_vaults", json!({})).await;
    assert_eq!(status, 200);
    assert!(body.to_string().contains("Notes") && !body.to_string().contains("Acme Secrets"), "{body}");
}

/// A SCIM request with `token`: (status, body).
async fn scim(app: &TestApp, token: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = app.http.request(method, app.url(&format!("/scim/v2{path}"))).bearer_auth(token);
    if let Some(body) = body {
        request = request.header("content-type", "application/scim+json").body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    if status != 204 {
        assert!(
            response.headers()["content-type"].to_str().unwrap().starts_with("application/scim+json") || status == 401,
            "{path}: {:?}",
            response.headers()
        );
    }
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_directory_provisions_groups_and_deprovisions_a_person_whose_tokens_stop_on_every_gateway() {
    let w = world(|_| {}).await;
    seed_acme(&w).await;
    let (admin, _) = w.acme.token(&w.app.store, "admin:scim,admin:grants", false, None).await;
    // alice signs in first; her token is checked (and cached) by two gateways.
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({})).await;
    let signed_in = sign_in_alice(&w, &client, &redirect, &w.app.url("/mcp")).await;
    let access = signed_in["access_token"].as_str().unwrap();
    let base = w.app.url("");
    let second = w
        .app
        .another_gateway(|c| {
            oauth_on(c);
            c.mcp.public_url = Some(base.clone());
        })
        .await;
    let second_url = format!("http://{}", second.addr);
    let read = json!({"vault": "Notes", "path": "Hello.md"});
    for gateway in [w.app.url(""), second_url.clone()] {
        let result = crate::mcp::call_on(&w.app, &gateway, access, "read_note", read.clone()).await;
        assert!(result.to_string().contains("acme's note"), "{gateway}: {result}");
    }

    // The directory finds no alice (she was not provisioned), then provisions her: the same person.
    let (status, found) =
        scim(&w.app, &admin, Method::GET, "/Users?filter=userName%20eq%20%22alice%40acme.test%22", None).await;
    assert_eq!((status, found["totalResults"].as_i64()), (200, Some(0)), "{found}");
    let (status, user) = scim(
        &w.app,
        &admin,
        Method::POST,
        "/Users",
        Some(json!({"schemas": [scim_user()], "userName": "alice@acme.test", "externalId": "00u-alice", "active": true,
                    "name": {"givenName": "Alice", "familyName": "A"}, "emails": [{"value": "alice@acme.test", "primary": true}],
                    "password": "never-kept"})),
    )
    .await;
    assert_eq!(status, 201, "{user}");
    assert!(user.get("password").is_none(), "{user}");
    let alice = user["id"].as_str().unwrap().to_string();
    let mut tx = w.app.store.begin(w.acme.id).await.unwrap();
    assert_eq!(tx.find_principal("alice@acme.test").await.unwrap().unwrap().id.to_string(), alice, "adopted");
    tx.commit().await.unwrap();
    let (_, found) = scim(&w.app, &admin, Method::GET, "/Users?filter=externalId%20eq%20%2200u-alice%22", None).await;
    assert_eq!(found["Resources"][0]["id"], alice.as_str(), "{found}");
    let (status, dup) =
        scim(&w.app, &admin, Method::POST, "/Users", Some(json!({"userName": "alice@acme.test"}))).await;
    assert_eq!((status, dup["scimType"].as_str()), (409, Some("uniqueness")), "{dup}");

    // A group: her ACL groups follow it.
    let (status, group) = scim(
        &w.app,
        &admin,
        Method::POST,
        "/Groups",
        Some(json!({"schemas": [otc_identity::scim::GROUP_SCHEMA], "displayName": "Designers", "members": [{"value": alice}]})),
    )
    .await;
    assert_eq!(status, 201, "{group}");
    let group_id = group["id"].as_str().unwrap().to_string();
    let groups = |w: &World| {
        let store = w.app.store.clone();
        let (tenant, alice) = (w.acme.id, uuid::Uuid::try_parse(&alice).unwrap());
        async move {
            let mut tx = store.begin(tenant).await.unwrap();
            let groups = tx.access(alice).await.unwrap().groups;
            tx.commit().await.unwrap();
            groups
        }
    };
    assert_eq!(groups(&w).await, ["Designers", "engineering"]);
    // Entra's removal shape; Okta's rename shape.
    let (status, patched) = scim(
        &w.app,
        &admin,
        Method::PATCH,
        &format!("/Groups/{group_id}"),
        Some(json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                    "Operations": [{"op": "Remove", "path": format!("members[value eq \"{alice}\"]")},
                                   {"op": "replace", "value": {"displayName": "Design"}}]})),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["displayName"], "Design");
    assert_eq!(patched["members"], json!([]));
    assert_eq!(groups(&w).await, ["engineering"]);
    let (status, bad) = scim(&w.app, &admin, Method::POST, "/Groups", Some(json!({"displayName": "a/b"}))).await;
    assert_eq!((status, bad["scimType"].as_str()), (400, Some("invalidValue")), "{bad}");
    let (status, bad) = scim(&w.app, &admin, Method::GET, "/Users?filter=userName%20co%20%22a%22", None).await;
    assert_eq!((status, bad["scimType"].as_str()), (400, Some("invalidFilter")), "{bad}");

    // The admin API lists her grant.
    let listed: Value =
        w.app.http.get(w.app.url("/v1/oauth/grants")).bearer_auth(&admin).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["grants"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["grants"][0]["principal"]["name"], "alice@acme.test");

    // Deprovisioned (Entra's shape: a string boolean): her token stops on both gateways at once,
    // and her refresh token with it.
    let (status, user) = scim(
        &w.app,
        &admin,
        Method::PATCH,
        &format!("/Users/{alice}"),
        Some(json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "Replace", "path": "active", "value": "False"}]})),
    )
    .await;
    assert_eq!((status, &user["active"]), (200, &json!(false)), "{user}");
    for gateway in [w.app.url(""), second_url.clone()] {
        let response = w
            .app
            .http
            .post(format!("{gateway}/mcp"))
            .bearer_auth(access)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{gateway} still accepts a deprovisioned person's token");
    }
    let (status, answer) = token(
        &w.app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", signed_in["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_grant")), "{answer}");
    // Signing in again is refused while deactivated.
    let (_, challenge) = pkce();
    let url = authorize_url(&w.app, &client, &redirect, &challenge, "read:notes", &w.app.url("/mcp"));
    let Ended::Page(_, text) =
        Browser::new().walk(&url, &redirect, "alice@acme.test", ("alice", "pw-a"), "allow").await
    else {
        panic!("a deactivated person signed in")
    };
    assert!(text.contains("Account deactivated"), "{text}");

    // Deleted: no longer a SCIM resource.
    assert_eq!(scim(&w.app, &admin, Method::DELETE, &format!("/Users/{alice}"), None).await.0, 204);
    assert_eq!(scim(&w.app, &admin, Method::GET, &format!("/Users/{alice}"), None).await.0, 404);

    // Credentials: another tenant's admin sees nothing; a bound token or a missing scope is refused.
    let (globex_admin, _) = w.globex.token(&w.app.store, "admin:scim", false, None).await;
    let (status, _) = scim(&w.app, &globex_admin, Method::GET, &format!("/Groups/{group_id}"), None).await;
    assert_eq!(status, 404);
    let (_, listed) = scim(&w.app, &globex_admin, Method::GET, "/Groups", None).await;
    assert_eq!(listed["totalResults"], 0, "{listed}");
    let (bound, _) = w.acme.token(&w.app.store, "admin:scim", true, None).await;
    assert_eq!(scim(&w.app, &bound, Method::GET, "/Users", None).await.0, 403);
    let (reader, _) = w.acme.token(&w.app.store, "read:*", false, None).await;
    assert_eq!(scim(&w.app, &reader, Method::GET, "/Users", None).await.0, 403);
    second.stop().await.unwrap();
}

fn scim_user() -> &'static str {
    otc_identity::scim::USER_SCHEMA
}

#[tokio::test]
async fn an_admin_lists_grants_and_members_and_tests_the_providers_connection_from_the_cli_and_the_api() {
    let w = world(|_| {}).await;
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({"client_name": "Editor"})).await;
    let first = sign_in_alice(&w, &client, &redirect, &w.app.url("/mcp")).await;
    let second = sign_in_alice(&w, &client, &redirect, &w.app.url("/mcp")).await;
    let config_file = std::env::temp_dir().join(format!("otc-sso-{}.toml", uuid::Uuid::new_v4().simple()));
    std::fs::write(&config_file, format!("[oauth]\nsecret_key = \"{SECRET_KEY}\"\n")).unwrap();
    let cli = |args: &[&str]| {
        let mut all = vec!["--config", config_file.to_str().unwrap()];
        all.extend_from_slice(args);
        crate::harness::cli_with_env(w.app.iso.env(), &all)
    };
    let out = cli(&["grants", "list", "acme"]);
    let listed = crate::harness::stdout(&out);
    assert!(out.status.success(), "{}", crate::harness::stderr(&out));
    assert_eq!(listed.lines().filter(|l| l.contains("alice@acme.test") && l.contains("Editor")).count(), 2, "{listed}");
    let grant = listed.lines().next().unwrap().split_whitespace().next().unwrap().to_string();
    let out = cli(&["grants", "revoke", "acme", &grant]);
    assert!(out.status.success(), "{}", crate::harness::stderr(&out));
    // The newest grant (listed first) is the second sign-in's.
    let access = |answer: &Value| answer["access_token"].as_str().unwrap().to_string();
    assert_eq!(mcp_call(&w.app, "/mcp", &access(&second), "list_vaults", json!({})).await.0, 401);
    assert_eq!(mcp_call(&w.app, "/mcp", &access(&first), "list_vaults", json!({})).await.0, 200);
    // The API: with admin:grants, the other one.
    let (admin, _) = w.acme.token(&w.app.store, "admin:grants", false, None).await;
    let listed: Value =
        w.app.http.get(w.app.url("/v1/oauth/grants")).bearer_auth(&admin).send().await.unwrap().json().await.unwrap();
    let live = listed["grants"].as_array().unwrap();
    assert_eq!(live.len(), 1, "{listed}");
    let id = live[0]["id"].as_str().unwrap();
    let revoked =
        w.app.http.delete(w.app.url(&format!("/v1/oauth/grants/{id}"))).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(revoked.status(), 200);
    assert_eq!(mcp_call(&w.app, "/mcp", &access(&first), "list_vaults", json!({})).await.0, 401);
    let all: Value = w
        .app
        .http
        .get(w.app.url("/v1/oauth/grants?all=true"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(all["grants"].as_array().unwrap().len(), 2, "{all}");
    // Another tenant's admin cannot revoke it, nor see it.
    let (globex_admin, _) = w.globex.token(&w.app.store, "admin:grants", false, None).await;
    let other = w
        .app
        .http
        .delete(w.app.url(&format!("/v1/oauth/grants/{id}")))
        .bearer_auth(&globex_admin)
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    // The provider's settings through the API, never its secret.
    let (sso_admin, _) = w.acme.token(&w.app.store, "admin:sso", false, None).await;
    let shown: Value =
        w.app.http.get(w.app.url("/v1/idp")).bearer_auth(&sso_admin).send().await.unwrap().json().await.unwrap();
    assert_eq!(shown["idp"]["email_domains"], json!(["acme.test"]), "{shown}");
    assert_eq!(shown["idp"]["has_client_secret"], true);
    assert!(!shown.to_string().contains(CLIENT_SECRET));
    // A tenant admin may not claim email domains (they route every organisation's sign-in), nor
    // let people grant more than the admin holds, nor take another organisation's issuer.
    for (body, why) in [
        (
            json!({"issuer": w.acme_idp.issuer, "client_id": "x", "keep_secret": true, "email_domains": ["acme.test", "globex.test"]}),
            "domains",
        ),
        (
            json!({"issuer": w.acme_idp.issuer, "client_id": "x", "keep_secret": true, "email_domains": ["acme.test"], "default_scopes": ["admin:*"]}),
            "admin:*",
        ),
        (
            json!({"issuer": w.globex_idp.issuer, "client_id": "x", "keep_secret": true, "email_domains": ["acme.test"]}),
            "another organisation",
        ),
    ] {
        let refused = w.app.http.put(w.app.url("/v1/idp")).bearer_auth(&sso_admin).json(&body).send().await.unwrap();
        assert_eq!(refused.status(), 403, "{why}");
        assert!(refused.text().await.unwrap().contains(why), "{why}");
    }
    // The members as sign-in knows them: alice came through the provider, her provider groups
    // and the ACL group the tenant's mapping made of one; globex's people are not listed.
    let (members_admin, _) = w.acme.token(&w.app.store, "admin:members", false, None).await;
    let members = async |query: &str| -> Value {
        let answer = w.app.http.get(w.app.url(&format!("/v1/admin/members{query}"))).bearer_auth(&members_admin);
        answer.send().await.unwrap().json().await.unwrap()
    };
    let all = members("").await;
    let listed = all["members"].as_array().unwrap();
    let alice = listed.iter().find(|m| m["email"] == "alice@acme.test").unwrap_or_else(|| panic!("{all}"));
    assert_eq!((alice["source"].as_str(), alice["active"].as_bool()), (Some("sign_in"), Some(true)), "{alice}");
    assert_eq!(alice["groups"]["sign_in"], json!(["engineering"]), "{alice}");
    assert_eq!(alice["idp_groups"], json!(["eng", "finance"]), "{alice}");
    assert!(listed.iter().all(|m| m["email"] != "bob@globex.test"), "{all}");
    assert!(listed.iter().any(|m| m["source"] == "local"), "the tokens' principals too: {all}");
    // Paged by id: one at a time, the same members.
    let mut paged = Vec::new();
    let mut page = members("?limit=1").await;
    loop {
        paged.extend(page["members"].as_array().unwrap().iter().map(|m| m["id"].clone()));
        let Some(next) = page["next"].as_str() else { break };
        page = members(&format!("?limit=1&after={next}")).await;
    }
    assert_eq!(paged, listed.iter().map(|m| m["id"].clone()).collect::<Vec<_>>());
    assert_eq!(members("?limit=0").await["error"]["code"], "invalid_input");
    // Testing the connection: the real provider takes the client's id and secret ...
    let test = async |token: &str| -> (u16, Value) {
        let answer = w.app.http.post(w.app.url("/v1/idp/test")).bearer_auth(token).send().await.unwrap();
        (answer.status().as_u16(), answer.json().await.unwrap())
    };
    let (status, tested) = test(&sso_admin).await;
    assert_eq!(status, 200, "{tested}");
    assert_eq!(tested["ok"], true, "{tested}");
    let steps: Vec<&str> = tested["steps"].as_array().unwrap().iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["discovery", "keys", "client_secret", "client_credentials"], "{tested}");
    // ... and refuses a wrong secret, which the test names without showing it.
    let wrong = json!({"issuer": w.acme_idp.issuer, "client_id": "obsidian-tc-acme", "client_secret": "not-the-secret",
                       "email_domains": ["acme.test"]});
    let set = w.app.http.put(w.app.url("/v1/idp")).bearer_auth(&sso_admin).json(&wrong).send().await.unwrap();
    assert_eq!(set.status(), 200);
    let (status, tested) = test(&sso_admin).await;
    assert_eq!(status, 200, "{tested}");
    assert_eq!(tested["ok"], false, "{tested}");
    let last = tested["steps"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["step"].as_str(), last["ok"].as_bool()), (Some("client_credentials"), Some(false)), "{tested}");
    assert!(last["detail"].as_str().unwrap().contains("check the client id and secret"), "{tested}");
    assert!(!tested.to_string().contains("not-the-secret"));
    // An issuer that answers no discovery fails at the first step.
    let gone = json!({"issuer": format!("http://127.0.0.1:{}", crate::harness::closed_port()),
                      "client_id": "obsidian-tc-acme", "keep_secret": true, "email_domains": ["acme.test"]});
    let set = w.app.http.put(w.app.url("/v1/idp")).bearer_auth(&sso_admin).json(&gone).send().await.unwrap();
    assert_eq!(set.status(), 200);
    let (_, tested) = test(&sso_admin).await;
    assert_eq!(tested["steps"].as_array().unwrap().len(), 1, "{tested}");
    assert_eq!(
        (tested["ok"].as_bool(), tested["steps"][0]["step"].as_str()),
        (Some(false), Some("discovery")),
        "{tested}"
    );
    // The scope, and a tenant with no provider.
    let (reader, _) = w.acme.token(&w.app.store, "read:notes", false, None).await;
    assert_eq!(test(&reader).await.0, 403);
    let initech = Tenant::create(&w.app.store, "initech").await;
    let (theirs, _) = initech.token(&w.app.store, "admin:sso", false, None).await;
    assert_eq!(test(&theirs).await.0, 404);
    let _ = std::fs::remove_file(&config_file);
}

#[tokio::test]
async fn malformed_requests_to_the_authorization_server_and_scim_are_refused_small_and_typed() {
    let w = world(|_| {}).await;
    let (admin, _) = w.acme.token(&w.app.store, "admin:scim", false, None).await;
    let huge = "h".repeat(60_000);
    let form_cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("/oauth/token", vec![]),
        ("/oauth/token", vec![("grant_type", "authorization_code".into()), ("client_id", huge.clone())]),
        ("/oauth/token", vec![("grant_type", "\0".into()), ("client_id", "\0".into())]),
        (
            "/oauth/token",
            vec![
                ("grant_type", otc_identity::JWT_BEARER.into()),
                ("client_id", "x".into()),
                ("assertion", huge.clone()),
            ],
        ),
        ("/oauth/revoke", vec![("token", huge.clone())]),
        ("/oauth/signin", vec![("flow", huge.clone()), ("email", "\0".into())]),
        ("/oauth/consent", vec![("flow", "\0".into()), ("decision", "allow".into())]),
    ];
    let mut problems = Vec::new();
    let judge = |problems: &mut Vec<String>, what: String, status: u16, text: String| {
        if !(400..500).contains(&status) {
            problems.push(format!("{what}: {status}"));
        }
        if text.len() > 16 * 1024 || text.contains(&huge[..1000]) {
            problems.push(format!("{what}: a {}-byte answer echoing input", text.len()));
        }
    };
    for (path, form) in form_cases {
        let response = w.app.http.post(w.app.url(path)).form(&form).send().await.unwrap();
        let status = response.status().as_u16();
        judge(&mut problems, format!("POST {path}"), status, response.text().await.unwrap());
    }
    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for query in [
        "",
        "client_id=%00",
        &format!("client_id={huge}"),
        "client_id=https://example.invalid/%00",
        "response_type=code&client_id=otcd_x&redirect_uri=%00",
    ] {
        let response = no_redirects.get(w.app.url(&format!("/oauth/authorize?{query}"))).send().await.unwrap();
        let status = response.status().as_u16();
        judge(
            &mut problems,
            format!("GET /oauth/authorize?{}", &query[..query.len().min(60)]),
            status,
            response.text().await.unwrap(),
        );
    }
    for body in [
        "{nope",
        "[]",
        &json!({"redirect_uris": [huge.clone()]}).to_string(),
        &json!({"redirect_uris": ["\0"]}).to_string(),
    ] {
        let response = w
            .app
            .http
            .post(w.app.url("/oauth/register"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        judge(
            &mut problems,
            format!("POST /oauth/register {}", &body[..body.len().min(40)]),
            status,
            response.text().await.unwrap(),
        );
    }
    let scim_cases: Vec<(Method, String, Option<String>)> = vec![
        (Method::POST, "/Users".into(), Some("{nope".into())),
        (Method::POST, "/Users".into(), Some(json!({"userName": huge.clone()}).to_string())),
        (Method::POST, "/Users".into(), Some(json!({"userName": "a@b.test", "active": "perhaps"}).to_string())),
        (Method::GET, format!("/Users?filter={huge}"), None),
        (Method::GET, "/Users?startIndex=-5&count=99999999".into(), None),
        (Method::GET, "/Nope".into(), None),
        (Method::DELETE, format!("/Nope/{}", uuid::Uuid::nil()), None),
        (
            Method::PATCH,
            format!("/Users/{}", uuid::Uuid::nil()),
            Some(json!({"Operations": [{"op": "explode"}]}).to_string()),
        ),
        (
            Method::POST,
            "/Groups".into(),
            Some(json!({"displayName": "ok", "members": [{"value": "not-an-id"}]}).to_string()),
        ),
        (
            Method::POST,
            "/Groups".into(),
            Some(json!({"displayName": "ok2", "members": [{"value": uuid::Uuid::nil()}]}).to_string()),
        ),
        (Method::PATCH, format!("/Groups/{}", uuid::Uuid::nil()), Some("[]".into())),
    ];
    for (method, path, body) in scim_cases {
        let mut request = w.app.http.request(method.clone(), w.app.url(&format!("/scim/v2{path}"))).bearer_auth(&admin);
        if let Some(body) = body {
            request = request.header("content-type", "application/scim+json").body(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let what = format!("{method} /scim/v2{}", &path[..path.len().min(60)]);
        if status == 200 {
            // A page with a clamped count is a fine answer to an odd one.
            assert!(text.contains("ListResponse"), "{what}: {text}");
            continue;
        }
        if !text.contains("urn:ietf:params:scim:api:messages:2.0:Error") {
            problems.push(format!("{what}: not a SCIM error: {}", &text[..text.len().min(200)]));
        }
        judge(&mut problems, what, status, text);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test]
async fn signing_keys_rotate_and_tokens_signed_before_still_verify() {
    let w = world(|_| {}).await;
    let mut config = w.app.iso.config();
    oauth_on(&mut config);
    let sealer = otc_auth::seal::Sealer::from_base64(SECRET_KEY).unwrap();
    let settings = otc_identity::IdentitySettings { key_rotation: Duration::from_secs(1), ..Default::default() };
    let fast = otc_identity::Identity::new(w.app.deps.store.clone(), w.app.deps.kv.clone(), sealer, settings);
    let first = fast.jwks().await.unwrap().keys;
    // The gateway signs with the newest key; a token it issues now names it.
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({})).await;
    let before = sign_in_alice(&w, &client, &redirect, &w.app.url("/mcp")).await;
    let before = before["access_token"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let after = fast.jwks().await.unwrap().keys;
    assert_eq!(after.len(), first.len() + 1, "a new key, the old one still published: {after:?}");
    assert_ne!(after[0]["kid"], first[0]["kid"], "the newest key first");
    // A second rotation at the same moment by another gateway makes no second key.
    let again = fast.jwks().await.unwrap().keys.len();
    assert_eq!(again, after.len());
    // The token signed with the retired key still verifies and works.
    assert!(fast.access_token_tenant_for(&before, Some(&w.app.url(""))).await.is_some());
    assert_eq!(mcp_call(&w.app, "/mcp", &before, "list_vaults", json!({})).await.0, 200);
    // Private halves are sealed: the stored key does not open with another secret key.
    let other = otc_auth::seal::Sealer::new(&[9u8; 32]).unwrap();
    let wrong = otc_identity::Identity::new(w.app.deps.store.clone(), w.app.deps.kv.clone(), other, Default::default());
    assert!(wrong.jwks().await.is_err(), "a key sealed with another secret opened");
}

#[tokio::test]
async fn an_organisation_id_routes_sign_in_and_metadata_documents_are_fetched_within_limits() {
    let w = world(|_| {}).await;
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({})).await;
    let mcp = w.app.url("/mcp");
    // The organisation's id instead of an email.
    let (_, challenge) = pkce();
    let url = authorize_url(&w.app, &client, &redirect, &challenge, "read:notes", &mcp);
    let ended = Browser::new().walk(&url, &redirect, "acme", ("alice", "pw-a"), "allow").await;
    assert!(matches!(&ended, Ended::Client(p) if p.contains_key("code")), "{ended:?}");
    let Ended::Page(_, text) = Browser::new().walk(&url, &redirect, "no-such-org", ("alice", "pw-a"), "allow").await
    else {
        panic!("an unknown organisation got in")
    };
    assert!(text.contains("No organisation here has the id no-such-org"), "{text}");

    // Documents: a redirect is not followed, a large one is not read, one naming another
    // client_id is refused.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = format!("http://{}", listener.local_addr().unwrap());
    let r = redirect.clone();
    let base = host.clone();
    let router = axum::Router::new()
        .route("/moved.json", axum::routing::get(|| async { axum::response::Redirect::temporary("/good.json") }))
        .route("/large.json", axum::routing::get(|| async { "x".repeat(20_000) }))
        .route(
            "/other.json",
            axum::routing::get(|| async {
                axum::Json(
                    json!({"client_id": "https://elsewhere.example/c.json", "redirect_uris": ["https://a.example/cb"]}),
                )
            }),
        )
        .route(
            "/good.json",
            axum::routing::get(move || {
                let (r, base) = (r.clone(), base.clone());
                async move {
                    axum::Json(
                        json!({"client_id": format!("{base}/good.json"), "client_name": "Good", "redirect_uris": [r]}),
                    )
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    for (path, why) in
        [("/moved.json", "answered 307"), ("/large.json", "larger than"), ("/other.json", "not its own URL")]
    {
        let url = authorize_url(&w.app, &format!("{host}{path}"), &redirect, &challenge, "read:notes", &mcp);
        let response = w.app.http.get(&url).send().await.unwrap();
        assert_eq!(response.status(), 400, "{path}");
        let text = response.text().await.unwrap();
        assert!(text.contains(why), "{path}: {text}");
    }
    // A tenant that lists the hosts it trusts refuses a document from any other (set by its
    // admin through the API).
    let (sso_admin, _) = w.acme.token(&w.app.store, "admin:sso,read:*,write:notes", false, None).await;
    let current: Value =
        w.app.http.get(w.app.url("/v1/idp")).bearer_auth(&sso_admin).send().await.unwrap().json().await.unwrap();
    let current = &current["idp"];
    let set = w
        .app
        .http
        .put(w.app.url("/v1/idp"))
        .bearer_auth(&sso_admin)
        .json(&json!({"issuer": current["issuer"], "client_id": current["client_id"], "keep_secret": true,
                      "email_domains": current["email_domains"], "default_scopes": current["default_scopes"],
                      "group_scopes": current["group_scopes"], "group_acl": current["group_acl"],
                      "cimd_hosts": ["clients.example"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), 200, "{}", set.text().await.unwrap());
    let good = authorize_url(&w.app, &format!("{host}/good.json"), &redirect, &challenge, "read:notes", &mcp);
    let Ended::Client(params) =
        Browser::new().walk(&good, &redirect, "alice@acme.test", ("alice", "pw-a"), "allow").await
    else {
        panic!("no answer to the client")
    };
    assert_eq!(params.get("error").map(String::as_str), Some("access_denied"), "{params:?}");
    // globex lists none: the same document is fine there.
    let Ended::Client(params) =
        Browser::new().walk(&good, &redirect, "bob@globex.test", ("bob", "pw-b"), "allow").await
    else {
        panic!("no answer to the client")
    };
    assert!(params.contains_key("code"), "{params:?}");
}

#[tokio::test]
async fn sign_in_and_the_directory_link_one_person_case_aside_and_take_over_no_other_principal() {
    let w = world(|_| {}).await;
    let (admin, _) = w.acme.token(&w.app.store, "admin:scim", false, None).await;
    // The directory provisions alice first, spelled its own way.
    let (status, user) =
        scim(&w.app, &admin, Method::POST, "/Users", Some(json!({"userName": "Alice@ACME.test", "active": true})))
            .await;
    assert_eq!(status, 201, "{user}");
    let provisioned = user["id"].as_str().unwrap().to_string();
    // Her sign-in is that person, not a second one.
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({})).await;
    let signed_in = sign_in_alice(&w, &client, &redirect, &w.app.url("/mcp")).await;
    let claims = otc_auth::jwt::Unverified::parse(signed_in["access_token"].as_str().unwrap()).unwrap().claims;
    assert_eq!(claims["sub"], provisioned.as_str());
    // So deprovisioning her stops her token.
    let (status, _) = scim(
        &w.app,
        &admin,
        Method::PATCH,
        &format!("/Users/{provisioned}"),
        Some(json!({"Operations": [{"op": "replace", "value": {"active": false}}]})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        mcp_call(&w.app, "/mcp", signed_in["access_token"].as_str().unwrap(), "list_vaults", json!({})).await.0,
        401
    );
    // A principal made with `token create` is neither adopted by the directory nor by a sign-in.
    let mut tx = w.app.store.begin(w.globex.id).await.unwrap();
    let operator = tx.ensure_principal(otc_store::PrincipalKind::User, "bob@globex.test").await.unwrap();
    tx.commit().await.unwrap();
    let (globex_admin, _) = w.globex.token(&w.app.store, "admin:scim", false, None).await;
    let (status, answer) =
        scim(&w.app, &globex_admin, Method::POST, "/Users", Some(json!({"userName": "bob@globex.test"}))).await;
    assert_eq!((status, answer["scimType"].as_str()), (409, Some("uniqueness")), "{answer}");
    let answer =
        sign_in(&w, &client, &redirect, "read:notes", &w.app.url("/mcp"), "bob@globex.test", ("bob", "pw-b")).await;
    let claims = otc_auth::jwt::Unverified::parse(answer["access_token"].as_str().unwrap()).unwrap().claims;
    assert_ne!(claims["sub"], operator.id.to_string(), "a sign-in took over an operator-made principal");
}

#[tokio::test]
async fn a_refresh_grants_only_what_the_persons_groups_still_allow_and_a_foreign_host_is_not_answered() {
    let w = world(|_| {}).await;
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({})).await;
    let first = sign_in_alice(&w, &client, &redirect, &w.app.url("/mcp")).await;
    assert_eq!(first["scope"], "read:notes write:notes");
    // An admin gives alice a group of their own; her next sign-in keeps it beside her provider's.
    let mut tx = w.app.store.begin(w.acme.id).await.unwrap();
    let alice = tx.find_principal("alice@acme.test").await.unwrap().unwrap().id;
    tx.set_groups(alice, &["contractors".to_string()]).await.unwrap();
    tx.commit().await.unwrap();
    sign_in_alice(&w, &client, &redirect, &w.app.url("/mcp")).await;
    let mut tx = w.app.store.begin(w.acme.id).await.unwrap();
    assert_eq!(tx.access(alice).await.unwrap().groups, ["contractors", "engineering"]);
    assert_eq!(tx.groups(alice).await.unwrap(), ["contractors"], "the admin's own list");
    tx.commit().await.unwrap();
    // The operator no longer lets eng write.
    set_acme_scopes(&w, &["read:*"]).await;
    let (status, refreshed) = token(
        &w.app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", first["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, 200, "{refreshed}");
    assert_eq!(refreshed["scope"], "read:notes", "write:notes is no longer hers to grant");
    // The authorization server answers only to a Host this server serves.
    let spoofed = w
        .app
        .http
        .get(w.app.url("/.well-known/oauth-authorization-server"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(spoofed.status(), 403);
    let spoofed = w
        .app
        .http
        .post(w.app.url("/oauth/token"))
        .header("host", "evil.example")
        .form(&[("grant_type", "refresh_token"), ("client_id", client.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(spoofed.status(), 403);
}

/// Redirect URIs as OAuth 2.1 and the MCP security guidance want them: no wildcard, no user
/// information, no fragment (at registration or at /oauth/authorize), a custom scheme only in
/// reverse-domain form or on the deployment's list; and one address registers only so many.
#[tokio::test]
async fn redirect_uris_are_exact_and_registrations_are_limited_per_address() {
    let w = world(|c| c.oauth.registrations_per_hour = 100).await;
    let post = |body: Value| {
        let app = &w.app;
        async move { app.http.post(app.url("/oauth/register")).json(&body).send().await.unwrap() }
    };
    for bad in [
        "https://*.evil.example/cb",
        "https://user:pw@app.example/cb",
        "https://user@app.example/cb",
        "myapp://callback",
        "https://app.example/cb#x",
    ] {
        let answer = post(json!({"redirect_uris": [bad]})).await;
        assert_eq!(answer.status(), 400, "{bad}");
        assert_eq!(answer.json::<Value>().await.unwrap()["error"], "invalid_redirect_uri", "{bad}");
    }
    for good in ["com.example.notes:/oauth/cb", "cursor://anysphere.cursor-retrieval/oauth/callback"] {
        let answer = post(json!({"redirect_uris": [good], "token_endpoint_auth_method": "none"})).await;
        assert_eq!(answer.status(), 201, "{good}");
    }
    // A registered loopback URI plus a fragment is not that URI: a page, no redirect.
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({})).await;
    let (_, challenge) = pkce();
    let with_fragment = format!("{redirect}#stolen");
    let url = authorize_url(&w.app, &client, &with_fragment, &challenge, "read:notes", &w.app.url("/mcp"));
    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let response = no_redirects.get(url.as_str()).send().await.unwrap();
    assert_eq!(response.status(), 400);
    assert!(response.headers().get("location").is_none());
    // So far 8 registrations; the burst is 10 (a tenth of 100 an hour), then 429 with Retry-After.
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let answer = post(json!({"redirect_uris": [redirect.clone()], "token_endpoint_auth_method": "none"})).await;
        statuses.push(answer.status().as_u16());
        if answer.status() == 429 {
            assert!(answer.headers().get("retry-after").is_some());
            let body: Value = answer.json().await.unwrap();
            let e = &body["error"];
            assert_eq!(
                (e["code"].as_str(), e["details"]["class"].as_str()),
                (Some("throttled"), Some("registration")),
                "{body}"
            );
        }
    }
    assert_eq!(statuses, [201, 201, 429, 429], "{statuses:?}");
}

/// A refresh may narrow a wildcard grant (`read:notes` of `read:*`), never widen it; and a
/// grant older than `oauth.max_grant_age_days` no longer refreshes: the person signs in again.
#[tokio::test]
async fn a_refresh_narrows_and_a_grant_past_its_maximum_age_does_not_refresh() {
    let w = world(|_| {}).await;
    let redirect = redirect_uri();
    let client = register(&w.app, &redirect, json!({})).await;
    let first =
        sign_in(&w, &client, &redirect, "read:* write:notes", &w.app.url("/mcp"), "alice@acme.test", ("alice", "pw-a"))
            .await;
    assert_eq!(first["scope"], "read:* write:notes", "{first}");
    let refresh = |rt: String, scope: Option<&'static str>| {
        let (w, client) = (&w, client.clone());
        async move {
            let mut form =
                vec![("grant_type", "refresh_token"), ("refresh_token", rt.as_str()), ("client_id", client.as_str())];
            if let Some(scope) = scope {
                form.push(("scope", scope));
            }
            token(&w.app, &form).await
        }
    };
    let (status, narrowed) = refresh(first["refresh_token"].as_str().unwrap().to_string(), Some("read:notes")).await;
    assert_eq!((status, narrowed["scope"].as_str()), (200, Some("read:notes")), "{narrowed}");
    let (status, wider) = refresh(narrowed["refresh_token"].as_str().unwrap().to_string(), Some("delete:notes")).await;
    assert_eq!((status, wider["error"].as_str()), (400, Some("invalid_scope")), "{wider}");

    // 400 days later the grant is past the 90-day default: refused, and revoked.
    let second = sign_in_alice(&w, &client, &redirect, &w.app.url("/mcp")).await;
    let mut tx = w.app.store.begin(w.acme.id).await.unwrap();
    assert!(otc_store::testing::age_grants(&mut tx, 400).await.unwrap() >= 1);
    tx.commit().await.unwrap();
    let (status, old) = refresh(second["refresh_token"].as_str().unwrap().to_string(), None).await;
    assert_eq!((status, old["error"].as_str()), (400, Some("invalid_grant")), "{old}");
    assert!(old["error_description"].as_str().unwrap().contains("sign in again"), "{old}");
    let (status, _) =
        mcp_call(&w.app, "/mcp", second["access_token"].as_str().unwrap(), "list_vaults", json!({})).await;
    assert_eq!(status, 401, "the grant's access token stops with it");
}

/// A directory provisions people of its own organisation's email domains only: acme's SCIM
/// cannot create (or rename into) a globex.test person, whom a globex sign-in by email would
/// otherwise find in acme; a domain belongs to one tenant; the operator's command lists them.
#[tokio::test]
async fn a_directory_provisions_only_its_own_email_domains() {
    let w = world(|_| {}).await;
    let (admin, _) = w.acme.token(&w.app.store, "admin:scim", false, None).await;
    for body in [
        json!({"userName": "eve@globex.test"}),
        json!({"userName": "eve", "emails": [{"value": "eve@globex.test", "primary": true}]}),
        json!({"userName": "eve@acme.test.evil.example"}),
    ] {
        let (status, answer) = scim(&w.app, &admin, Method::POST, "/Users", Some(body.clone())).await;
        assert_eq!(status, 403, "{body}: {answer}");
        assert!(answer["detail"].as_str().unwrap().contains("tenant domains"), "{answer}");
    }
    let (status, user) =
        scim(&w.app, &admin, Method::POST, "/Users", Some(json!({"userName": "carol@acme.test"}))).await;
    assert_eq!(status, 201, "{user}");
    let id = user["id"].as_str().unwrap();
    let patch = json!({"Operations": [{"op": "replace", "path": "userName", "value": "carol@globex.test"}]});
    let (status, _) = scim(&w.app, &admin, Method::PATCH, &format!("/Users/{id}"), Some(patch)).await;
    assert_eq!(status, 403);
    let mut tx = w.app.store.begin(w.acme.id).await.unwrap();
    let (_, users) = tx.directory_users(&otc_store::DirectoryFilter::All, 0, 100).await.unwrap();
    tx.commit().await.unwrap();
    assert!(users.iter().all(|u| !u.user_name.contains("globex")), "{users:?}");

    // The operator's command: globex.test is globex's, so acme cannot take it.
    let mut env = w.app.iso.env();
    env.push(("OTC__OAUTH__SECRET_KEY".into(), SECRET_KEY.into()));
    let out = crate::harness::cli_with_env(env.clone(), &["tenant", "domains", "acme", "--add", "globex.test"]);
    assert!(!out.status.success());
    assert!(crate::harness::stderr(&out).contains("another tenant"), "{}", crate::harness::stderr(&out));
    let out = crate::harness::cli_with_env(env, &["tenant", "domains", "acme", "--add", "Acme.Example"]);
    assert!(out.status.success(), "{}", crate::harness::stderr(&out));
    let shown = crate::harness::stdout(&out);
    assert!(shown.contains("acme.example") && shown.contains("acme.test") && shown.contains("operator"), "{shown}");
}
