use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool};

pub struct GetServerConfig;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

/// The server configuration with every secret removed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub auth: Auth,
    pub limits: Limits,
    pub governor: Governor,
    pub tool_facade: Facade,
    /// Only in the detailed format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_visibility: Option<VisibilityRules>,
    /// Only in the detailed format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observability: Option<Observability>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Auth {
    /// How callers authenticate.
    pub mode: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Limits {
    pub body_limit_bytes: u64,
    pub shutdown_grace_secs: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Governor {
    pub max_response_bytes: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Facade {
    pub mode: String,
    pub profile: String,
    pub advertise: String,
    pub triad_hot_path: bool,
    pub default_response_format: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct VisibilityRules {
    pub hidden: Vec<String>,
    pub disabled: Vec<String>,
    pub hidden_tags: Vec<String>,
    pub disabled_tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<String>>,
    pub require_read_only: bool,
    pub show_live_app_tools: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Observability {
    pub log_format: String,
    pub traces_exported: bool,
}

impl Tool for GetServerConfig {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["admin:config"],
        scope_class: ScopeClass::Admin,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "get_server_config",
            "Get server configuration",
            "The server's configuration without secrets: auth, limits, response ceiling, tool-surface settings.",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let config = &ctx.services().config;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let settings = ctx.settings();
        let v = &config.tool_visibility;
        Ok(Output {
            auth: Auth { mode: "bearer".into() },
            limits: Limits {
                body_limit_bytes: config.server.body_limit_bytes as u64,
                shutdown_grace_secs: config.server.shutdown_grace_secs,
            },
            governor: Governor { max_response_bytes: config.governor.max_response_bytes },
            tool_facade: Facade {
                mode: settings.mode.as_str().into(),
                profile: settings.profile.as_str().into(),
                advertise: settings.advertise_name().into(),
                triad_hot_path: settings.triad_hot_path,
                default_response_format: match ctx.default_format() {
                    ResponseFormat::Concise => "concise",
                    ResponseFormat::Detailed => "detailed",
                }
                .into(),
            },
            tool_visibility: detailed.then(|| VisibilityRules {
                hidden: v.hidden.clone(),
                disabled: v.disabled.clone(),
                hidden_tags: v.hidden_tags.clone(),
                disabled_tags: v.disabled_tags.clone(),
                allowed: v.allowed.clone(),
                require_read_only: v.require_read_only,
                show_live_app_tools: v.show_live_app_tools,
            }),
            observability: detailed.then(|| Observability {
                log_format: format!("{:?}", config.telemetry.log_format).to_lowercase(),
                traces_exported: config.telemetry.otlp_endpoint.is_some(),
            }),
        })
    }
}
