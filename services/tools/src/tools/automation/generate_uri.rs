use std::collections::BTreeMap;

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool};

pub struct GenerateUri;

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Open,
    New,
    Daily,
    Unique,
    Search,
    ChooseVault,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Open => "open",
            Action::New => "new",
            Action::Daily => "daily",
            Action::Unique => "unique",
            Action::Search => "search",
            Action::ChooseVault => "choose-vault",
        }
    }

    /// The parameters Obsidian reads for the action (besides vault), from its URI documentation.
    fn params(self) -> &'static [&'static str] {
        const WRITE: [&str; 7] = ["content", "clipboard", "silent", "append", "prepend", "overwrite", "paneType"];
        match self {
            Action::Open => &["file", "path", "paneType"],
            Action::New => &[
                "name",
                "file",
                "path",
                "content",
                "clipboard",
                "silent",
                "append",
                "prepend",
                "overwrite",
                "paneType",
            ],
            Action::Daily => &WRITE,
            Action::Unique => &["content", "clipboard", "paneType"],
            Action::Search => &["query"],
            Action::ChooseVault => &[],
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Its name in the person's Obsidian.
    #[serde(default)]
    pub vault_name: Option<String>,
    pub action: Action,
    /// Obsidian's URI parameters for the action (open: file or path; new: name, content...;
    /// search: query).
    #[serde(default)]
    pub params: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub uri: String,
}

/// What encodeURIComponent leaves as it is, as Obsidian's URI handler expects.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// The obsidian:// URI for `action` with `params` (checked against what the action reads).
pub fn uri(vault: Option<&str>, action: Action, params: &BTreeMap<String, String>) -> Result<String, ToolError> {
    let allowed = action.params();
    if let Some(key) =
        params.keys().find(|k| !allowed.contains(&k.as_str()) && !matches!(k.as_str(), "x-success" | "x-error"))
    {
        return Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            format!("obsidian://{} does not take the parameter {key:?}", action.as_str()),
        )
        .detail("field", "params")
        .detail("allowed", allowed.to_vec()));
    }
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    if let Some(vault) = vault {
        pairs.push(("vault", vault));
    }
    pairs.extend(params.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", utf8_percent_encode(k, COMPONENT), utf8_percent_encode(v, COMPONENT)))
        .collect();
    let mut uri = format!("obsidian://{}", action.as_str());
    if !query.is_empty() {
        uri.push('?');
        uri.push_str(&query.join("&"));
    }
    Ok(uri)
}

impl Tool for GenerateUri {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        response_format: Format::Fixed { why: "one URI" },
        core: false,
        ..ToolSpec::base(
            "generate_uri",
            "Make an obsidian:// link",
            "Builds an obsidian:// link to open a note or run an action in a person's Obsidian (opens nothing).",
            Domain::Automation,
        )
    };

    async fn call(_ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let params = input.params.unwrap_or_default();
        Ok(Output { uri: uri(input.vault_name.as_deref(), input.action, &params)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_encoded_as_encode_uri_component_does() {
        let params = BTreeMap::from([("file".to_string(), "Notes/Plan (v2) & co.md".to_string())]);
        assert_eq!(
            uri(Some("My Vault"), Action::Open, &params).unwrap(),
            "obsidian://open?vault=My%20Vault&file=Notes%2FPlan%20(v2)%20%26%20co.md"
        );
        assert_eq!(uri(None, Action::ChooseVault, &BTreeMap::new()).unwrap(), "obsidian://choose-vault");
        let unicode = BTreeMap::from([("query".to_string(), "café #tag".to_string())]);
        assert_eq!(uri(None, Action::Search, &unicode).unwrap(), "obsidian://search?query=caf%C3%A9%20%23tag");
    }

    #[test]
    fn a_parameter_the_action_does_not_read_is_refused() {
        let params = BTreeMap::from([("content".to_string(), "x".to_string())]);
        let err = uri(None, Action::Open, &params).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        assert_eq!(err.details["field"], "params");
    }
}
