use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// The paths a handler's request named (a commit's changes), for the /v1 audit record
/// (`v1_audit`), carried as a response extension.
#[derive(Clone, Debug)]
pub struct Paths(pub Vec<String>);

/// The catalogue code an error answer carries (set by `ApiError`'s response), for the /v1
/// audit record.
#[derive(Clone, Copy, Debug)]
pub struct Code(pub &'static str);

/// An HTTP error a caller can act on: a catalogue code, a message and what to do about it.
/// Internal detail never goes into it; it goes to the log.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub recovery: &'static str,
    pub details: serde_json::Map<String, serde_json::Value>,
    www_authenticate: Option<String>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    code: &'a str,
    message: &'a str,
    recovery: &'a str,
    retryable: bool,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    details: &'a serde_json::Map<String, serde_json::Value>,
}

const REALM: &str = r#"Bearer realm="obsidian-tc""#;
const REALM_INVALID: &str = r#"Bearer realm="obsidian-tc", error="invalid_token", error_description="the token is malformed, unknown, expired or revoked""#;

impl ApiError {
    /// No credential was sent.
    pub fn missing_token() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            code: "unauthorized",
            message: "authentication required: send Authorization: Bearer <token>".into(),
            recovery: "Create a token with `obsidian-tc token create` and send it as a bearer token.",
            details: Default::default(),
            www_authenticate: Some(REALM.into()),
        }
    }

    /// A credential was sent but is not a live token.
    pub fn invalid_token() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            code: "unauthorized",
            message: "the bearer token is malformed, unknown, expired or revoked".into(),
            recovery: "Use a live token; `obsidian-tc token list` shows which are expired or revoked.",
            details: Default::default(),
            www_authenticate: Some(REALM_INVALID.into()),
        }
    }

    pub fn not_found() -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            code: "not_found",
            message: "no such route".into(),
            recovery: "Check the URL; the API lives under /v1/ and MCP under /mcp.",
            details: Default::default(),
            www_authenticate: None,
        }
    }

    /// A dependency is down; the request may succeed later.
    pub fn unavailable() -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "internal",
            message: "a service this server depends on is unavailable".into(),
            recovery: "Retry shortly; /readyz names the dependency that is down.",
            details: Default::default(),
            www_authenticate: None,
        }
    }

    /// Anything unexpected; the detail is in the server log.
    pub fn internal() -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal",
            message: "internal error".into(),
            recovery: "Retry once; if it persists, the server log has the cause.",
            details: Default::default(),
            www_authenticate: None,
        }
    }

    /// The same error with another HTTP status.
    pub fn with_status(self, status: StatusCode) -> Self {
        Self { status, ..self }
    }

    /// A credential without the scope `scope`: 403 with an insufficient_scope challenge.
    pub fn insufficient_scope(scope: &str) -> Self {
        let err =
            otc_errors::ToolError::with_message(otc_errors::ErrorCode::Forbidden, format!("this needs scope {scope}"))
                .detail("required", vec![scope.to_string()]);
        Self {
            www_authenticate: Some(format!(
                r#"Bearer realm="obsidian-tc", error="insufficient_scope", scope="{scope}", error_description="this needs scope {scope}""#
            )),
            ..Self::from_tool(err)
        }
    }

    /// A catalogue error as an HTTP answer, with its code's status (the catalogue's table).
    pub fn from_tool(err: otc_errors::ToolError) -> Self {
        let err = err.bounded();
        let status = StatusCode::from_u16(err.code.http_status()).expect("the catalogue's statuses are valid");
        Self {
            status,
            code: err.code.as_str(),
            recovery: err.hint(),
            message: err.message,
            details: err.details,
            www_authenticate: None,
        }
    }

    /// Maps a store failure, logging its full chain.
    pub fn from_store(err: &otc_store::StoreError) -> Self {
        if let otc_store::StoreError::Quota(q) = err {
            return Self::from_tool(otc_kernel::quota_exceeded(q));
        }
        if err.is_unavailable() {
            return Self::from_tool(err.answer());
        }
        tracing::error!(error = %crate::error_chain(err), "store error");
        Self::internal()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retryable = matches!(self.status, StatusCode::SERVICE_UNAVAILABLE | StatusCode::INTERNAL_SERVER_ERROR);
        let retryable = retryable || otc_errors::ErrorCode::parse(self.code).is_some_and(|c| c.retryable());
        let body = Body {
            error: Inner {
                code: self.code,
                message: &self.message,
                recovery: self.recovery,
                retryable,
                details: &self.details,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        response.extensions_mut().insert(Code(self.code));
        if let Some(value) = self.www_authenticate.and_then(|v| HeaderValue::from_str(&v).ok()) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// How much of a refused request's body is read before answering, and for how long.
const DRAIN_LIMIT: usize = 64 * 1024;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(1);

/// Answers a request refused before its body was read (no credential, a throttled caller, a
/// foreign Origin). The body is read first, up to a small limit and time, so the connection can
/// carry the client's next request (an MCP client retries with a token at once, on the same
/// connection); a body past those limits ends the connection, and the answer says so with
/// `Connection: close` instead of the server hanging up on a request the client already sent.
/// A client that asked `Expect: 100-continue` has not sent its body and should not: the
/// connection ends instead.
pub async fn refuse(request: axum::extract::Request, response: Response) -> Response {
    let (parts, body) = request.into_parts();
    refuse_unread(&parts.headers, body, response).await
}

/// [`refuse`] for a handler that refuses a request whose `body` it has not read (an upload past
/// a quota): the same draining, the same `Connection: close` when it cannot.
pub async fn refuse_unread(headers: &HeaderMap, body: axum::body::Body, mut response: Response) -> Response {
    let drained = match headers.contains_key(header::EXPECT) {
        true => false,
        false => matches!(tokio::time::timeout(DRAIN_TIME, axum::body::to_bytes(body, DRAIN_LIMIT)).await, Ok(Ok(_))),
    };
    if !drained {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A JSON body the handler could not take: overflow (413) past the body limit, else a
/// validation error naming what was wrong with it.
pub fn body_rejection(what: &str, rejection: axum::extract::rejection::JsonRejection) -> ApiError {
    use otc_errors::{ErrorCode, ToolError};
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::from_tool(ToolError::with_message(
            ErrorCode::Overflow,
            format!("the {what} body is larger than this server accepts"),
        ));
    }
    ApiError::from_tool(ToolError::with_message(
        ErrorCode::ValidationError,
        format!("{what} body: {}", rejection.body_text()),
    ))
}

/// Every error answer is the catalogue's JSON: what axum's extractors, the body limit or the MCP
/// transport answer in plain text (a non-numeric query parameter, a body over the limit, a
/// missing header) is rewritten with its status kept: 413 as overflow, other 4xx as
/// invalid_input (with the original text, cut short), 5xx as internal.
pub async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        // The authorization server's pages answer people in HTML, and SCIM in its own JSON, on
        // purpose.
        .is_some_and(|v| {
            v.starts_with("application/json") || v.starts_with("application/scim+json") || v.starts_with("text/html")
        });
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let challenge = response.headers().get(header::WWW_AUTHENTICATE).cloned();
    let retry_after = response.headers().get(header::RETRY_AFTER).cloned();
    let (_, body) = response.into_parts();
    let text =
        axum::body::to_bytes(body, 4096).await.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let text = otc_errors::echo(text.trim());
    use otc_errors::{ErrorCode, ToolError};
    let err = match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::from_tool(
            ToolError::with_message(ErrorCode::Overflow, "the request body is larger than this server accepts")
                .detail("reason", text),
        ),
        s if s.is_server_error() => ApiError::internal(),
        _ => ApiError::from_tool(ToolError::with_message(
            ErrorCode::InvalidInput,
            if text.is_empty() {
                "the request is malformed".to_string()
            } else {
                format!("the request is malformed: {text}")
            },
        )),
    };
    let mut rewritten = err.with_status(status).into_response();
    // A body refused for its size was not read: what is left of it would be taken for the next
    // request, so the connection ends with this answer.
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        rewritten.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    if let Some(challenge) = challenge {
        rewritten.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    }
    if let Some(retry_after) = retry_after {
        rewritten.headers_mut().insert(header::RETRY_AFTER, retry_after);
    }
    rewritten
}

/// Fallback for authenticated requests to routes that do not exist.
pub async fn not_found() -> ApiError {
    ApiError::not_found()
}
