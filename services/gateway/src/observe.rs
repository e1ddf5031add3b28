//! Every request's span (request and trace ids, the caller's W3C trace context), its status
//! counted in the metrics, and its request id echoed back as `x-request-id`.

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

/// The request's span, in its extensions: work the MCP layer runs on tasks of its own is
/// entered into it again, so a tool call's spans stay in the caller's trace.
#[derive(Clone)]
pub struct RequestSpan(pub tracing::Span);

pub async fn requests(mut request: Request, next: Next) -> Response {
    // Named by its route, never by the raw path a caller (or a scanner) chose.
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |m| m.as_str());
    let (span, ids) = otc_telemetry::request_span(request.headers(), request.method(), route, request.uri().path());
    request.extensions_mut().insert(RequestSpan(span.clone()));
    let mut response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    span.in_scope(|| tracing::debug!(status, "answered"));
    otc_telemetry::metrics().http_response(status);
    if let Ok(value) = HeaderValue::from_str(&ids.request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}
