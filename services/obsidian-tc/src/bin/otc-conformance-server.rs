//! A test build of the MCP surface for the official conformance suite
//! (`@modelcontextprotocol/conformance`): the real MCP handler, transport settings and tool
//! pipeline, plus the fixture tools, resources and prompts the suite's scenarios call. The
//! suite's client sends no credentials, so this build acts for a fixed local tenant; it is never
//! part of the product binary.
//!
//!   otc-conformance-server --listen 127.0.0.1:0     (the OTC__ environment names the services)

// The suite still exercises logging and sampling, which the protocol is deprecating.
#![allow(deprecated)]

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use obsidian_tc::app::{self, Deps};
use otc_gateway::mcp::{McpHttpSettings, McpServer, http_config, server_config};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A 1x1 transparent PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// How long a server-to-client request may wait for the client's answer. Over the stateless
/// transport the answer cannot reach this call (see the expected-failures file), so fail fast.
const CLIENT_REPLY_TIMEOUT: Duration = Duration::from_secs(3);
/// A tiny WAV file (header only, silence).
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

fn from<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("fixture JSON matches the protocol type")
}

#[derive(Clone)]
struct Fixtures {
    inner: McpServer,
}

fn fixture_tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    let tool = |name: &str, description: &str, schema: &Value| -> Tool {
        from(json!({"name": name, "description": description, "inputSchema": schema}))
    };
    vec![
        tool("test_simple_text", "Returns a simple text response.", &empty),
        tool("test_image_content", "Returns an image.", &empty),
        tool("test_audio_content", "Returns audio.", &empty),
        tool("test_embedded_resource", "Returns an embedded resource.", &empty),
        tool("test_multiple_content_types", "Returns text, an image and a resource.", &empty),
        tool("test_tool_with_logging", "Logs while it runs.", &empty),
        tool("test_tool_with_progress", "Reports progress while it runs.", &empty),
        tool("test_error_handling", "Always fails, as a tool error.", &empty),
        tool(
            "test_sampling",
            "Asks the client's model to complete a prompt.",
            &json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}),
        ),
        tool(
            "test_elicitation",
            "Asks the user for a username and email.",
            &json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ),
        tool("test_elicitation_sep1034_defaults", "Elicits fields with defaults.", &empty),
        tool("test_elicitation_sep1330_enums", "Elicits enum fields.", &empty),
        from(json!({
            "name": "json_schema_2020_12_tool",
            "description": "Carries a JSON Schema 2020-12 input schema.",
            "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                "additionalProperties": false
            }
        })),
    ]
}

fn result(content: Value) -> CallToolResponse {
    from::<CallToolResult>(json!({"content": content})).into()
}

impl Fixtures {
    async fn sleep() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    async fn call_fixture(
        &self,
        name: &str,
        args: &serde_json::Map<String, Value>,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let peer = &ctx.peer;
        Some(Ok(match name {
            "test_simple_text" => result(json!([{"type": "text", "text": "This is a simple text response for testing."}])),
            "test_image_content" => result(json!([{"type": "image", "data": PNG, "mimeType": "image/png"}])),
            "test_audio_content" => result(json!([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])),
            "test_embedded_resource" => result(json!([{"type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}])),
            "test_multiple_content_types" => result(json!([
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json",
                    "text": "{\"test\":\"data\",\"value\":123}"}}
            ])),
            "test_tool_with_logging" => {
                for message in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
                    let _ = peer.notify_logging_message(from(json!({"level": "info", "data": message}))).await;
                    Self::sleep().await;
                }
                result(json!([{"type": "text", "text": "Tool with logging executed successfully"}]))
            }
            "test_tool_with_progress" => {
                let token = ctx.meta.get_progress_token();
                for progress in [0, 50, 100] {
                    if let Some(token) = &token {
                        let _ = peer
                            .notify_progress(from(json!({"progressToken": token, "progress": progress, "total": 100})))
                            .await;
                    }
                    Self::sleep().await;
                }
                result(json!([{"type": "text", "text": "Tool with progress executed successfully"}]))
            }
            "test_error_handling" => {
                from::<CallToolResult>(json!({"content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}], "isError": true})).into()
            }
            "test_sampling" => {
                let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or_default();
                let request = peer.create_message(from(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 100
                })));
                match tokio::time::timeout(CLIENT_REPLY_TIMEOUT, request).await.map_err(|_| "no reply from the client".to_string()) {
                    Ok(Ok(reply)) => {
                        let text = serde_json::to_value(&reply.message.content).unwrap_or_default();
                        result(json!([{"type": "text", "text": format!("LLM response: {text}")}]))
                    }
                    Ok(Err(e)) => return Some(Err(ErrorData::internal_error(format!("sampling failed: {e}"), None))),
                    Err(e) => return Some(Err(ErrorData::internal_error(format!("sampling failed: {e}"), None))),
                }
            }
            "test_elicitation" | "test_elicitation_sep1034_defaults" | "test_elicitation_sep1330_enums" => {
                let message = args.get("message").and_then(Value::as_str).unwrap_or("Please provide your details");
                let schema = match name {
                    "test_elicitation" => json!({"type": "object", "properties": {
                        "username": {"type": "string", "description": "Your username"},
                        "email": {"type": "string", "description": "Your email address"}}, "required": ["username", "email"]}),
                    "test_elicitation_sep1034_defaults" => json!({"type": "object", "properties": {
                        "name": {"type": "string", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "score": {"type": "number", "default": 95.5},
                        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "default": true}}}),
                    _ => json!({"type": "object", "properties": {
                        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "oneOf": [
                            {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}]},
                        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}]}}}}),
                };
                let request = peer.create_elicitation(from(json!({"message": message, "requestedSchema": schema})));
                match tokio::time::timeout(CLIENT_REPLY_TIMEOUT, request).await.map_err(|_| "no reply from the client".to_string()) {
                    Ok(Ok(reply)) => {
                        let text = serde_json::to_string(&reply).unwrap_or_default();
                        result(json!([{"type": "text", "text": format!("Elicitation result: {text}")}]))
                    }
                    Ok(Err(e)) => return Some(Err(ErrorData::internal_error(format!("elicitation failed: {e}"), None))),
                    Err(e) => return Some(Err(ErrorData::internal_error(format!("elicitation failed: {e}"), None))),
                }
            }
            _ => return None,
        }))
    }
}

impl ServerHandler for Fixtures {
    fn get_info(&self) -> ServerConfig {
        server_config(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_completions()
                .enable_logging()
                .build(),
        )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        ctx.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = fixture_tools();
        tools.extend(self.inner.list_tools(request, ctx).await?.tools);
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        if let Some(outcome) = self.call_fixture(request.name.as_ref(), &args, &ctx).await {
            return outcome;
        }
        self.inner.call_tool(request, ctx).await
    }

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_resources(
        &self,
        _r: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(from(json!({"resources": [
            {"uri": "test://static-text", "name": "static-text", "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary", "mimeType": "image/png"},
            {"uri": "test://watched-resource", "name": "watched-resource", "mimeType": "text/plain"}
        ]})))
    }

    async fn list_resource_templates(
        &self,
        _r: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(from(json!({"resourceTemplates": [
            {"uriTemplate": "test://template/{id}/data", "name": "template", "mimeType": "application/json"}
        ]})))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."})
            }
            "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
            "test://watched-resource" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "Watched resource content."})
            }
            _ => match uri.strip_prefix("test://template/").and_then(|rest| rest.strip_suffix("/data")) {
                Some(id) => {
                    json!({"uri": uri, "mimeType": "application/json", "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()})
                }
                None => return Err(ErrorData::resource_not_found(format!("no resource {uri}"), None)),
            },
        };
        Ok(from::<ReadResourceResult>(json!({"contents": [contents]})).into())
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_prompts(
        &self,
        _r: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(from(json!({"prompts": [
            {"name": "test_simple_prompt", "description": "A simple prompt without arguments"},
            {"name": "test_prompt_with_arguments", "description": "A prompt with arguments",
             "arguments": [{"name": "arg1", "description": "First argument", "required": true},
                           {"name": "arg2", "description": "Second argument", "required": true}]},
            {"name": "test_prompt_with_embedded_resource", "description": "A prompt with an embedded resource",
             "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]},
            {"name": "test_prompt_with_image", "description": "A prompt with an image"}
        ]})))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let messages = match request.name.as_str() {
            "test_simple_prompt" => {
                json!([{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}])
            }
            "test_prompt_with_arguments" => json!([{"role": "user", "content": {"type": "text",
                "text": format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2"))}}]),
            "test_prompt_with_embedded_resource" => json!([
                {"role": "user", "content": {"type": "resource", "resource": {"uri": arg("resourceUri"), "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
                {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}}
            ]),
            "test_prompt_with_image" => json!([
                {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
                {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}
            ]),
            other => return Err(ErrorData::invalid_params(format!("no prompt {other}"), None)),
        };
        Ok(from::<GetPromptResult>(json!({"messages": messages})).into())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(from(json!({"completion": {"values": [], "total": 0, "hasMore": false}})))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let listen = std::env::args().skip_while(|a| a != "--listen").nth(1).unwrap_or_else(|| "127.0.0.1:0".into());
    let sources = app::sources(None, &[])?;
    let config = app::load(&sources)?.config;
    let _telemetry = otc_telemetry::init(&config.telemetry)?;
    let deps = Deps::new(&config)?;
    deps.store.migrate().await.context("migrations")?;
    let tenant = match deps.store.tenant_id_by_slug("conformance").await? {
        Some(id) => id,
        None => deps.store.create_tenant("conformance", "Conformance suite").await?.id,
    };
    let mut tx = deps.store.begin(tenant).await?;
    let principal = tx.ensure_principal(otc_store::PrincipalKind::Service, "conformance").await?;
    let issued = tx
        .issue_token(otc_store::NewToken {
            principal_id: principal.id,
            name: "conformance".into(),
            scopes: vec!["*".parse()?],
            vault_id: None,
            expires_at: Some(chrono::Utc::now() + chrono::Duration::hours(1)),
        })
        .await?;
    tx.commit().await?;
    let caller = app::authenticate(&deps.store, &issued.plaintext).await?;
    let inner = McpServer::with_caller(app::dispatcher(&config, &deps)?, caller);
    let fixtures = Fixtures { inner };
    let settings = McpHttpSettings {
        allowed_hosts: config.mcp.allowed_hosts.clone(),
        allowed_origins: config.mcp.allowed_origins.clone(),
        body_limit_bytes: config.server.body_limit_bytes,
    };
    let service = StreamableHttpService::new(
        move || Ok(fixtures.clone()),
        Arc::new(NeverSessionManager::default()),
        http_config(&settings),
    );
    let router = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    let addr = listener.local_addr()?;
    tracing::info!("listening on http://{addr}");
    otc_gateway::serve(listener, router, app::shutdown_signal(), Duration::from_secs(5)).await?;
    Ok(())
}
