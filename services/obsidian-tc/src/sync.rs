//! The sync client: `obsidian-tc vault import` and `obsidian-tc sync`, over the server's
//! `/v1/vaults` API with a token.
//!
//! Import pushes a folder into a vault (in parallel, skipping what the vault already holds, so
//! a rerun resumes). Sync is two-way against the state of the last sync, kept in
//! `DIR/.otc-sync/state.json`: a file changed on one side only moves to the other; a file
//! changed on both keeps both, the local one under a conflict-copy name. `.otcignore` and the
//! built-in ignores decide what stays local.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How to reach the server.
#[derive(Debug, Clone, clap::Args)]
pub struct Remote {
    /// The server's base URL.
    #[arg(long, env = "OTC_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// An API token with read:notes and write:notes (delete:notes to propagate deletions).
    #[arg(long, env = "OTC_TOKEN", hide_env_values = true)]
    pub token: String,
}

/// Files per commit.
const BATCH: usize = 500;
/// Uploads in flight at once.
const PARALLEL: usize = 8;

/// A client of one vault.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
    vault: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RemoteFile {
    pub path: String,
    pub hash: String,
    pub size: i64,
}

/// The server's JSON error, for messages.
fn describe(status: reqwest::StatusCode, body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => format!(
            "{} ({}): {}",
            v["error"]["code"].as_str().unwrap_or("error"),
            status.as_u16(),
            v["error"]["message"].as_str().unwrap_or(body)
        ),
        Err(_) => format!("HTTP {status}: {body}"),
    }
}

/// A commit the server refused because paths changed underneath it.
#[derive(Debug)]
pub struct StaleCommit(pub Vec<String>);

impl std::fmt::Display for StaleCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} path(s) changed on the server meanwhile", self.0.len())
    }
}

impl std::error::Error for StaleCommit {}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl Client {
    pub fn new(remote: &Remote, vault: &str) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(300)).build()?;
        Ok(Self {
            http,
            base: remote.url.trim_end_matches('/').to_string(),
            token: remote.token.clone(),
            vault: vault.to_string(),
        })
    }

    fn url(&self, rest: &str) -> String {
        format!("{}/v1/vaults/{}{rest}", self.base, urlencode(&self.vault))
    }

    async fn check(response: reqwest::Response) -> anyhow::Result<reqwest::Response> {
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        bail!("{}", describe(status, &body))
    }

    /// The whole manifest and the head sequence it was read at.
    pub async fn manifest(&self) -> anyhow::Result<(i64, BTreeMap<String, RemoteFile>)> {
        let mut files = BTreeMap::new();
        let mut after: Option<String> = None;
        let mut head = 0;
        loop {
            let mut request = self.http.get(self.url("/files")).bearer_auth(&self.token).query(&[("limit", "5000")]);
            if let Some(a) = &after {
                request = request.query(&[("after", a)]);
            }
            let page: Value = Self::check(request.send().await?).await?.json().await?;
            if after.is_none() {
                head = page["head"].as_i64().unwrap_or(0);
            }
            for f in page["files"].as_array().into_iter().flatten() {
                let file: RemoteFile = serde_json::from_value(f.clone())?;
                files.insert(file.path.clone(), file);
            }
            match page["next_after"].as_str() {
                Some(next) => after = Some(next.to_string()),
                None => return Ok((head, files)),
            }
        }
    }

    pub async fn upload(&self, hash: &str, bytes: Bytes) -> anyhow::Result<()> {
        let response =
            self.http.put(self.url(&format!("/blobs/{hash}"))).bearer_auth(&self.token).body(bytes).send().await?;
        Self::check(response).await?;
        Ok(())
    }

    pub async fn download(&self, hash: &str) -> anyhow::Result<Bytes> {
        let response = self.http.get(self.url(&format!("/blobs/{hash}"))).bearer_auth(&self.token).send().await?;
        Ok(Self::check(response).await?.bytes().await?)
    }

    /// Commits `changes` (JSON change objects); a stale refusal is a [`StaleCommit`].
    pub async fn commit(&self, changes: Vec<Value>) -> anyhow::Result<i64> {
        let body = json!({ "changes": changes, "tool": "sync", "client_name": "obsidian-tc sync" });
        let response = self.http.post(self.url("/commit")).bearer_auth(&self.token).json(&body).send().await?;
        if response.status() == reqwest::StatusCode::CONFLICT {
            let v: Value = response.json().await?;
            let stale = v["error"]["details"]["stale"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str().map(String::from));
            return Err(StaleCommit(stale.collect()).into());
        }
        let v: Value = Self::check(response).await?.json().await?;
        Ok(v["seq"].as_i64().unwrap_or(0))
    }
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A local file found by the scan.
#[derive(Debug, Clone)]
pub struct LocalFile {
    pub path: String,
    pub hash: String,
    pub size: u64,
}

/// Size and modification time: when both match the last scan, the file is not read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    size: u64,
    mtime_ns: u128,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Option<Self> {
        let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
        Some(Self { size: meta.len(), mtime_ns: mtime.as_nanos() })
    }
}

/// Every file under `root` that sync handles, by vault path.
pub fn scan(root: &Path) -> anyhow::Result<BTreeMap<String, LocalFile>> {
    Ok(scan_with(root, &BTreeMap::new())?.0)
}

/// Each scanned path's size and modification time, with the hash they were found with.
type Stamps = BTreeMap<String, (Stamp, String)>;

/// [`scan`], reusing the hash of every file whose size and modification time are those in
/// `known` (the last pass's stamps); returns the files and their stamps now.
fn scan_with(root: &Path, known: &Stamps) -> anyhow::Result<(BTreeMap<String, LocalFile>, Stamps)> {
    let mut stamps = BTreeMap::new();
    let ignore = otc_vault::ignore::Ignore::new(&std::fs::read_to_string(root.join(".otcignore")).unwrap_or_default());
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let full = entry.path();
            let rel = full.strip_prefix(root).expect("under root");
            let Some(path) = rel.to_str().map(|p| p.replace(std::path::MAIN_SEPARATOR, "/")) else {
                eprintln!("obsidian-tc: skipping a file whose name is not UTF-8: {}", rel.display());
                continue;
            };
            if kind.is_dir() {
                if !ignore.is_ignored(&format!("{path}/x")) {
                    stack.push(full);
                }
                continue;
            }
            if !kind.is_file() || ignore.is_ignored(&path) || path == ".otcignore" {
                continue;
            }
            let stamp = entry.metadata().ok().and_then(|m| Stamp::of(&m));
            let hash = match (stamp, known.get(&path)) {
                (Some(now), Some((then, hash))) if now == *then => hash.clone(),
                _ => sha256_hex(&std::fs::read(&full).with_context(|| format!("reading {}", full.display()))?),
            };
            if let Some(stamp) = stamp {
                stamps.insert(path.clone(), (stamp, hash.clone()));
            }
            out.insert(path.clone(), LocalFile { hash, size: stamp.map(|s| s.size).unwrap_or(0), path });
        }
    }
    Ok((out, stamps))
}

/// Progress on one line of stderr.
struct Progress {
    total: usize,
    done: AtomicUsize,
    bytes: AtomicU64,
    started: Instant,
    quiet: bool,
}

impl Progress {
    fn tick(&self, bytes: u64) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let total_bytes = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if !self.quiet && (done.is_multiple_of(50) || done == self.total) {
            let secs = self.started.elapsed().as_secs_f64().max(0.001);
            eprint!(
                "\r  {done}/{} files, {:.1} MB, {:.0} files/s   ",
                self.total,
                total_bytes as f64 / 1e6,
                done as f64 / secs
            );
            if done == self.total {
                eprintln!();
            }
        }
    }
}

/// Uploads the content of `paths` (read from `root`), `PARALLEL` at a time.
async fn upload_all(client: &Client, root: &Path, files: &[&LocalFile], progress: &Progress) -> anyhow::Result<()> {
    // Owned inputs: the futures are spawned from tasks and may not borrow from this frame.
    let jobs: Vec<(PathBuf, String)> = files.iter().map(|f| (root.join(&f.path), f.hash.clone())).collect();
    let mut uploads = futures::stream::iter(jobs.into_iter().map(|(full, hash)| {
        let client = client.clone();
        async move {
            let bytes = tokio::fs::read(&full).await.with_context(|| format!("reading {}", full.display()))?;
            if sha256_hex(&bytes) != hash {
                bail!("{} changed while syncing; run again", full.display());
            }
            let size = bytes.len() as u64;
            client.upload(&hash, Bytes::from(bytes)).await.with_context(|| format!("uploading {}", full.display()))?;
            Ok::<u64, anyhow::Error>(size)
        }
    }))
    .buffer_unordered(PARALLEL);
    while let Some(result) = uploads.next().await {
        progress.tick(result?);
    }
    Ok(())
}

/// What an import did.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ImportReport {
    pub files: usize,
    pub skipped: usize,
    pub bytes: u64,
    pub seconds: f64,
}

/// Pushes every file under `root` into the vault; files the vault already holds with the same
/// content are skipped, so an interrupted import resumes where it stopped.
pub async fn import(client: &Client, root: &Path, quiet: bool) -> anyhow::Result<ImportReport> {
    let started = Instant::now();
    let local = scan(root)?;
    let (_, remote) = client.manifest().await?;
    let todo: Vec<&LocalFile> =
        local.values().filter(|f| remote.get(&f.path).is_none_or(|r| r.hash != f.hash)).collect();
    let progress = Progress { total: todo.len(), done: AtomicUsize::new(0), bytes: AtomicU64::new(0), started, quiet };
    for batch in todo.chunks(BATCH) {
        upload_all(client, root, batch, &progress).await?;
        let changes = batch
            .iter()
            .map(|f| {
                let expect = remote.get(&f.path).map(|r| r.hash.clone()).unwrap_or_else(|| "absent".into());
                json!({ "path": f.path, "expect": expect, "put": { "hash": f.hash } })
            })
            .collect();
        client.commit(changes).await?;
    }
    Ok(ImportReport {
        files: todo.len(),
        skipped: local.len() - todo.len(),
        bytes: progress.bytes.load(Ordering::Relaxed),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The state of the last sync: the vault, its sequence, and each path's content then.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    vault: String,
    seq: i64,
    files: BTreeMap<String, String>,
    /// The local files' stamps at the last pass, so unchanged files are not read again.
    #[serde(default)]
    stamps: BTreeMap<String, (Stamp, String)>,
}

fn state_path(root: &Path) -> PathBuf {
    root.join(".otc-sync").join("state.json")
}

fn load_state(root: &Path, vault: &str) -> anyhow::Result<State> {
    match std::fs::read_to_string(state_path(root)) {
        Ok(text) => {
            let state: State = serde_json::from_str(&text).context("reading .otc-sync/state.json")?;
            if state.vault != vault {
                bail!(
                    "{} was last synced with vault {:?}; sync it with that vault or use another folder",
                    root.display(),
                    state.vault
                );
            }
            Ok(state)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok(State { vault: vault.to_string(), ..State::default() })
        }
        Err(e) => Err(e.into()),
    }
}

fn save_state(root: &Path, state: &State) -> anyhow::Result<()> {
    let path = state_path(root);
    std::fs::create_dir_all(path.parent().expect("has a parent"))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(state)?)?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}

/// Writes a file atomically (temporary file, then rename), creating its folders.
fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_file_name(format!(".{}.otc-tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("file")));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// The name a local version keeps when both sides changed a file.
pub fn conflict_name(path: &str, taken: &dyn Fn(&str) -> bool) -> String {
    let (dir, file) = path.rsplit_once('/').map(|(d, f)| (format!("{d}/"), f)).unwrap_or((String::new(), path));
    let (stem, ext) = file.rsplit_once('.').map(|(s, e)| (s, format!(".{e}"))).unwrap_or((file, String::new()));
    let date = chrono::Utc::now().format("%Y-%m-%d");
    (1..)
        .map(|n| {
            let suffix = if n == 1 { String::new() } else { format!(" {n}") };
            format!("{dir}{stem} (conflict {date}{suffix}){ext}")
        })
        .find(|candidate| !taken(candidate))
        .expect("some name is free")
}

/// What one sync pass did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncReport {
    pub pulled: usize,
    pub pushed: usize,
    pub deleted_local: usize,
    pub deleted_remote: usize,
    pub conflicts: Vec<String>,
    pub seq: i64,
}

/// One two-way pass. Retries from the start when the server changed mid-pass.
pub async fn sync_once(client: &Client, root: &Path) -> anyhow::Result<SyncReport> {
    for attempt in 0..5 {
        match sync_pass(client, root).await {
            Err(e) if e.downcast_ref::<StaleCommit>().is_some() && attempt < 4 => continue,
            other => return other,
        }
    }
    unreachable!("the loop returns")
}

async fn sync_pass(client: &Client, root: &Path) -> anyhow::Result<SyncReport> {
    let mut state = load_state(root, &client.vault)?;
    let (local, _) = scan_with(root, &state.stamps)?;
    let (head, remote) = client.manifest().await?;
    let mut report = SyncReport { seq: head, ..SyncReport::default() };
    let paths: BTreeSet<String> = local.keys().chain(remote.keys()).chain(state.files.keys()).cloned().collect();
    let mut push: Vec<(String, String, Option<String>)> = Vec::new(); // (path, expect, Some(hash) or delete)
    let mut pull: Vec<(String, String)> = Vec::new();
    let mut delete_local: Vec<String> = Vec::new();
    let mut next: BTreeMap<String, String> = BTreeMap::new();
    let taken = |p: &str| local.contains_key(p) || remote.contains_key(p);
    for path in &paths {
        let l = local.get(path).map(|f| f.hash.as_str());
        let r = remote.get(path).map(|f| f.hash.as_str());
        let b = state.files.get(path).map(String::as_str);
        let expect = r.map(str::to_string).unwrap_or_else(|| "absent".into());
        match (l, r) {
            _ if l == r => {
                if let Some(h) = l {
                    next.insert(path.clone(), h.to_string());
                }
            }
            _ if l == b => match r {
                // Only the server changed it.
                Some(h) => pull.push((path.clone(), h.to_string())),
                None => delete_local.push(path.clone()),
            },
            _ if r == b => match l {
                // Only this folder changed it.
                Some(h) => push.push((path.clone(), expect, Some(h.to_string()))),
                None => push.push((path.clone(), expect, None)),
            },
            (Some(lh), Some(rh)) => {
                // Both changed it: the server's version takes the name, ours a conflict copy.
                let copy = conflict_name(path, &taken);
                std::fs::rename(root.join(path), root.join(&copy))
                    .with_context(|| format!("keeping {path} as {copy}"))?;
                push.push((copy.clone(), "absent".into(), Some(lh.to_string())));
                pull.push((path.clone(), rh.to_string()));
                report.conflicts.push(copy);
            }
            (Some(lh), None) => push.push((path.clone(), "absent".into(), Some(lh.to_string()))), // edited here, deleted there: keep the edit
            (None, Some(rh)) => pull.push((path.clone(), rh.to_string())), // deleted here, edited there: keep the edit
            (None, None) => {}
        }
    }

    // Push first, so a refusal (someone else moved on) leaves this folder untouched.
    let uploads: Vec<LocalFile> = push
        .iter()
        .filter_map(|(path, _, hash)| hash.as_ref().map(|h| LocalFile { path: path.clone(), hash: h.clone(), size: 0 }))
        .collect();
    let refs: Vec<&LocalFile> = uploads.iter().collect();
    let progress = Progress {
        total: refs.len(),
        done: AtomicUsize::new(0),
        bytes: AtomicU64::new(0),
        started: Instant::now(),
        quiet: true,
    };
    upload_all(client, root, &refs, &progress).await?;
    for batch in push.chunks(BATCH) {
        let changes: Vec<Value> = batch
            .iter()
            .map(|(path, expect, hash)| match hash {
                Some(h) => json!({ "path": path, "expect": expect, "put": { "hash": h } }),
                None => json!({ "path": path, "expect": expect, "delete": true }),
            })
            .collect();
        report.seq = client.commit(changes).await?;
    }
    for (path, _, hash) in &push {
        match hash {
            Some(h) => {
                report.pushed += 1;
                next.insert(path.clone(), h.clone());
            }
            None => report.deleted_remote += 1,
        }
    }

    let mut downloads = futures::stream::iter(pull.into_iter().map(|(path, hash)| {
        let client = client.clone();
        async move {
            let bytes = client.download(&hash).await?;
            Ok::<_, anyhow::Error>((path, hash, bytes))
        }
    }))
    .buffer_unordered(PARALLEL);
    while let Some(result) = downloads.next().await {
        let (path, hash, bytes) = result?;
        otc_vault::check_path(&path).map_err(|e| anyhow::anyhow!("server sent an unusable path: {}", e.message))?;
        write_atomic(&root.join(&path), &bytes)?;
        next.insert(path, hash);
        report.pulled += 1;
    }
    for path in delete_local {
        match std::fs::remove_file(root.join(&path)) {
            Ok(()) => report.deleted_local += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    state.seq = report.seq;
    state.files = next;
    // Stamps after this pass's own writes and renames, so they are not read again next time.
    state.stamps = scan_with(root, &state.stamps)?.1;
    save_state(root, &state)?;
    Ok(report)
}

/// Syncs now and then every `interval`, until Ctrl-C or SIGTERM.
pub async fn watch(
    client: &Client,
    root: &Path,
    interval: Duration,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    tokio::pin!(shutdown);
    loop {
        match sync_once(client, root).await {
            Ok(report) if report.pulled + report.pushed + report.deleted_local + report.deleted_remote > 0 => {
                tracing::info!(?report, "synced");
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %crate::chain(&e), "sync pass failed; retrying"),
        }
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            () = tokio::time::sleep(interval) => {}
        }
    }
}
