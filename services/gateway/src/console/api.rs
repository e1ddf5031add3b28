//! The console's calls to the HTTP API, made in process: each is a request through the same
//! router a remote client reaches, with the console session's token as its bearer credential,
//! so a page can do exactly what the API lets the person do (scopes, a credential bound to no
//! vault for the admin routes), and each action is rate-limited, audited and made idempotent as
//! the API's own is. Nothing here reaches the store behind the API's back.

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use axum::response::Response;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tower::ServiceExt;

/// The largest JSON answer a page reads (the longest lists the API answers are far below it).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The API, as the console reaches it.
#[derive(Clone)]
pub struct Api {
    router: Router,
}

/// The browser's address, when the server was started with it (an extractor that never fails).
#[derive(Clone, Default)]
pub struct Peer(pub Option<ConnectInfo<std::net::SocketAddr>>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Peer(parts.extensions.get::<ConnectInfo<std::net::SocketAddr>>().cloned()))
    }
}

/// What a call copies from the browser's request: the Host (so the API names this server as
/// the browser reached it), the scheme a proxy saw, the client address (per-address limits)
/// and the browser (the audit record's client).
#[derive(Clone, Default)]
pub struct Origin {
    headers: HeaderMap,
    peer: Peer,
}

impl Origin {
    pub fn of(headers: &HeaderMap, peer: Peer) -> Self {
        let mut kept = HeaderMap::new();
        for name in [header::HOST, header::HeaderName::from_static("x-forwarded-proto")] {
            if let Some(value) = headers.get(&name) {
                kept.insert(name, value.clone());
            }
        }
        let agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("a browser");
        let agent: String = format!("obsidian-tc console ({agent})").chars().take(100).collect();
        if let Ok(value) = HeaderValue::from_str(&agent) {
            kept.insert(header::USER_AGENT, value);
        }
        Origin { headers: kept, peer }
    }
}

/// An API answer that was not a success: its status and the catalogue's code and message, or
/// for a transport-level failure a code of our own.
#[derive(Debug, Clone)]
pub struct Failure {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
}

impl Failure {
    fn internal(what: &str) -> Self {
        Failure {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal_error".into(),
            message: format!("the console could not read the API's answer ({what})"),
        }
    }

    /// Whether the thing a URL named is not there (or is another tenant's, which answers alike).
    pub fn is_missing(&self) -> bool {
        self.status == StatusCode::NOT_FOUND
    }
}

/// One request to the API.
pub struct Call {
    pub method: Method,
    /// The path and query, e.g. `/v1/admin/vaults`.
    pub path: String,
    pub body: Option<Value>,
    /// The `Idempotency-Key` (each form carries one, so a form sent twice acts once).
    pub key: Option<String>,
}

impl Call {
    pub fn get(path: impl Into<String>) -> Self {
        Call { method: Method::GET, path: path.into(), body: None, key: None }
    }

    /// A change: `body` as JSON, when it has one.
    pub fn send(method: Method, path: impl Into<String>, body: Option<Value>) -> Self {
        Call { method, path: path.into(), body, key: None }
    }
}

impl Api {
    pub fn new(router: Router) -> Self {
        Api { router }
    }

    /// The raw answer, whatever its status (a download is streamed on from it).
    pub async fn raw(&self, origin: &Origin, token: Option<&str>, call: Call) -> Response {
        let mut request = Request::builder().method(call.method).uri(&call.path);
        for (name, value) in &origin.headers {
            request = request.header(name, value);
        }
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        if let Some(key) = &call.key {
            request = request.header("idempotency-key", key.as_str());
        }
        let body = match &call.body {
            Some(value) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Body::from(serde_json::to_vec(value).expect("a JSON value serializes"))
            }
            None => Body::empty(),
        };
        let mut request = match request.body(body) {
            Ok(request) => request,
            Err(e) => {
                tracing::warn!(error = %e, path = %call.path, "the console built a request the API cannot take");
                let mut response = Response::new(Body::empty());
                *response.status_mut() = StatusCode::BAD_REQUEST;
                return response;
            }
        };
        if let Some(peer) = &origin.peer.0 {
            request.extensions_mut().insert(peer.clone());
        }
        match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    /// The answer's JSON as `T`, or why there is none.
    pub async fn json<T: DeserializeOwned>(&self, origin: &Origin, token: &str, call: Call) -> Result<T, Failure> {
        self.answer(origin, Some(token), call).await
    }

    /// [`Api::json`] for a route that takes no credential (an invitation's acceptance).
    pub async fn json_open<T: DeserializeOwned>(&self, origin: &Origin, call: Call) -> Result<T, Failure> {
        self.answer(origin, None, call).await
    }

    async fn answer<T: DeserializeOwned>(
        &self,
        origin: &Origin,
        token: Option<&str>,
        call: Call,
    ) -> Result<T, Failure> {
        let path = call.path.clone();
        let response = self.raw(origin, token, call).await;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES)
            .await
            .map_err(|_| Failure::internal("the answer was cut short or too long"))?;
        if !status.is_success() {
            return Err(failure(status, &bytes));
        }
        let bytes = if bytes.is_empty() { &b"null"[..] } else { &bytes[..] };
        serde_json::from_slice(bytes).map_err(|e| {
            tracing::error!(error = %e, %path, "the console could not read an API answer");
            Failure::internal("an unexpected shape")
        })
    }
}

/// The catalogue code and message of an error answer.
pub fn failure(status: StatusCode, bytes: &[u8]) -> Failure {
    let body: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let error = &body["error"];
    let code = error["code"].as_str().or(body["error"].as_str()).unwrap_or("error").to_string();
    let mut message = error["message"].as_str().or(body["error_description"].as_str()).unwrap_or("").to_string();
    if message.is_empty() {
        message = status.canonical_reason().unwrap_or("the request failed").to_string();
    }
    Failure { status, code, message }
}

/// `text` as one path segment: everything but letters, digits, `-` and `_` percent-encoded, so
/// whatever a URL carried (`..`, `/`, `?`) stays one segment of the API path it goes into.
pub fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `pairs` as a query string (`a=1&b=2`), each value encoded.
pub fn query(pairs: &[(&str, &str)]) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        out.append_pair(k, v);
    }
    out.finish()
}
