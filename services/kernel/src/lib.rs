//! The kernel every call shares: the one pipeline it goes through, whichever surface or facade
//! it came in by: find the tool → visibility (profile, operator
//! rules) → scopes → the vault filled in when left out → schema validation → idempotency key
//! → rate limit → handler → response-size governor.
//!
//! Protocol-free: handlers take and return domain types; the gateway turns them into MCP.

pub mod audit_writer;
pub mod chat;
pub mod citations;
pub mod confirmation;
pub mod dns;
pub mod egress;
pub mod episodes;
pub mod export;
pub mod fair_share;
pub mod features;
pub mod file_cache;
pub mod format;
pub mod graphing;
pub mod idempotency;
pub mod lifecycle;
pub mod long_calls;
pub mod memory;
pub mod rate_limits;
pub mod read_only;
pub mod reading;
pub mod replay;
pub mod resources;
pub mod screening;
pub mod searching;
pub mod writing;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use otc_blobs::Blobs;
use otc_catalog::facade::{self, AdvertisedTool, FacadeSettings, Listing, Surface};
use otc_catalog::visibility::{Reason, Visibility, verdict};
use otc_catalog::{Declaration, Domain, Registered, RegistrationError, Registry, ScopeClass, ToolSpec};
use otc_config::Config;
use otc_errors::{ErrorCode, Hint, ToolError};
use otc_kv::Kv;
use otc_store::{Authenticated, Store};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tracing::Instrument;

pub use format::{ResponseFormat, Verbosity};

/// The caller of a tool: who the credential speaks for.
pub type Caller = Authenticated;

/// One tool: its declaration, its input and output types, and its handler.
pub trait Tool: Send + Sync + 'static {
    type Input: DeserializeOwned + JsonSchema + Send;
    type Output: Serialize + JsonSchema;
    const SPEC: ToolSpec;
    /// Whether the output type's schema is advertised (false for outputs whose root is not an
    /// object, such as call_capability's, which is whatever the target returns).
    const ADVERTISE_OUTPUT: bool = true;

    fn call(ctx: &CallContext<'_>, input: Self::Input) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

type Handler = for<'a> fn(&'a CallContext<'a>) -> BoxFuture<'a, Result<Value, ToolError>>;

/// A tool with its types erased, ready for the registry.
pub struct ToolEntry {
    pub declaration: Declaration,
    handler: Handler,
    /// The tool's type, with its module path (`otc_tools::tools::notes::write_note::WriteNote`).
    type_name: &'static str,
}

impl ToolEntry {
    /// The tool's type, with its module path.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }
}

/// The entry for tool `T`.
pub fn entry<T: Tool>() -> ToolEntry {
    let input_schema = schemars::schema_for!(T::Input).to_value();
    let output_schema = T::ADVERTISE_OUTPUT.then(|| schemars::schema_for!(T::Output).to_value());
    ToolEntry {
        declaration: Declaration { spec: T::SPEC, input_schema, output_schema },
        handler: handle::<T>,
        type_name: std::any::type_name::<T>(),
    }
}

fn handle<'a, T: Tool>(ctx: &'a CallContext<'a>) -> BoxFuture<'a, Result<Value, ToolError>> {
    Box::pin(async move {
        // The schema has already accepted the arguments; a type that is stricter still is
        // reported the same way.
        let input: T::Input = T::Input::deserialize(ctx.args)
            .map_err(|e| ToolError::with_message(ErrorCode::ValidationError, format!("{}: {e}", T::SPEC.name)))?;
        let output = T::call(ctx, input).await?;
        serde_json::to_value(output).map_err(|e| internal(T::SPEC.name, &e))
    })
}

/// An unexpected failure inside a handler: the chain goes to the log, the caller gets
/// `internal_error`.
pub fn internal(tool: &str, err: &(dyn std::error::Error + 'static)) -> ToolError {
    tracing::error!(tool, error = %otc_errors::error_chain(err), "tool failed");
    ToolError::new(ErrorCode::InternalError)
}

/// A call refused because Redis did not answer while it was `doing` something: the chain goes to
/// the log, the caller gets a retryable `service_unavailable` naming the dependency.
pub fn redis_unavailable(doing: &str, err: &otc_kv::KvError) -> ToolError {
    tracing::warn!(error = %otc_errors::error_chain(err), doing, "Redis did not answer");
    ToolError::with_message(
        ErrorCode::ServiceUnavailable,
        format!("Redis did not answer while {doing}; try again shortly"),
    )
    .detail("dependency", "redis")
}

/// The refusal of a change that would take the tenant past a quota: overflow, with the quota,
/// its limit, what is used and what was asked in details.
pub fn quota_exceeded(q: &otc_store::QuotaExceeded) -> ToolError {
    ToolError::with_message(ErrorCode::Overflow, q.to_string())
        .detail("quota", q.quota)
        .detail("limit", q.limit)
        .detail("used", q.used)
        .detail("requested", q.requested)
}

/// A store failure as the caller sees it: a quota refusal as [`quota_exceeded`], anything else
/// as the store answers it (`service_unavailable` while Postgres is away, else `internal_error`).
pub fn store_refusal(err: &otc_store::StoreError) -> ToolError {
    match err {
        otc_store::StoreError::Quota(q) => quota_exceeded(q),
        other => other.answer(),
    }
}

/// How long a vault found by name is remembered. A deletion moves the tenant's token
/// generation on, and an entry counts only for callers let in under the generation it was
/// found under; without a generation (Redis unreadable) a deleted vault lingers at most this
/// long.
const VAULT_CACHE_TTL: Duration = Duration::from_secs(30);

/// Vaults by (tenant, name), with when they were looked up and under which token generation.
pub type VaultCache = otc_cache::Bounded<(uuid::Uuid, String), (otc_store::Vault, Instant, Option<i64>)>;

/// A vault cache of at most `max_bytes` (`caches.vaults_bytes`).
pub fn vault_cache(max_bytes: u64) -> VaultCache {
    let weigh = |key: &(uuid::Uuid, String), (vault, _, _): &(otc_store::Vault, Instant, Option<i64>)| {
        std::mem::size_of::<(otc_store::Vault, Instant, Option<i64>)>() + 16 + key.1.len() + vault.name.len()
    };
    otc_cache::Bounded::new("vaults", usize::MAX, max_bytes, weigh)
}

/// What handlers reach besides their input.
pub struct Services {
    pub store: Store,
    pub kv: Arc<Kv>,
    pub blobs: Blobs,
    pub indexer: otc_indexer::Indexer,
    /// The embedding provider semantic search embeds its queries with.
    pub embeddings: Arc<otc_embed::Embeddings>,
    /// The configured folder ACLs, compiled.
    pub acls: Arc<Vec<reading::VaultAcl>>,
    /// Vault lookups by name, shared by every call.
    pub vault_cache: VaultCache,
    /// Manifest rows read recently, valid while their vault's write generation holds.
    pub files: file_cache::FileCache,
    /// Full-text segments decoded for searching (they never change once written).
    pub segments: searching::SegmentCache,
    /// Link graphs loaded recently, valid while their vault's write generation holds.
    pub graphs: graphing::GraphCache,
    pub config: Arc<Config>,
    pub started: Instant,
    /// Upper bound for each dependency check (server_health).
    pub check_timeout: Duration,
    /// Each principal's budget of calls per class, shared by every gateway.
    pub limiter: rate_limits::RateLimiter,
    /// Each tenant's and principal's places for heavy work on this gateway.
    pub fair_share: fair_share::FairShare,
    /// Tenants' confirmation-token keys, once read.
    pub confirmation_keys: confirmation::Keys,
    /// Where each call's audit record goes.
    pub audit: audit_writer::Audit,
    /// What the tools crate's features built at start-up (their clients) and the jobs a
    /// commit queues for them.
    pub features: features::Features,
    /// What opens the secrets sealed under the deployment's secret key (`oauth.secret_key`),
    /// such as a tenant's chat endpoint key, when one is configured.
    pub sealer: Option<Arc<otc_auth::seal::Sealer>>,
    /// The client tenants' chat endpoints are called with ([`chat::client`]).
    pub chat: otc_egress::Outbound,
    /// The read-only holds this gateway has read (deployment, tenants, vaults).
    pub read_only: read_only::Holds,
}

impl Services {
    /// Remembers that `name` names `vault` in `tenant`, for [`caller_vault`].
    fn remember_vault(&self, tenant: uuid::Uuid, name: String, vault: &otc_store::Vault, generation: Option<i64>) {
        self.vault_cache.put((tenant, name), (vault.clone(), Instant::now(), generation));
    }
}

/// Where a call's progress goes (units done, total when known): the transport's progress
/// notifications, when the client asked for them with a progress token.
pub type ProgressSink = Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

/// One confirmation a destructive call asks for: what the person is shown, and the gate that
/// asks (the tool and the hash of its arguments as the gate saw them, vault filled in), which an
/// answer must be for.
#[derive(Debug, Clone)]
pub struct Ask {
    pub message: String,
    pub tool: String,
    pub args_hash: String,
}

/// Asks the person at the client to confirm a call (MCP elicitation, on a connection that can
/// carry it): Some(true) when they accept, Some(false) when they decline or cancel, None when
/// the client could not be asked.
pub type Asker = Arc<dyn Fn(Ask) -> BoxFuture<'static, Option<bool>> + Send + Sync>;

/// One request for a completion from the client's own model (MCP sampling), for a tool that
/// can use one (`client-sampling`): what it is told, what it asks, and how long the answer may be.
#[derive(Debug, Clone)]
pub struct Sample {
    pub system: String,
    pub prompt: String,
    pub max_tokens: u32,
}

/// Asks the client's model for a completion (MCP sampling, on a connection that keeps its client
/// and whose client declared sampling): the text, or None when it could not answer.
pub type Sampler = Arc<dyn Fn(Sample) -> BoxFuture<'static, Option<String>> + Send + Sync>;

/// Told the id of the task a call answers with instead of its result (a long-running call past
/// its budget), so a transport with tasks of its own can hand the client that task.
pub type TaskSink = Arc<dyn Fn(&str) + Send + Sync>;

/// What the transport offers a call besides its arguments.
#[derive(Clone, Copy, Default)]
pub struct Hooks<'a> {
    /// Where progress goes, when the client asked for it.
    pub progress: Option<&'a ProgressSink>,
    /// How to ask the person at the client, when the connection can.
    pub ask: Option<&'a Asker>,
    /// Who hears of a task the call starts, when the client follows tasks natively.
    pub task: Option<&'a TaskSink>,
    /// How to ask the client's model, when the connection can.
    pub sample: Option<&'a Sampler>,
    /// The call is made on behalf of a call that already spent from the caller's rate limit
    /// (a compat tool's catalogue calls): it does not spend again.
    pub prepaid: bool,
}

/// Everything a handler knows about the call it serves.
pub struct CallContext<'a> {
    /// The tool that runs (its registered name; a resource read or a worker's pass names
    /// itself), which its failures are logged under.
    pub tool: &'static str,
    pub caller: &'a Caller,
    pub surface: Surface,
    /// The client's self-reported name, when the transport knows it.
    pub client_name: Option<&'a str>,
    pub dispatcher: &'a Dispatcher,
    pub progress: Option<&'a ProgressSink>,
    /// How to ask the person at the client to confirm, when the connection can.
    pub ask: Option<&'a Asker>,
    /// Who hears of a task the call starts.
    pub task: Option<&'a TaskSink>,
    /// How to ask the client's model, when the connection can.
    pub sample: Option<&'a Sampler>,
    /// The call's arguments as sent (what a confirmation is bound to).
    pub args: &'a Value,
}

impl CallContext<'_> {
    /// The transport's hooks, for a call this one makes.
    pub fn hooks(&self) -> Hooks<'_> {
        Hooks { progress: self.progress, ask: self.ask, task: self.task, sample: self.sample, prepaid: false }
    }

    /// Calls catalogue tool `tool` with `args` as a part of this call, for the same caller and
    /// through the same pipeline (scopes, ACL, audit), except the rate limit, which this call
    /// already spent from.
    pub async fn call_part(&self, tool: &str, args: Map<String, Value>) -> Result<Value, ToolError> {
        let hooks = Hooks { prepaid: true, ..self.hooks() };
        self.dispatcher.call(self.caller, Surface::Default, self.client_name, tool, Some(args), hooks).await
    }

    /// [`CallContext::call_part`] with its arguments written as a JSON object (a `json!` literal).
    pub async fn call_part_json(&self, tool: &str, args: Value) -> Result<Value, ToolError> {
        let Value::Object(args) = args else { panic!("the arguments of a call to {tool} are a JSON object") };
        self.call_part(tool, args).await
    }

    pub fn services(&self) -> &Services {
        &self.dispatcher.services
    }

    /// The caller's vault `vault` (a call's `vault` argument, which the dispatcher fills in when
    /// the caller reaches one vault) with its ACL, as the tools see it: vault_not_found when the
    /// caller cannot reach it.
    pub async fn view(&self, vault: &str) -> Result<reading::View, ToolError> {
        reading::View::open(self, vault).await
    }

    /// Waits for a turn at `kind` of heavy work, held until the guard drops: for a tool whose
    /// weight shows only once it runs (a read of a note larger than a page). None when the call
    /// already holds one of that kind.
    pub async fn heavy_turn(&self, kind: otc_catalog::Heavy) -> Result<Option<HeldTurn>, ToolError> {
        take_turn(self.services(), self.caller, kind).await
    }

    /// A transaction in the caller's tenant; a failure to open one is answered as the store
    /// answers it (`service_unavailable` while Postgres is away).
    pub async fn begin(&self) -> Result<otc_store::TenantTx, ToolError> {
        Ok(self.services().store.begin(self.caller.tenant_id).await?)
    }

    pub fn settings(&self) -> &FacadeSettings {
        &self.dispatcher.settings
    }

    pub fn registry(&self) -> &Registry {
        &self.dispatcher.registry
    }

    /// The response format a call gets when it names none.
    pub fn default_format(&self) -> ResponseFormat {
        self.dispatcher.default_format
    }
}

/// The registry with its handlers and the deployment's facade settings.
pub struct Dispatcher {
    registry: Registry,
    /// The `/mcp/compat/obsidian` surface's own tools (each routes to catalogue tools).
    compat: Registry,
    handlers: HashMap<&'static str, Handler>,
    settings: FacadeSettings,
    default_format: ResponseFormat,
    max_response_bytes: u64,
    /// The server instructions on the `/mcp/compat/obsidian` surface.
    compat_instructions: &'static str,
    pub services: Services,
}

/// The tools a dispatcher serves: the catalogue, and the compat surface's own.
pub struct Toolset {
    pub catalogue: Vec<ToolEntry>,
    /// The `/mcp/compat/obsidian` surface's tools (each routes to catalogue tools).
    pub compat: Vec<ToolEntry>,
    /// The server instructions on that surface.
    pub compat_instructions: &'static str,
}

/// The facade settings a configuration describes.
pub fn facade_settings(config: &Config) -> FacadeSettings {
    use otc_catalog::facade::{FacadeMode, Subset};
    use otc_config::{AdvertiseSetting, FacadeModeSetting, ProfileSetting};
    let mode = |m: FacadeModeSetting| match m {
        FacadeModeSetting::Triad => FacadeMode::Triad,
        FacadeModeSetting::Domain => FacadeMode::Domain,
        FacadeModeSetting::Flat => FacadeMode::Flat,
        FacadeModeSetting::Auto => FacadeMode::Auto,
    };
    let f = &config.tool_facade;
    let v = &config.tool_visibility;
    FacadeSettings {
        mode: mode(f.mode),
        triad_hot_path: f.triad_hot_path,
        profile: match f.profile {
            ProfileSetting::Full => otc_catalog::Profile::Full,
            ProfileSetting::Core => otc_catalog::Profile::Core,
        },
        advertise: match f.advertise {
            AdvertiseSetting::All => None,
            AdvertiseSetting::Essentials => Some(Subset::Essentials),
            AdvertiseSetting::Core => Some(Subset::Core),
            AdvertiseSetting::Full => Some(Subset::Full),
        },
        auto_clients: f.auto_clients.iter().map(|(k, m)| (k.clone(), mode(*m))).collect(),
        explain_auto_mode: f.explain_auto_mode,
        rules: otc_catalog::VisibilityRules {
            hidden: v.hidden.clone(),
            disabled: v.disabled.clone(),
            hidden_tags: v.hidden_tags.clone(),
            disabled_tags: v.disabled_tags.clone(),
            allowed: v.allowed.clone(),
            require_read_only: v.require_read_only,
            show_live_app_tools: v.show_live_app_tools,
        },
        max_result_size_chars: config.governor.max_response_bytes.min(500_000),
        list_output_schemas: v.list_output_schemas,
    }
}

impl Dispatcher {
    /// Registers `toolset` (normally the tools crate's) under `config`'s settings.
    pub fn new(services: Services, toolset: Toolset) -> Result<Self, RegistrationError> {
        let mut handlers = HashMap::new();
        let mut declare = |entries: Vec<ToolEntry>| {
            let mut declarations = Vec::new();
            for entry in entries {
                handlers.insert(entry.declaration.spec.name, entry.handler);
                declarations.push(entry.declaration);
            }
            declarations
        };
        let registry = Registry::new(declare(toolset.catalogue))?;
        let compat = Registry::new(declare(toolset.compat))?;
        if let Some(clash) = compat.iter().find(|t| registry.get(t.name()).is_some()) {
            return Err(RegistrationError { tool: clash.name().into(), problem: "registered twice".into() });
        }
        let config = services.config.clone();
        Ok(Self {
            registry,
            compat,
            handlers,
            settings: facade_settings(&config),
            default_format: match config.tools.defaults.response_format {
                otc_config::ResponseFormatSetting::Concise => ResponseFormat::Concise,
                otc_config::ResponseFormatSetting::Detailed => ResponseFormat::Detailed,
            },
            max_response_bytes: config.governor.max_response_bytes,
            compat_instructions: toolset.compat_instructions,
            services,
        })
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The tools a surface offers: the catalogue, or a compat surface's own.
    pub fn registry_for(&self, surface: Surface) -> &Registry {
        match surface {
            Surface::CompatObsidian => &self.compat,
            _ => &self.registry,
        }
    }

    pub fn settings(&self) -> &FacadeSettings {
        &self.settings
    }

    /// The listing a surface gives this client, logging the `auto` resolution when asked to.
    pub fn listing(&self, surface: Surface, client_name: Option<&str>) -> Listing {
        let (listing, explanation) = facade::resolve(&self.settings, surface, client_name);
        if let Some(explanation) = explanation
            && self.settings.explain_auto_mode
        {
            let line = serde_json::to_string(&explanation).unwrap_or_default();
            eprintln!("obsidian-tc toolFacade.explain {line}");
        }
        listing
    }

    /// What `tools/list` returns for this caller on this surface.
    pub fn list_tools(&self, caller: &Caller, surface: Surface, client_name: Option<&str>) -> Vec<AdvertisedTool> {
        let listing = self.listing(surface, client_name);
        facade::advertise(self.registry_for(surface), &self.settings, listing, Some(&caller.scopes))
    }

    /// The server instructions for this caller on this surface.
    pub fn instructions(&self, caller: &Caller, surface: Surface, client_name: Option<&str>) -> String {
        if surface == Surface::CompatObsidian {
            return self.compat_instructions.to_string();
        }
        let listing = self.listing(surface, client_name);
        let visible = facade::listed(&self.registry, &self.settings, Some(&caller.scopes));
        facade::instructions(listing, &visible, self.profile_hidden(caller).len())
    }

    /// Tools the profile hides that this caller could otherwise call.
    pub fn profile_hidden(&self, caller: &Caller) -> Vec<&Registered> {
        self.registry
            .iter()
            .filter(|t| !facade::is_facade_tool(t.name()))
            .filter(|t| {
                verdict(t, self.settings.profile, &self.settings.rules, None).reason == Reason::DisabledByProfile
                    && t.spec.scopes.iter().all(|s| caller.scopes.iter().any(|g| g.grants(s)))
            })
            .collect()
    }

    /// Finds a tool the caller may reach by name: disabled tools do not exist; tools the
    /// profile omits are named as hidden; tools the caller lacks scopes for are refused.
    pub fn resolve<'r>(&'r self, caller: &Caller, name: &str) -> Result<&'r Registered, ToolError> {
        self.resolve_on(Surface::Default, caller, name)
    }

    /// [`Dispatcher::resolve`] among the tools of `surface`.
    fn resolve_on<'r>(&'r self, surface: Surface, caller: &Caller, name: &str) -> Result<&'r Registered, ToolError> {
        let not_found = || unknown_tool(name);
        let tool = self.registry_for(surface).get(name).ok_or_else(not_found)?;
        let verdict = verdict(tool, self.settings.profile, &self.settings.rules, Some(&caller.scopes));
        match (verdict.visibility, verdict.reason) {
            (_, Reason::DisabledByProfile) => return Err(capability_hidden(name)),
            (Visibility::Disabled, _) => return Err(not_found()),
            _ => {}
        }
        // The scopes are checked whatever the listing verdict: a hidden tool is not advertised,
        // yet called by name it needs the same scopes (the verdict stops at "hidden").
        let missing: Vec<String> = tool
            .spec
            .scopes
            .iter()
            .filter(|s| !caller.scopes.iter().any(|held| held.grants(s)))
            .map(|s| s.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(ToolError::with_message(
                ErrorCode::Forbidden,
                format!("{name} needs scope(s) {}", missing.join(", ")),
            )
            .detail("required", missing)
            .detail("tool", name.to_string()));
        }
        Ok(tool)
    }

    /// Whether `caller` can call the tool `name` here: registered, not disabled (by a rule or
    /// the profile) and within the caller's scopes. A hidden tool is reachable: it stays
    /// callable by name.
    pub fn reachable(&self, caller: &Caller, name: &str) -> bool {
        self.resolve(caller, name).is_ok()
    }

    /// `err` with the hint the caller can follow: the first of its alternatives whose tools
    /// the caller can reach.
    pub fn hinted(&self, caller: &Caller, err: ToolError) -> ToolError {
        self.hinted_on(Surface::Default, caller, err)
    }

    /// [`Dispatcher::hinted`] among the tools of `surface`.
    fn hinted_on(&self, surface: Surface, caller: &Caller, mut err: ToolError) -> ToolError {
        err.resolve_hint(|tool| self.resolve_on(surface, caller, tool).is_ok());
        err
    }

    /// Runs one call through the pipeline. `args` absent means `{}`. A failure's hint names only
    /// tools the caller can reach.
    pub async fn call(
        &self,
        caller: &Caller,
        surface: Surface,
        client_name: Option<&str>,
        name: &str,
        args: Option<Map<String, Value>>,
        hooks: Hooks<'_>,
    ) -> Result<Value, ToolError> {
        let started = Instant::now();
        let trail = &self.services.audit;
        let named = if trail.is_on() { args.as_ref().map(audit_writer::named) } else { None };
        // A metric label is a registered name, never whatever a caller sent.
        let (label, class) = match (self.registry_for(surface).get(name), Domain::parse(name)) {
            (Some(tool), _) => (tool.name(), tool.spec.scope_class.as_str()),
            (None, Some(domain)) => (domain.as_str(), "facade"),
            (None, None) => ("unknown", "none"),
        };
        let vault = args.as_ref().and_then(|a| a.get("vault")).and_then(|v| v.as_str()).unwrap_or("");
        let span = tracing::info_span!(
            "tool_call",
            otel.name = label,
            tool = label,
            tenant = %caller.tenant_id,
            vault = &vault[..vault.floor_char_boundary(128)],
            outcome = tracing::field::Empty,
        );
        // A call another call makes (a domain meta-tool's action, call_capability's target) is
        // a span of its own but counts once, as the call the client made.
        let outermost = CALL_NESTED.try_with(|_| ()).is_err();
        // Work memory keeps one episode per client call: of the call itself, or, when it only
        // wraps another (a facade tool, a domain meta-tool), of the first call it makes; the
        // calls that one makes are parts of it.
        let wrapper = self.wraps(surface, client_name, name);
        let claims = !wrapper
            && (outermost
                || CALL_NESTED
                    .try_with(|state| !std::mem::replace(&mut state.borrow_mut().claimed, true))
                    .unwrap_or(false));
        let summary = (claims && trail.is_on() && episodes::records(name)).then(|| {
            args.as_ref().map(|a| episodes::summary(name, a)).unwrap_or_else(|| episodes::summary(name, &Map::new()))
        });
        // What a rerun of the session replays: the arguments as sent (the answer joins them below).
        let replay_args = summary.as_ref().map(|_| args.clone().unwrap_or_default());
        let metrics = otc_telemetry::metrics();
        let in_flight = outermost.then(|| InFlight::start(metrics));
        let run = async {
            match args.as_ref().and_then(nul_field) {
                Some(field) => {
                    Err(ToolError::with_message(ErrorCode::InvalidInput, "arguments may not contain NUL characters")
                        .echo("field", &field))
                }
                None => self.call_unhinted(caller, surface, client_name, name, args, hooks).await,
            }
        }
        .instrument(span.clone());
        let take =
            || CALL_NESTED.try_with(|state| std::mem::take(&mut state.borrow_mut().retrieved)).unwrap_or_default();
        let (outcome, retrieved, counted) = if outermost {
            let via = if wrapper { label } else { "none" };
            let state = CallState { retrieved: Vec::new(), claimed: claims, via, counted: false, turns: Vec::new() };
            CALL_NESTED
                .scope(std::cell::RefCell::new(state), async {
                    let outcome = run.await;
                    (outcome, take(), CALL_NESTED.with(|state| state.borrow().counted))
                })
                .await
        } else {
            let outcome = run.await;
            (outcome, if claims { take() } else { Vec::new() }, false)
        };
        drop(in_flight);
        let outcome = outcome.map_err(|err| self.hinted_on(surface, caller, err.bounded()));
        let code = outcome.as_ref().map_or_else(|e| e.code.as_str(), |_| "ok");
        span.record("outcome", code);
        // Counted once per client call, as the tool that ran (the call that is the episode),
        // under the facade it came through; a wrapper that ran nothing counts as itself.
        let seconds = started.elapsed().as_secs_f64();
        if claims && !outermost {
            let via = CALL_NESTED.try_with(|state| {
                let mut state = state.borrow_mut();
                state.counted = true;
                state.via
            });
            metrics.tool_call(label, via.unwrap_or("none"), code, seconds);
        } else if outermost && (claims || !counted) {
            metrics.tool_call(label, if wrapper { label } else { "none" }, code, seconds);
        }
        let episode = summary.map(|summary| {
            let mut facts = episodes::facts(name, summary, retrieved);
            let answer = outcome.as_ref().map_err(|_| ());
            facts.replay = replay_args.as_ref().and_then(|args| replay::facts(args, answer));
            facts
        });
        let (vault, paths) = named.unwrap_or_default();
        let call = audit_writer::Call {
            surface: audit_writer::surface_label(surface),
            class,
            action: name,
            client: client_name,
            vault,
            paths,
            outcome: code,
            episode,
        };
        trail.record_call(caller, call, started);
        outcome
    }

    /// Whether calling `name` on `surface` only wraps another call: a facade tool, or a domain
    /// meta-tool (as [`Dispatcher::call_unhinted`] routes them).
    fn wraps(&self, surface: Surface, client_name: Option<&str>, name: &str) -> bool {
        facade::is_facade_tool(name)
            || (Domain::parse(name).is_some()
                && surface != Surface::CompatObsidian
                && (self.registry.get(name).is_none() || self.listing(surface, client_name) == Listing::Domain))
    }

    async fn call_unhinted(
        &self,
        caller: &Caller,
        surface: Surface,
        client_name: Option<&str>,
        name: &str,
        args: Option<Map<String, Value>>,
        hooks: Hooks<'_>,
    ) -> Result<Value, ToolError> {
        let args = args.unwrap_or_default();
        if let Some(domain) = Domain::parse(name)
            && surface != Surface::CompatObsidian
            && (self.registry.get(name).is_none() || self.listing(surface, client_name) == Listing::Domain)
        {
            return Box::pin(self.call_domain(caller, surface, client_name, domain, args, hooks)).await;
        }
        let tool = self.resolve_on(surface, caller, name)?;
        let mut args = args;
        if tool.requires_vault() && !args.contains_key("vault") {
            let vault = self.only_vault(caller, tool.name()).await?;
            args.insert("vault".into(), Value::String(vault));
        }
        let mut args = Value::Object(args);
        tool.validate_input(&args)?;
        // A tool that writes waits on no hold: refused before it runs (a dry run writes nothing).
        if !otc_catalog::tags::is_read_only(&tool.spec) && args.get("dry_run") != Some(&Value::Bool(true)) {
            let vault = args.get("vault").and_then(Value::as_str);
            self.services.read_only.check_write(&self.services.store, caller.tenant_id, vault).await?;
        }
        // The key is not an argument of the call: the handler and the confirmation never see it.
        let key = match args.as_object_mut().and_then(|a| a.remove(idempotency::ARGUMENT)) {
            Some(Value::String(key)) if tool.spec.scope_class != ScopeClass::Read => Some(key),
            _ => None,
        };
        // A keyed call's commits are counted, so that a failure before the first frees the key.
        let keyed = match &key {
            None => None,
            Some(key) => {
                let fingerprint = writing::args_hash(tool.name(), &args);
                let (services, effects) = (&self.services, otc_store::CallEffects::new());
                match idempotency::claim(&services.kv, &services.store, caller, key, &fingerprint, &effects).await? {
                    idempotency::Claim::Replay(output) => return self.governed(tool, output),
                    idempotency::Claim::Run(guard) => Some((guard, effects)),
                }
            }
        };
        // On the heap: a call nests calls (facades, bundles, the compat surface), and each level
        // moving this future on the stack would add up to more than a thread's stack.
        let call = Box::pin(async {
            // call_capability only routes: the call it makes spends from its own class. A compat
            // tool spends once, for the catalogue calls it makes.
            if tool.name() != "call_capability" && !hooks.prepaid {
                self.services.limiter.spend(caller, tool.spec.scope_class.as_str()).await?;
            }
            // Heavy work waits for the caller's turn, unless the client call already holds one
            // of this kind (a facade or a bundle running the tool).
            let _turn = match tool.spec.heavy {
                Some(kind) => take_turn(&self.services, caller, kind).await?,
                None => None,
            };
            let handler = self.handlers[tool.name()];
            let ctx = CallContext {
                tool: tool.spec.name,
                caller,
                surface,
                client_name,
                dispatcher: self,
                progress: hooks.progress,
                ask: hooks.ask,
                task: hooks.task,
                sample: hooks.sample,
                args: &args,
            };
            // A handler that panics answers internal_error (and its key, if any, indeterminate)
            // rather than leaving the caller without an answer. One past its memory budget that
            // wrote nothing answers the budget's refusal, whatever it made of it.
            let account = memory::CallMemory::new(self.services.config.tools.call_memory_bytes);
            let metered = memory::metered(account.clone(), handler(&ctx));
            let outcome = std::panic::AssertUnwindSafe(metered).catch_unwind().await;
            // A nested call's commit is its caller's too: past it, the caller's answer stands.
            if memory::has_committed(&account) {
                memory::committed();
            }
            match outcome {
                Ok(_) if account.exceeded() && !memory::has_committed(&account) => Err(account.refusal()),
                Ok(outcome) => outcome,
                Err(panic) => {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!(tool = tool.name(), panic = %what, "tool handler panicked");
                    Err(ToolError::new(ErrorCode::InternalError))
                }
            }
        });
        let ran = match &keyed {
            Some((_, effects)) => effects.track(call).await,
            None => call.await,
        };
        if let Some((guard, _)) = keyed {
            guard.finish(&ran).await;
        }
        let output = ran?;
        if cfg!(debug_assertions) {
            for issue in tool.output_issues(&output) {
                tracing::error!(tool = tool.name(), path = %issue.path, message = %issue.message, "output does not match its schema");
            }
        }
        self.governed(tool, output)
    }

    /// `output` if it fits the response budget, else overflow (a replayed result too).
    fn governed(&self, tool: &Registered, output: Value) -> Result<Value, ToolError> {
        let size = serde_json::to_vec(&output).map(|v| v.len() as u64).unwrap_or(u64::MAX);
        if size > self.max_response_bytes {
            return Err(ToolError::new(ErrorCode::Overflow)
                .detail("bytes", size)
                .detail("limit", self.max_response_bytes)
                .detail("tool", tool.name()));
        }
        Ok(output)
    }

    /// The name of the one vault `caller` can reach, for a call that left `vault` out; with
    /// none, vault_not_found; with several, a validation error that lists them.
    async fn only_vault(&self, caller: &Caller, tool: &str) -> Result<String, ToolError> {
        let mut tx = self.services.store.begin(caller.tenant_id).await?;
        let vaults = match caller.vault_id {
            Some(bound) => tx.vault(bound).await?.into_iter().collect(),
            None => tx.list_vaults().await?,
        };
        tx.commit().await?;
        match vaults.as_slice() {
            [] => Err(ToolError::with_message(ErrorCode::VaultNotFound, "this caller can reach no vault")),
            [only] => {
                // The handler finds the vault by this name next: in the cache, not in Postgres.
                self.services.remember_vault(caller.tenant_id, only.name.clone(), only, caller.token_generation);
                Ok(only.name.clone())
            }
            several => {
                const LISTED: usize = 20;
                let names: Vec<&str> = several.iter().take(LISTED).map(|v| v.name.as_str()).collect();
                Err(ToolError::with_message(
                    ErrorCode::ValidationError,
                    format!(
                        "{tool}: argument vault is required: this caller can reach {} vaults ({}{})",
                        several.len(),
                        names.join(", "),
                        if several.len() > LISTED { ", ..." } else { "" }
                    ),
                )
                .detail("field", "vault")
                .detail("vaults", names)
                .detail("count", several.len()))
            }
        }
    }

    /// A domain meta-tool call: `{action, args}` routed to the action through the same pipeline.
    async fn call_domain(
        &self,
        caller: &Caller,
        surface: Surface,
        client_name: Option<&str>,
        domain: Domain,
        mut envelope: Map<String, Value>,
        hooks: Hooks<'_>,
    ) -> Result<Value, ToolError> {
        let field_error = |field: &str, message: String| {
            ToolError::with_message(ErrorCode::ValidationError, format!("{domain}: {message}"))
                .detail("field", field.to_string())
        };
        if let Some(extra) = envelope.keys().find(|k| *k != "action" && *k != "args") {
            return Err(field_error(
                extra,
                format!("unknown key {extra:?}; pass {{\"action\": ..., \"args\": {{...}}}}"),
            ));
        }
        let action = match envelope.remove("action") {
            Some(Value::String(action)) => action,
            Some(_) => return Err(field_error("action", "action must be a string".into())),
            None => return Err(field_error("action", "action is required".into())),
        };
        let args = match envelope.remove("args") {
            None | Some(Value::Null) => None,
            Some(Value::Object(args)) => Some(args),
            Some(_) => return Err(field_error("args", "args must be an object".into())),
        };
        let tool = self.resolve(caller, &action)?;
        if tool.spec.domain != domain || facade::is_facade_tool(&action) {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("{domain}: {action:?} is not an action of this domain (it belongs to {})", tool.spec.domain),
            )
            .detail("field", "action"));
        }
        self.call(caller, surface, client_name, &action, args, hooks).await
    }
}

/// The first argument (as a JSON pointer) whose name or text holds a NUL character: no name,
/// path or text in a vault can, and Postgres refuses them in text.
fn nul_field(args: &Map<String, Value>) -> Option<String> {
    // The path to the first NUL, innermost segment first; built only on a hit (this runs on
    // every call).
    fn in_map(map: &Map<String, Value>) -> Option<Vec<String>> {
        map.iter().find_map(|(k, v)| {
            let mut path = if k.contains('\0') { Vec::new() } else { in_value(v)? };
            path.push(k.replace('\0', "\\0"));
            Some(path)
        })
    }
    fn in_value(value: &Value) -> Option<Vec<String>> {
        match value {
            Value::String(text) => text.contains('\0').then(Vec::new),
            Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
                let mut path = in_value(v)?;
                path.push(i.to_string());
                Some(path)
            }),
            Value::Object(map) => in_map(map),
            _ => None,
        }
    }
    let path = in_map(args)?;
    Some(path.iter().rev().map(|segment| format!("/{segment}")).collect())
}

/// The hints a call to an unknown tool gets.
pub const UNKNOWN_TOOL_HINTS: &[Hint] = &[
    Hint {
        text: "No tool has that name. find_capability finds tools by what you want to do, and describe_capability shows one's arguments.",
        tools: &["find_capability", "describe_capability"],
    },
    Hint {
        text: "No tool has that name. find_capability finds tools by what you want to do.",
        tools: &["find_capability"],
    },
    Hint { text: "No tool has that name; call one of the tools listed.", tools: &[] },
];

/// Every hint set a throw site here gives instead of its code's own (the catalogue guard reads
/// them).
pub const OWN_HINTS: &[&[Hint]] = &[UNKNOWN_TOOL_HINTS];

/// The answer for a tool name that names nothing the caller can call.
pub fn unknown_tool(name: &str) -> ToolError {
    ToolError::with_message(ErrorCode::NotFound, format!("no tool named {name:?}"))
        .detail("tool", name.to_string())
        .with_hints(UNKNOWN_TOOL_HINTS)
}

/// The answer for a tool the `core` profile omits: it exists, it is hidden, and this is the
/// setting that hides it. (The catalogue's `forbidden` code, with the reason in details.)
pub fn capability_hidden(name: &str) -> ToolError {
    ToolError::with_message(
        ErrorCode::Forbidden,
        format!("capability_hidden: {name} is hidden by tool_facade.profile = \"core\"; set tool_facade.profile = \"full\" to enable it"),
    )
    .detail("reason", "capability_hidden")
    .detail("visibility", "disabled_by_profile")
    .detail("setting", "tool_facade.profile")
    .detail("tool", name.to_string())
}

/// The caller's vault named `name` (or, when no vault has that name, whose id it is, as
/// list_vaults shows it): vault_not_found when the tenant has none such or the caller's token
/// is bound to another vault (the two answer alike).
pub async fn caller_vault(ctx: &CallContext<'_>, name: &str) -> Result<otc_store::Vault, ToolError> {
    let services = ctx.services();
    let not_found = || ToolError::new(ErrorCode::VaultNotFound).echo("vault", name);
    // No vault name is longer (a UUID is 36).
    if name.len() > otc_store::MAX_VAULT_NAME_BYTES {
        return Err(not_found());
    }
    let key = (ctx.caller.tenant_id, name.to_string());
    let generation = ctx.caller.token_generation;
    let cached = services.vault_cache.get_if(&key, |(_, at, under)| {
        at.elapsed() < VAULT_CACHE_TTL && (generation.is_none() || *under == generation)
    });
    let found = match cached {
        Some((vault, _, _)) => Some(vault),
        None => {
            let mut tx = ctx.begin().await?;
            let found = tx.vault_by_name_or_id(name).await?;
            tx.commit().await?;
            if let Some(vault) = &found {
                services.remember_vault(key.0, key.1, vault, generation);
            }
            found
        }
    };
    match found {
        Some(vault) if ctx.caller.vault_id.is_none_or(|bound| bound == vault.id) => Ok(vault),
        _ => Err(not_found()),
    }
}

/// What the calls of one client call share, for work memory.
struct CallState {
    /// The chunks retrieved so far (taken by the call that is the episode).
    retrieved: Vec<otc_store::RetrievalFact>,
    /// Whether a call has become the episode already.
    claimed: bool,
    /// The facade or meta-tool the client called, which the call that ran is counted under
    /// in the metrics (`none` when the client called the tool by name).
    via: &'static str,
    /// Whether the call that ran has been counted.
    counted: bool,
    /// The kinds of heavy work the client call holds a turn at ([`fair_share`]): a call it
    /// makes of the same kind runs in that turn rather than waiting for a second place.
    turns: Vec<otc_catalog::Heavy>,
}

/// A turn at one kind of heavy work, held for the rest of a call (see [`fair_share`]) and
/// marked in the client call's state while it lasts.
pub struct HeldTurn {
    kind: otc_catalog::Heavy,
    _turn: fair_share::Turn,
}

/// Waits for `caller`'s turn at `kind` of heavy work, unless the client call already holds one
/// of that kind (a facade or a bundle running the tool): None then.
async fn take_turn(
    services: &Services,
    caller: &Caller,
    kind: otc_catalog::Heavy,
) -> Result<Option<HeldTurn>, ToolError> {
    let (holds_kind, holds_any) = CALL_NESTED
        .try_with(|s| {
            let turns = &s.borrow().turns;
            (turns.contains(&kind), !turns.is_empty())
        })
        .unwrap_or((false, false));
    if holds_kind {
        return Ok(None);
    }
    // A call that already holds a gateway place (a heavy tool calling another) uses that one:
    // waiting for a second could wait on itself.
    let turn = services.fair_share.turn(caller, kind, !holds_any).await?;
    let _ = CALL_NESTED.try_with(|s| s.borrow_mut().turns.push(kind));
    Ok(Some(HeldTurn { kind, _turn: turn }))
}

impl Drop for HeldTurn {
    fn drop(&mut self) {
        let _ = CALL_NESTED.try_with(|state| {
            let turns = &mut state.borrow_mut().turns;
            if let Some(at) = turns.iter().rposition(|k| *k == self.kind) {
                turns.remove(at);
            }
        });
    }
}

tokio::task_local! {
    /// Set while a client's call runs: the calls it makes through [`Dispatcher::call`] are
    /// nested ones.
    static CALL_NESTED: std::cell::RefCell<CallState>;
}

/// Like [`note_retrieved`], in place of what the running call noted so far (a tool whose parts
/// retrieved more than it answers).
pub fn replace_retrieved(vault: &str, chunks: impl IntoIterator<Item = (String, i32, Option<f64>)>) {
    let _ = CALL_NESTED.try_with(|state| state.borrow_mut().retrieved.clear());
    note_retrieved(vault, chunks);
}

/// Notes that the running call returned these chunks of `vault` (path, chunk ordinal, score),
/// best first: what work memory records as the call's retrievals (nothing outside a call).
pub fn note_retrieved(vault: &str, chunks: impl IntoIterator<Item = (String, i32, Option<f64>)>) {
    let _ = CALL_NESTED.try_with(|state| {
        let got = &mut state.borrow_mut().retrieved;
        for (path, ord, score) in chunks {
            if got.len() >= episodes::MAX_RETRIEVALS {
                break;
            }
            let rank = got.len() as i32 + 1;
            got.push(otc_store::RetrievalFact { vault: vault.to_string(), path, ord, rank, score });
        }
    });
}

/// One call counted in `otc_tool_calls_in_flight` until dropped (a call the client abandoned
/// included).
struct InFlight(&'static otc_telemetry::metrics::Metrics);

impl InFlight {
    fn start(metrics: &'static otc_telemetry::metrics::Metrics) -> Self {
        metrics.tool_in_flight.add(1, &[]);
        Self(metrics)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.tool_in_flight.add(-1, &[]);
    }
}

#[cfg(test)]
mod tests {
    use super::nul_field;

    #[test]
    fn a_nul_is_found_at_any_depth_and_named_by_its_path() {
        let args = |v: serde_json::Value| v.as_object().unwrap().clone();
        assert_eq!(nul_field(&args(serde_json::json!({"a": {"b": ["x", 1, {"c": "ok"}]}}))), None);
        assert_eq!(nul_field(&args(serde_json::json!({"a": {"b": ["x", "y\u{0}"]}}))).as_deref(), Some("/a/b/1"));
        assert_eq!(nul_field(&args(serde_json::json!({"a": {"k\u{0}": 1}}))).as_deref(), Some("/a/k\\0"));
        assert_eq!(nul_field(&args(serde_json::json!({"p": "\u{0}"}))).as_deref(), Some("/p"));
    }
}
