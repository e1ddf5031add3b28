//! The error catalogue: every failure a caller sees carries one of these 42 codes (the spec's
//! 36, five more of the public implementation's, and `service_unavailable`, which names the
//! dependency an outage took away), a default message, a fixed recovery hint
//! and a retryable flag. The hint is chosen by the code alone (or,
//! for a few failures, by the throw site from its own fixed alternatives), so it can never carry a
//! path, query or other caller data; specifics go in `details`.
//!
//! A hint may name tools. Each row lists its hint alternatives, best first, with the tools each
//! one names; the dispatcher gives a caller the first alternative whose tools that caller can
//! reach (`ToolError::resolve_hint`), so a deployment never points anyone at a tool it does not
//! offer. The last alternative of every row names no tool.
//!
//! `docs/error-codes.md` is generated from [`TABLE`] by [`markdown`]; a test keeps it in step.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Map;
pub use serde_json::Value;

/// One recovery hint and the tools its text names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hint {
    pub text: &'static str,
    pub tools: &'static [&'static str],
}

/// One row of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct CodeInfo {
    pub code: ErrorCode,
    pub message: &'static str,
    /// Best first; the last names no tool.
    pub hints: &'static [Hint],
    pub retryable: bool,
    /// The HTTP status an answer with this code carries where the protocol is HTTP (the /v1
    /// API, SCIM, the OAuth endpoints' JSON); MCP tool results carry the code alone.
    pub http_status: u16,
}

impl CodeInfo {
    /// The full hint (the first alternative), as the docs show it.
    pub fn hint(&self) -> &'static str {
        self.hints[0].text
    }
}

/// The first of `hints` whose tools are all `reachable`; the last one when none is.
pub fn choose_hint(hints: &'static [Hint], reachable: impl Fn(&str) -> bool) -> &'static str {
    hints.iter().find(|h| h.tools.iter().all(|t| reachable(t))).or(hints.last()).map(|h| h.text).unwrap_or("")
}

macro_rules! catalogue {
    ($( $variant:ident => $code:literal, $retry:literal, $status:literal, $message:literal,
        $( $hint:literal $( [ $( $tool:ident ),* ] )? )|+ ; )*) => {
        /// A stable error code: what a client branches on.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorCode { $( $variant, )* }

        /// Every code, alphabetically.
        pub const TABLE: &[CodeInfo] = &[
            $( CodeInfo {
                code: ErrorCode::$variant,
                message: $message,
                hints: &[ $( Hint { text: $hint, tools: &[ $( $( stringify!($tool), )* )? ] }, )+ ],
                retryable: $retry,
                http_status: $status,
            }, )*
        ];

        impl ErrorCode {
            pub fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $code, )* }
            }

            pub fn parse(code: &str) -> Option<Self> {
                match code { $( $code => Some(ErrorCode::$variant), )* _ => None }
            }
        }
    };
}

// Each row: code, retryable, HTTP status, default message, hints. A hint that names a tool
// lists it in brackets after the text; `|` separates alternatives.
catalogue! {
    Aborted => "aborted", true, 400, "the caller cancelled the operation",
        "The request was cancelled before it finished. Send it again if you still want the result.";
    AclDenied => "acl_denied", false, 403, "the folder ACL does not allow this path",
        "This path is outside the folders this caller may use here. Ask inspect_acl which folders are open and stay inside them." [inspect_acl]
        | "This path is outside the folders this caller may use here. Stay inside the folders the vault's ACL opens to you.";
    BasesSyntaxError => "bases_syntax_error", false, 400, "the .base file has invalid YAML or filter syntax",
        "Correct the .base file; read_base shows how the server reads it." [read_base]
        | "Correct the .base file's YAML or filter syntax.";
    CommandNotAllowlisted => "command_not_allowlisted", false, 403, "the command is not on this vault's allowlist",
        "Commands are denied unless allowlisted. Add it to the vault's allowlist, or pick one that list_commands shows." [list_commands]
        | "Commands are denied unless allowlisted. Add it to the vault's allowlist, or use an allowlisted command.";
    ComputeBudgetExceeded => "compute_budget_exceeded", false, 422, "the operation ran out of its compute budget",
        "The same input will exhaust the budget again, so do not retry as is. Simplify the pattern or expression, or run it over fewer notes.";
    ConcurrentModification => "concurrent_modification", true, 409, "the note changed since it was read",
        "Someone changed the note after you read it. Read it again, redo your edit on the new text and send the new content hash.";
    Conflict => "conflict", false, 409, "the request conflicts with the current state",
        "Read the current state, apply your change to it and try again.";
    ContentRejected => "content_rejected", false, 422, "the content was rejected by the poison scan",
        "Nothing was written. Remove instruction-like or hidden text from the content, or mark it as human-authored if a person vouches for it.";
    DqlError => "dql_error", false, 400, "Dataview rejected the query",
        "Check the query with validate_dql, which reports the syntax error without running it." [validate_dql]
        | "Correct the query's Dataview syntax and try again.";
    EgressExcluded => "egress_excluded", false, 403, "the egress guard refused to send this text out",
        "This text is marked as never leaving the server (an excluded folder or property). Leave it out of the request, or ask the operator which content is excluded.";
    ElicitInvalid => "elicit_invalid", false, 403, "the confirmation token is invalid, spent or expired",
        "Send the original call again without a token to get a fresh confirmation request.";
    ElicitRequired => "elicit_required", false, 428, "a human must confirm this call",
        "Ask a person to confirm: they run details.command (`obsidian-tc elicit`), or an admin calls POST /v1/elicit, and you resend the same call with the token as elicit_token.";
    EmbeddingProviderError => "embedding_provider_error", true, 502, "the embedding provider failed",
        "Retry shortly. If it keeps failing, server_health shows whether the embedding provider is reachable and configured." [server_health]
        | "Retry shortly. If it keeps failing, ask whoever runs the server to check the embedding provider.";
    ExecuteCommandDisabled => "execute_command_disabled", false, 403, "command execution is turned off for this vault",
        "Running commands is disabled by configuration for this vault; retrying will not change that.";
    Forbidden => "forbidden", false, 403, "the caller may not do this",
        "A required scope or binding is missing (details name it). Use a credential that grants it, or ask inspect_acl what this caller may reach." [inspect_acl]
        | "A required scope or binding is missing (details name it). Use a credential that grants it.";
    IdempotencyInFlight => "idempotency_in_flight", true, 409, "a call with this idempotency key is still running",
        "Wait a moment and send the same call with the same key again: once the first call finishes, it answers with that call's result.";
    IdempotencyKeyMismatch => "idempotency_key_mismatch", false, 422, "the idempotency key was already used with other arguments",
        "A key stands for one call. Send the original arguments to get the first result, or use a new key for a different call.";
    IndeterminateOutcome => "indeterminate_outcome", false, 500, "the change may have been applied; verify before acting again",
        "The effect may have landed before the failure. Read the target again (read_note shows a note's current state) before deciding what to do; this key will not run the call again." [read_note]
        | "The effect may have landed before the failure. Check the target's current state before deciding what to do; this key will not run the call again.";
    Internal => "internal", true, 500, "internal error",
        "Something failed inside the server. Retry once; if it fails again, check server_health and the server log." [server_health]
        | "Something failed inside the server. Retry once; if it fails again, report the call to whoever runs the server.";
    InternalError => "internal_error", true, 500, "the tool failed internally",
        "The tool failed unexpectedly. Retry once; if it fails again, report the call to whoever runs the server.";
    InvalidInput => "invalid_input", false, 400, "invalid input",
        "An argument has an acceptable type but an unacceptable value (details name it). Fix it using describe_capability's schema and try again." [describe_capability]
        | "An argument has an acceptable type but an unacceptable value (details name it). Fix it and try again.";
    JsonlogicError => "jsonlogic_error", false, 400, "the JSONLogic expression is invalid",
        "Check the operator names and that each operator gets the number of arguments it takes.";
    NotFound => "not_found", false, 404, "not found",
        "The target does not exist. note_exists checks a path, list_notes lists a folder and search_vault finds notes by content." [note_exists, list_notes, search_vault]
        | "The target does not exist. note_exists checks a path and list_notes lists a folder." [note_exists, list_notes]
        | "The target does not exist. Check its name and try again.";
    NoteExists => "note_exists", false, 409, "a note already exists at that path",
        "Pick another path, or use the tool's overwrite or append option if it has one.";
    NoteNotFound => "note_not_found", false, 404, "note not found",
        "Check the path: note_exists tests it, list_notes shows the folder, search_vault finds the note by content." [note_exists, list_notes, search_vault]
        | "Check the path: note_exists tests it and list_notes shows the folder." [note_exists, list_notes]
        | "Check the path and the vault name.";
    OperationTimeout => "operation_timeout", true, 504, "the operation ran out of time",
        "Narrow the request (a smaller limit or a more selective query) before trying again.";
    Overflow => "overflow", false, 413, "the response is larger than the byte budget",
        "Ask for less: a smaller limit, fewer paths, or a paged or concise read. The same request will overflow again.";
    PathAmbiguous => "path_ambiguous", false, 409, "the path matches more than one note",
        "Give the full vault-relative path; list_notes or search_vault show the candidates." [list_notes, search_vault]
        | "Give the full vault-relative path; list_notes shows the candidates." [list_notes]
        | "Give the full vault-relative path.";
    PathInvalid => "path_invalid", false, 400, "the path is invalid",
        "Use a vault-relative path that stays inside the vault, without '..', a leading slash or control characters.";
    PluginIncompatible => "plugin_incompatible", false, 501, "the companion plugin's API version does not match this server",
        "One side must be upgraded so their major versions match; retrying will not help.";
    PluginMissing => "plugin_missing", false, 501, "a required Obsidian plugin is not installed or enabled",
        "Enable the plugin in Obsidian, then run refresh_plugin_capabilities so the server checks again." [refresh_plugin_capabilities]
        | "Enable the plugin in Obsidian, then try again.";
    PluginUnavailable => "plugin_unavailable", false, 501, "the companion plugin is not answering",
        "This needs the companion plugin in a running Obsidian. Use a tool that works on the files alone, or start Obsidian with the plugin enabled.";
    PluginUnreachable => "plugin_unreachable", true, 502, "the plugin is present but its endpoint failed",
        "Retry shortly; make sure Obsidian is running with its Local REST API reachable.";
    ReadOnly => "read_only", false, 403, "the server is in read-only mode",
        "No write can succeed while the server is read-only. Use a read tool, or ask the operator.";
    ReadOnlyMode => "read_only_mode", false, 403, "the vault is read-only",
        "This vault is configured read-only. Write to another vault, or ask the operator to change its configuration.";
    RequiresLiveObsidian => "requires_live_obsidian", false, 501, "this needs a live Obsidian session",
        "This vault is served without a running Obsidian. Use a tool that works on the files alone.";
    ServiceUnavailable => "service_unavailable", true, 503, "a service the server depends on is unavailable",
        "A service this server depends on did not answer (details.dependency names it). Retry after a short wait; if the call was a write, read its target first to see whether it landed.";
    Throttled => "throttled", true, 429, "rate limit exceeded",
        "Too many calls of this kind. Wait before retrying (details give how long), and spread or batch the calls.";
    Unauthorized => "unauthorized", false, 401, "authentication required",
        "Send a valid credential (a bearer token or a signed-in session) and call again.";
    UnsupportedBaseFilter => "unsupported_base_filter", false, 400, "the base uses filter expressions this server does not evaluate",
        "Read the base and filter its rows yourself, or simplify its filter.";
    ValidationError => "validation_error", false, 400, "the arguments do not match the tool's input schema",
        "Read the tool's inputSchema with describe_capability and correct the arguments; details name the field." [describe_capability]
        | "Correct the arguments to match the tool's inputSchema; details name the field.";
    VaultNotFound => "vault_not_found", false, 404, "vault not found",
        "Use a vault from list_vaults." [list_vaults]
        | "Check the vault name (names are case-sensitive).";
}

impl ErrorCode {
    pub fn info(self) -> &'static CodeInfo {
        TABLE.iter().find(|row| row.code == self).expect("every code has a row")
    }

    pub fn retryable(self) -> bool {
        self.info().retryable
    }

    /// The HTTP status of an answer carrying this code (see [`CodeInfo::http_status`]).
    pub fn http_status(self) -> u16 {
        self.info().http_status
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A failure a caller can act on: a code, a message (the default or a more specific one that
/// names no secret and no other tenant's data), structured details and the recovery hint.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Map<String, Value>,
    /// The hint alternatives: the code's own, or fixed ones a throw site gave.
    hints: &'static [Hint],
    /// The alternative chosen for the caller by [`ToolError::resolve_hint`].
    chosen: Option<&'static str>,
}

/// The most characters of caller input an error repeats.
pub const ECHO_CHARS: usize = 256;

/// The most items a list in an error's details carries.
pub const MAX_DETAIL_ITEMS: usize = 50;

/// `text` cut to [`ECHO_CHARS`] characters, with an ellipsis when cut.
pub fn echo(text: &str) -> String {
    match text.char_indices().nth(ECHO_CHARS) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

impl ToolError {
    /// The code with its default message.
    pub fn new(code: ErrorCode) -> Self {
        Self::with_message(code, code.info().message)
    }

    /// The code with a specific message.
    pub fn with_message(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), details: Map::new(), hints: code.info().hints, chosen: None }
    }

    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_string(), value.into());
        self
    }

    /// A detail that echoes text the caller sent (a name, a path), cut to [`ECHO_CHARS`]
    /// characters so an error never repeats an unbounded input back.
    pub fn echo(self, key: &str, text: &str) -> Self {
        self.detail(key, echo(text))
    }

    /// Every string in `details` (at any depth) and the message cut to [`ECHO_CHARS`] characters
    /// (the message to four times that), and every list to [`MAX_DETAIL_ITEMS`] items (how many
    /// a top-level list left out in `<key>_omitted`): what the answer repeats stays bounded
    /// whichever throw site put it there.
    pub fn bounded(mut self) -> Self {
        fn cut(value: &mut Value) -> usize {
            match value {
                Value::String(text) if text.chars().nth(ECHO_CHARS).is_some() => *text = echo(text),
                Value::Array(items) => {
                    let omitted = items.len().saturating_sub(MAX_DETAIL_ITEMS);
                    items.truncate(MAX_DETAIL_ITEMS);
                    items.iter_mut().for_each(|item| {
                        cut(item);
                    });
                    return omitted;
                }
                Value::Object(map) => map.values_mut().for_each(|item| {
                    cut(item);
                }),
                _ => {}
            }
            0
        }
        let mut omitted = Vec::new();
        for (key, value) in self.details.iter_mut() {
            let left = cut(value);
            if left > 0 {
                omitted.push((format!("{key}_omitted"), left));
            }
        }
        for (key, left) in omitted {
            self.details.insert(key, left.into());
        }
        if let Some((end, _)) = self.message.char_indices().nth(4 * ECHO_CHARS) {
            self.message.truncate(end);
            self.message.push('…');
        }
        self
    }

    /// Hints of this failure's own instead of the code's (fixed text, best first, the last
    /// naming no tool).
    pub fn with_hints(mut self, hints: &'static [Hint]) -> Self {
        self.hints = hints;
        self.chosen = None;
        self
    }

    /// Picks the first hint whose tools the caller can reach (once; later calls keep it).
    pub fn resolve_hint(&mut self, reachable: impl Fn(&str) -> bool) {
        if self.chosen.is_none() {
            self.chosen = Some(choose_hint(self.hints, reachable));
        }
    }

    pub fn retryable(&self) -> bool {
        self.code.retryable()
    }

    /// The hint chosen for the caller; before that, the alternative that names no tool.
    pub fn hint(&self) -> &'static str {
        self.chosen.unwrap_or_else(|| self.hints.last().map(|h| h.text).unwrap_or(""))
    }

    /// The structured payload a client receives: {code, message, retryable, hint, details}.
    pub fn to_payload(&self) -> Value {
        serde_json::json!({
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable(),
            "hint": self.hint(),
            "details": Value::Object(self.details.clone()),
        })
    }
}

impl From<ErrorCode> for ToolError {
    fn from(code: ErrorCode) -> Self {
        ToolError::new(code)
    }
}

/// The catalogue as Markdown: the text of `docs/error-codes.md`.
/// An error with every cause in its chain, for logs (never for callers).
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The codes of the catalogue this server never raises, and why: a client may still branch on
/// them (the spec names them), but no call here answers with one. A tidy test keeps the list
/// true: none of these is constructed anywhere, and every other code is.
pub const NOT_RAISED: &[(ErrorCode, &str)] = &[
    (
        ErrorCode::CommandNotAllowlisted,
        "This hosted server runs no Obsidian commands (there is no app to run them in), so there is no allowlist to miss.",
    ),
    (ErrorCode::ExecuteCommandDisabled, "No command execution exists here to be turned off."),
    (
        ErrorCode::PathAmbiguous,
        "Every tool takes an exact vault-relative path, and links and note names resolve by Obsidian's rule, which always picks one file: a path never names more than one note. A name that differs from an existing one only in case or Unicode form is refused as `conflict` when written.",
    ),
    (ErrorCode::PluginIncompatible, "No companion plugin is spoken to: vaults are served from their files, headless."),
    (
        ErrorCode::PluginMissing,
        "Vaults are served from their files, so no Obsidian plugin is required; what a plugin would add is either built in or answered as `plugin_unavailable`.",
    ),
    (
        ErrorCode::RequiresLiveObsidian,
        "What would need a live app (the active file, commands) answers `plugin_unavailable` with the reason in details.",
    ),
    (
        ErrorCode::Unauthorized,
        "A missing or invalid credential is refused at HTTP, before any tool runs: 401 with a WWW-Authenticate challenge naming the resource metadata, as the MCP authorization spec wants.",
    ),
];

pub fn markdown() -> String {
    let mut out = String::from(
        "# Error codes\n\n\
         <!-- Generated from shared/errors/src/lib.rs by `cargo run -p otc-errors --bin error-docs`; \
         a test fails when this file and the table differ. -->\n\n\
         Every failure a tool returns carries one of these codes in `structuredContent.code`, with \
         `message`, `retryable`, `hint` (fixed per code, never caller data) and `details` (the \
         specifics, e.g. the offending field). Branch on the code, not the message. Over the /v1 \
         API the answer's HTTP status is the code's own (the HTTP column). A hint that \
         names a tool the caller cannot reach on this deployment is replaced by the code's next \
         alternative (shown after \"Otherwise:\"); the last one names no tool.\n\n\
         | code | retryable | HTTP | default message | what to do |\n|---|---|---|---|---|\n",
    );
    for row in TABLE {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            row.code,
            if row.retryable { "yes" } else { "no" },
            row.http_status,
            row.message,
            row.hints.iter().map(|h| h.text).collect::<Vec<_>>().join(" Otherwise: ").replace('|', "\\|")
        ));
    }
    out.push_str("\n## Codes this server does not raise\n\nThe spec names them, so clients may branch on them; no call here answers with one.\n\n| code | why |\n|---|---|\n");
    for (code, why) in NOT_RAISED {
        out.push_str(&format!("| `{code}` | {} |\n", why.replace('|', "\\|")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_42_unique_sorted_snake_case_codes() {
        assert_eq!(TABLE.len(), 42);
        let codes: Vec<&str> = TABLE.iter().map(|r| r.code.as_str()).collect();
        let mut sorted = codes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(codes, sorted, "sorted and unique");
        for row in TABLE {
            let code = row.code.as_str();
            assert!(code.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{code}");
            assert_eq!(ErrorCode::parse(code), Some(row.code));
            assert!(!row.message.is_empty() && row.hints.iter().all(|h| !h.text.is_empty()), "{code}");
        }
    }

    #[test]
    fn every_code_has_an_error_status_that_agrees_with_its_kind() {
        for row in TABLE {
            let (code, status) = (row.code, row.http_status);
            assert!((400..=599).contains(&status), "{code}: {status}");
            // A retryable code is the server's or a dependency's moment (5xx), or a wait (409,
            // 429) or a cancellation; a 5xx is never the caller's mistake to fix.
            if status >= 500 {
                assert!(
                    row.retryable || matches!(code, ErrorCode::IndeterminateOutcome) || status == 501,
                    "{code}: a 5xx other than 501 must be retryable or indeterminate"
                );
            }
        }
        use ErrorCode as C;
        for (code, status) in [
            (C::Unauthorized, 401),
            (C::AclDenied, 403),
            (C::VaultNotFound, 404),
            (C::NoteExists, 409),
            (C::IdempotencyKeyMismatch, 422),
            (C::Overflow, 413),
            (C::Throttled, 429),
            (C::InternalError, 500),
            (C::PluginUnreachable, 502),
            (C::OperationTimeout, 504),
            (C::ServiceUnavailable, 503),
            (C::InvalidInput, 400),
        ] {
            assert_eq!(code.http_status(), status, "{code}");
        }
    }

    #[test]
    fn lists_in_details_are_cut_and_say_how_many_they_left_out() {
        let many: Vec<u32> = (0..500).collect();
        let err = ToolError::new(ErrorCode::Conflict)
            .detail("stale", many.clone())
            .detail("nested", serde_json::json!({"lines": many}))
            .detail("few", vec![1, 2])
            .bounded();
        assert_eq!(err.details["stale"].as_array().unwrap().len(), MAX_DETAIL_ITEMS);
        assert_eq!(err.details["stale_omitted"], 450);
        assert_eq!(err.details["nested"]["lines"].as_array().unwrap().len(), MAX_DETAIL_ITEMS);
        assert_eq!(err.details["few"], serde_json::json!([1, 2]));
        assert!(err.details.get("few_omitted").is_none());
    }

    #[test]
    fn echoed_input_is_cut() {
        assert_eq!(echo("Notes"), "Notes");
        let long = "é".repeat(3 * 1024 * 1024);
        assert_eq!(echo(&long).chars().count(), ECHO_CHARS + 1);
        let err = ToolError::new(ErrorCode::VaultNotFound).echo("vault", &long);
        assert!(err.details["vault"].as_str().unwrap().len() < 1024);
    }

    #[test]
    fn retryable_flags_match_the_published_catalogue() {
        let retryable: Vec<&str> = TABLE.iter().filter(|r| r.retryable).map(|r| r.code.as_str()).collect();
        assert_eq!(
            retryable,
            [
                "aborted",
                "concurrent_modification",
                "embedding_provider_error",
                "idempotency_in_flight",
                "internal",
                "internal_error",
                "operation_timeout",
                "plugin_unreachable",
                "service_unavailable",
                "throttled"
            ]
        );
    }

    #[test]
    fn docs_error_codes_md_is_generated_from_the_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/error-codes.md");
        let committed = std::fs::read_to_string(path).expect("docs/error-codes.md exists");
        assert!(
            committed == markdown(),
            "docs/error-codes.md is stale: run `cargo run -p otc-errors --bin error-docs`"
        );
    }

    #[test]
    fn payload_shape() {
        let err =
            ToolError::with_message(ErrorCode::ValidationError, "limit must be at most 500").detail("field", "limit");
        let payload = err.to_payload();
        assert_eq!(payload["code"], "validation_error");
        assert_eq!(payload["retryable"], false);
        assert_eq!(payload["details"]["field"], "limit");
        assert_eq!(payload["hint"], *ErrorCode::ValidationError.info().hints.last().unwrap().text);
    }

    #[test]
    fn every_row_ends_with_a_hint_naming_no_tool_and_names_its_tools() {
        for row in TABLE {
            assert!(row.hints.last().unwrap().tools.is_empty(), "{}: the last hint names no tool", row.code);
            for hint in row.hints {
                for tool in hint.tools {
                    assert!(hint.text.contains(tool), "{}: {tool} is not in {:?}", row.code, hint.text);
                }
            }
        }
    }

    #[test]
    fn the_caller_gets_the_first_hint_it_can_follow() {
        let all = |_: &str| true;
        let no_search = |t: &str| t != "search_vault";
        let row = ErrorCode::NoteNotFound.info();
        assert_eq!(choose_hint(row.hints, all), row.hints[0].text);
        assert_eq!(choose_hint(row.hints, no_search), row.hints[1].text);
        assert_eq!(choose_hint(row.hints, |_| false), row.hints[2].text);
        let mut err = ToolError::new(ErrorCode::NoteNotFound);
        err.resolve_hint(no_search);
        err.resolve_hint(all);
        assert_eq!(err.hint(), row.hints[1].text, "the first resolution holds");
        const OWN: &[Hint] = &[Hint { text: "Use x_tool.", tools: &["x_tool"] }, Hint { text: "Give up.", tools: &[] }];
        let mut err = ToolError::new(ErrorCode::NotFound).with_hints(OWN);
        err.resolve_hint(|t| t == "x_tool");
        assert_eq!(err.to_payload()["hint"], "Use x_tool.");
    }
}
