//! JSON-RPC's own errors for malformed MCP messages, before the transport sees them. rmcp's
//! streamable HTTP service answers a body it cannot decode with HTTP 415 and a plain-text
//! message, and a `tools/call` whose `arguments` is not an object with method-not-found; MCP
//! clients expect JSON-RPC: a parse error (-32700) for a body that is not JSON (invalid UTF-8,
//! nesting past serde_json's limit of 128 included), an invalid request (-32600) for a batch
//! (neither era of MCP has them), a `jsonrpc` other than "2.0", or a method that is not a
//! string, and invalid params (-32602) for params or arguments that are not objects. Each comes
//! back as HTTP 400 with the JSON-RPC error in a JSON body, the request's id when it has one.
//!
//! A POST whose content type is not JSON is left to the transport (415 is the right answer to
//! it); a well-formed message passes on untouched, its bytes as they came.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// The middleware on every MCP endpoint.
pub async fn guard(request: Request, next: Next) -> Response {
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/json"));
    if request.method() != Method::POST || !json {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // The body limit further out bounds this read; past it the read fails.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return (StatusCode::PAYLOAD_TOO_LARGE, "the request body is larger than this server accepts")
                .into_response();
        }
    };
    if let Err((id, code, message)) = check(&bytes) {
        return error(id, code, message);
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// Whether `bytes` is one JSON-RPC 2.0 message MCP can take; the refusal with the request's id
/// (when it has a usable one), the code and the message otherwise.
fn check(bytes: &[u8]) -> Result<(), (Value, i64, &'static str)> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|_| (Value::Null, PARSE_ERROR, "Parse error: the body is not JSON"))?;
    let Value::Object(message) = value else {
        let why = if value.is_array() {
            "Invalid Request: JSON-RPC batches are not supported; send one message per request"
        } else {
            "Invalid Request: a message is a JSON object"
        };
        return Err((Value::Null, INVALID_REQUEST, why));
    };
    let id = message.get("id").filter(|i| i.is_string() || i.is_number()).cloned().unwrap_or(Value::Null);
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\""));
    }
    match message.get("method") {
        Some(Value::String(_)) => {}
        Some(_) => return Err((id, INVALID_REQUEST, "Invalid Request: method must be a string")),
        // A response (to a request the server made) carries a result or an error instead.
        None if message.contains_key("result") || message.contains_key("error") => return Ok(()),
        None => return Err((id, INVALID_REQUEST, "Invalid Request: a request names its method")),
    }
    match message.get("params") {
        None | Some(Value::Object(_)) => {}
        Some(_) => return Err((id, INVALID_PARAMS, "Invalid params: params must be an object")),
    }
    let arguments = message.get("params").and_then(|p| p.get("arguments"));
    if message.get("method").and_then(Value::as_str) == Some("tools/call")
        && arguments.is_some_and(|a| !a.is_object() && !a.is_null())
    {
        return Err((id, INVALID_PARAMS, "Invalid params: arguments must be an object"));
    }
    Ok(())
}

fn error(id: Value, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_malformed_message_gets_its_json_rpc_code() {
        let code = |body: &[u8]| check(body).err().map(|(id, code, _)| (id, code));
        let ok = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}"#;
        assert_eq!(code(ok), None);
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), None, "a response to the server");
        assert_eq!(code(b"not json"), Some((Value::Null, PARSE_ERROR)));
        assert_eq!(code(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}"), Some((Value::Null, PARSE_ERROR)));
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(code(deep.as_bytes()), Some((Value::Null, PARSE_ERROR)));
        assert_eq!(code(b"[]"), Some((Value::Null, INVALID_REQUEST)));
        assert_eq!(code(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#), Some((Value::Null, INVALID_REQUEST)));
        assert_eq!(code(br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#), Some((json!(7), INVALID_REQUEST)));
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":"a","method":5}"#), Some((json!("a"), INVALID_REQUEST)));
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1}"#), Some((json!(1), INVALID_REQUEST)));
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#), Some((json!(1), INVALID_PARAMS)));
        let array_args = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#;
        assert_eq!(code(array_args), Some((json!(2), INVALID_PARAMS)));
        assert_eq!(code(b"7"), Some((Value::Null, INVALID_REQUEST)));
    }
}
