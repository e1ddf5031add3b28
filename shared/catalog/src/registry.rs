//! The registry: every tool, checked once at start-up, with its derived tags and annotations,
//! its advertised (portable) schemas and its compiled validator.

use std::collections::{BTreeMap, BTreeSet};

use otc_errors::{ErrorCode, ToolError};
use serde_json::{Map, Value, json};

use crate::def::{ResponseFormat, ScopeClass, Sometimes, ToolSpec};
use crate::schema::{self, Validator};
use crate::tags;

/// A tool's declaration plus its schemas, as a tool file provides them.
#[derive(Debug, Clone)]
pub struct Declaration {
    pub spec: ToolSpec,
    /// The full JSON Schema 2020-12 of the input (from schemars).
    pub input_schema: Value,
    /// The full schema of the output, if the tool's output has one worth advertising.
    pub output_schema: Option<Value>,
}

/// The MCP hints, from the same truth as the tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    pub read_only: bool,
    pub destructive: bool,
    pub open_world: bool,
}

/// What a listing says of them: only the hints that say something. MCP's defaults are
/// `readOnlyHint` false and `destructiveHint` true (meaningful only when not read-only), so a
/// read-only tool says `readOnlyHint` and another `destructiveHint`; `openWorldHint` (default
/// true) always.
impl Annotations {
    pub fn read_only_hint(&self) -> Option<bool> {
        self.read_only.then_some(true)
    }

    pub fn destructive_hint(&self) -> Option<bool> {
        (!self.read_only).then_some(self.destructive)
    }
}

/// A registered tool.
#[derive(Debug)]
pub struct Registered {
    pub spec: ToolSpec,
    pub tags: BTreeSet<String>,
    pub annotations: Annotations,
    pub input_schema: Value,
    pub advertised_input: Map<String, Value>,
    pub output_schema: Option<Value>,
    pub advertised_output: Option<Map<String, Value>>,
    validator: Validator,
    output_validator: Option<Validator>,
}

impl Registered {
    pub fn name(&self) -> &'static str {
        self.spec.name
    }

    pub fn is_plugin_bridge(&self) -> bool {
        self.tags.contains("plugin-bridge")
    }

    pub fn summary(&self) -> String {
        summary(self.spec.description)
    }

    /// Whether the input schema requires a `vault` argument (one the dispatcher fills in for a
    /// caller who can reach only one vault).
    pub fn requires_vault(&self) -> bool {
        self.input_schema.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|f| f == "vault"))
    }

    /// Validates call arguments against the full input schema.
    pub fn validate_input(&self, args: &Value) -> Result<(), ToolError> {
        let issues = self.validator.issues(args);
        if issues.is_empty() {
            return Ok(());
        }
        let field = issues[0].path.trim_start_matches('/').split('/').next().unwrap_or("").to_string();
        let message = match field.as_str() {
            "" => format!("{}: {}", self.spec.name, issues[0].message),
            f => format!("{}: argument {f}: {}", self.spec.name, issues[0].message),
        };
        // The first few: a list of ten thousand wrong items is one mistake made ten thousand times.
        const LISTED: usize = 20;
        let list: Vec<Value> =
            issues.iter().take(LISTED).map(|i| json!({ "path": i.path, "message": i.message })).collect();
        let mut err = ToolError::with_message(ErrorCode::ValidationError, message).detail("issues", list);
        if issues.len() > LISTED {
            err = err.detail("issues_total", issues.len());
        }
        if !field.is_empty() {
            err = err.detail("field", field);
        }
        Err(err)
    }

    /// Issues of an output against the tool's full output schema (empty when valid or when the
    /// tool has none).
    pub fn output_issues(&self, output: &Value) -> Vec<schema::Issue> {
        self.output_validator.as_ref().map(|v| v.issues(output)).unwrap_or_default()
    }
}

/// The first sentence of a description, capped, for listings.
pub fn summary(description: &str) -> String {
    let line = description.lines().next().unwrap_or(description);
    let sentence = match line.find(". ") {
        Some(at) => &line[..=at],
        None => line,
    };
    if sentence.chars().count() > 160 {
        let cut: String = sentence.chars().take(157).collect();
        format!("{cut}...")
    } else {
        sentence.to_string()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool {tool}: {problem}")]
pub struct RegistrationError {
    pub tool: String,
    pub problem: String,
}

/// Every registered tool, by name.
#[derive(Debug, Default)]
pub struct Registry {
    tools: BTreeMap<&'static str, Registered>,
}

impl Registry {
    /// Checks and registers every declaration; the first problem refuses the whole set.
    pub fn new(declarations: impl IntoIterator<Item = Declaration>) -> Result<Self, RegistrationError> {
        let mut registry = Registry::default();
        for declaration in declarations {
            let name = declaration.spec.name;
            let registered =
                register(declaration).map_err(|problem| RegistrationError { tool: name.into(), problem })?;
            if registry.tools.insert(name, registered).is_some() {
                return Err(RegistrationError { tool: name.into(), problem: "registered twice".into() });
            }
        }
        Ok(registry)
    }

    pub fn get(&self, name: &str) -> Option<&Registered> {
        self.tools.get(name)
    }

    /// Every tool, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Registered> {
        self.tools.values()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// The argument every mutating tool takes: the same key and arguments answer with the first
/// result instead of acting again (the dispatcher keeps the records).
pub const IDEMPOTENCY_KEY: &str = "idempotency_key";
/// The longest idempotency key.
pub const IDEMPOTENCY_KEY_MAX_CHARS: usize = 255;

/// `schema` with the idempotency key among its properties (unless it declares its own).
fn with_idempotency_key(mut schema: Value) -> Value {
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.entry(IDEMPOTENCY_KEY).or_insert_with(|| {
            json!({
                "type": "string",
                "minLength": 1,
                "maxLength": IDEMPOTENCY_KEY_MAX_CHARS,
            })
        });
    }
    schema
}

/// The parameters many tools share are explained once, in the server's instructions
/// (`facade::SHARED_PARAMETERS`), not in each tool's advertised schema: `response_format` and
/// `idempotency_key` are listed bare, and `verbosity`, the legacy alias of `response_format`, is
/// not listed (it is still taken, and the full schema still checks it).
fn shared_parameters_said_once(advertised: &mut Map<String, Value>) {
    let Some(properties) = advertised.get_mut("properties").and_then(Value::as_object_mut) else { return };
    properties.remove("verbosity");
    for name in ["response_format", IDEMPOTENCY_KEY] {
        if let Some(Value::Object(parameter)) = properties.get_mut(name) {
            parameter.remove("description");
        }
    }
}

/// The advertised schema leaves out, at every level, what tells a model nothing it would act on:
/// `additionalProperties` (a model sends the properties listed; the full schema still refuses
/// any other with invalid_input), `minimum: 0` (an unsigned count) and `minLength: 1`. The full
/// schema, which every call is validated against, keeps them.
fn without_default_constraints(schema: &mut Map<String, Value>) {
    if schema.get("additionalProperties").is_some_and(Value::is_boolean) {
        schema.remove("additionalProperties");
    }
    if schema.get("minimum") == Some(&json!(0)) {
        schema.remove("minimum");
    }
    if schema.get("minLength") == Some(&json!(1)) {
        schema.remove("minLength");
    }
    for value in schema.values_mut() {
        match value {
            Value::Object(node) => without_default_constraints(node),
            Value::Array(nodes) => {
                for node in nodes.iter_mut().filter_map(Value::as_object_mut) {
                    without_default_constraints(node);
                }
            }
            _ => {}
        }
    }
}

fn register(declaration: Declaration) -> Result<Registered, String> {
    let Declaration { spec, input_schema, output_schema } = declaration;
    let input_schema =
        if spec.scope_class == ScopeClass::Read { input_schema } else { with_idempotency_key(input_schema) };
    let name = spec.name;
    if name.is_empty()
        || !name.starts_with(|c: char| c.is_ascii_lowercase())
        || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        || name.contains("__")
        || name.ends_with('_')
    {
        return Err("name must be snake_case".into());
    }
    if spec.title.trim().is_empty() || spec.description.trim().is_empty() {
        return Err("title and description are required".into());
    }
    for scope in spec.scopes {
        let parsed: otc_auth::Scope = scope.parse().map_err(|e: otc_auth::InvalidScope| e.to_string())?;
        if parsed.as_str() == "*" || parsed.as_str().ends_with(":*") {
            return Err(format!("scope {scope} is a wildcard; a tool requires concrete scopes"));
        }
    }
    let derived_class = spec
        .scopes
        .iter()
        .filter_map(|s| s.split(':').next().and_then(ScopeClass::of_action))
        .max()
        .unwrap_or(ScopeClass::Read);
    if spec.scope_class != derived_class {
        return Err(format!(
            "scope class {} does not match its scopes (their highest action is {})",
            spec.scope_class.as_str(),
            derived_class.as_str()
        ));
    }
    let tags = tags::resolve(&spec)?;
    if spec.essentials && tags.contains("plugin-bridge") {
        return Err("an essentials tool may not need a companion plugin".into());
    }
    if spec.essentials && !spec.core {
        return Err("an essentials tool must also be in the core profile".into());
    }

    let takes_format = input_schema.pointer("/properties/response_format").is_some();
    match spec.response_format {
        ResponseFormat::Takes if !takes_format => {
            return Err("declared to take response_format but its input has no response_format".into());
        }
        ResponseFormat::Fixed { why } if takes_format => {
            return Err(format!("declared without response_format ({why}) but its input has one"));
        }
        ResponseFormat::Fixed { why } if why.trim().is_empty() => {
            return Err("a tool without response_format must say why".into());
        }
        _ => {}
    }

    let mut advertised_input = schema::lower_input(&input_schema).map_err(|e| e.to_string())?;
    // Lean: every listing pays for each advertised byte in every conversation.
    without_default_constraints(&mut advertised_input);
    shared_parameters_said_once(&mut advertised_input);
    let problems = schema::portability_problems(&advertised_input);
    if !problems.is_empty() {
        return Err(format!("advertised input schema is not portable: {}", problems.join("; ")));
    }
    let advertised_output = match &output_schema {
        Some(full) if spec.advertise_output_schema => {
            let lowered = schema::lower_output(full).map_err(|e| e.to_string())?;
            if let Some(out) = &lowered {
                let problems = schema::portability_problems(out);
                if !problems.is_empty() {
                    return Err(format!("advertised output schema is not portable: {}", problems.join("; ")));
                }
            }
            lowered
        }
        _ => None,
    };
    let validator = Validator::compile(&input_schema).map_err(|e| e.to_string())?;
    let output_validator = output_schema.as_ref().map(Validator::compile).transpose().map_err(|e| e.to_string())?;
    let annotations = Annotations {
        read_only: tags.contains("read-only"),
        destructive: spec.destructive != Sometimes::Never,
        open_world: tags.contains("external-network"),
    };
    Ok(Registered {
        spec,
        tags,
        annotations,
        input_schema,
        advertised_input,
        output_schema,
        advertised_output,
        validator,
        output_validator,
    })
}
