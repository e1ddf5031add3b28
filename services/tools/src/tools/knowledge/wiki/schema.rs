//! SCHEMA.md in a wiki folder (spec: "SCHEMA.md"): the page types, the frontmatter each
//! requires, the subfolder its pages go in, and the allowed property vocabulary, read from the
//! file's frontmatter (the body is prose and never parsed). It is read bounded: a file over
//! 64 KiB is not parsed, and a section over its count or length limit is cut, each with a
//! warning. What a page breaks comes back as problems; a rule its `conventions:` block marks
//! `severity: block` also refuses a tool's write that adds a breach of it (`vet.rs`).
//!
//! ```yaml
//! conventions:
//!   required_fields: block        # or {severity: block}
//!   vocabulary: block
//!   unknown_property: warn        # the default for every rule
//! ```

use std::collections::BTreeMap;

use serde_json::Value;

const MAX_BYTES: usize = 64 * 1024;
const MAX_TYPES: usize = 100;
const MAX_FIELDS: usize = 100;
const MAX_PROPERTIES: usize = 500;
const MAX_VALUES: usize = 200;
const MAX_CHARS: usize = 200;

/// Properties Obsidian itself uses, always allowed.
const OBSIDIAN_PROPERTIES: [&str; 3] = ["tags", "aliases", "cssclasses"];

/// The rules a page can break, each with its severity in `conventions:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// The page's `type` is not one of the types.
    UnknownType,
    /// A field its type requires is missing or empty.
    RequiredFields,
    /// The page is outside its type's folder.
    Folder,
    /// A property outside `properties`.
    UnknownProperty,
    /// A value outside its property's vocabulary.
    Vocabulary,
}

impl Rule {
    pub const ALL: [Rule; 5] =
        [Rule::UnknownType, Rule::RequiredFields, Rule::Folder, Rule::UnknownProperty, Rule::Vocabulary];

    pub fn as_str(self) -> &'static str {
        match self {
            Rule::UnknownType => "unknown_type",
            Rule::RequiredFields => "required_fields",
            Rule::Folder => "folder",
            Rule::UnknownProperty => "unknown_property",
            Rule::Vocabulary => "vocabulary",
        }
    }
}

/// What breaking a rule does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Severity {
    /// Reported (commit_wiki_page, draft_wiki_page, lint_wiki); the write goes on.
    #[default]
    Warn,
    /// Reported, and a tool's write that adds a breach is refused.
    Block,
}

/// One breach: the rule and what it says of the page.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Breach {
    pub rule: Rule,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// Page types in the file's order.
    pub types: Vec<PageType>,
    /// Allowed properties and, per property, the allowed values (None: any value). Empty: any
    /// property.
    pub properties: BTreeMap<String, Option<Vec<String>>>,
    /// The rules `conventions:` marks `block` (every other rule warns).
    pub blocking: Vec<Rule>,
    /// What was cut or could not be read.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageType {
    pub name: String,
    pub description: Option<String>,
    pub required: Vec<String>,
    /// The subfolder of the wiki folder its new pages go in.
    pub folder: Option<String>,
}

/// One thing a page does not do as the schema asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    pub message: String,
}

fn clip(text: &str, warnings: &mut Vec<String>, what: &str) -> String {
    if text.chars().count() <= MAX_CHARS {
        return text.to_string();
    }
    warnings.push(format!("{what} is longer than {MAX_CHARS} characters; it was cut"));
    text.chars().take(MAX_CHARS).collect()
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().filter_map(scalar).collect(),
        other => scalar(other).into_iter().collect(),
    }
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Schema {
    /// The schema in SCHEMA.md's text; Err with the reason when it cannot be read at all.
    pub fn parse(text: &str) -> Result<Schema, String> {
        if text.len() > MAX_BYTES {
            return Err(format!("SCHEMA.md is larger than {} KiB and was not parsed", MAX_BYTES / 1024));
        }
        let note = otc_parser::parse(text);
        let Some(fm) = note.frontmatter else { return Err("SCHEMA.md has no frontmatter".into()) };
        let Some(Value::Object(top)) = fm.value else {
            return Err(format!("SCHEMA.md's frontmatter does not parse: {}", fm.error.unwrap_or_default()));
        };
        let mut s = Schema::default();
        let w = &mut s.warnings;
        if let Some(Value::Object(types)) = top.get("types") {
            if types.len() > MAX_TYPES {
                w.push(format!("more than {MAX_TYPES} types; the rest were ignored"));
            }
            for (name, def) in types.iter().take(MAX_TYPES) {
                let mut t = PageType { name: clip(name, w, "a type name"), ..PageType::default() };
                if let Value::Object(def) = def {
                    t.description = def.get("description").and_then(scalar).map(|d| clip(&d, w, "a description"));
                    let required = def.get("required").map(strings).unwrap_or_default();
                    if required.len() > MAX_FIELDS {
                        w.push(format!("type {name}: more than {MAX_FIELDS} required fields; the rest were ignored"));
                    }
                    t.required = required.iter().take(MAX_FIELDS).map(|f| clip(f, w, "a field name")).collect();
                    t.folder = def.get("folder").and_then(scalar).map(|f| clip(f.trim_matches('/'), w, "a folder"));
                }
                s.types.push(t);
            }
        }
        if let Some(Value::Array(names)) = top.get("properties") {
            // A list of names: each property allowed, with any value.
            if names.len() > MAX_PROPERTIES {
                w.push(format!("more than {MAX_PROPERTIES} properties; the rest were ignored"));
            }
            for name in names.iter().take(MAX_PROPERTIES).filter_map(scalar) {
                let name = clip(&name, w, "a property name");
                s.properties.insert(name, None);
            }
        } else if let Some(other) = top.get("properties").filter(|v| !v.is_object() && !v.is_null()) {
            w.push(format!("properties is neither a list of names nor a map ({other}); it was ignored"));
        }
        if let Some(Value::Object(props)) = top.get("properties") {
            if props.len() > MAX_PROPERTIES {
                w.push(format!("more than {MAX_PROPERTIES} properties; the rest were ignored"));
            }
            for (name, values) in props.iter().take(MAX_PROPERTIES) {
                let name = clip(name, w, "a property name");
                let allowed = match values {
                    Value::Null => None,
                    other => {
                        let list = strings(other);
                        if list.len() > MAX_VALUES {
                            w.push(format!("property {name}: more than {MAX_VALUES} values; the rest were ignored"));
                        }
                        let list: Vec<String> = list.iter().take(MAX_VALUES).map(|v| clip(v, w, "a value")).collect();
                        (!list.is_empty()).then_some(list)
                    }
                };
                s.properties.insert(name, allowed);
            }
        }
        match top.get("conventions") {
            None | Some(Value::Null) => {}
            Some(Value::Object(rules)) => {
                for (name, setting) in rules.iter().take(MAX_FIELDS) {
                    let Some(rule) = Rule::ALL.into_iter().find(|r| r.as_str() == name) else {
                        let known: Vec<&str> = Rule::ALL.iter().map(|r| r.as_str()).collect();
                        w.push(format!("conventions: unknown rule {name:?} (known: {}); ignored", known.join(", ")));
                        continue;
                    };
                    let severity = match setting {
                        Value::Object(o) => o.get("severity").and_then(Value::as_str),
                        other => other.as_str(),
                    };
                    match severity {
                        Some("block") => s.blocking.push(rule),
                        Some("warn") => {}
                        other => w.push(format!(
                            "conventions: {name}'s severity is {}, not block or warn; it warns",
                            other.map_or_else(|| "missing".to_string(), |o| format!("{o:?}"))
                        )),
                    }
                }
            }
            Some(other) => w.push(format!("conventions is not a map of rules ({other}); it was ignored")),
        }
        Ok(s)
    }

    pub fn severity(&self, rule: Rule) -> Severity {
        if self.blocking.contains(&rule) { Severity::Block } else { Severity::Warn }
    }

    pub fn page_type(&self, name: &str) -> Option<&PageType> {
        self.types.iter().find(|t| t.name == name)
    }

    /// What a page of `page_type` (its frontmatter's `type` when None) at `path` in the wiki
    /// folder `wiki` does not do as the schema asks.
    pub fn check(&self, wiki: &str, path: &str, page_type: Option<&str>, frontmatter: Option<&Value>) -> Vec<String> {
        self.breaches(wiki, path, page_type, frontmatter).into_iter().map(|b| b.message).collect()
    }

    /// [`Schema::check`], each problem with the rule it breaks.
    pub fn breaches(
        &self,
        wiki: &str,
        path: &str,
        page_type: Option<&str>,
        frontmatter: Option<&Value>,
    ) -> Vec<Breach> {
        let mut out = Vec::new();
        let mut push = |rule: Rule, message: String| out.push(Breach { rule, message });
        let empty = serde_json::Map::new();
        let props = frontmatter.and_then(Value::as_object).unwrap_or(&empty);
        let declared = props.get("type").and_then(scalar);
        let kind = page_type.map(str::to_string).or(declared);
        if let Some(kind) = &kind
            && !self.types.is_empty()
        {
            match self.page_type(kind) {
                None => push(Rule::UnknownType, format!("type {kind:?} is not one of SCHEMA.md's types")),
                Some(t) => {
                    for field in &t.required {
                        if props.get(field).is_none_or(|v| v.is_null() || v.as_str() == Some("")) {
                            push(Rule::RequiredFields, format!("required field {field:?} of type {kind:?} is missing"));
                        }
                    }
                    if let Some(folder) = &t.folder {
                        let want = format!("{wiki}/{folder}/");
                        if !path.starts_with(&want) {
                            push(Rule::Folder, format!("{kind:?} pages go in {want}"));
                        }
                    }
                }
            }
        }
        if !self.properties.is_empty() {
            for (key, value) in props {
                if OBSIDIAN_PROPERTIES.contains(&key.as_str()) {
                    continue;
                }
                match self.properties.get(key) {
                    None => push(Rule::UnknownProperty, format!("property {key:?} is not in SCHEMA.md's properties")),
                    Some(Some(allowed)) => {
                        for v in strings(value) {
                            if !allowed.contains(&v) {
                                push(Rule::Vocabulary, format!("value {v:?} of {key:?} is outside its vocabulary"));
                            }
                        }
                    }
                    Some(None) => {}
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = "---\ntypes:\n  concept:\n    description: An idea or term\n    required: [type, summary, sources]\n    folder: concepts\n  person:\n    required: [type, summary]\nproperties:\n  type: [concept, person]\n  summary:\n  sources:\n  status: [draft, stable]\n---\nProse.\n";

    #[test]
    fn the_spec_example_reads_and_checks() {
        let s = Schema::parse(SCHEMA).unwrap();
        assert_eq!(s.types.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["concept", "person"]);
        assert_eq!(s.page_type("concept").unwrap().folder.as_deref(), Some("concepts"));
        let fm =
            serde_json::json!({"type": "concept", "summary": "s", "status": "final", "colour": "red", "tags": ["x"]});
        let problems = s.check("wiki", "wiki/Idea.md", None, Some(&fm));
        assert_eq!(
            problems,
            [
                "required field \"sources\" of type \"concept\" is missing",
                "\"concept\" pages go in wiki/concepts/",
                "property \"colour\" is not in SCHEMA.md's properties",
                "value \"final\" of \"status\" is outside its vocabulary",
            ]
        );
        let good = serde_json::json!({"type": "person", "summary": "s"});
        assert!(s.check("wiki", "wiki/people/Ada.md", None, Some(&good)).is_empty());
        assert_eq!(
            s.check("wiki", "wiki/x.md", Some("place"), None),
            ["type \"place\" is not one of SCHEMA.md's types"]
        );
    }

    #[test]
    fn properties_may_be_a_list_of_names() {
        let s = Schema::parse("---\nproperties: [type, summary]\n---\n").unwrap();
        assert_eq!(s.properties.keys().collect::<Vec<_>>(), ["summary", "type"]);
        let fm = serde_json::json!({"type": "x", "colour": "red"});
        let problems = s.check("wiki", "wiki/a.md", None, Some(&fm));
        assert_eq!(problems, ["property \"colour\" is not in SCHEMA.md's properties"]);
        assert!(Schema::parse("---\nproperties: 3\n---\n").unwrap().warnings[0].contains("neither"));
    }

    #[test]
    fn conventions_mark_rules_block_and_warn_of_the_rest() {
        let text = "---\nproperties:\n  status: [draft, stable]\nconventions:\n  vocabulary: block\n  folder: {severity: block}\n  unknown_property: warn\n  colour: block\n  required_fields: loud\n---\n";
        let s = Schema::parse(text).unwrap();
        assert_eq!(s.blocking, [Rule::Folder, Rule::Vocabulary]);
        assert_eq!(s.severity(Rule::Vocabulary), Severity::Block);
        assert_eq!(s.severity(Rule::UnknownProperty), Severity::Warn);
        assert_eq!(s.severity(Rule::RequiredFields), Severity::Warn);
        assert!(s.warnings.iter().any(|w| w.contains("unknown rule \"colour\"")), "{:?}", s.warnings);
        assert!(s.warnings.iter().any(|w| w.contains("required_fields's severity is \"loud\"")), "{:?}", s.warnings);
        let fm = serde_json::json!({"status": "final", "owner": "x"});
        let rules: Vec<Rule> = s.breaches("wiki", "wiki/a.md", None, Some(&fm)).into_iter().map(|b| b.rule).collect();
        assert_eq!(rules, [Rule::UnknownProperty, Rule::Vocabulary]);
        assert!(Schema::parse("---\nconventions: [a]\n---\n").unwrap().warnings[0].contains("not a map"));
    }

    #[test]
    fn bounded_reading() {
        assert!(Schema::parse(&"x".repeat(70_000)).unwrap_err().contains("64 KiB"));
        assert!(Schema::parse("no frontmatter").is_err());
        let many: String = (0..150).map(|i| format!("  t{i}:\n    required: [a]\n")).collect();
        let s = Schema::parse(&format!("---\ntypes:\n{many}---\n")).unwrap();
        assert_eq!(s.types.len(), 100);
        assert!(s.warnings[0].contains("more than 100 types"), "{:?}", s.warnings);
    }
}
