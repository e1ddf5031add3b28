//! Redis: key prefixing, health, leases (leader election for periodic work), and small JSON
//! records with a time to live (the state of long-running tool calls).
//!
//! Later work adds rate limits here. Every key goes through [`Kv::key`], so
//! deployments and tests sharing one Redis never see each other's keys.

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
        Ok(Self { client, prefix: prefix.to_string(), timeout, conn: OnceCell::new() })
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
    pub async fn ping(&self) -> Result<()> {
        let mut conn = self.conn().await?;
        let _: String = redis::cmd("PING").query_async(&mut conn).await.map_err(classify)?;
        Ok(())
    }

    /// Takes the lease `name` for `holder` if nobody holds it. True when `holder` now holds it.
    pub async fn try_acquire_lease(&self, name: &str, holder: &str, ttl: Duration) -> Result<bool> {
        let mut conn = self.conn().await?;
        let set: Option<String> = redis::cmd("SET")
            .arg(self.key(&format!("lease:{name}")))
            .arg(holder)
            .arg("NX")
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .query_async(&mut conn)
            .await
            .map_err(classify)?;
        Ok(set.is_some())
    }

    /// Extends the lease if `holder` still holds it. False means it was lost (expired and
    /// possibly taken by another holder): the caller must stop the work it guards.
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

    /// Who holds the lease `name` now, if anyone.
    pub async fn lease_holder(&self, name: &str) -> Result<Option<String>> {
        let mut conn = self.conn().await?;
        conn.get(self.key(&format!("lease:{name}"))).await.map_err(classify)
    }
}

impl Kv {
    /// Stores `value` (JSON text) at `name` for `ttl`.
    pub async fn put_record(&self, name: &str, value: &str, ttl: Duration) -> Result<()> {
        let mut conn = self.conn().await?;
        let _: () = conn.pset_ex(self.key(name), value, ttl.as_millis() as u64).await.map_err(classify)?;
        Ok(())
    }

    /// The record at `name`, if it exists and has not expired.
    pub async fn get_record(&self, name: &str) -> Result<Option<String>> {
        let mut conn = self.conn().await?;
        conn.get(self.key(name)).await.map_err(classify)
    }

    /// Replaces the record at `name` only if it still reads `expected` (compare-and-set,
    /// keeping its time to live). False when it changed or vanished meanwhile.
    pub async fn swap_record(&self, name: &str, expected: &str, value: &str) -> Result<bool> {
        let script = Script::new(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then \
               redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL') return 1 \
             else return 0 end",
        );
        let mut conn = self.conn().await?;
        let swapped: i64 =
            script.key(self.key(name)).arg(expected).arg(value).invoke_async(&mut conn).await.map_err(classify)?;
        Ok(swapped == 1)
    }
}

fn classify(err: redis::RedisError) -> KvError {
    if err.is_io_error() || err.is_timeout() || err.is_connection_dropped() || err.is_connection_refusal() {
        KvError::Unavailable(err)
    } else {
        KvError::Command(err)
    }
}
