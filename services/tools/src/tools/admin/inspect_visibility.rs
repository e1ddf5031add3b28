use otc_auth::Scope;
use otc_catalog::visibility::{Grants, Reason, Visibility, verdict};
use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool};

pub struct InspectVisibility;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    #[serde(default)]
    pub tool: Option<String>,
    /// Judge as a caller with these scopes (default: yours).
    #[serde(default)]
    pub scopes: Option<Vec<String>>,
    /// Judge as a read-only caller.
    #[serde(default)]
    pub read_only: Option<bool>,
    /// Only tools with this verdict.
    #[serde(default)]
    pub visibility: Option<Visibility>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub tools: Vec<Row>,
    /// Counts over the whole surface, whatever the filters.
    pub summary: Summary,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Row {
    pub name: String,
    pub visibility: Visibility,
    /// The rule that decided the verdict.
    pub reason: Reason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_tag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_scopes: Option<Vec<String>>,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_scopes: Option<Vec<String>>,
    /// Detailed only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Summary {
    pub total: usize,
    pub listed: usize,
    pub hidden: usize,
    pub disabled: usize,
    pub scope_denied: usize,
}

/// A hypothetical caller for the verdict.
struct Subject {
    scopes: Vec<Scope>,
    read_only: bool,
}

impl Grants for Subject {
    fn grants(&self, required: &str) -> bool {
        if self.read_only && otc_catalog::tags::is_mutating_scope(required) {
            return false;
        }
        self.scopes.grants(required)
    }
}

impl Tool for InspectVisibility {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["admin:acl"],
        scope_class: ScopeClass::Admin,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "inspect_visibility",
            "Inspect tool visibility",
            "Explains for each tool whether a caller sees it listed, hidden, disabled or denied for missing \
             scopes, and which rule decided it.",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let scopes = match input.scopes {
            Some(list) => list
                .iter()
                .map(|s| {
                    s.parse::<Scope>().map_err(|e| {
                        ToolError::with_message(ErrorCode::InvalidInput, format!("inspect_visibility: scopes: {e}"))
                            .detail("field", "scopes")
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            None => ctx.caller.scopes.clone(),
        };
        let subject = Subject { scopes, read_only: input.read_only.unwrap_or(false) };
        if let Some(name) = &input.tool
            && ctx.registry().get(name).is_none()
        {
            return Err(
                ToolError::with_message(ErrorCode::NotFound, format!("no tool named {name:?}")).detail("field", "tool")
            );
        }
        let settings = ctx.settings();
        let mut summary = Summary::default();
        let mut tools = Vec::new();
        for tool in ctx.registry().iter() {
            let v = verdict(tool, settings.profile, &settings.rules, Some(&subject));
            summary.total += 1;
            match v.visibility {
                Visibility::Listed => summary.listed += 1,
                Visibility::Hidden => summary.hidden += 1,
                Visibility::Disabled => summary.disabled += 1,
                Visibility::ScopeDenied => summary.scope_denied += 1,
            }
            if input.tool.as_deref().is_some_and(|n| n != tool.name())
                || input.visibility.is_some_and(|f| f != v.visibility)
            {
                continue;
            }
            tools.push(Row {
                name: tool.name().into(),
                visibility: v.visibility,
                reason: v.reason,
                matched_tag: v.matched_tag,
                missing_scopes: (!v.missing_scopes.is_empty()).then_some(v.missing_scopes),
                domain: detailed.then(|| tool.spec.domain.to_string()),
                required_scopes: detailed.then(|| tool.spec.scopes.iter().map(|s| s.to_string()).collect()),
                tags: detailed.then(|| tool.tags.iter().cloned().collect()),
            });
        }
        Ok(Output { tools, summary })
    }
}
