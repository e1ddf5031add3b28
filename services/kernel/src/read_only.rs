//! Read-only modes (maintenance, legal holds): the deployment's (`read_only.server` in the
//! configuration, or the operator's switch in Postgres), a tenant's and a vault's. While one is
//! on, every call of a tool that writes, and every /v1 write, is refused before it runs:
//! `read_only` for the deployment's or the tenant's hold, `read_only_mode` for a vault's. Reads
//! are unaffected.
//!
//! Each gateway reads the holds at most once per `read_only.refresh_ms` (the deployment's once,
//! each tenant's when one of its writes comes), so a switch reaches every gateway within that
//! long; reads never look.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use otc_errors::{ErrorCode, ToolError};
use otc_store::Store;
use otc_store::read_only::{Hold, TenantHolds};
use uuid::Uuid;

/// The holds this gateway has read, each with when.
pub struct Holds {
    /// `read_only.server`: the deployment is read-only whatever Postgres says.
    configured: bool,
    refresh: Duration,
    server: Mutex<Option<(Instant, Option<Hold>)>>,
    tenants: otc_cache::Bounded<Uuid, (Instant, Arc<TenantHolds>)>,
}

impl Holds {
    /// `max_bytes` bounds the tenants' holds kept (`caches.vaults_bytes`: they are vault facts).
    pub fn new(config: &otc_config::ReadOnlyConfig, max_bytes: u64) -> Self {
        let weigh = |_: &Uuid, (_, holds): &(Instant, Arc<TenantHolds>)| {
            let reasons = |h: &Hold| h.reason.as_ref().map_or(0, String::len) + 48;
            64 + holds.tenant.as_ref().map_or(0, reasons)
                + holds.vaults.iter().map(|(_, name, h)| name.len() + 40 + reasons(h)).sum::<usize>()
        };
        Self {
            configured: config.server,
            refresh: Duration::from_millis(config.refresh_ms),
            server: Mutex::new(None),
            tenants: otc_cache::Bounded::new("read_only", usize::MAX, max_bytes, weigh),
        }
    }

    pub fn figures(&self) -> otc_cache::Figures {
        self.tenants.figures()
    }

    async fn server(&self, store: &Store) -> Result<Option<Hold>, ToolError> {
        let fresh = |at: &Instant| at.elapsed() < self.refresh;
        if let Some((at, hold)) = &*self.server.lock().unwrap_or_else(PoisonError::into_inner)
            && fresh(at)
        {
            return Ok(hold.clone());
        }
        let hold = store.server_read_only().await?;
        *self.server.lock().unwrap_or_else(PoisonError::into_inner) = Some((Instant::now(), hold.clone()));
        Ok(hold)
    }

    async fn tenant(&self, store: &Store, tenant: Uuid) -> Result<Arc<TenantHolds>, ToolError> {
        if let Some((_, holds)) = self.tenants.get_if(&tenant, |(at, _)| at.elapsed() < self.refresh) {
            return Ok(holds);
        }
        let mut tx = store.begin(tenant).await?;
        let holds = Arc::new(tx.read_only_holds().await?);
        tx.commit().await?;
        self.tenants.put(tenant, (Instant::now(), holds.clone()));
        Ok(holds)
    }

    /// The hold a write to `tenant` (to its vault named `vault`, by name or id, when the write
    /// has one) meets, if any: the deployment's first, then the tenant's, then the vault's.
    pub async fn hold_on(&self, store: &Store, tenant: Uuid, vault: Option<&str>) -> Result<Option<OnHold>, ToolError> {
        if self.configured {
            return Ok(Some(OnHold { scope: Scope::Server, hold: None }));
        }
        if let Some(hold) = self.server(store).await? {
            return Ok(Some(OnHold { scope: Scope::Server, hold: Some(hold) }));
        }
        let holds = self.tenant(store, tenant).await?;
        if let Some(hold) = &holds.tenant {
            return Ok(Some(OnHold { scope: Scope::Tenant, hold: Some(hold.clone()) }));
        }
        // By name, or by id in any spelling a lookup accepts (upper case, no hyphens, braces).
        let named = |name: &str, held: &str, id: &Uuid| held == name || Uuid::try_parse(name).is_ok_and(|u| u == *id);
        let held = vault.and_then(|name| holds.vaults.iter().find(|(id, held, _)| named(name, held, id)));
        Ok(held.map(|(_, name, hold)| OnHold { scope: Scope::Vault(name.clone()), hold: Some(hold.clone()) }))
    }

    /// Refuses a write that meets a hold ([`Holds::hold_on`]): `read_only` for the deployment's
    /// or the tenant's, `read_only_mode` for the vault's.
    pub async fn check_write(&self, store: &Store, tenant: Uuid, vault: Option<&str>) -> Result<(), ToolError> {
        match self.hold_on(store, tenant, vault).await? {
            None => Ok(()),
            Some(on) => Err(on.refusal()),
        }
    }

    /// Forgets what this gateway read of `tenant`'s holds (after it changed them here).
    pub fn forget(&self, tenant: Uuid) {
        self.tenants.remove(&tenant);
        *self.server.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// What is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Server,
    Tenant,
    /// The vault, by name.
    Vault(String),
}

impl Scope {
    pub fn as_str(&self) -> &'static str {
        match self {
            Scope::Server => "server",
            Scope::Tenant => "tenant",
            Scope::Vault(_) => "vault",
        }
    }
}

/// The hold a write meets: what is held, and the hold (None: `read_only.server` in the
/// configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnHold {
    pub scope: Scope,
    pub hold: Option<Hold>,
}

impl OnHold {
    pub fn refusal(&self) -> ToolError {
        let (code, what) = match &self.scope {
            Scope::Server => (ErrorCode::ReadOnly, "the server is in read-only mode"),
            Scope::Tenant => (ErrorCode::ReadOnly, "this tenant is in read-only mode"),
            Scope::Vault(_) => (ErrorCode::ReadOnlyMode, "this vault is read-only"),
        };
        let reason = self.hold.as_ref().and_then(|h| h.reason.as_deref());
        let message = match reason {
            Some(reason) => format!("{what}: {reason}"),
            None => what.to_string(),
        };
        let mut err = ToolError::with_message(code, message).detail("scope", self.scope.as_str());
        match &self.hold {
            Some(hold) => err = err.detail("since", hold.since.to_rfc3339()).detail("set_by", hold.by.clone()),
            None => err = err.detail("setting", "read_only.server"),
        }
        if let Scope::Vault(name) = &self.scope {
            err = err.echo("vault", name);
        }
        err
    }
}
