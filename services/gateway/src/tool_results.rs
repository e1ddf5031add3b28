//! A tool's answer as an MCP tool result, shared by tools/call (`mcp`) and the Tasks
//! extension's results (`native_tasks`).

use otc_errors::ToolError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// A successful result: the structured value, and the same as text for clients that read
/// nothing else.
pub fn success(value: Value) -> CallToolResult {
    let text = serde_json::to_string(&value).unwrap_or_default();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if value.is_object() {
        result.structured_content = Some(value);
    }
    result
}

/// A tool failure as a tool result (isError), so a model can read it and correct itself.
pub fn failure(err: &ToolError) -> CallToolResult {
    failure_payload(err.to_payload())
}

/// A failure's catalogue payload (`ToolError::to_payload`) as a tool result.
pub fn failure_payload(payload: Value) -> CallToolResult {
    let field = |k: &str| payload.get(k).and_then(Value::as_str).unwrap_or_default();
    let text = format!("{}: {}. {}", field("code"), field("message"), field("hint"));
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(payload);
    result
}
