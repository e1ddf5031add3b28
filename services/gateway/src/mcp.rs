//! MCP over rmcp: the only place that knows JSON-RPC. `tools/list` and `tools/call`, and the
//! note resources (`resources/list`, `resources/read`), are served from the dispatcher for each
//! caller; the wire types are built here and nowhere else.

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

use otc_catalog::facade::{AdvertisedTool, Surface};
use otc_errors::ToolError;
use otc_kernel::resources::{NoteResource, ResourceText};
use otc_kernel::{Ask, Asker, Caller, Dispatcher, Hooks};
use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, DiscoverResult, GetTaskParams,
    GetTaskResult, Icon, Implementation, InitializeRequestParams, InitializeResult, InputRequest, InputRequiredResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate, ServerCapabilities, ServerConfig, Tool, ToolAnnotations, UpdateTaskParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::native_tasks;
use crate::request_state::{self, Refusal};

/// How long a tool waits for the client's model (sampling) before it goes on without it.
const SAMPLE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// One MCP endpoint: a surface of the catalogue for the caller the transport authenticated.
#[derive(Clone)]
pub struct McpServer {
    dispatcher: Arc<Dispatcher>,
    surface: Surface,
    /// The caller of a stdio session (fixed for its lifetime); HTTP callers come per request.
    fixed_caller: Option<Arc<Caller>>,
    /// The gateway's shutdown, which ends listen streams (rmcp's own token would also cut
    /// requests still draining, so it is not used).
    shutdown: Shutdown,
}

impl McpServer {
    /// How a confirmation is asked of the person at the client: MCP elicitation (a form with one
    /// yes/no field), only on a connection that keeps its client (stdio; streamable HTTP here is
    /// stateless, so it answers with the token route instead) and whose client declared form
    /// elicitation.
    fn asker(&self, ctx: &RequestContext<RoleServer>) -> Option<Asker> {
        use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
        if self.fixed_caller.as_deref().is_none_or(|caller| !self.confirms_in_client(caller))
            || !ctx.peer.supported_elicitation_modes().contains(&rmcp::service::ElicitationMode::Form)
        {
            return None;
        }
        let peer = ctx.peer.clone();
        Some(Arc::new(move |ask: otc_kernel::Ask| {
            let peer = peer.clone();
            let message = ask.message;
            Box::pin(async move {
                let schema = ElicitationSchema::builder()
                    .required_bool_with("confirm", |b| b.description("Yes to let the call proceed"))
                    .build()
                    .ok()?;
                let params =
                    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
                match peer.create_elicitation(params).await {
                    Ok(answer) => Some(
                        answer.action == ElicitationAction::Accept
                            && answer.content.as_ref().and_then(|c| c.get("confirm")).and_then(|v| v.as_bool())
                                == Some(true),
                    ),
                    Err(e) => {
                        tracing::warn!(error = %e, "could not ask the client to confirm; answering elicit_required");
                        None
                    }
                }
            }) as std::pin::Pin<Box<dyn std::future::Future<Output = Option<bool>> + Send>>
        }))
    }

    /// How a tool asks the client's model (MCP sampling): only on a connection that keeps its
    /// client (stdio; streamable HTTP here is stateless) and whose client declared sampling.
    /// Sampling leaves the protocol with the 2026-07-28 revision (SEP-2577), where clients no
    /// longer declare it; until then a client that does is asked.
    #[allow(deprecated)]
    fn sampler(&self, ctx: &RequestContext<RoleServer>) -> Option<otc_kernel::Sampler> {
        use rmcp::model::{CreateMessageRequestParams, Role, SamplingMessage, SamplingMessageContentBlock};
        let declared = ctx.peer.peer_info().is_some_and(|info| info.capabilities.sampling.is_some());
        if self.fixed_caller.is_none() || !declared {
            return None;
        }
        let peer = ctx.peer.clone();
        Some(Arc::new(move |sample: otc_kernel::Sample| {
            let peer = peer.clone();
            Box::pin(async move {
                let message = SamplingMessage::new(Role::User, SamplingMessageContentBlock::text(sample.prompt));
                let mut params = CreateMessageRequestParams::new(vec![message], sample.max_tokens);
                params.system_prompt = Some(sample.system);
                let asked = peer.create_message(params);
                match tokio::time::timeout(SAMPLE_WAIT, asked).await {
                    Ok(Ok(answer)) => answer.message.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()),
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "the client's model did not answer; the tool goes on without it");
                        None
                    }
                    Err(_) => {
                        tracing::warn!("the client's model took too long; the tool goes on without it");
                        None
                    }
                }
            }) as std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + Send>>
        }))
    }

    /// A server acting for `caller` throughout (stdio, where the process is the session).
    pub fn with_caller(dispatcher: Arc<Dispatcher>, caller: Caller) -> Self {
        Self {
            dispatcher,
            surface: Surface::Default,
            fixed_caller: Some(Arc::new(caller)),
            shutdown: Shutdown::default(),
        }
    }

    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
        if let Some(caller) = &self.fixed_caller {
            return Ok(Caller::clone(caller));
        }
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("request reached MCP without an authenticated caller", None))
    }
}

impl McpServer {
    /// The client's self-reported name: a 2026-07-28 request carries it in its `_meta`; of the
    /// older era only a stdio session knows it (after initialize), as stateless HTTP requests
    /// carry none.
    fn client_name(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(info) = ctx.meta.client_info() {
            return Some(info.name);
        }
        self.fixed_caller.as_ref()?;
        ctx.peer.peer_info().map(|info| info.client_info.name.clone())
    }

    fn mcp_config(&self) -> &otc_config::McpConfig {
        &self.dispatcher.services.config.mcp
    }

    /// Whether `caller`'s client may have its own person confirm a destructive call: the
    /// deployment lets every client (`mcp.confirm_in_client`, off by default), or the tenant
    /// named the caller's OAuth client (`obsidian-tc tenant policy --confirm-in-client`).
    fn confirms_in_client(&self, caller: &Caller) -> bool {
        self.mcp_config().confirm_in_client || caller.confirm_in_client
    }

    /// A listing's cache hints for a 2026-07-28 client: private, since what a caller sees
    /// depends on its credentials. Older clients get the listing as before.
    fn cache_hints(&self, ctx: &RequestContext<RoleServer>) -> Option<(u64, CacheScope)> {
        modern(ctx).then(|| (self.mcp_config().list_ttl_ms, CacheScope::Private))
    }

    /// The confirmation round of a 2026-07-28 call: the person's answer when the call comes back
    /// with a valid request state and a `confirm` response (the state is spent only when the
    /// gate it names takes the answer), and whether the client can be asked at all (it declared
    /// elicitation, and `mcp.confirm_in_client` lets a client's person confirm). A state that
    /// fails its checks refuses the call before anything runs.
    async fn confirmation_round(
        &self,
        caller: &Caller,
        request: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Round, ErrorData> {
        let in_client = self.confirms_in_client(caller);
        let can_ask = in_client && ctx.meta.client_capabilities().is_some_and(|c| c.elicitation.is_some());
        let mut answer = None;
        if let (Some(state), true) = (&request.request_state, in_client) {
            // The answer is read first: a malformed one costs the state nothing.
            let verdict = match request.input_responses.as_ref().and_then(|r| r.get(CONFIRM_KEY)) {
                None => None,
                Some(response) => Some(confirmed(response).ok_or_else(|| {
                    ErrorData::invalid_params(
                        "inputResponses.confirm must be an elicitation result: {action, content: {confirm}}",
                        None,
                    )
                })?),
            };
            let hash = call_hash(request);
            let opened = request_state::open(&self.dispatcher.services, caller, &request.name, &hash, state)
                .await
                .map_err(|refusal| refused(refusal, &request.name))?;
            answer = verdict.map(|verdict| Answered { verdict, opened });
        }
        Ok(Round {
            answer,
            can_ask,
            asked: Arc::default(),
            refusal: Arc::default(),
            dispatcher: self.dispatcher.clone(),
            caller: caller.clone(),
        })
    }

    /// The input-required result that asks the person to confirm `ask` for the call `request`,
    /// with a fresh state; None when no state can be sealed (the call then answers
    /// elicit_required).
    async fn ask_again(
        &self,
        caller: &Caller,
        request: &CallToolRequestParams,
        ask: Ask,
    ) -> Option<InputRequiredResult> {
        let ttl = Duration::from_secs(self.mcp_config().request_state_ttl_secs);
        let gate = (ask.tool.as_str(), ask.args_hash.as_str());
        let (tool, hash) = (request.name.as_ref(), call_hash(request));
        let state = match request_state::issue(&self.dispatcher.services, caller, tool, &hash, gate, ttl).await {
            Ok(state) => state,
            Err(refusal) => {
                tracing::warn!(?refusal, "cannot seal a request state; answering elicit_required");
                return None;
            }
        };
        let request = serde_json::json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": ask.message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean", "description": "Yes to let the call proceed"}},
                    "required": ["confirm"],
                },
            },
        });
        let request: InputRequest = serde_json::from_value(request).expect("an elicitation request");
        Some(InputRequiredResult::new(Some([(CONFIRM_KEY.to_string(), request)].into()), Some(state)))
    }
}

/// The hash of a call's tool and arguments as sent, which its request state is bound to (the
/// retry's `inputResponses` and `requestState` sit beside the arguments, not in them).
fn call_hash(request: &CallToolRequestParams) -> String {
    let args = Value::Object(request.arguments.clone().unwrap_or_default());
    otc_kernel::writing::args_hash(&request.name, &args)
}

/// A refused request state as the JSON-RPC error the call answers: invalid params, or an
/// internal error when the state could not be checked at all.
fn refused(refusal: Refusal, tool: &str) -> ErrorData {
    tracing::info!(?refusal, tool, "request state refused");
    match refusal {
        Refusal::Unavailable => ErrorData::internal_error(refusal.message(), None),
        _ => ErrorData::invalid_params(refusal.message(), None),
    }
}

/// The key of the confirmation among a 2026-07-28 call's input requests and responses.
const CONFIRM_KEY: &str = "confirm";

/// A retry's answer and the state it came with, opened but not yet spent.
struct Answered {
    verdict: bool,
    opened: request_state::Opened,
}

/// What a 2026-07-28 call knows of its confirmation.
struct Round {
    /// The person's answer, from a retry with a valid state.
    answer: Option<Answered>,
    /// Whether the client can be asked (else the call answers elicit_required).
    can_ask: bool,
    /// What the call asked and had no answer for.
    asked: Arc<std::sync::Mutex<Option<Ask>>>,
    /// Why the answer was not taken after all (its state spent already, or Redis away).
    refusal: Arc<std::sync::Mutex<Option<Refusal>>>,
    dispatcher: Arc<Dispatcher>,
    caller: Caller,
}

impl Round {
    /// The asker the call's confirmation gates consult: the answer goes to the gate its state
    /// names, once, and is spent as it is taken; any other ask is recorded for a new round.
    fn asker(&self) -> Option<Asker> {
        if !self.can_ask && self.answer.is_none() {
            return None;
        }
        let answer = self.answer.as_ref().map(|a| (a.verdict, a.opened.clone()));
        let taken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (asked, refusal, can_ask) = (self.asked.clone(), self.refusal.clone(), self.can_ask);
        let (dispatcher, caller) = (self.dispatcher.clone(), self.caller.clone());
        Some(Arc::new(move |ask: Ask| {
            let answer = answer.clone().filter(|(_, o)| o.gate_tool == ask.tool && o.gate_hash == ask.args_hash);
            let (taken, asked, refusal) = (taken.clone(), asked.clone(), refusal.clone());
            let (dispatcher, caller) = (dispatcher.clone(), caller.clone());
            Box::pin(async move {
                if let Some((verdict, opened)) = answer
                    && !taken.swap(true, std::sync::atomic::Ordering::SeqCst)
                {
                    match request_state::spend(&dispatcher.services, &caller, &opened).await {
                        Ok(()) => return Some(verdict),
                        Err(why) => {
                            *refusal.lock().expect("refusal") = Some(why);
                            return None;
                        }
                    }
                }
                if can_ask {
                    *asked.lock().expect("asked") = Some(ask);
                }
                None
            }) as std::pin::Pin<Box<dyn std::future::Future<Output = Option<bool>> + Send>>
        }))
    }

    fn asked(&self) -> Option<Ask> {
        self.asked.lock().expect("asked").take()
    }

    fn refusal(&self) -> Option<Refusal> {
        *self.refusal.lock().expect("refusal")
    }
}

/// An elicitation result's verdict: accepted with `confirm: true`, or not; None when the value
/// is not an elicitation result.
fn confirmed(response: &Value) -> Option<bool> {
    let action = response.get("action")?.as_str()?;
    match action {
        "accept" => Some(response.get("content").and_then(|c| c.get("confirm")).and_then(Value::as_bool) == Some(true)),
        "decline" | "cancel" => Some(false),
        _ => None,
    }
}

/// Whether a request speaks the stateless era (2026-07-28): each declares its version in its
/// `_meta`, and that version has no initialize handshake.
pub fn modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.meta.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// Whether a 2026-07-28 request's client follows tasks itself (declared the extension).
fn native_tasks(ctx: &RequestContext<RoleServer>) -> bool {
    modern(ctx) && ctx.meta.client_capabilities().is_some_and(|c| c.supports_tasks())
}

/// The protocol versions every endpoint speaks: the handshake era up to 2025-11-25 and the
/// stateless 2026-07-28, decided per request.
pub const SUPPORTED_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// What every product endpoint can do: tools, note resources, and for 2026-07-28 clients tasks
/// and change notifications on a `subscriptions/listen` stream (a handshake-era client over
/// stateless HTTP has no stream to get them on, so `initialize` leaves them out).
pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities::builder()
        .enable_tools()
        .enable_resources()
        .enable_resources_subscribe()
        .enable_resources_list_changed()
        .enable_tasks()
        .build()
}

/// How often a listen stream looks for changes (a Redis read per reachable vault; the change
/// log only when a vault's generation moved).
const LISTEN_POLL: Duration = Duration::from_secs(1);
/// The most notes one listen stream may subscribe to.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 256;

/// How many listen streams one principal may hold open on one gateway.
pub const MAX_LISTENS_PER_PRINCIPAL: usize = 4;

/// The listen streams open in this process (every endpoint), by principal.
#[derive(Default)]
struct Listens(std::sync::Mutex<std::collections::HashMap<uuid::Uuid, usize>>);

static LISTENS: std::sync::LazyLock<Listens> = std::sync::LazyLock::new(Listens::default);

/// One open listen stream, given back when it ends.
struct ListenSlot<'a>(&'a Listens, uuid::Uuid);

impl Listens {
    fn take(&self, principal: uuid::Uuid) -> Option<ListenSlot<'_>> {
        let mut open = self.0.lock().expect("listens");
        let n = open.entry(principal).or_default();
        if *n >= MAX_LISTENS_PER_PRINCIPAL {
            return None;
        }
        *n += 1;
        Some(ListenSlot(self, principal))
    }
}

impl Drop for ListenSlot<'_> {
    fn drop(&mut self) {
        let mut open = self.0.0.lock().expect("listens");
        if let Some(n) = open.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.1);
            }
        }
    }
}

/// Runs one listen stream: the caller's note resources watched until the client goes away, the
/// gateway shuts down or `mcp.listen_max_secs` passes (the client listens again, so a revoked
/// token or a changed ACL takes hold within that time).
async fn run_listen(server: &McpServer, subscription: SubscriptionContext) -> Result<(), ErrorData> {
    use rmcp::service::SubscriptionSendError;
    let ctx = subscription.request_context();
    let caller = server.caller(ctx)?;
    let Some(_slot) = LISTENS.take(caller.principal_id) else {
        return Err(ErrorData::invalid_request(
            format!("at most {MAX_LISTENS_PER_PRINCIPAL} listen streams per caller are served at once; close one"),
            None,
        ));
    };
    let until = tokio::time::Instant::now() + Duration::from_secs(server.mcp_config().listen_max_secs);
    let accepted = subscription.accepted();
    let list = accepted.resources_list_changed == Some(true);
    let uris = accepted.resource_subscriptions.clone().unwrap_or_default();
    if !list && uris.is_empty() {
        tokio::select! {
            _ = subscription.cancelled() => {}
            _ = server.shutdown.0.cancelled() => {}
            _ = tokio::time::sleep_until(until) => {}
        }
        return Ok(());
    }
    let dispatcher = &server.dispatcher;
    let mut watch = dispatcher.watch_resources(&caller, &uris).await.map_err(|e| resource_error(&e))?;
    let sink = subscription.sink();
    // Only a stream that is gone ends the loop; a notification the filter does not carry is
    // skipped.
    let gone = |e: SubscriptionSendError| {
        matches!(e, SubscriptionSendError::SubscriptionClosed | SubscriptionSendError::Service(_))
    };
    loop {
        tokio::select! {
            _ = subscription.cancelled() => return Ok(()),
            _ = server.shutdown.0.cancelled() => return Ok(()),
            _ = tokio::time::sleep_until(until) => return Ok(()),
            _ = tokio::time::sleep(LISTEN_POLL) => {}
        }
        let changes = match dispatcher.resource_changes(&caller, &mut watch).await {
            Ok(changes) => changes,
            Err(e) => {
                tracing::warn!(code = %e.code, "a listen stream could not read changes; it ends");
                return Ok(());
            }
        };
        for uri in changes.updated {
            if let Err(e) = sink.notify_resource_updated(uri).await
                && gone(e)
            {
                return Ok(());
            }
        }
        if changes.list_changed
            && list
            && let Err(e) = sink.notify_resource_list_changed().await
            && gone(e)
        {
            return Ok(());
        }
    }
}

/// The wire form of an advertised tool.
pub fn to_wire(tool: AdvertisedTool) -> Tool {
    let mut hints = ToolAnnotations::new().open_world(tool.annotations.open_world);
    hints.read_only_hint = tool.annotations.read_only_hint();
    hints.destructive_hint = tool.annotations.destructive_hint();
    let mut wire =
        Tool::new(tool.name, tool.description, tool.input_schema).with_title(tool.title).with_annotations(hints);
    if let Some(output) = tool.output_schema {
        wire = wire.with_raw_output_schema(Arc::new(output));
    }
    if !tool.meta.is_empty() {
        let mut meta = MetaObject::new();
        for (k, v) in tool.meta {
            meta.insert(k, v);
        }
        wire = wire.with_meta(meta);
    }
    if !tool.icons.is_empty() {
        wire = wire.with_icons(tool.icons.iter().map(|i| Icon::new(i.src).with_mime_type(i.mime_type)).collect());
    }
    wire
}

/// A note resource as resources/list lists it.
pub fn resource_to_wire(note: NoteResource) -> Resource {
    Resource::new(note.uri, note.path)
        .with_title(note.title)
        .with_mime_type(otc_kernel::resources::MIME_TYPE)
        .with_size(note.size.max(0) as u64)
}

/// A note resource's content.
pub fn resource_text(read: ResourceText) -> ReadResourceResult {
    ReadResourceResult::new(vec![ResourceContents::text(read.text, read.uri).with_mime_type(read.mime_type)])
}

/// A failed resources/list or resources/read as a JSON-RPC error (resources have no error
/// result): resource-not-found for anything missing or refused, with the catalogue payload as
/// its data.
pub fn resource_error(err: &ToolError) -> ErrorData {
    use otc_errors::ErrorCode as C;
    let message = format!("{}: {}", err.code, err.message);
    let data = Some(err.to_payload());
    match err.code {
        C::NotFound | C::NoteNotFound | C::VaultNotFound => ErrorData::resource_not_found(message, data),
        C::Internal | C::InternalError => ErrorData::internal_error(message, data),
        C::InvalidInput | C::ValidationError => ErrorData::invalid_params(message, data),
        _ => ErrorData::invalid_request(message, data),
    }
}

/// What every obsidian-tc MCP endpoint says about itself: its name, version and protocol.
pub fn server_config(capabilities: ServerCapabilities) -> ServerConfig {
    ServerConfig::new(capabilities)
        .with_server_info(Implementation::new("obsidian-tc", env!("CARGO_PKG_VERSION")))
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        server_config(capabilities())
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(SUPPORTED_VERSIONS)
    }

    /// `server/discover` (2026-07-28): the versions, capabilities and identity, and the
    /// instructions for this caller and client, cacheable by this caller alone.
    async fn discover(&self, ctx: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        let caller = self.caller(&ctx)?;
        let name = self.client_name(&ctx);
        let mut result = DiscoverResult::from_server_info(SUPPORTED_VERSIONS.to_vec(), self.get_info())
            .with_ttl_ms(self.mcp_config().list_ttl_ms)
            .with_cache_scope(CacheScope::Private);
        result.instructions = Some(self.dispatcher.instructions(&caller, self.surface, name.as_deref()));
        Ok(result)
    }

    /// `subscriptions/listen` (2026-07-28): note resources only (the tool list does not change
    /// while a caller holds its credentials), at most [`MAX_RESOURCE_SUBSCRIPTIONS`] notes, each
    /// a note URI.
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.resources_list_changed = requested.resources_list_changed;
        accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            uris.iter()
                .filter(|uri| otc_kernel::citations::parse_note_uri(uri).is_some())
                .take(MAX_RESOURCE_SUBSCRIPTIONS)
                .cloned()
                .collect()
        });
        Some(accepted)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        run_listen(self, subscription).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = self.caller(&ctx)?;
        native_tasks::get(&self.dispatcher.services, &caller, &request.task_id).await
    }

    async fn update_task(&self, request: UpdateTaskParams, ctx: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let caller = self.caller(&ctx)?;
        native_tasks::update(&self.dispatcher.services, &caller, &request.task_id).await
    }

    async fn cancel_task(&self, request: CancelTaskParams, ctx: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let caller = self.caller(&ctx)?;
        native_tasks::cancel(&self.dispatcher.services, &caller, &request.task_id).await
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        ctx.peer.set_peer_info(request.clone());
        let mut info = self.negotiate_initialize(&request)?;
        if let Some(resources) = info.capabilities.resources.as_mut() {
            (resources.subscribe, resources.list_changed) = (None, None);
        }
        let caller = self.caller(&ctx)?;
        info.instructions =
            Some(self.dispatcher.instructions(&caller, self.surface, Some(request.client_info.name.as_str())));
        Ok(info)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = self.caller(&ctx)?;
        let name = self.client_name(&ctx);
        let tools = self.dispatcher.list_tools(&caller, self.surface, name.as_deref());
        let mut result = ListToolsResult::with_all_items(tools.into_iter().map(to_wire).collect());
        if let Some((ttl, scope)) = self.cache_hints(&ctx) {
            result = result.with_ttl_ms(ttl).with_cache_scope(scope);
        }
        Ok(result)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = self.caller(&ctx)?;
        let cursor = request.and_then(|r| r.cursor);
        let page = self.dispatcher.list_resources(&caller, cursor.as_deref()).await.map_err(|e| resource_error(&e))?;
        let mut items: Vec<Resource> = page.resources.into_iter().map(resource_to_wire).collect();
        // The catalogue comes after the notes, on the last page.
        if page.next_cursor.is_none() {
            items.push(
                Resource::new(otc_kernel::resources::CATALOG_URI, "catalog")
                    .with_title("Tool catalogue")
                    .with_description("Every tool you may call, with its domain, tags, scopes and description.")
                    .with_mime_type(otc_kernel::resources::CATALOG_MIME_TYPE),
            );
        }
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = page.next_cursor;
        if let Some((ttl, scope)) = self.cache_hints(&ctx) {
            result = result.with_ttl_ms(ttl).with_cache_scope(scope);
        }
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let note = ResourceTemplate::new("obsidian-tc://{vault}/{+path}", "note")
            .with_title("Note")
            .with_description("A note by vault and vault path (each path segment percent-encoded).")
            .with_mime_type(otc_kernel::resources::MIME_TYPE);
        let mut result = ListResourceTemplatesResult::with_all_items(vec![note]);
        if let Some((ttl, scope)) = self.cache_hints(&ctx) {
            result = result.with_ttl_ms(ttl).with_cache_scope(scope);
        }
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = self.caller(&ctx)?;
        match self.dispatcher.read_resource(&caller, &request.uri).instrument(request_span(&ctx)).await {
            Ok(read) => Ok(resource_text(read).into()),
            Err(err) => {
                tracing::info!(code = %err.code, "resource read refused");
                Err(resource_error(&err))
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller(&ctx)?;
        let name = self.client_name(&ctx);
        let (progress, forwarder) = progress_sink(&ctx).unzip();
        // A 2026-07-28 client is asked through an input-required result; an older one over stdio
        // through elicitation; any other answers elicit_required (the token route).
        let round = if modern(&ctx) { Some(self.confirmation_round(&caller, &request, &ctx).await?) } else { None };
        let ask = match &round {
            Some(round) => round.asker(),
            None => self.asker(&ctx),
        };
        let started = Arc::new(std::sync::Mutex::new(None::<String>));
        let task_sink: Option<otc_kernel::TaskSink> = native_tasks(&ctx).then(|| {
            let started = started.clone();
            Arc::new(move |id: &str| *started.lock().expect("started") = Some(id.to_string())) as otc_kernel::TaskSink
        });
        let sample = self.sampler(&ctx);
        let hooks = Hooks {
            progress: progress.as_ref(),
            ask: ask.as_ref(),
            task: task_sink.as_ref(),
            sample: sample.as_ref(),
            prepaid: false,
        };
        let outcome = self
            .dispatcher
            .call(&caller, self.surface, name.as_deref(), request.name.as_ref(), request.arguments.clone(), hooks)
            .instrument(request_span(&ctx))
            .await;
        // Every notification the call made goes out before its result. A task still running
        // past its budget keeps a sink of its own, so the wait is bounded.
        drop(progress);
        if let Some(forwarder) = forwarder {
            let _ = tokio::time::timeout(std::time::Duration::from_millis(500), forwarder).await;
        }
        let task = started.lock().expect("started").take();
        if let Some(task_id) = task {
            // The handle the tool answered stays the answer if the record cannot be read now.
            match native_tasks::created(&self.dispatcher.services, &caller, &task_id).await {
                Ok(created) => return Ok(created.into()),
                Err(e) => tracing::warn!(error = %e.message, "answering a task's handle instead of the task"),
            }
        }
        if let Some(round) = &round {
            if let Some(refusal) = round.refusal() {
                return Err(refused(refusal, &request.name));
            }
            if let Err(err) = &outcome
                && err.code == otc_errors::ErrorCode::ElicitRequired
                && let Some(ask) = round.asked()
                && let Some(again) = self.ask_again(&caller, &request, ask).await
            {
                return Ok(again.into());
            }
        }
        Ok(match outcome {
            Ok(value) => crate::tool_results::success(value),
            Err(err) => {
                tracing::info!(tool = %request.name, code = %err.code, "tool call refused");
                crate::tool_results::failure(&err)
            }
        }
        .into())
    }
}

/// The HTTP request's span (the current one over stdio, which has none).
fn request_span(ctx: &RequestContext<RoleServer>) -> tracing::Span {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<crate::observe::RequestSpan>())
        .map_or_else(tracing::Span::current, |s| s.0.clone())
}

/// Progress notifications for a call whose request carried a progress token: reports are
/// forwarded in order by one task, which ends when every holder has dropped the sink.
fn progress_sink(ctx: &RequestContext<RoleServer>) -> Option<(otc_kernel::ProgressSink, tokio::task::JoinHandle<()>)> {
    let token = ctx.meta.get_progress_token()?;
    let peer = ctx.peer.clone();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, Option<u64>)>();
    let forwarder = tokio::spawn(async move {
        while let Some((done, total)) = rx.recv().await {
            // The parameter type is non-exhaustive: built from its wire form.
            let mut wire = serde_json::json!({ "progressToken": token, "progress": done });
            if let Some(total) = total {
                wire["total"] = total.into();
            }
            let Ok(param) = serde_json::from_value::<rmcp::model::ProgressNotificationParam>(wire) else { break };
            if peer.notify_progress(param).await.is_err() {
                break;
            }
        }
    });
    let sink: otc_kernel::ProgressSink = Arc::new(move |done, total| {
        let _ = tx.send((done, total));
    });
    Some((sink, forwarder))
}

/// The named surfaces, each served at `/mcp/<name>` (and the default at `/mcp`).
pub const SURFACES: [&str; 6] = ["triad", "domain", "essentials", "core", "full", "compat/obsidian"];

/// Settings of the HTTP transport.
#[derive(Debug, Clone)]
pub struct McpHttpSettings {
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub body_limit_bytes: usize,
    /// Cancelled when the gateway starts to shut down: open `subscriptions/listen` streams end
    /// with their final result instead of holding the drain.
    pub shutdown: Shutdown,
}

/// The gateway's shutdown, as the MCP transport hears of it.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(tokio_util::sync::CancellationToken);

impl Shutdown {
    pub fn cancel(&self) {
        self.0.cancel();
    }
}

/// The streamable HTTP service for one surface: stateless, JSON responses (any replica answers
/// any request; no session is kept).
pub fn http_service(
    dispatcher: Arc<Dispatcher>,
    surface: Surface,
    settings: &McpHttpSettings,
) -> StreamableHttpService<McpServer, NeverSessionManager> {
    let server = McpServer { dispatcher, surface, fixed_caller: None, shutdown: settings.shutdown.clone() };
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        http_config(settings),
    )
}

/// The transport settings every MCP HTTP endpoint uses: stateless, JSON responses, host and
/// origin checks, the body limit.
pub fn http_config(settings: &McpHttpSettings) -> StreamableHttpServerConfig {
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(settings.body_limit_bytes)
        .with_allowed_hosts(settings.allowed_hosts.clone())
        .with_allowed_origins(settings.allowed_origins.clone())
        .enforce_origin_validation();
    if settings.allowed_hosts.is_empty() {
        config = config.disable_allowed_hosts();
    }
    config
}

/// Serves MCP over stdin/stdout for `caller` until the client closes stdin.
pub async fn serve_stdio(
    dispatcher: Arc<Dispatcher>,
    caller: Caller,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use rmcp::ServiceExt;
    let server = McpServer::with_caller(dispatcher, caller);
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use otc_catalog::Registry;
    use otc_catalog::facade::{self, FacadeSettings, Listing};

    use super::*;

    /// What the search connector's definition may weigh while this build does not register it
    /// (input {vault, query, limit}, a one-line description).
    const SEARCH_ALLOWANCE: usize = 350;
    /// The most the triad's tools/list may weigh, search and fetch included.
    const TRIAD_BUDGET: usize = 3_000;

    /// The triad listing as a 2025-11-25 client receives it, tool by tool (run with
    /// `--no-capture` to see the bytes).
    #[test]
    fn the_triad_listing_fits_three_kilobytes() {
        let registry = Registry::new(otc_tools::toolset::all().into_iter().map(|e| e.declaration)).unwrap();
        let tools = facade::advertise(&registry, &FacadeSettings::default(), Listing::Triad, None);
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let search = registry.get("search").is_some();
        let mut expected = vec!["find_capability", "describe_capability", "call_capability"];
        expected.extend(["search", "fetch"].into_iter().filter(|n| registry.get(n).is_some()));
        assert_eq!(names, expected);
        assert!(names.contains(&"fetch"));
        let wire: Vec<Tool> = tools.into_iter().map(to_wire).collect();
        for tool in &wire {
            println!("{:>5} B  {}", serde_json::to_vec(tool).unwrap().len(), tool.name);
        }
        let mut list = ListToolsResult::with_all_items(wire);
        list.result_type = None;
        let mut total = serde_json::to_vec(&list).unwrap().len();
        if !search {
            println!("{SEARCH_ALLOWANCE:>5} B  search (allowance: not registered in this build)");
            total += SEARCH_ALLOWANCE + 1;
        }
        println!("{total:>5} B  tools/list result");
        assert!(total <= TRIAD_BUDGET, "the triad's tools/list weighs {total} bytes; the budget is {TRIAD_BUDGET}");
    }
}
