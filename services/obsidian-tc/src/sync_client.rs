//! The sync client: `obsidian-tc vault import` and `obsidian-tc sync`, over the server's
//! `/v1/vaults` API with a token.
//!
//! Import pushes a folder into a vault (in parallel, skipping what the vault already holds, so
//! a rerun resumes). Sync is two-way against the state of the last sync, kept in
//! `DIR/.otc-sync/state.json`: a file changed on one side only moves to the other; a file
//! changed on both keeps both, the local one under a conflict-copy name. `.otcignore` and the
//! built-in ignores decide what stays local.
//!
//! Every file a real vault holds is carried: a name is refused only when it is not a path at all
//! (`otc_vault::check_path`). Names other systems cannot hold (`a:b.md` on Windows, two names
//! differing only by case or Unicode normalization on macOS and Windows, invisible characters)
//! are stored as they are, with a warning printed once per file. A file that cannot be carried
//! (unreadable, too large, refused by the server) is left out with a warning and counted, and
//! the rest goes on; only the server or the network failing stops a run. A client on Windows
//! leaves on the server the files it cannot store (names Windows refuses; on Windows and macOS,
//! the second of two names the file system cannot tell apart), with a warning.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use futures::StreamExt;
use otc_gateway::wire::{ChangeRequest, CommitRequest, Committed, FileList, PutRequest};
use serde::{Deserialize, Serialize};
use serde_json::Value;
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
    /// The warnings printed so far (path and text), shared by clones: each is printed once per
    /// process, not once per pass.
    warned: Arc<Mutex<BTreeSet<String>>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RemoteFile {
    pub path: String,
    pub hash: String,
    pub size: i64,
}

/// A request the server answered with an error: its status and the catalogue code and message
/// of its JSON error.
#[derive(Debug)]
pub struct Refused {
    pub status: u16,
    pub code: String,
    pub message: String,
}

impl Refused {
    fn of(status: reqwest::StatusCode, body: &str) -> Self {
        match serde_json::from_str::<Value>(body) {
            Ok(v) => Self {
                status: status.as_u16(),
                code: v["error"]["code"].as_str().unwrap_or("error").to_string(),
                message: v["error"]["message"].as_str().unwrap_or(body).to_string(),
            },
            Err(_) => Self { status: status.as_u16(), code: "error".into(), message: format!("HTTP {status}: {body}") },
        }
    }

    /// Whether the refusal is about the files of the request (a bad name, content too large, a
    /// folder the token may not write), not about the server or the token as a whole: the files
    /// are left out and the rest goes on.
    fn about_the_files(&self) -> bool {
        matches!(self.status, 400 | 413) || (self.status == 403 && self.code == "acl_denied")
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.status, self.message)
    }
}

impl std::error::Error for Refused {}

/// A file a run left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The vault path (a folder's ends with `/`).
    pub path: String,
    pub reason: String,
}

impl Skipped {
    fn new(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { path: path.into(), reason: reason.into() }
    }

    /// Whether this entry covers `path` (it, or a folder above it).
    fn covers(&self, path: &str) -> bool {
        self.path == path || (self.path.ends_with('/') && path.starts_with(&self.path))
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
            warned: Arc::default(),
        })
    }

    /// Prints `warning` about `path` on stderr, once per process (a watch's passes do not
    /// repeat it).
    pub fn warn(&self, path: &str, warning: &str) {
        let fresh = self.warned.lock().map(|mut w| w.insert(format!("{path}\n{warning}"))).unwrap_or(true);
        if fresh {
            eprintln!("obsidian-tc: warning: {path}: {warning}");
        }
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
        Err(Refused::of(status, &body).into())
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
            let page: FileList = Self::check(send(request).await?).await?.json().await?;
            if after.is_none() {
                head = page.head;
            }
            for f in page.files {
                files.insert(f.path.clone(), RemoteFile { path: f.path, hash: f.hash, size: f.size });
            }
            match page.next_after {
                Some(next) => after = Some(next),
                None => return Ok((head, files)),
            }
        }
    }

    pub async fn upload(&self, hash: &str, bytes: Bytes) -> anyhow::Result<()> {
        let request = self.http.put(self.url(&format!("/blobs/{hash}"))).bearer_auth(&self.token).body(bytes);
        let response = send(request).await?;
        Self::check(response).await?;
        Ok(())
    }

    pub async fn download(&self, hash: &str) -> anyhow::Result<Bytes> {
        let response = send(self.http.get(self.url(&format!("/blobs/{hash}"))).bearer_auth(&self.token)).await?;
        Ok(Self::check(response).await?.bytes().await?)
    }

    /// Commits `changes`; a stale refusal is a [`StaleCommit`].
    pub async fn commit(&self, changes: Vec<ChangeRequest>) -> anyhow::Result<i64> {
        let body = CommitRequest {
            changes,
            tool: Some("sync".into()),
            client_name: Some("obsidian-tc sync".into()),
            client_model: None,
        };
        // A key per commit: a resend (after a dropped connection or a 429) commits at most once.
        let key = uuid::Uuid::new_v4().to_string();
        let request = self.http.post(self.url("/commit")).bearer_auth(&self.token).header("idempotency-key", key);
        let response = send(request.json(&body)).await?;
        if response.status() == reqwest::StatusCode::CONFLICT {
            let v: Value = response.json().await?;
            let stale = v["error"]["details"]["stale"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str().map(String::from));
            return Err(StaleCommit(stale.collect()).into());
        }
        let committed: Committed = Self::check(response).await?.json().await?;
        Ok(committed.seq)
    }
}

/// Sends `request`; a throttled answer (429) is waited out, as long as its Retry-After says
/// (at most a minute at a time, a hundred times), and the request sent again.
async fn send(mut request: reqwest::RequestBuilder) -> reqwest::Result<reqwest::Response> {
    for _ in 0..100 {
        let again = request.try_clone();
        let response = request.send().await?;
        let Some(again) = again.filter(|_| response.status() == reqwest::StatusCode::TOO_MANY_REQUESTS) else {
            return Ok(response);
        };
        let wait = response.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        tokio::time::sleep(Duration::from_secs(wait.unwrap_or(1).clamp(1, 60))).await;
        request = again;
    }
    request.send().await
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

/// Every file under `root` that sync handles, by vault path (files it cannot read are left out).
pub fn scan(root: &Path) -> anyhow::Result<BTreeMap<String, LocalFile>> {
    Ok(scan_with(root, &BTreeMap::new())?.files)
}

/// Each scanned path's size and modification time, with the hash they were found with.
type Stamps = BTreeMap<String, (Stamp, String)>;

/// What a scan found.
struct Scan {
    files: BTreeMap<String, LocalFile>,
    stamps: Stamps,
    /// Files (and folders, ending in `/`) it could not take: unreadable, or a name that is not a
    /// vault path. What they hold is unknown, so sync neither sends nor deletes them.
    skipped: Vec<Skipped>,
}

/// [`scan`], reusing the hash of every file whose size and modification time are those in
/// `known` (the last pass's stamps). Only an unreadable `root` fails it.
fn scan_with(root: &Path, known: &Stamps) -> anyhow::Result<Scan> {
    let mut scan = Scan { files: BTreeMap::new(), stamps: BTreeMap::new(), skipped: Vec::new() };
    let ignore = otc_vault::ignore::Ignore::new(&std::fs::read_to_string(root.join(".otcignore")).unwrap_or_default());
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if dir == root => return Err(e).with_context(|| format!("reading {}", dir.display())),
            Err(e) => {
                let rel = dir.strip_prefix(root).expect("under root").to_string_lossy().replace('\\', "/");
                scan.skipped.push(Skipped::new(format!("{rel}/"), format!("the folder cannot be read ({e})")));
                continue;
            }
        };
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            let full = entry.path();
            let rel = full.strip_prefix(root).expect("under root");
            let Some(path) = rel.to_str().map(|p| p.replace(std::path::MAIN_SEPARATOR, "/")) else {
                let shown = rel.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/");
                scan.skipped.push(Skipped::new(shown, "the name is not UTF-8, which a vault path must be"));
                continue;
            };
            let kind = match entry.file_type() {
                Ok(kind) => kind,
                Err(e) => {
                    scan.skipped.push(Skipped::new(path, format!("cannot be read ({e})")));
                    continue;
                }
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
            if let Err(e) = otc_vault::check_path(&path) {
                let reason = e.details.get("reason").and_then(Value::as_str).unwrap_or(&e.message).to_string();
                scan.skipped.push(Skipped::new(path, format!("not a name a vault can hold: {reason}")));
                continue;
            }
            let stamp = entry.metadata().ok().and_then(|m| Stamp::of(&m));
            let hash = match (stamp, known.get(&path)) {
                (Some(now), Some((then, hash))) if now == *then => hash.clone(),
                _ => match std::fs::read(&full) {
                    Ok(bytes) => sha256_hex(&bytes),
                    Err(e) => {
                        scan.skipped.push(Skipped::new(path, format!("cannot be read ({e})")));
                        continue;
                    }
                },
            };
            if let Some(stamp) = stamp {
                scan.stamps.insert(path.clone(), (stamp, hash.clone()));
            }
            scan.files.insert(path.clone(), LocalFile { hash, size: stamp.map(|s| s.size).unwrap_or(0), path });
        }
    }
    Ok(scan)
}

/// Warns, once per file, about the names among `sent` that other systems cannot hold: a name
/// Windows cannot store, an invisible or bidirectional-control character, a name that differs
/// from another of `all` only by letter case or Unicode normalization. They are stored as they
/// are. Returns how many of `sent` were warned about.
fn warn_names<'a>(client: &Client, sent: impl IntoIterator<Item = &'a str>, all: &BTreeSet<&str>) -> usize {
    let mut groups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for path in all {
        groups.entry(otc_vault::clash_key(path)).or_default().push(path);
    }
    let mut warned = 0;
    for path in sent {
        let mut any = false;
        if let Some(reason) = otc_vault::windows_problem(path) {
            client.warn(path, &format!("stored, but Windows cannot store this name ({reason}); a sync client on Windows leaves it on the server"));
            any = true;
        }
        let invisible = otc_vault::invisible_characters(path);
        if !invisible.is_empty() {
            let listed: Vec<String> = invisible.iter().map(|c| format!("U+{:04X}", *c as u32)).collect();
            client.warn(
                path,
                &format!(
                    "stored, but the name holds {}, an invisible or bidirectional-control character: it may not read as what it is",
                    listed.join(" ")
                ),
            );
            any = true;
        }
        for other in groups.get(&otc_vault::clash_key(path)).into_iter().flatten().filter(|o| **o != path) {
            let how = if otc_vault::path::nfc(other) == otc_vault::path::nfc(path) {
                "the same name in another Unicode normalization (NFC/NFD)"
            } else {
                "differs only by letter case or Unicode normalization"
            };
            client.warn(
                path,
                &format!("stored beside {other:?} ({how}); both are kept, but macOS and Windows cannot hold both"),
            );
            any = true;
        }
        warned += usize::from(any);
    }
    warned
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

/// Uploads the content of `files` (read from `root`), `PARALLEL` at a time. Returns the files
/// uploaded and those left out: unreadable, changed while being sent, or refused by the server
/// (too large). The server or the network failing stops it (an error).
async fn upload_all<'a>(
    client: &Client,
    root: &Path,
    files: &[&'a LocalFile],
    progress: &Progress,
) -> anyhow::Result<(Vec<&'a LocalFile>, Vec<Skipped>)> {
    // Owned inputs: the futures are spawned from tasks and may not borrow from this frame.
    let jobs: Vec<(usize, PathBuf, String)> =
        files.iter().enumerate().map(|(i, f)| (i, root.join(&f.path), f.hash.clone())).collect();
    let mut uploads = futures::stream::iter(jobs.into_iter().map(|(i, full, hash)| {
        let client = client.clone();
        async move {
            let bytes = match tokio::fs::read(&full).await {
                Ok(bytes) => bytes,
                Err(e) => return Ok((i, Err(format!("cannot be read ({e})")))),
            };
            if sha256_hex(&bytes) != hash {
                return Ok((i, Err("changed while it was being sent; the next run sends it".to_string())));
            }
            let size = bytes.len() as u64;
            match client.upload(&hash, Bytes::from(bytes)).await {
                Ok(()) => Ok((i, Ok(size))),
                Err(e) => match e.downcast_ref::<Refused>() {
                    Some(refused) if refused.about_the_files() => {
                        Ok((i, Err(format!("refused by the server: {}", refused.message))))
                    }
                    _ => Err(e.context(format!("uploading {}", full.display()))),
                },
            }
        }
    }))
    .buffer_unordered(PARALLEL);
    let mut sent = vec![false; files.len()];
    let mut skipped = Vec::new();
    while let Some(result) = uploads.next().await {
        let (i, outcome) = result?;
        match outcome {
            Ok(size) => {
                sent[i] = true;
                progress.tick(size);
            }
            Err(reason) => {
                skipped.push(Skipped::new(files[i].path.clone(), reason));
                progress.tick(0);
            }
        }
    }
    let uploaded = files.iter().zip(sent).filter(|(_, ok)| *ok).map(|(f, _)| *f).collect();
    Ok((uploaded, skipped))
}

/// Commits `changes` (each with its path), leaving out what the server refuses for the files'
/// sake: a refused batch is split until each refused change stands alone, and those are
/// returned with the server's reason. Returns the last sequence committed (None when nothing
/// was) and the refused paths. A stale refusal is a [`StaleCommit`].
/// A put of the uploaded content `hash` at `path`, expecting `expect` there.
fn put_change(path: &str, expect: String, hash: &str) -> ChangeRequest {
    ChangeRequest {
        path: path.to_string(),
        expect,
        put: Some(PutRequest { hash: hash.to_string(), mtime: None }),
        delete: false,
    }
}

async fn commit_isolating(
    client: &Client,
    changes: Vec<(String, ChangeRequest)>,
) -> anyhow::Result<(Option<i64>, Vec<Skipped>)> {
    let mut seq = None;
    let mut refused = Vec::new();
    let mut stack = vec![changes];
    while let Some(mut batch) = stack.pop() {
        if batch.is_empty() {
            continue;
        }
        match client.commit(batch.iter().map(|(_, change)| change.clone()).collect()).await {
            Ok(at) => seq = seq.max(Some(at)),
            Err(e) => match e.downcast_ref::<Refused>() {
                Some(r) if r.about_the_files() && batch.len() == 1 => {
                    refused.push(Skipped::new(batch[0].0.clone(), format!("refused by the server: {}", r.message)));
                }
                Some(r) if r.about_the_files() => {
                    let right = batch.split_off(batch.len() / 2);
                    stack.push(right);
                    stack.push(batch);
                }
                _ => return Err(e),
            },
        }
    }
    Ok((seq, refused))
}

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    /// Files this run stored.
    pub files: usize,
    /// Files the vault already held with the same content.
    pub already: usize,
    /// Files that could not be stored, with why (each was warned about).
    pub failed: Vec<Skipped>,
    /// Files stored under a name other systems cannot hold (each was warned about).
    pub name_warnings: usize,
    /// Every file of the folder (stored, already there or failed).
    pub total: usize,
    pub bytes: u64,
    pub seconds: f64,
}

impl ImportReport {
    /// Whether the vault now holds every file of the folder.
    pub fn complete(&self) -> bool {
        self.failed.is_empty()
    }
}

/// Pushes every file under `root` into the vault; files the vault already holds with the same
/// content are skipped, so an interrupted import resumes where it stopped. A file that cannot be
/// stored is warned about, left out and reported ([`ImportReport::complete`] is then false);
/// when the server or the network fails, the error says how far the import got.
pub async fn import(client: &Client, root: &Path, quiet: bool) -> anyhow::Result<ImportReport> {
    let started = Instant::now();
    let scanned = scan_with(root, &BTreeMap::new())?;
    let local = &scanned.files;
    let (_, remote) = client.manifest().await?;
    let todo: Vec<&LocalFile> =
        local.values().filter(|f| remote.get(&f.path).is_none_or(|r| r.hash != f.hash)).collect();
    let mut report = ImportReport {
        already: local.len() - todo.len(),
        failed: scanned.skipped.clone(),
        total: local.len() + scanned.skipped.len(),
        ..ImportReport::default()
    };
    for skipped in &scanned.skipped {
        client.warn(&skipped.path, &format!("not imported: {}", skipped.reason));
    }
    let all: BTreeSet<&str> = local.keys().chain(remote.keys()).map(String::as_str).collect();
    report.name_warnings = warn_names(client, todo.iter().map(|f| f.path.as_str()), &all);
    let progress = Progress { total: todo.len(), done: AtomicUsize::new(0), bytes: AtomicU64::new(0), started, quiet };
    for batch in todo.chunks(BATCH) {
        let (stored, total) = (report.already + report.files, report.total);
        let stopped = move |e: anyhow::Error| {
            e.context(format!(
                "import stopped: the vault holds {stored} of the folder's {total} files; run the same command again \
                 to resume (files the vault holds are not sent again)"
            ))
        };
        let (uploaded, skipped) = upload_all(client, root, batch, &progress).await.map_err(stopped)?;
        let changes = uploaded
            .iter()
            .map(|f| {
                let expect = remote.get(&f.path).map(|r| r.hash.clone()).unwrap_or_else(|| "absent".into());
                (f.path.clone(), put_change(&f.path, expect, &f.hash))
            })
            .collect();
        let (_, refused) = commit_isolating(client, changes).await.map_err(stopped)?;
        report.files += uploaded.len() - refused.len();
        let warnings = !skipped.is_empty() || !refused.is_empty();
        if !quiet && warnings && progress.done.load(Ordering::Relaxed) < todo.len() {
            eprintln!(); // end the progress line before the warnings
        }
        for skipped in skipped.into_iter().chain(refused) {
            client.warn(&skipped.path, &format!("not imported: {}", skipped.reason));
            report.failed.push(skipped);
        }
    }
    report.bytes = progress.bytes.load(Ordering::Relaxed);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
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
    /// Files this pass could not carry (unreadable, refused, not writable here), with why; the
    /// next pass tries them again. Each was warned about.
    pub failed: Vec<Skipped>,
    /// Files left on the server because this computer's file system cannot hold their names
    /// (see [`Platform`]). Each was warned about.
    pub server_only: Vec<Skipped>,
}

/// What the local file system cannot hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    /// Names Windows refuses (`otc_vault::windows_problem`).
    pub windows_names: bool,
    /// Two names that differ only by case or Unicode normalization, files or folders
    /// (`otc_vault::clash_key`): Windows and macOS (by default) cannot tell them apart.
    pub folds_names: bool,
}

impl Platform {
    /// This computer's.
    pub const HERE: Platform =
        Platform { windows_names: cfg!(windows), folds_names: cfg!(any(windows, target_os = "macos")) };

    /// The server's files this file system cannot hold, with why: a name it refuses, or one it
    /// cannot tell apart from a name it holds already (one in `local`, else the first in order)
    /// or from a folder spelled otherwise.
    pub fn server_only(self, remote: &BTreeSet<&str>, local: &BTreeSet<&str>) -> Vec<Skipped> {
        let mut out = Vec::new();
        let mut names: BTreeMap<String, &str> = BTreeMap::new();
        let mut folders: BTreeMap<String, String> = BTreeMap::new();
        fn note<'a>(path: &'a str, names: &mut BTreeMap<String, &'a str>, folders: &mut BTreeMap<String, String>) {
            for (i, _) in path.match_indices('/') {
                folders.entry(otc_vault::clash_key(&path[..i])).or_insert_with(|| path[..i].to_string());
            }
            names.entry(otc_vault::clash_key(path)).or_insert(path);
        }
        if self.folds_names {
            for path in local {
                note(path, &mut names, &mut folders);
            }
        }
        for path in remote {
            if local.contains(path) {
                continue;
            }
            if self.windows_names
                && let Some(reason) = otc_vault::windows_problem(path)
            {
                out.push(Skipped::new(*path, format!("left on the server: {reason}")));
                continue;
            }
            if !self.folds_names {
                continue;
            }
            let key = otc_vault::clash_key(path);
            if let Some(kept) = names.get(&key).filter(|kept| *kept != path) {
                out.push(Skipped::new(
                    *path,
                    format!(
                        "left on the server: this file system cannot hold it beside {kept:?} (the names differ only \
                         by letter case or Unicode normalization)"
                    ),
                ));
                continue;
            }
            let clash = path.match_indices('/').find_map(|(i, _)| {
                folders.get(&otc_vault::clash_key(&path[..i])).filter(|spelled| **spelled != path[..i])
            });
            if let Some(spelled) = clash {
                out.push(Skipped::new(
                    *path,
                    format!(
                        "left on the server: its folder differs from {spelled:?} only by letter case or Unicode \
                         normalization, and this file system cannot hold both"
                    ),
                ));
                continue;
            }
            note(path, &mut names, &mut folders);
        }
        out
    }
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
    let scanned = scan_with(root, &state.stamps)?;
    let local = &scanned.files;
    let (head, remote) = client.manifest().await?;
    let mut report = SyncReport { seq: head, ..SyncReport::default() };
    for skipped in &scanned.skipped {
        client.warn(&skipped.path, &format!("not synced: {}", skipped.reason));
        report.failed.push(skipped.clone());
    }
    let local_names: BTreeSet<&str> = local.keys().map(String::as_str).collect();
    let remote_names: BTreeSet<&str> = remote.keys().map(String::as_str).collect();
    report.server_only = Platform::HERE.server_only(&remote_names, &local_names);
    for skipped in &report.server_only {
        client.warn(&skipped.path, &skipped.reason);
    }
    // What this pass does not know (a file it could not read) or cannot hold keeps its state
    // as it was: it is neither sent, fetched nor deleted on either side.
    let mut next: BTreeMap<String, String> = BTreeMap::new();
    let untouched = |path: &str| scanned.skipped.iter().chain(&report.server_only).any(|s| s.covers(path));
    let paths: BTreeSet<String> = local.keys().chain(remote.keys()).chain(state.files.keys()).cloned().collect();
    let (paths, kept): (BTreeSet<String>, BTreeSet<String>) = paths.into_iter().partition(|p| !untouched(p));
    for path in kept {
        if let Some(b) = state.files.get(&path) {
            next.insert(path, b.clone());
        }
    }
    let mut push: Vec<(String, String, Option<String>)> = Vec::new(); // (path, expect, Some(hash) or delete)
    let mut pull: Vec<(String, String)> = Vec::new();
    let mut delete_local: Vec<String> = Vec::new();
    let taken = |p: &str| local.contains_key(p) || remote.contains_key(p);
    let keep_state = |next: &mut BTreeMap<String, String>, path: &str| {
        if let Some(b) = state.files.get(path) {
            next.insert(path.to_string(), b.clone());
        }
    };
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
                if let Err(e) = std::fs::rename(root.join(path), root.join(&copy)) {
                    let reason = format!("changed on both sides, and it cannot be kept as {copy:?} ({e})");
                    client.warn(path, &format!("not synced: {reason}"));
                    report.failed.push(Skipped::new(path.clone(), reason));
                    keep_state(&mut next, path);
                    continue;
                }
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
    let (_, mut not_sent) = upload_all(client, root, &refs, &progress).await?;
    let mut all: BTreeSet<&str> = local_names.clone();
    all.extend(remote_names.iter().copied());
    all.extend(push.iter().map(|(path, _, _)| path.as_str()));
    let sending = push.iter().filter(|(path, _, hash)| hash.is_some() && !not_sent.iter().any(|s| s.path == *path));
    warn_names(client, sending.map(|(path, _, _)| path.as_str()), &all);
    for batch in push.chunks(BATCH) {
        let changes = batch
            .iter()
            .filter(|(path, _, _)| !not_sent.iter().any(|s| s.path == *path))
            .map(|(path, expect, hash)| {
                let change = match hash {
                    Some(h) => put_change(path, expect.clone(), h),
                    None => ChangeRequest { path: path.clone(), expect: expect.clone(), put: None, delete: true },
                };
                (path.clone(), change)
            })
            .collect();
        let (seq, refused) = commit_isolating(client, changes).await?;
        report.seq = seq.unwrap_or(report.seq);
        not_sent.extend(refused);
    }
    for (path, _, hash) in &push {
        if let Some(skipped) = not_sent.iter().find(|s| s.path == *path) {
            client.warn(path, &format!("not synced: {}", skipped.reason));
            report.failed.push(skipped.clone());
            keep_state(&mut next, path);
            continue;
        }
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
            match client.download(&hash).await {
                Ok(bytes) => Ok((path, hash, Ok(bytes))),
                Err(e) => match e.downcast_ref::<Refused>() {
                    Some(refused) if refused.about_the_files() || refused.status == 404 => {
                        let reason = format!("refused by the server: {}", refused.message);
                        Ok((path, hash, Err(reason)))
                    }
                    _ => Err(e),
                },
            }
        }
    }))
    .buffer_unordered(PARALLEL);
    while let Some(result) = downloads.next().await {
        let (path, hash, fetched) = result?;
        let written = fetched.and_then(|bytes| {
            otc_vault::check_path(&path).map_err(|e| format!("not a usable path: {}", e.message))?;
            write_atomic(&root.join(&path), &bytes).map_err(|e| format!("cannot be written here ({e})"))
        });
        match written {
            Ok(()) => {
                next.insert(path, hash);
                report.pulled += 1;
            }
            Err(reason) => {
                client.warn(&path, &format!("not synced: {reason}"));
                keep_state(&mut next, &path);
                report.failed.push(Skipped::new(path, reason));
            }
        }
    }
    for path in delete_local {
        match std::fs::remove_file(root.join(&path)) {
            Ok(()) => report.deleted_local += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                let reason = format!("deleted on the server, but it cannot be deleted here ({e})");
                client.warn(&path, &format!("not synced: {reason}"));
                keep_state(&mut next, &path);
                report.failed.push(Skipped::new(path, reason));
            }
        }
    }
    state.seq = report.seq;
    state.files = next;
    // Stamps after this pass's own writes and renames, so they are not read again next time.
    state.stamps = scan_with(root, &state.stamps)?.stamps;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn set<'a>(paths: &[&'a str]) -> BTreeSet<&'a str> {
        paths.iter().copied().collect()
    }

    fn left(platform: Platform, remote: &[&str], local: &[&str]) -> Vec<String> {
        platform.server_only(&set(remote), &set(local)).into_iter().map(|s| s.path).collect()
    }

    const REMOTE: [&str; 10] = [
        "a:b.md",
        "What? Why*.md",
        "CON.md",
        "Case.md",
        "case.md",
        "Notes/x.md",
        "NOTES/y.md",
        "Notes/café.md",
        "Notes/cafe\u{301}.md",
        "Plain.md",
    ];

    #[test]
    fn a_windows_client_leaves_on_the_server_what_it_cannot_hold() {
        let windows = Platform { windows_names: true, folds_names: true };
        // In path order, the first of two names the file system cannot tell apart is kept.
        assert_eq!(
            left(windows, &REMOTE, &["Plain.md"]),
            ["CON.md", "Notes/cafe\u{301}.md", "Notes/café.md", "Notes/x.md", "What? Why*.md", "a:b.md", "case.md"]
        );
        // The spelling the folder holds already is the one kept.
        assert_eq!(
            left(windows, &["Case.md", "case.md", "Notes/x.md", "NOTES/y.md"], &["case.md", "Notes/x.md"]),
            ["Case.md", "NOTES/y.md"]
        );
        let reasons = windows.server_only(&set(&["a:b.md"]), &set(&[]));
        assert_eq!(reasons[0].reason, "left on the server: contains ':', which Windows cannot store");
    }

    #[test]
    fn macos_keeps_windows_names_but_not_names_that_fold_together_and_linux_keeps_everything() {
        let macos = Platform { windows_names: false, folds_names: true };
        assert_eq!(left(macos, &REMOTE, &[]), ["Notes/cafe\u{301}.md", "Notes/café.md", "Notes/x.md", "case.md"]);
        let linux = Platform { windows_names: false, folds_names: false };
        assert!(left(linux, &REMOTE, &[]).is_empty());
    }

    #[test]
    fn a_skipped_folder_covers_what_is_under_it() {
        let folder = Skipped::new("Private/", "the folder cannot be read");
        assert!(folder.covers("Private/a.md") && folder.covers("Private/"));
        assert!(!folder.covers("Private.md") && !folder.covers("Privateer/a.md"));
        assert!(Skipped::new("a.md", "x").covers("a.md") && !Skipped::new("a.md", "x").covers("a.md.bak"));
    }
}
