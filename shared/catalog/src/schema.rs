//! Schemas: the full JSON Schema 2020-12 a tool's types generate, lowered to the subset every
//! client accepts for advertising, and compiled for server-side validation of every call.
//!
//! The portable subset: no `$ref`, `const`, `oneOf`, `allOf` or type arrays; a plain object at
//! the root; `anyOf` only on its own. A constraint the lowering drops is restated in that
//! parameter's description, and the server still enforces it because calls are validated
//! against the full schema. One widening is deliberate and not restated: a nullable optional
//! parameter is advertised without `null`.

use serde_json::{Map, Value, json};

/// Keywords that only organise a schema document; dropped from advertised schemas.
const DOCUMENT_KEYWORDS: [&str; 5] = ["$schema", "$defs", "definitions", "$id", "$comment"];

/// `format` values every client understands; schemars' integer-width formats are not among them.
const PORTABLE_FORMATS: [&str; 9] = ["date-time", "date", "time", "email", "uri", "uuid", "hostname", "ipv4", "ipv6"];

/// Keywords a node carrying `anyOf` may keep beside it.
const ANNOTATIONS: [&str; 4] = ["description", "title", "default", "examples"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("schema at {path}: {message}")]
pub struct SchemaError {
    pub path: String,
    pub message: String,
}

/// The advertised (portable) form of an input schema. The root must be an object.
pub fn lower_input(full: &Value) -> Result<Map<String, Value>, SchemaError> {
    let lowered = lower_document(full)?;
    match lowered {
        Value::Object(mut map) if map.get("type") == Some(&json!("object")) => {
            // The root's title is the Rust type's name: noise to a client.
            map.remove("title");
            Ok(map)
        }
        _ => Err(SchemaError { path: "/".into(), message: "an input schema's root must be a plain object".into() }),
    }
}

/// The advertised form of an output schema, or `None` when the output's root cannot be a
/// plain object (such a tool is listed without an output schema).
pub fn lower_output(full: &Value) -> Result<Option<Map<String, Value>>, SchemaError> {
    let lowered = lower_document(full)?;
    Ok(match lowered {
        Value::Object(mut map) if map.get("type") == Some(&json!("object")) => {
            map.remove("title");
            Some(map)
        }
        _ => None,
    })
}

fn lower_document(full: &Value) -> Result<Value, SchemaError> {
    let defs = full.get("$defs").or_else(|| full.get("definitions")).cloned().unwrap_or(Value::Null);
    let inlined = inline_refs(full, &defs, 0, "")?;
    lower_node(inlined, "")
}

fn inline_refs(node: &Value, defs: &Value, depth: usize, path: &str) -> Result<Value, SchemaError> {
    if depth > 32 {
        return Err(SchemaError { path: path.into(), message: "recursive type cannot be inlined".into() });
    }
    match node {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                let name = reference
                    .strip_prefix("#/$defs/")
                    .or_else(|| reference.strip_prefix("#/definitions/"))
                    .ok_or_else(|| SchemaError {
                        path: path.into(),
                        message: format!("unsupported $ref {reference}"),
                    })?;
                let target = defs
                    .get(name)
                    .ok_or_else(|| SchemaError { path: path.into(), message: format!("dangling $ref {reference}") })?;
                let mut resolved = inline_refs(target, defs, depth + 1, path)?;
                // Keywords beside the $ref (a field's description) win over the definition's.
                if let Value::Object(out) = &mut resolved {
                    for (k, v) in map {
                        if k != "$ref" {
                            out.insert(k.clone(), inline_refs(v, defs, depth, path)?);
                        }
                    }
                }
                return Ok(resolved);
            }
            let mut out = Map::new();
            for (k, v) in map {
                if k == "$defs" || k == "definitions" {
                    continue;
                }
                out.insert(k.clone(), inline_refs(v, defs, depth, &format!("{path}/{k}"))?);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => {
            Ok(Value::Array(items.iter().map(|v| inline_refs(v, defs, depth, path)).collect::<Result<_, _>>()?))
        }
        other => Ok(other.clone()),
    }
}

fn is_null_schema(node: &Value) -> bool {
    node.get("type") == Some(&json!("null")) || node.get("const") == Some(&Value::Null)
}

/// The constant a schema pins, if it is nothing but that (plus annotations).
fn pinned_values(node: &Value) -> Option<Vec<Value>> {
    let map = node.as_object()?;
    let values = match (map.get("const"), map.get("enum")) {
        (Some(c), None) => vec![c.clone()],
        (None, Some(Value::Array(e))) => e.clone(),
        _ => return None,
    };
    let allowed = |k: &str| ["const", "enum", "type", "description", "title"].contains(&k);
    map.keys().all(|k| allowed(k)).then_some(values)
}

fn append_note(map: &mut Map<String, Value>, note: &str) {
    let text = match map.get("description").and_then(Value::as_str) {
        Some(existing) if !existing.is_empty() => format!("{existing} ({note})"),
        _ => format!("({note})"),
    };
    map.insert("description".into(), Value::String(text));
}

fn lower_node(node: Value, path: &str) -> Result<Value, SchemaError> {
    let Value::Object(mut map) = node else { return Ok(node) };
    for keyword in DOCUMENT_KEYWORDS {
        map.remove(keyword);
    }

    // A null default says nothing a client can use (and contradicts a non-null type).
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }

    // const → enum
    if let Some(value) = map.remove("const") {
        map.insert("enum".into(), Value::Array(vec![value]));
    }

    // Type arrays: a nullable type is advertised without null; several real types become anyOf.
    if let Some(Value::Array(types)) = map.get("type").cloned() {
        let real: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
        match real.len() {
            0 => {
                map.insert("type".into(), json!("null"));
            }
            1 => {
                map.insert("type".into(), real[0].clone());
            }
            _ => {
                map.remove("type");
                let arms: Vec<Value> = real.into_iter().map(|t| json!({ "type": t })).collect();
                map.insert("anyOf".into(), Value::Array(arms));
            }
        }
        if let Some(Value::Array(values)) = map.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
    }

    // allOf: merge the arms into this node.
    if let Some(Value::Array(arms)) = map.remove("allOf") {
        for arm in arms {
            let Value::Object(arm) = lower_node(arm, path)? else {
                return Err(SchemaError { path: path.into(), message: "allOf arm is not a schema object".into() });
            };
            merge_into(&mut map, arm, path)?;
        }
    }

    // oneOf / anyOf: drop null arms; pinned values become one enum; a single arm is inlined.
    for keyword in ["oneOf", "anyOf"] {
        let Some(Value::Array(arms)) = map.remove(keyword) else { continue };
        let arms: Vec<Value> = arms.into_iter().filter(|a| !is_null_schema(a)).collect();
        if let Some(values) = arms.iter().map(pinned_values).collect::<Option<Vec<_>>>() {
            let mut all: Vec<Value> = values.into_iter().flatten().collect();
            all.dedup();
            let described: Vec<String> = arms
                .iter()
                .filter_map(|a| {
                    let desc = a.get("description")?.as_str()?;
                    let value = pinned_values(a)?.into_iter().next()?;
                    Some(format!("{}: {desc}", value.as_str().map(str::to_string).unwrap_or_else(|| value.to_string())))
                })
                .collect();
            let types: Vec<&str> = all.iter().map(json_type).collect();
            if types.iter().all(|t| *t == types[0]) {
                map.insert("type".into(), json!(types[0]));
            }
            map.insert("enum".into(), Value::Array(all));
            if !described.is_empty() {
                append_note(&mut map, &described.join("; "));
            }
            continue;
        }
        let mut lowered: Vec<Value> = arms.into_iter().map(|a| lower_node(a, path)).collect::<Result<_, _>>()?;
        if lowered.len() == 1 {
            let Value::Object(only) = lowered.remove(0) else { continue };
            merge_into(&mut map, only, path)?;
            continue;
        }
        if keyword == "oneOf" {
            append_note(&mut map, "exactly one of these forms");
        }
        // anyOf stands alone: other constraint keywords move into each arm.
        let moved: Vec<(String, Value)> = map
            .iter()
            .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (k, _) in &moved {
            map.remove(k);
        }
        for arm in &mut lowered {
            if let Value::Object(arm) = arm {
                for (k, v) in &moved {
                    arm.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        map.insert("anyOf".into(), Value::Array(lowered));
    }

    // Non-portable keywords: dropped here, restated in the description, enforced server-side.
    if let Some(Value::String(format)) = map.get("format").cloned()
        && !PORTABLE_FORMATS.contains(&format.as_str())
    {
        map.remove("format");
    }
    for (keyword, note) in [
        ("not", "some values are refused; the server checks"),
        ("if", "further rules apply depending on other fields; the server checks"),
        ("dependentRequired", "some fields require others; the server checks"),
        ("dependentSchemas", "some fields constrain others; the server checks"),
    ] {
        if map.remove(keyword).is_some() {
            append_note(&mut map, note);
        }
    }
    map.remove("then");
    map.remove("else");

    // Recurse into sub-schemas.
    if let Some(Value::Object(props)) = map.remove("properties") {
        let mut out = Map::new();
        for (name, schema) in props {
            out.insert(name.clone(), lower_node(schema, &format!("{path}/{name}"))?);
        }
        map.insert("properties".into(), Value::Object(out));
    }
    for keyword in ["items", "additionalProperties", "contains", "propertyNames"] {
        if let Some(sub) = map.remove(keyword) {
            let lowered = if sub.is_object() { lower_node(sub, &format!("{path}/{keyword}"))? } else { sub };
            map.insert(keyword.into(), lowered);
        }
    }
    if let Some(Value::Array(arms)) = map.remove("anyOf") {
        let arms = arms.into_iter().map(|a| lower_node(a, path)).collect::<Result<_, _>>()?;
        map.insert("anyOf".into(), Value::Array(arms));
    }
    if let Some(Value::String(text)) = map.get_mut("description") {
        *text = unwrap_lines(text);
    }
    Ok(Value::Object(map))
}

/// A doc comment's text as one paragraph a line: the hard breaks its source wrapped it with are
/// spaces (each `\n` costs two bytes of JSON in every listing). A blank line or a line opening a
/// list item keeps its break.
fn unwrap_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        if let Some(next) = lines.peek() {
            let keep = line.trim().is_empty()
                || next.trim().is_empty()
                || next.trim_start().starts_with(['-', '*', '|'])
                || next.trim_start().split_once(". ").is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()));
            out.push(if keep { '\n' } else { ' ' });
        }
    }
    out
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

fn merge_into(map: &mut Map<String, Value>, arm: Map<String, Value>, path: &str) -> Result<(), SchemaError> {
    for (k, v) in arm {
        match (map.get_mut(&k), v) {
            (Some(Value::Object(existing)), Value::Object(more)) if k == "properties" => {
                existing.extend(more);
            }
            (Some(Value::Array(existing)), Value::Array(more)) if k == "required" => {
                for item in more {
                    if !existing.contains(&item) {
                        existing.push(item);
                    }
                }
            }
            (Some(existing), v) if k == "description" || k == "title" || k == "default" => {
                // The outer node's annotation is the more specific one.
                let _ = (existing, v);
            }
            (Some(existing), v) if *existing != v => {
                return Err(SchemaError { path: path.into(), message: format!("conflicting {k} while merging") });
            }
            (_, v) => {
                map.insert(k, v);
            }
        }
    }
    Ok(())
}

/// Checks that an advertised schema is in the portable subset; returns every problem found.
pub fn portability_problems(schema: &Map<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    if schema.get("type") != Some(&json!("object")) {
        problems.push("root is not a plain object".into());
    }
    check_portable(&Value::Object(schema.clone()), "", &mut problems);
    problems
}

fn check_portable(node: &Value, path: &str, problems: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            for keyword in ["$ref", "const", "oneOf", "allOf", "$defs", "definitions", "not", "if"] {
                if map.contains_key(keyword) {
                    problems.push(format!("{path}: uses {keyword}"));
                }
            }
            if map.get("type").is_some_and(Value::is_array) {
                problems.push(format!("{path}: type array"));
            }
            if map.contains_key("anyOf") && map.keys().any(|k| k != "anyOf" && !ANNOTATIONS.contains(&k.as_str())) {
                problems.push(format!("{path}: anyOf beside other keywords"));
            }
            for (k, v) in map {
                if k == "enum" || k == "default" || k == "examples" || k == "required" {
                    continue;
                }
                check_portable(v, &format!("{path}/{k}"), problems);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                check_portable(item, &format!("{path}/{i}"), problems);
            }
        }
        _ => {}
    }
}

/// A compiled validator for a full schema: no remote fetching, a linear-time regex engine.
pub struct Validator(jsonschema::Validator);

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Validator")
    }
}

/// One reason a value failed its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// JSON pointer into the value (`/limit`); empty for the root.
    pub path: String,
    pub message: String,
}

impl Validator {
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .build(schema)
            .map(Validator)
            .map_err(|e| SchemaError { path: e.schema_path().to_string(), message: e.to_string() })
    }

    /// Every issue, in document order; empty when the value is valid.
    pub fn issues(&self, value: &Value) -> Vec<Issue> {
        self.0.iter_errors(value).flat_map(|e| issue(&e, value)).collect()
    }
}

/// One validation error as the caller reads it. An object that may hold no keys at all
/// (`additionalProperties: false` and no `properties`) fails as a bare "false schema" on the
/// object, naming neither the key nor why: each key it holds is named instead.
fn issue(e: &jsonschema::ValidationError<'_>, value: &Value) -> Vec<Issue> {
    let path = e.instance_path().to_string();
    let from_additional = e.schema_path().as_str().ends_with("/additionalProperties");
    if matches!(e.kind(), jsonschema::error::ValidationErrorKind::FalseSchema)
        && from_additional
        && let Some(object) = value.pointer(&path).and_then(Value::as_object)
    {
        return object
            .keys()
            .map(|key| Issue {
                path: format!("{path}/{}", key.replace('~', "~0").replace('/', "~1")),
                message: format!("unknown field {key:?} (this object takes no fields)"),
            })
            .collect();
    }
    vec![Issue { path, message: e.to_string() }]
}

#[cfg(test)]
mod validator_tests {
    use serde_json::json;

    use super::Validator;

    #[test]
    fn a_key_where_none_are_allowed_is_named() {
        let v = Validator::compile(&json!({"type": "object", "additionalProperties": false})).unwrap();
        let issues = v.issues(&json!({"vault": "bench", "a/b": 1}));
        let got: Vec<(&str, &str)> = issues.iter().map(|i| (i.path.as_str(), i.message.as_str())).collect();
        assert_eq!(
            got,
            [
                ("/a~1b", "unknown field \"a/b\" (this object takes no fields)"),
                ("/vault", "unknown field \"vault\" (this object takes no fields)")
            ]
        );
        assert!(v.issues(&json!({})).is_empty());
        let nested = Validator::compile(&json!({
            "type": "object",
            "properties": {"inner": {"type": "object", "additionalProperties": false}},
            "additionalProperties": false
        }))
        .unwrap();
        let issues = nested.issues(&json!({"inner": {"x": 1}, "extra": true}));
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        assert!(paths.contains(&"/inner/x"), "{issues:?}");
        assert!(issues.iter().any(|i| i.message.contains("extra")), "{issues:?}");
    }
}

#[cfg(test)]
mod unwrap_tests {
    use super::unwrap_lines;

    #[test]
    fn wrapped_lines_join_and_paragraphs_and_lists_keep_their_breaks() {
        assert_eq!(unwrap_lines("Set true to let a replace\ndiscard more."), "Set true to let a replace discard more.");
        assert_eq!(unwrap_lines("One.\n\nTwo\nthree."), "One.\n\nTwo three.");
        assert_eq!(unwrap_lines("Kinds:\n- a\n- b\nwrapped"), "Kinds:\n- a\n- b wrapped");
        assert_eq!(unwrap_lines("Steps:\n1. one\n2. two"), "Steps:\n1. one\n2. two");
        assert_eq!(unwrap_lines("plain"), "plain");
    }
}
