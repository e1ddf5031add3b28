//! The audit trail's writer. Every tool call and /v1 request hands its record to [`Audit`]
//! without waiting; one task per gateway writes what has queued up, grouped by tenant, one
//! statement per tenant per batch, at most [`LINGER`] after a record came (at once on a flush,
//! which get_metrics, the export and a stopping process ask for).
//! While Postgres refuses, records wait (up to [`MAX_PENDING`]) and the write is retried each
//! second; past that, or when the queue is full, records are dropped and the drop is logged:
//! the audit trail never stalls a call.

use std::time::Duration;

use otc_catalog::{Subset, Surface};
use otc_store::{AuditRecord, Store};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use uuid::Uuid;

/// Records queued between the calls and the writer.
const QUEUE: usize = 16_384;
/// Records the writer holds while Postgres refuses them.
const MAX_PENDING: usize = 100_000;
/// Most records in one statement.
const BATCH: usize = 2_000;
/// How long a record may wait for others to share its statement: a busy gateway then writes a
/// few large transactions a second instead of one per handful of calls (each a WAL flush).
const LINGER: Duration = Duration::from_millis(200);
/// Most paths one record keeps, and the longest.
pub const MAX_PATHS: usize = 20;
pub const MAX_PATH_BYTES: usize = 512;

// Records are nearly every message: boxing them would cost an allocation each to save queue
// slots' size.
#[allow(clippy::large_enum_variant)]
enum Message {
    Record(Uuid, AuditRecord),
    Flush(oneshot::Sender<()>),
}

/// What a record says of one call or request, besides who made it and when.
pub struct Call<'a> {
    /// mcp (with its surface) or v1.
    pub surface: &'a str,
    /// The call's rate-limit class (read, write, ..., sync for /v1): what usage is metered by.
    pub class: &'a str,
    /// The tool, or the /v1 method and route.
    pub action: &'a str,
    pub client: Option<&'a str>,
    pub vault: Option<String>,
    pub paths: Vec<String>,
    /// ok, or the error code it answered.
    pub outcome: &'a str,
    /// What work memory keeps of it, should the caller have a work session open (its summary
    /// is screened and redacted by the writer, off the call's path).
    pub episode: Option<otc_store::EpisodeFacts>,
}

/// Where records go: a queue to this gateway's writer (none when the trail is off).
#[derive(Clone)]
pub struct Audit {
    sender: Option<mpsc::Sender<Message>>,
}

impl Audit {
    /// The writer over `store`, started now (when `enabled` and inside a runtime).
    pub fn new(store: Store, enabled: bool) -> Self {
        let sender = match tokio::runtime::Handle::try_current() {
            Ok(runtime) if enabled => {
                let (sender, receiver) = mpsc::channel(QUEUE);
                runtime.spawn(write(store, receiver));
                Some(sender)
            }
            _ => None,
        };
        Self { sender }
    }

    /// Whether records are kept (callers skip building one when not).
    pub fn is_on(&self) -> bool {
        self.sender.is_some()
    }

    /// Queues the record of one call or request `caller` made, which began at `started` (nothing
    /// when the trail is off).
    pub fn record_call(&self, caller: &crate::Caller, call: Call<'_>, started: std::time::Instant) {
        if !self.is_on() {
            return;
        }
        self.record(
            caller.tenant_id,
            AuditRecord {
                id: Uuid::now_v7(),
                at: chrono::Utc::now(),
                principal_id: Some(caller.principal_id),
                principal_name: Some(caller.principal_name.clone()),
                client_name: call.client.map(cut_path),
                surface: call.surface.to_string(),
                class: Some(call.class.to_string()),
                action: cut_path(call.action),
                vault: call.vault,
                paths: call.paths,
                outcome: call.outcome.to_string(),
                duration_us: started.elapsed().as_micros() as i64,
                episode: call.episode,
            },
        );
    }

    /// Queues one record of `tenant`.
    pub fn record(&self, tenant: Uuid, record: AuditRecord) {
        let Some(sender) = &self.sender else { return };
        if let Err(mpsc::error::TrySendError::Full(Message::Record(_, record))) =
            sender.try_send(Message::Record(tenant, record))
        {
            crate::replay::release(&record);
            tracing::error!(%tenant, "audit queue full: a record was dropped");
        }
    }

    /// Waits (at most `limit`) until every record queued before this call is written.
    pub async fn flush(&self, limit: Duration) -> bool {
        let Some(sender) = &self.sender else { return true };
        let (done, written) = oneshot::channel();
        if sender.send(Message::Flush(done)).await.is_err() {
            return false;
        }
        tokio::time::timeout(limit, written).await.is_ok_and(|r| r.is_ok())
    }
}

/// Text for a record: cut to [`MAX_PATH_BYTES`] at a character boundary, NUL (which Postgres
/// text cannot hold) shown as U+FFFD.
pub fn cut_path(path: &str) -> String {
    path[..path.floor_char_boundary(MAX_PATH_BYTES)].replace('\0', "\u{FFFD}")
}

/// How a record names the MCP surface a call came through.
pub fn surface_label(surface: Surface) -> &'static str {
    match surface {
        Surface::Default => "mcp",
        Surface::Triad => "mcp/triad",
        Surface::Domain => "mcp/domain",
        Surface::Subset(Subset::Essentials) => "mcp/essentials",
        Surface::Subset(Subset::Core) => "mcp/core",
        Surface::Subset(Subset::Full) => "mcp/full",
        Surface::CompatObsidian => "mcp/compat/obsidian",
    }
}

/// The vault and the paths a call's arguments name: `path`, `from`, `to`, `paths`, and those of
/// the items of a batch (`items`, `moves`), at most [`MAX_PATHS`].
pub fn named(args: &Map<String, Value>) -> (Option<String>, Vec<String>) {
    let vault = args.get("vault").and_then(Value::as_str).map(cut_path);
    let mut paths = Vec::new();
    let mut add = |v: Option<&Value>| {
        if let Some(text) = v.and_then(Value::as_str)
            && paths.len() < MAX_PATHS
        {
            paths.push(cut_path(text));
        }
    };
    for key in ["path", "from", "to"] {
        add(args.get(key));
    }
    if let Some(Value::Array(list)) = args.get("paths") {
        list.iter().for_each(|v| add(Some(v)));
    }
    // work_forget's target, so the trail says which episode was forgotten.
    if let Some(id) = args.get("episode_id").and_then(Value::as_str) {
        add(Some(&Value::String(format!("episode:{id}"))));
    }
    for batch in ["items", "moves"] {
        if let Some(Value::Array(list)) = args.get(batch) {
            for item in list {
                for key in ["path", "from", "to"] {
                    add(item.get(key));
                }
            }
        }
    }
    (vault, paths)
}

async fn write(store: Store, mut receiver: mpsc::Receiver<Message>) {
    let mut pending: Vec<(Uuid, AuditRecord)> = Vec::new();
    let mut waiting: Vec<oneshot::Sender<()>> = Vec::new();
    // When the oldest record waiting to be written came, and when to try again after a failure.
    let mut oldest: Option<Instant> = None;
    let mut retry_at: Option<Instant> = None;
    loop {
        let wake = retry_at.or(oldest.map(|at| at + LINGER));
        let message = match wake {
            Some(at) => tokio::select! {
                m = receiver.recv() => m.map(Some),
                _ = tokio::time::sleep_until(at) => Some(None),
            },
            None => receiver.recv().await.map(Some),
        };
        let closed = message.is_none();
        let take = |m: Message, pending: &mut Vec<_>, waiting: &mut Vec<_>| match m {
            Message::Record(tenant, record) => pending.push((tenant, record)),
            Message::Flush(done) => waiting.push(done),
        };
        if let Some(Some(m)) = message {
            take(m, &mut pending, &mut waiting);
        }
        while pending.len() < BATCH
            && let Ok(m) = receiver.try_recv()
        {
            take(m, &mut pending, &mut waiting);
        }
        let now = Instant::now();
        if !pending.is_empty() && oldest.is_none() {
            oldest = Some(now);
        }
        // Written when a batch is full, the oldest record has waited LINGER, someone flushes, or
        // the process stops; not while backing off after a failure (unless stopping).
        let due =
            closed || !waiting.is_empty() || pending.len() >= BATCH || oldest.is_some_and(|at| now >= at + LINGER);
        if !due || (!closed && retry_at.is_some_and(|at| now < at)) {
            continue;
        }
        match write_pending(&store, &mut pending).await {
            Ok(()) => {
                oldest = None;
                retry_at = None;
                waiting.drain(..).for_each(|w| {
                    let _ = w.send(());
                });
            }
            Err(e) => {
                tracing::error!(error = %e, pending = pending.len(), "audit records not written; retrying in 1 s");
                retry_at = Some(Instant::now() + Duration::from_secs(1));
                if pending.len() > MAX_PENDING {
                    let dropped = pending.len() - MAX_PENDING;
                    pending.drain(..dropped).for_each(|(_, record)| crate::replay::release(&record));
                    tracing::error!(dropped, "audit records dropped while Postgres refused them");
                }
            }
        }
        if closed {
            return;
        }
    }
}

/// Of the callers of `records` (one tenant's) with episodes, those that may have been in a work
/// session when they called (a superset: the store's insert decides exactly). A store that
/// refuses the question (not for being unavailable) leaves every one in.
async fn in_sessions(
    store: &Store,
    tenant: Uuid,
    records: &[(Uuid, AuditRecord)],
) -> Result<std::collections::HashSet<Uuid>, otc_store::StoreError> {
    let with_episodes = records.iter().filter(|(_, r)| r.episode.is_some());
    let mut principals: Vec<Uuid> = with_episodes.clone().filter_map(|(_, r)| r.principal_id).collect();
    principals.sort_unstable();
    principals.dedup();
    let Some(since) = with_episodes.map(|(_, r)| r.at).min() else { return Ok(Default::default()) };
    if principals.is_empty() {
        return Ok(Default::default());
    }
    let asked = async {
        let mut tx = store.begin(tenant).await?;
        let found = tx.principals_in_sessions_since(&principals, since).await?;
        tx.commit().await?;
        Ok::<_, otc_store::StoreError>(found)
    };
    match asked.await {
        Ok(found) => Ok(found.into_iter().collect()),
        Err(e) if e.is_unavailable() => Err(e),
        Err(e) => {
            tracing::warn!(error = %otc_errors::error_chain(&e), %tenant, "could not ask which callers are in work sessions; screening every episode");
            Ok(principals.into_iter().collect())
        }
    }
}

/// Writes `pending`, one statement per tenant (and per [`BATCH`]). While Postgres is
/// unavailable what is left stays for the next try; a batch Postgres refuses for what it holds
/// is written record by record, and a record refused alone is dropped (logged), so one bad
/// record never holds back the others.
async fn write_pending(store: &Store, pending: &mut Vec<(Uuid, AuditRecord)>) -> Result<(), otc_store::StoreError> {
    pending.sort_by_key(|(tenant, _)| *tenant);
    while !pending.is_empty() {
        let tenant = pending[0].0;
        let n = pending.iter().take(BATCH).take_while(|(t, _)| *t == tenant).count();
        let in_sessions = in_sessions(store, tenant, &pending[..n]).await?;
        let records: Vec<AuditRecord> = pending[..n]
            .iter()
            .map(|(_, r)| {
                let mut record = r.clone();
                // Only a caller in a work session makes episodes: the others' are not screened
                // (the screen reads every answer's excerpt) nor sent.
                if record.principal_id.is_none_or(|p| !in_sessions.contains(&p)) {
                    record.episode = None;
                }
                crate::screening::screened(record)
            })
            .collect();
        match store.record_audit(tenant, &records).await {
            Ok(()) => {}
            Err(e) if e.is_unavailable() => return Err(e),
            Err(e) => {
                tracing::error!(error = %e, %tenant, records = n, "audit batch refused; writing its records one by one");
                for record in records {
                    match store.record_audit(tenant, std::slice::from_ref(&record)).await {
                        Ok(()) => {}
                        Err(e) if e.is_unavailable() => return Err(e),
                        Err(e) => tracing::error!(error = %e, %tenant, action = %record.action, "audit record dropped"),
                    }
                }
            }
        }
        pending.drain(..n).for_each(|(_, record)| crate::replay::release(&record));
    }
    Ok(())
}
