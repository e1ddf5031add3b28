//! A small W3C WebDriver client for the console's browser tests. It drives Debian's Chromium,
//! headless, through chromedriver (`scripts/browser install` puts both on the machine and
//! `scripts/browser env` names them) over plain HTTP, and runs axe-core on the pages it shows.
//! Every method panics with a message that says what failed, since this is test code.
//!
//! Scripts run through WebDriver (`execute`, `axe`) are evaluated through Chromium's DevTools
//! protocol, which the page's Content-Security-Policy does not govern: axe-core is injected into
//! the console's pages although their policy allows no inline script (nor eval).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::client_env;

/// The key under which W3C WebDriver answers with an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Runs axe-core on the whole document and answers with its serious and critical violations,
/// each cut down to what a failing assertion should show.
const AXE_RUN: &str = r#"const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ['violations']}).then(
  r => done({violations: r.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target)}))}),
  e => done({error: String(e && e.stack || e)}));"#;

/// A headless Chromium session, driven through its own chromedriver. Dropping it ends the
/// session and kills chromedriver.
pub struct Browser {
    driver: tokio::process::Child,
    http: reqwest::Client,
    /// chromedriver's address, `127.0.0.1:PORT`.
    addr: String,
    session: String,
    /// Where screenshots (and chromedriver's warnings, `chromedriver.log`) go.
    out_dir: PathBuf,
    /// The driver's and the browser's TMPDIR (the profile among others), removed on drop.
    tmp: PathBuf,
    shots: AtomicU32,
    ended: bool,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a session in a `width` × `height`
    /// window. The page's viewport has the window's width; headless Chromium keeps room for its
    /// (invisible) toolbars, so the viewport is about 140 pixels shorter than the window.
    pub async fn start(out_dir: &Path, width: u32, height: u32) -> Browser {
        let chromedriver = client_env("OTC_TEST_CHROMEDRIVER");
        let chromium = client_env("OTC_TEST_CHROMIUM");
        std::fs::create_dir_all(out_dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", out_dir.display()));
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        // chromedriver leaves the browser's profile (some megabytes) and socket folder in the
        // temporary folder even when the session ends cleanly: they go to one of our own.
        let tmp = std::env::temp_dir().join(format!("otc-browser-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap_or_else(|e| panic!("cannot create {}: {e}", tmp.display()));
        // Only warnings are logged: at chromedriver's default level, every injection of axe-core
        // would write its 650 kB source to the log.
        let mut driver = tokio::process::Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", out_dir.join("chromedriver.log").display()))
            .arg("--log-level=WARNING")
            .env("TMPDIR", &tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {chromedriver}: {e} (run `eval \"$(scripts/browser env)\"`)"));
        let http = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(90)).build().unwrap();
        let addr = format!("127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(status) = request(&http, Method::GET, &format!("http://{addr}/status"), None).await
                && status["ready"] == true
            {
                break;
            }
            if let Ok(Some(exit)) = driver.try_wait() {
                panic!("chromedriver exited before it was ready ({exit})");
            }
            assert!(Instant::now() < deadline, "chromedriver is not ready on {addr} after 20 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "acceptInsecureCerts": true,
            "timeouts": {"implicit": 0, "pageLoad": 30_000, "script": 60_000},
            "goog:chromeOptions": {
                "binary": chromium,
                // As root (tests in containers), Chromium starts only without its sandbox.
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    format!("--window-size={width},{height}"), "--lang=en-US"],
            },
        }}});
        let created = request(&http, Method::POST, &format!("http://{addr}/session"), Some(capabilities))
            .await
            .unwrap_or_else(|e| {
                let _ = std::fs::remove_dir_all(&tmp);
                panic!("chromedriver cannot start {chromium}: {}", describe(&e))
            });
        let session = created["sessionId"].as_str().expect("the new session's id").to_string();
        let out_dir = out_dir.to_path_buf();
        Browser { driver, http, addr, session, out_dir, tmp, shots: AtomicU32::new(0), ended: false }
    }

    /// Opens `url` and waits until the page has loaded.
    pub async fn goto(&self, url: &str) {
        self.call(Method::POST, "/url", Some(json!({ "url": url }))).await;
    }

    pub async fn current_url(&self) -> String {
        string(self.call(Method::GET, "/url", None).await)
    }

    /// The first element that `css` matches; panics (naming the page) when none does. It does
    /// not wait for the element: the console renders its pages on the server.
    pub async fn find(&self, css: &str) -> String {
        match self.try_find(css).await {
            Some(element) => element,
            None => panic!("no element matches `{css}` on {}", self.current_url().await),
        }
    }

    pub async fn try_find(&self, css: &str) -> Option<String> {
        match self.try_call(Method::POST, "/element", Some(json!({"using": "css selector", "value": css}))).await {
            Ok(found) => Some(element_id(&found)),
            Err(e) if e["error"] == "no such element" => None,
            Err(e) => panic!("finding `{css}` failed: {}", describe(&e)),
        }
    }

    /// Clicks the element's center, as a user would; a click that navigates returns once the
    /// next page has loaded.
    pub async fn click(&self, css: &str) {
        let element = self.find(css).await;
        self.call(Method::POST, &format!("/element/{element}/click"), Some(json!({}))).await;
    }

    /// Clicks a button that submits a form (or a link) and waits until the browser shows the
    /// next page: a click returns once the navigation is scheduled, not when it has happened.
    pub async fn submit(&self, css: &str) {
        self.execute("window.__otcBefore = true;", vec![]).await;
        self.click(css).await;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let loaded = self
                .execute("return window.__otcBefore === undefined && document.readyState === 'complete';", vec![])
                .await;
            if loaded == Value::Bool(true) {
                return;
            }
            assert!(Instant::now() < deadline, "clicking `{css}` led to no new page within 20 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clears a text field, then types `text` into it.
    pub async fn fill(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        self.call(Method::POST, &format!("/element/{element}/clear"), Some(json!({}))).await;
        self.call(Method::POST, &format!("/element/{element}/value"), Some(json!({ "text": text }))).await;
    }

    /// The element's rendered text, as a user sees it.
    pub async fn text(&self, css: &str) -> String {
        let element = self.find(css).await;
        string(self.call(Method::GET, &format!("/element/{element}/text"), None).await)
    }

    /// The element's attribute, or None where it has none.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let element = self.find(css).await;
        self.call(Method::GET, &format!("/element/{element}/attribute/{name}"), None).await.as_str().map(str::to_string)
    }

    /// Resizes the window (the viewport follows, as in [`Browser::start`]).
    pub async fn set_size(&self, width: u32, height: u32) {
        self.call(Method::POST, "/window/rect", Some(json!({"width": width, "height": height}))).await;
    }

    /// Saves a PNG of the viewport as `NN-name.png` in the output folder (NN counts this
    /// browser's screenshots), and answers its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let n = self.shots.fetch_add(1, Ordering::Relaxed) + 1;
        let encoded = string(self.call(Method::GET, "/screenshot", None).await);
        let png = base64::engine::general_purpose::STANDARD.decode(encoded).expect("the screenshot is base64");
        let path = self.out_dir.join(format!("{n:02}-{name}.png"));
        std::fs::write(&path, png).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page, and answers what
    /// it returns.
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        self.call(Method::POST, "/execute/sync", Some(json!({"script": script, "args": args}))).await
    }

    /// Runs `script` in the page and answers what it passes to its callback, the last of its
    /// `arguments` (within 60 s).
    pub async fn execute_async(&self, script: &str, args: Vec<Value>) -> Value {
        self.call(Method::POST, "/execute/async", Some(json!({"script": script, "args": args}))).await
    }

    /// Runs axe-core on the page and answers its serious and critical violations (`id`, `impact`,
    /// `help`, and `nodes`: each failing element's selector path). axe-core is injected first
    /// unless the page already has it (each new page needs it again).
    pub async fn axe(&self) -> Vec<Value> {
        if self.execute("return typeof window.axe === 'object';", vec![]).await != true {
            self.execute(axe_source(), vec![]).await;
        }
        let result = self.execute_async(AXE_RUN, vec![]).await;
        if let Some(error) = result.get("error") {
            panic!("axe-core failed on {}: {error}", self.current_url().await);
        }
        result["violations"].as_array().cloned().unwrap_or_else(|| panic!("axe-core answered {result}"))
    }

    /// The cookies the page's origin can see, as WebDriver describes them (`name`, `value`,
    /// `httpOnly`, `secure`, `sameSite`, ...).
    pub async fn cookies(&self) -> Vec<Value> {
        self.call(Method::GET, "/cookie", None).await.as_array().cloned().expect("a list of cookies")
    }

    /// Ends the session (Chromium closes); the drop then kills chromedriver.
    pub async fn quit(mut self) {
        self.call(Method::DELETE, "", None).await;
        self.ended = true;
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        match self.try_call(method.clone(), path, body).await {
            Ok(value) => value,
            Err(e) => panic!("WebDriver {method} /session/{{id}}{path} failed: {}", describe(&e)),
        }
    }

    async fn try_call(&self, method: Method, path: &str, body: Option<Value>) -> Result<Value, Value> {
        request(&self.http, method, &format!("http://{}/session/{}{path}", self.addr, self.session), body).await
    }
}

impl Drop for Browser {
    /// Killing chromedriver would leave Chromium running (its processes outlive the driver), so
    /// a session that was not quit (a test that panicked) is ended first, with a blocking
    /// request since a drop cannot await. chromedriver answers once the browser has closed.
    fn drop(&mut self) {
        if !self.ended
            && let Ok(mut stream) = std::net::TcpStream::connect(&self.addr)
        {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let request = format!(
                "DELETE /session/{} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                self.session, self.addr
            );
            if stream.write_all(request.as_bytes()).is_ok() {
                let _ = stream.read(&mut [0u8; 512]);
            }
        }
        let _ = self.driver.start_kill();
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

/// One WebDriver command: its answer's `value`, or on failure the error's (`error`, `message`).
async fn request(http: &reqwest::Client, method: Method, url: &str, body: Option<Value>) -> Result<Value, Value> {
    let mut builder = http.request(method, url);
    if let Some(body) = body {
        builder = builder.json(&body);
    }
    let response = builder.send().await.map_err(|e| json!({"error": "no answer", "message": e.to_string()}))?;
    let ok = response.status().is_success();
    let mut answer: Value =
        response.json().await.map_err(|e| json!({"error": "unreadable answer", "message": e.to_string()}))?;
    let value = answer.get_mut("value").map(Value::take).unwrap_or(Value::Null);
    if ok { Ok(value) } else { Err(value) }
}

fn describe(error: &Value) -> String {
    format!("{}: {}", error["error"].as_str().unwrap_or("error"), error["message"].as_str().unwrap_or(""))
}

fn element_id(found: &Value) -> String {
    found[ELEMENT].as_str().unwrap_or_else(|| panic!("not an element reference: {found}")).to_string()
}

fn string(value: Value) -> String {
    match value {
        Value::String(s) => s,
        other => panic!("WebDriver answered {other}, not a string"),
    }
}

/// axe-core's source (`scripts/browser` installs it), read once.
fn axe_source() -> &'static str {
    static SOURCE: OnceLock<String> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let path = client_env("OTC_TEST_AXE");
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read axe-core from {path}: {e}"))
    })
}
