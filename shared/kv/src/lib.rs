//! Redis: key prefixing, health, leases (leader election for periodic work), small JSON
//! records with a time to live (the state of long-running tool calls), and generations (values
//! that tell the gateways' caches when what they hold has changed).
//!
//! Also the rate limiter's budgets ([`Kv::rate_check`], GCRA on Redis's clock). Every key goes
//! through [`Kv::key`], so deployments and tests sharing one Redis never see each other's keys.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};
use tokio::sync::OnceCell;

#[derive(Debug, thiserror::Error)]
pub enum KvError {
    #[error("bad redis configuration")]
    Config(#[source] redis::RedisError),
    #[error("redis unavailable")]
    Unavailable(#[source] redis::RedisError),
    #[error("redis command failed")]
    Command(#[source] redis::RedisError),
}

pub type Result<T, E = KvError> = std::result::Result<T, E>;

/// A lazily connected, self-reconnecting Redis client with a key prefix.
pub struct Kv {
    client: redis::Client,
    prefix: String,
    timeout: Duration,
    conn: OnceCell<ConnectionManager>,
    started: std::time::Instant,
    /// Until when (ms after `started`) generation reads fail at once: Redis was unreachable.
    generation_down_until_ms: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Kv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kv").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

impl Kv {
    /// Makes the client; no connection is attempted until first use.
    pub fn new(url: &str, prefix: &str, timeout: Duration) -> Result<Self> {
        let client = redis::Client::open(url).map_err(KvError::Config)?;
        Ok(Self {
            client,
            prefix: prefix.to_string(),
            timeout,
            conn: OnceCell::new(),
            started: std::time::Instant::now(),
            generation_down_until_ms: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The full key for `name` under this deployment's prefix.
    pub fn key(&self, name: &str) -> String {
        format!("{}{}", self.prefix, name)
    }

    async fn conn(&self) -> Result<ConnectionManager> {
        let conn = self
            .conn
            .get_or_try_init(|| async {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(self.timeout)
                    .set_response_timeout(self.timeout)
                    .set_number_of_retries(1);
                ConnectionManager::new_with_config(self.client.clone(), config).await
            })
            .await
            .map_err(KvError::Unavailable)?;
        Ok(conn.clone())
    }

    /// Round trip to the server.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis ping", otel.kind = "client", db.system = "redis"))]
    pub async fn ping(&self) -> Result<()> {
        let mut conn = self.conn().await?;
        let _: String = redis::cmd("PING").query_async(&mut conn).await.map_err(classify)?;
        Ok(())
    }

    /// Takes the lease `name` for `holder` if nobody holds it. True when `holder` now holds it.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis try_acquire_lease", otel.kind = "client", db.system = "redis"))]
    pub async fn try_acquire_lease(&self, name: &str, holder: &str, ttl: Duration) -> Result<bool> {
        self.create_record(&format!("lease:{name}"), holder, ttl).await
    }

    /// Extends the lease if `holder` still holds it. False means it was lost (expired and
    /// possibly taken by another holder): the caller must stop the work it guards.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis renew_lease", otel.kind = "client", db.system = "redis"))]
    pub async fn renew_lease(&self, name: &str, holder: &str, ttl: Duration) -> Result<bool> {
        let script = Script::new(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then \
               return redis.call('PEXPIRE', KEYS[1], ARGV[2]) \
             else return 0 end",
        );
        let mut conn = self.conn().await?;
        let renewed: i64 = script
            .key(self.key(&format!("lease:{name}")))
            .arg(holder)
            .arg(ttl.as_millis() as u64)
            .invoke_async(&mut conn)
            .await
            .map_err(classify)?;
        Ok(renewed == 1)
    }

    /// Gives the lease up if `holder` holds it.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis release_lease", otel.kind = "client", db.system = "redis"))]
    pub async fn release_lease(&self, name: &str, holder: &str) -> Result<()> {
        let script = Script::new(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end",
        );
        let mut conn = self.conn().await?;
        let _: i64 = script
            .key(self.key(&format!("lease:{name}")))
            .arg(holder)
            .invoke_async(&mut conn)
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// How long the lease `name` has left, if anyone holds it.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis lease_remaining", otel.kind = "client", db.system = "redis"))]
    pub async fn lease_remaining(&self, name: &str) -> Result<Option<Duration>> {
        let mut conn = self.conn().await?;
        let millis: i64 = conn.pttl(self.key(&format!("lease:{name}"))).await.map_err(classify)?;
        Ok((millis >= 0).then(|| Duration::from_millis(millis as u64)))
    }

    /// How long the record `name` has left, if it exists.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis record_remaining", otel.kind = "client", db.system = "redis"))]
    pub async fn record_remaining(&self, name: &str) -> Result<Option<Duration>> {
        let mut conn = self.conn().await?;
        let millis: i64 = conn.pttl(self.key(name)).await.map_err(classify)?;
        Ok((millis >= 0).then(|| Duration::from_millis(millis as u64)))
    }

    /// Who holds the lease `name` now, if anyone.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis lease_holder", otel.kind = "client", db.system = "redis"))]
    pub async fn lease_holder(&self, name: &str) -> Result<Option<String>> {
        let mut conn = self.conn().await?;
        conn.get(self.key(&format!("lease:{name}"))).await.map_err(classify)
    }
}

impl Kv {
    /// Deletes every key of this prefix whose name contains `fragment` (a tenant's or a
    /// vault's id: every key of a tenant's names its id), scanning the keyspace in batches:
    /// for erasure, never on a timer. Answers how many it deleted.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis delete_naming", otel.kind = "client", db.system = "redis"))]
    pub async fn delete_naming(&self, fragment: &str) -> Result<u64> {
        let mut conn = self.conn().await?;
        let unlink = conn.clone();
        let mut deleted = 0u64;
        self.scan_naming(
            fragment,
            |keys| {
                let mut conn = unlink.clone();
                async move {
                    let n: u64 = redis::cmd("UNLINK").arg(&keys).query_async(&mut conn).await.map_err(classify)?;
                    Ok(n)
                }
            },
            &mut deleted,
            &mut conn,
        )
        .await?;
        Ok(deleted)
    }

    /// The keys of this prefix whose name contains `fragment`, up to `limit` (diagnostics and
    /// the erasure tests).
    pub async fn keys_naming(&self, fragment: &str, limit: usize) -> Result<Vec<String>> {
        let mut conn = self.conn().await?;
        let found = std::sync::Mutex::new(Vec::new());
        let mut count = 0u64;
        self.scan_naming(
            fragment,
            |keys| {
                let mut held = found.lock().unwrap_or_else(|p| p.into_inner());
                let room = limit.saturating_sub(held.len());
                held.extend(keys.into_iter().take(room));
                std::future::ready(Ok(0))
            },
            &mut count,
            &mut conn,
        )
        .await?;
        Ok(found.into_inner().unwrap_or_else(|p| p.into_inner()))
    }

    /// SCANs the keys of this prefix that name `fragment`, a batch at a time, adding what
    /// `each` answers for a batch to `total`.
    async fn scan_naming<F, Fut>(
        &self,
        fragment: &str,
        mut each: F,
        total: &mut u64,
        conn: &mut ConnectionManager,
    ) -> Result<()>
    where
        F: FnMut(Vec<String>) -> Fut,
        Fut: Future<Output = Result<u64>>,
    {
        let glob = |s: &str| {
            s.chars().fold(String::new(), |mut out, c| {
                if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                    out.push('\\');
                }
                out.push(c);
                out
            })
        };
        let pattern = format!("{}*{}*", glob(&self.prefix), glob(fragment));
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(conn)
                .await
                .map_err(classify)?;
            if !keys.is_empty() {
                *total += each(keys).await?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// Stores `value` (JSON text) at `name` for `ttl`.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis put_record", otel.kind = "client", db.system = "redis"))]
    pub async fn put_record(&self, name: &str, value: &str, ttl: Duration) -> Result<()> {
        let mut conn = self.conn().await?;
        let _: () = conn.pset_ex(self.key(name), value, ttl.as_millis() as u64).await.map_err(classify)?;
        Ok(())
    }

    /// The record at `name`, if it exists and has not expired.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis get_record", otel.kind = "client", db.system = "redis"))]
    pub async fn get_record(&self, name: &str) -> Result<Option<String>> {
        let mut conn = self.conn().await?;
        conn.get(self.key(name)).await.map_err(classify)
    }

    /// Stores `value` at `name` for `ttl` only if no record is there. True when it was stored.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis create_record", otel.kind = "client", db.system = "redis"))]
    pub async fn create_record(&self, name: &str, value: &str, ttl: Duration) -> Result<bool> {
        let mut conn = self.conn().await?;
        let set: Option<String> = redis::cmd("SET")
            .arg(self.key(name))
            .arg(value)
            .arg("NX")
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .query_async(&mut conn)
            .await
            .map_err(classify)?;
        Ok(set.is_some())
    }

    /// Adds one to the counter at `name` (made, with `ttl`, by its first count) and returns
    /// the new count.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis count_up", otel.kind = "client", db.system = "redis"))]
    pub async fn count_up(&self, name: &str, ttl: Duration) -> Result<i64> {
        let script = Script::new(
            "local n = redis.call('INCR', KEYS[1]) \
             if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end \
             return n",
        );
        let mut conn = self.conn().await?;
        script.key(self.key(name)).arg(ttl.as_millis() as u64).invoke_async(&mut conn).await.map_err(classify)
    }

    /// Deletes the record at `name` only if it still reads `expected`. True when deleted.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis delete_record_if", otel.kind = "client", db.system = "redis"))]
    pub async fn delete_record_if(&self, name: &str, expected: &str) -> Result<bool> {
        let script = Script::new(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end",
        );
        let mut conn = self.conn().await?;
        let deleted: i64 = script.key(self.key(name)).arg(expected).invoke_async(&mut conn).await.map_err(classify)?;
        Ok(deleted == 1)
    }

    /// Replaces the record at `name` only if it still reads `expected` (compare-and-set,
    /// keeping its time to live). False when it changed or vanished meanwhile.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis swap_record", otel.kind = "client", db.system = "redis"))]
    pub async fn swap_record(&self, name: &str, expected: &str, value: &str) -> Result<bool> {
        self.swap(name, expected, value, None).await
    }

    /// [`Kv::swap_record`], the record then living `ttl` (at least a millisecond) from now.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis swap_record_for", otel.kind = "client", db.system = "redis"))]
    pub async fn swap_record_for(&self, name: &str, expected: &str, value: &str, ttl: Duration) -> Result<bool> {
        self.swap(name, expected, value, Some(ttl)).await
    }

    /// The compare-and-set both swaps are: the time to live kept, or set to `ttl`.
    async fn swap(&self, name: &str, expected: &str, value: &str, ttl: Option<Duration>) -> Result<bool> {
        let script = Script::new(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then \
               if ARGV[3] == '' then redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL') \
               else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end \
               return 1 \
             else return 0 end",
        );
        let mut conn = self.conn().await?;
        let ttl_ms = ttl.map_or(String::new(), |ttl| ttl.as_millis().max(1).to_string());
        let swapped: i64 = script
            .key(self.key(name))
            .arg(expected)
            .arg(value)
            .arg(ttl_ms)
            .invoke_async(&mut conn)
            .await
            .map_err(classify)?;
        Ok(swapped == 1)
    }
}

/// The time one call of a `per_minute` budget takes up, in µs: at least 1 (a budget of more than
/// 60 million a minute is as good as none).
pub fn rate_interval_us(per_minute: u32) -> u64 {
    (60_000_000 / u64::from(per_minute.max(1))).max(1)
}

/// One rate-limit decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    pub allowed: bool,
    /// Calls that could be made at once after this one.
    pub remaining: u32,
    /// When refused: how long until one call would be allowed.
    pub retry_after: Duration,
    /// How long until the budget is whole again.
    pub reset_after: Duration,
    /// The budget's theoretical arrival time after the decision and Redis's clock when it was
    /// made (µs), for a caller that decides the next calls locally.
    pub tat_us: i64,
    pub now_us: i64,
}

/// GCRA (the generic cell rate algorithm) over one key holding the theoretical arrival time in
/// microseconds of Redis's own clock, so every gateway shares one budget whatever its clock
/// says. ARGV: the emission interval (µs per call), the burst, calls already allowed elsewhere
/// (added whatever the budget says: they happened) and whether one more is asked (0 or 1).
/// Returns allowed (0/1), remaining, retry-after µs, reset µs, the new TAT and Redis's now.
const GCRA: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local spent = tonumber(ARGV[3])
local asked = tonumber(ARGV[4])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
tat = tat + interval * spent
local function keep(value)
  redis.call('SET', KEYS[1], string.format('%d', value), 'PX', math.floor((value - now) / 1000) + 1)
end
if asked == 0 then
  if spent > 0 then keep(tat) end
  return {1, math.max(0, math.floor((now - (tat - interval * burst)) / interval)), 0, tat - now, tat, now}
end
local new_tat = tat + interval
local allow_at = new_tat - interval * burst
if now < allow_at then
  if spent > 0 then keep(tat) end
  return {0, 0, allow_at - now, tat - now, tat, now}
end
keep(new_tat)
return {1, math.floor((now - allow_at) / interval), 0, new_tat - now, new_tat, now}
"#;

static GCRA_SCRIPT: std::sync::LazyLock<Script> = std::sync::LazyLock::new(|| Script::new(GCRA));

impl Kv {
    /// Spends one call of the budget `name` (`per_minute` calls a minute, up to `burst` at
    /// once). Within [`GENERATION_WAIT`], and refused at once for a second after Redis was
    /// found unreachable, like a cache's generation read: the caller applies its policy.
    pub async fn rate_check(&self, name: &str, per_minute: u32, burst: u32) -> Result<RateDecision> {
        self.rate_spend(name, per_minute, burst, 0, true).await
    }

    /// Records `spent` calls already allowed elsewhere (a gateway's local decisions) against the
    /// budget `name` and, when `ask`, decides one more.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis rate_spend", otel.kind = "client", db.system = "redis"))]
    pub async fn rate_spend(
        &self,
        name: &str,
        per_minute: u32,
        burst: u32,
        spent: u32,
        ask: bool,
    ) -> Result<RateDecision> {
        let interval_us = rate_interval_us(per_minute);
        let check = async {
            let mut conn = self.conn().await?;
            let (allowed, remaining, retry_us, reset_us, tat_us, now_us): (i64, i64, i64, i64, i64, i64) = GCRA_SCRIPT
                .key(self.key(name))
                .arg(interval_us)
                .arg(burst.max(1))
                .arg(spent)
                .arg(u8::from(ask))
                .invoke_async(&mut conn)
                .await
                .map_err(classify)?;
            let us = |v: i64| Duration::from_micros(v.max(0) as u64);
            Ok(RateDecision {
                allowed: allowed == 1,
                remaining: remaining.clamp(0, u32::MAX.into()) as u32,
                retry_after: us(retry_us),
                reset_after: us(reset_us),
                tat_us,
                now_us,
            })
        };
        self.fail_fast(check).await
    }
}

/// Uploads in flight per tenant: a sorted set of `id:bytes` members scored by when their lease
/// ends. One script drops lapsed leases, then admits the upload only within both limits.
/// Returns {admitted, count, bytes} (count and bytes as they were before this upload).
const UPLOAD_SLOT: &str = r#"
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
local bytes = 0
for _, m in ipairs(members) do
  bytes = bytes + tonumber(string.match(m, ':(%d+)$'))
end
local want = tonumber(ARGV[2])
if #members + 1 > tonumber(ARGV[3]) or bytes + want > tonumber(ARGV[4]) then
  return {0, #members, bytes}
end
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[5]), ARGV[1] .. ':' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]) * 2)
return {1, #members, bytes}
"#;

static UPLOAD_SLOT_SCRIPT: std::sync::LazyLock<Script> = std::sync::LazyLock::new(|| Script::new(UPLOAD_SLOT));

/// What [`Kv::take_upload_slot`] decided, and the tenant's uploads in flight before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadSlot {
    pub admitted: bool,
    pub in_flight: u64,
    pub bytes_in_flight: u64,
}

/// Upload `id` of `bytes` as a member of its tenant's set (the script composes the same).
fn upload_member(id: uuid::Uuid, bytes: u64) -> String {
    format!("{}:{bytes}", id.simple())
}

impl Kv {
    /// The set of `tenant`'s uploads in flight.
    fn uploads_key(&self, tenant: uuid::Uuid) -> String {
        self.key(&format!("uploads:{tenant}"))
    }

    /// Admits upload `id` of `bytes` for `tenant` when the tenant then has at most
    /// `max_uploads` uploads and `max_bytes` bytes in flight, every gateway counted; the slot
    /// lapses after `lease` unless renewed ([`Kv::renew_upload_slot`]) or given back
    /// ([`Kv::release_upload_slot`]).
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis take_upload_slot", otel.kind = "client", db.system = "redis"))]
    pub async fn take_upload_slot(
        &self,
        tenant: uuid::Uuid,
        id: uuid::Uuid,
        bytes: u64,
        max_uploads: u64,
        max_bytes: u64,
        lease: Duration,
    ) -> Result<UploadSlot> {
        let mut conn = self.conn().await?;
        let (admitted, in_flight, bytes_in_flight): (i64, i64, i64) = UPLOAD_SLOT_SCRIPT
            .key(self.uploads_key(tenant))
            .arg(id.simple().to_string())
            .arg(bytes)
            .arg(max_uploads)
            .arg(max_bytes)
            .arg(lease.as_millis() as u64)
            .invoke_async(&mut conn)
            .await
            .map_err(classify)?;
        Ok(UploadSlot { admitted: admitted == 1, in_flight: in_flight as u64, bytes_in_flight: bytes_in_flight as u64 })
    }

    /// Moves the end of upload `id`'s lease to `lease` from now (Redis's now, as the lease was
    /// taken).
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis renew_upload_slot", otel.kind = "client", db.system = "redis"))]
    pub async fn renew_upload_slot(
        &self,
        tenant: uuid::Uuid,
        id: uuid::Uuid,
        bytes: u64,
        lease: Duration,
    ) -> Result<()> {
        let script = Script::new(
            "local now = redis.call('TIME') \
             local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) \
             return redis.call('ZADD', KEYS[1], 'XX', now_ms + tonumber(ARGV[2]), ARGV[1])",
        );
        let mut conn = self.conn().await?;
        let _: i64 = script
            .key(self.uploads_key(tenant))
            .arg(upload_member(id, bytes))
            .arg(lease.as_millis() as u64)
            .invoke_async(&mut conn)
            .await
            .map_err(classify)?;
        Ok(())
    }

    /// Gives upload `id`'s slot back.
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis release_upload_slot", otel.kind = "client", db.system = "redis"))]
    pub async fn release_upload_slot(&self, tenant: uuid::Uuid, id: uuid::Uuid, bytes: u64) -> Result<()> {
        let mut conn = self.conn().await?;
        let _: i64 = conn.zrem(self.uploads_key(tenant), upload_member(id, bytes)).await.map_err(classify)?;
        Ok(())
    }
}

/// How long a generation outlives its last move (a missing one is recreated at random).
const GENERATION_TTL_MS: u64 = 7 * 24 * 3600 * 1000;

/// A value that changes whenever what it stands for changes in Postgres. Caches tag what they
/// read from Postgres with the generation read *before* the read, and trust it only while the
/// generation still reads the same; whoever changes the thing moves the generation on after
/// committing and before answering. Every value, first or next, is drawn at random, so a value
/// never comes back (not after the key expires or is evicted, nor after Redis restarts from an
/// older snapshot and moves on from there); a snapshot that brings back the *current* value of
/// an older moment makes entries tagged with it count again until the next move or their age
/// limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// A vault's files (every commit to it).
    Vault(uuid::Uuid),
    /// A tenant's tokens (every revocation in it).
    Tokens(uuid::Uuid),
}

impl Generation {
    fn key_name(self) -> String {
        match self {
            Generation::Vault(id) => format!("gen:vault:{id}"),
            Generation::Tokens(id) => format!("gen:tokens:{id}"),
        }
    }
}

/// How long a cache waits for a generation before it reads Postgres instead.
pub const GENERATION_WAIT: Duration = Duration::from_millis(250);
/// How long a writer waits to move a generation on before it answers anyway (and warns).
pub const BUMP_WAIT: Duration = Duration::from_secs(1);

impl Kv {
    /// The current value of `generation`, creating it when missing. For keys whose existence
    /// the caller has already established is legitimate (a vault the caller reached).
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis generation", otel.kind = "client", db.system = "redis"))]
    pub async fn generation(&self, generation: Generation) -> Result<i64> {
        self.fail_fast(self.read_generation(generation, true)).await?.ok_or_else(|| {
            KvError::Command(redis::RedisError::from((redis::ErrorKind::TypeError, "generation vanished")))
        })
    }

    /// The current value of `generation`, or None when it does not exist yet (nothing is
    /// created: callers that have not yet checked who is asking use this, so a stranger's
    /// request leaves nothing behind in Redis).
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis existing_generation", otel.kind = "client", db.system = "redis"))]
    pub async fn existing_generation(&self, generation: Generation) -> Result<Option<i64>> {
        self.fail_fast(self.read_generation(generation, false)).await
    }

    /// A read on a request's path (a cache's generation, a rate check): within
    /// [`GENERATION_WAIT`], and refused at once for a second after Redis was found unreachable
    /// (the caller falls back to Postgres or its policy, so a gateway that lost Redis pays one
    /// slow request a second, not one each).
    async fn fail_fast<T>(&self, read: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        use std::sync::atomic::Ordering::Relaxed;
        let now_ms = self.started.elapsed().as_millis() as u64;
        if now_ms < self.generation_down_until_ms.load(Relaxed) {
            return Err(unavailable("redis was unreachable a moment ago"));
        }
        let read =
            tokio::time::timeout(GENERATION_WAIT, read).await.unwrap_or_else(|_| Err(unavailable("redis too slow")));
        if let Err(KvError::Unavailable(_)) = &read {
            self.generation_down_until_ms.store(self.started.elapsed().as_millis() as u64 + 1_000, Relaxed);
        }
        read
    }

    async fn read_generation(&self, generation: Generation, create: bool) -> Result<Option<i64>> {
        let key = self.key(&generation.key_name());
        let mut conn = self.conn().await?;
        if let Some(value) = conn.get::<_, Option<i64>>(&key).await.map_err(classify)? {
            return Ok(Some(value));
        }
        if !create {
            return Ok(None);
        }
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg(random_generation())
            .arg("NX")
            .arg("PX")
            .arg(GENERATION_TTL_MS)
            .query_async(&mut conn)
            .await
            .map_err(classify)?;
        conn.get(&key).await.map_err(classify)
    }

    /// Moves `generation` on (to a new random value); gives up after [`BUMP_WAIT`].
    #[tracing::instrument(name = "redis", skip_all, fields(otel.name = "redis bump_generation", otel.kind = "client", db.system = "redis"))]
    pub async fn bump_generation(&self, generation: Generation) -> Result<()> {
        let bump = async {
            let mut conn = self.conn().await?;
            redis::cmd("SET")
                .arg(self.key(&generation.key_name()))
                .arg(random_generation())
                .arg("PX")
                .arg(GENERATION_TTL_MS)
                .query_async::<()>(&mut conn)
                .await
                .map_err(classify)
        };
        tokio::time::timeout(BUMP_WAIT, bump).await.unwrap_or_else(|_| Err(unavailable("redis too slow")))
    }
}

/// After a commit to `vault` and before it is answered: moves the vault's generation on, so no
/// gateway serves a cached manifest row the commit replaced. Runs on a task of its own, so a
/// caller that gives up meanwhile (a client hanging up) does not cancel it; when Redis cannot be
/// told it logs a warning (the rows then stay cached at most `tools.file_cache_ms`).
pub async fn vault_changed(kv: &std::sync::Arc<Kv>, vault: uuid::Uuid) {
    let kv = kv.clone();
    let bump = tokio::spawn(async move { kv.bump_generation(Generation::Vault(vault)).await });
    if let Ok(Err(e)) = bump.await {
        tracing::warn!(%vault, error = ?e, "committed, but could not move the vault's generation on; gateways may serve the old manifest rows for up to tools.file_cache_ms");
    }
}

fn unavailable(what: &'static str) -> KvError {
    KvError::Unavailable(redis::RedisError::from((redis::ErrorKind::IoError, what)))
}

/// A generation value: random, so it repeats none before it.
fn random_generation() -> i64 {
    (rand::random::<u64>() >> 1) as i64
}

fn classify(err: redis::RedisError) -> KvError {
    if err.is_io_error() || err.is_timeout() || err.is_connection_dropped() || err.is_connection_refusal() {
        KvError::Unavailable(err)
    } else {
        KvError::Command(err)
    }
}

#[cfg(test)]
mod tests {
    use super::rate_interval_us;

    #[test]
    fn a_rate_interval_is_never_zero() {
        assert_eq!(rate_interval_us(60), 1_000_000);
        assert_eq!(rate_interval_us(0), 60_000_000);
        assert_eq!(rate_interval_us(100_000_000), 1);
        assert_eq!(rate_interval_us(u32::MAX), 1);
    }
}
