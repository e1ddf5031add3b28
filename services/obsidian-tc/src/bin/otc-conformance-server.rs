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
use rmcp::model::{
    DiscoverResult, InputRequest, InputRequiredResult, InputResponses, ProtocolVersion, RequestStateCodec,
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
    /// Seals the 2026-07-28 fixtures' request states (a key of this process).
    states: Arc<RequestStateCodec>,
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
            "description": "Tool with JSON Schema 2020-12 features",
            "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"}, "email": {"type": "string"}},
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }
        })),
    ]
}

fn result(content: Value) -> CallToolResponse {
    from::<CallToolResult>(json!({"content": content, "resultType": "complete"})).into()
}

fn text(text: &str) -> CallToolResponse {
    result(json!([{"type": "text", "text": text}]))
}

/// An input request of the 2026-07-28 fixtures, from its wire form.
fn ask(method: &str, params: Value) -> InputRequest {
    from(json!({"method": method, "params": params}))
}

fn elicit(message: &str, field: &str, kind: &str) -> InputRequest {
    ask(
        "elicitation/create",
        json!({"message": message, "requestedSchema": {
        "type": "object", "properties": {field: {"type": kind}}, "required": [field]}}),
    )
}

fn sample(question: &str, max_tokens: u32) -> InputRequest {
    ask(
        "sampling/createMessage",
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": question}}],
        "maxTokens": max_tokens}),
    )
}

fn input_required(requests: Vec<(&str, InputRequest)>, state: Option<String>) -> InputRequiredResult {
    let requests = requests.into_iter().map(|(k, r)| (k.to_string(), r)).collect();
    InputRequiredResult::new(Some(requests), state)
}

/// The accepted content of the elicitation answered under `key`, when it is one.
fn accepted<'a>(responses: Option<&'a InputResponses>, key: &str) -> Option<&'a serde_json::Map<String, Value>> {
    let response = responses?.get(key)?;
    (response.get("action")? == "accept").then_some(())?;
    response.get("content")?.as_object()
}

/// Whether `key` was answered with an object (any answer: elicitation, sampling or roots).
fn answered(responses: Option<&InputResponses>, key: &str) -> bool {
    responses.and_then(|r| r.get(key)).is_some_and(Value::is_object)
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
                from::<CallToolResult>(json!({"content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}], "isError": true, "resultType": "complete"})).into()
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

    /// The 2026-07-28 fixtures: tools that answer input-required results (SEP-2322) and the
    /// one that needs a client capability (SEP-2575).
    fn call_modern_fixture(
        &self,
        request: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let responses = request.input_responses.as_ref();
        let state = request.request_state.as_deref();
        let opened = |state: Option<&str>| -> Result<Option<u64>, ErrorData> {
            match state {
                None => Ok(None),
                Some(s) => self
                    .states
                    .open_json::<u64>(s)
                    .map(Some)
                    .map_err(|_| ErrorData::invalid_params("requestState is not valid (altered or expired)", None)),
            }
        };
        let seal = |round: u64| self.states.seal_json(&round).ok();
        let name_of = |key: &str| {
            accepted(responses, key).and_then(|c| c.get("name")).and_then(Value::as_str).map(str::to_string)
        };
        Some(Ok(match request.name.as_ref() {
            "test_custom_header" => text("The region header matched the body."),
            "test_missing_capability" => {
                let declared = ctx.meta.client_capabilities().is_some_and(|c| c.sampling.is_some());
                if !declared {
                    return Some(Err(ErrorData::missing_required_client_capability(from(json!({"sampling": {}})))));
                }
                text("the client declared sampling")
            }
            "test_input_required_result_elicitation" | "test_streaming_elicitation" => match name_of("user_name") {
                Some(name) => text(&format!("Hello, {name}!")),
                None => {
                    input_required(vec![("user_name", elicit("What is your name?", "name", "string"))], None).into()
                }
            },
            "test_input_required_result_sampling" => {
                if answered(responses, "capital_question") {
                    text("The model answered.")
                } else {
                    input_required(vec![("capital_question", sample("What is the capital of France?", 100))], None)
                        .into()
                }
            }
            "test_input_required_result_list_roots" => {
                if answered(responses, "client_roots") {
                    text("The client listed its roots.")
                } else {
                    input_required(vec![("client_roots", ask("roots/list", json!({})))], None).into()
                }
            }
            "test_input_required_result_request_state" | "test_input_required_result_tampered_state" => {
                match opened(state) {
                    Err(e) => return Some(Err(e)),
                    Ok(Some(1)) if accepted(responses, "confirm").is_some() => text("state-ok"),
                    Ok(_) => {
                        let ask = elicit("Please confirm", "ok", "boolean");
                        input_required(vec![("confirm", ask)], seal(1)).into()
                    }
                }
            }
            "test_input_required_result_multiple_inputs" => match opened(state) {
                Err(e) => return Some(Err(e)),
                Ok(Some(1)) if ["user_name", "greeting", "client_roots"].iter().all(|k| answered(responses, k)) => {
                    text("All three answered.")
                }
                Ok(_) => input_required(
                    vec![
                        ("user_name", elicit("What is your name?", "name", "string")),
                        ("greeting", sample("Say hello.", 50)),
                        ("client_roots", ask("roots/list", json!({}))),
                    ],
                    seal(1),
                )
                .into(),
            },
            "test_input_required_result_multi_round" => match opened(state) {
                Err(e) => return Some(Err(e)),
                Ok(Some(2)) if accepted(responses, "step2").is_some() => text("Both rounds answered."),
                Ok(Some(1)) if name_of("step1").is_some() => input_required(
                    vec![("step2", elicit("What is your favourite colour?", "color", "string"))],
                    seal(2),
                )
                .into(),
                Ok(_) => {
                    input_required(vec![("step1", elicit("What is your name?", "name", "string"))], seal(1)).into()
                }
            },
            "test_input_required_result_capabilities" => {
                let caps = ctx.meta.client_capabilities().unwrap_or_default();
                let mut asks = Vec::new();
                if caps.elicitation.is_some() && !answered(responses, "user_name") {
                    asks.push(("user_name", elicit("What is your name?", "name", "string")));
                }
                if caps.sampling.is_some() && !answered(responses, "greeting") {
                    asks.push(("greeting", sample("Say hello.", 50)));
                }
                if asks.is_empty() { text("Nothing more to ask.") } else { input_required(asks, None).into() }
            }
            _ => return None,
        }))
    }
}

/// The 2026-07-28 fixture tools (listed after the others).
fn modern_fixture_tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    let tool = |name: &str, description: &str| -> Tool {
        from(json!({"name": name, "description": description, "inputSchema": empty}))
    };
    vec![
        tool("test_missing_capability", "Needs the client's sampling capability."),
        tool("test_streaming_elicitation", "Asks for a name through an input-required result."),
        tool("test_input_required_result_elicitation", "Asks for a name."),
        tool("test_input_required_result_sampling", "Asks the client's model a question."),
        tool("test_input_required_result_list_roots", "Asks for the client's roots."),
        tool("test_input_required_result_request_state", "Asks for a confirmation, with request state."),
        tool("test_input_required_result_tampered_state", "Asks for a confirmation; refuses altered state."),
        tool("test_input_required_result_multiple_inputs", "Asks three things at once."),
        tool("test_input_required_result_multi_round", "Asks in two rounds."),
        tool("test_input_required_result_capabilities", "Asks only what the client declared it can answer."),
        header_tool(),
    ]
}

/// A tool whose argument the client mirrors into a header (SEP-2243), which the transport
/// checks against the body.
fn header_tool() -> Tool {
    from(json!({"name": "test_custom_header", "description": "Echoes a region the client mirrors into a header.",
        "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"]}}))
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

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(otc_gateway::mcp::SUPPORTED_VERSIONS)
    }

    /// The tools whose `x-mcp-header` arguments the transport validates.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == "test_custom_header").then(header_tool)
    }

    /// 2026-07-28 has no resources/subscribe (subscriptions/listen replaces it, and this build
    /// serves no listen streams), so discovery does not claim it.
    async fn discover(&self, _ctx: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        let mut info = self.get_info();
        if let Some(resources) = info.capabilities.resources.as_mut() {
            resources.subscribe = None;
        }
        Ok(DiscoverResult::from_server_info(otc_gateway::mcp::SUPPORTED_VERSIONS.to_vec(), info))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = fixture_tools();
        tools.extend(modern_fixture_tools());
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
        if let Some(outcome) = self.call_modern_fixture(&request, &ctx) {
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
        ], "resultType": "complete"})))
    }

    async fn list_resource_templates(
        &self,
        _r: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(from(json!({"resourceTemplates": [
            {"uriTemplate": "test://template/{id}/data", "name": "template", "mimeType": "application/json"}
        ], "resultType": "complete"})))
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
                None => {
                    return Err(ErrorData::resource_not_found(format!("no resource {uri}"), Some(json!({"uri": uri}))));
                }
            },
        };
        Ok(from::<ReadResourceResult>(json!({"contents": [contents], "resultType": "complete"})).into())
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
            {"name": "test_prompt_with_image", "description": "A prompt with an image"},
            {"name": "test_input_required_result_prompt", "description": "Asks for context before it answers"}
        ], "resultType": "complete"})))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name == "test_input_required_result_prompt" {
            let Some(context) = accepted(request.input_responses.as_ref(), "user_context") else {
                let ask = elicit("What context should the prompt use?", "context", "string");
                return Ok(input_required(vec![("user_context", ask)], None).into());
            };
            let context = context.get("context").and_then(Value::as_str).unwrap_or_default();
            let messages =
                json!([{"role": "user", "content": {"type": "text", "text": format!("Use this context: {context}")}}]);
            return Ok(from::<GetPromptResult>(json!({"messages": messages, "resultType": "complete"})).into());
        }
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
        Ok(from::<GetPromptResult>(json!({"messages": messages, "resultType": "complete"})).into())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(from(json!({"completion": {"values": [], "total": 0, "hasMore": false}, "resultType": "complete"})))
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
    let key = [uuid::Uuid::new_v4().into_bytes(), uuid::Uuid::new_v4().into_bytes()].concat();
    let states = Arc::new(RequestStateCodec::try_new(key)?);
    let fixtures = Fixtures { inner, states };
    let settings = McpHttpSettings {
        allowed_hosts: config.mcp.allowed_hosts.clone(),
        allowed_origins: config.mcp.allowed_origins.clone(),
        body_limit_bytes: config.server.body_limit_bytes,
        shutdown: Default::default(),
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
    otc_gateway::serve(
        listener,
        router,
        app::shutdown_signal(),
        Duration::from_secs(5),
        otc_gateway::ConnectionLimits::from_config(&config.server),
    )
    .await?;
    Ok(())
}
