//! The span each HTTP request runs in: its request id, and a trace id that continues the
//! caller's W3C trace context (`traceparent`) when one came with the request.

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TraceId};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The ids a request is known by in logs and traces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestIds {
    /// The caller's `x-request-id` when it is short and plain, else a new one.
    pub request_id: String,
    /// 32 hex digits: the caller's trace when it sent a valid `traceparent`, else a new one
    /// (the exported trace's id when OTLP export is on).
    pub trace_id: String,
}

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// A caller's request id is echoed only when it cannot smuggle anything into a log line.
fn plain_request_id(value: &str) -> bool {
    (1..=128).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
}

/// The `request` span for a request with these headers to `route` (the matched route's
/// pattern, which names the span) at `path`, and its ids (also recorded on the span as
/// `request_id` and `trace_id`, so every log line inside carries them).
pub fn request_span(
    headers: &http::HeaderMap,
    method: &http::Method,
    route: &str,
    path: &str,
) -> (tracing::Span, RequestIds) {
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| plain_request_id(v))
        .map_or_else(|| uuid_like(RandomIdGenerator::default().new_trace_id()), str::to_string);
    let span = tracing::info_span!(
        "request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = route,
        url.path = %&path[..path.floor_char_boundary(256)],
        request_id = %request_id,
        trace_id = tracing::field::Empty,
    );
    let parent = TraceContextPropagator::new().extract(&Headers(headers));
    let remote = parent.span().span_context().trace_id();
    if remote != TraceId::INVALID {
        // Without the OpenTelemetry layer (no OTLP endpoint) there is no parent to set; the
        // caller's trace id is still the one logged.
        let _ = span.set_parent(parent);
    }
    let exported = span.context().span().span_context().trace_id();
    let trace_id = if exported != TraceId::INVALID {
        exported
    } else if remote != TraceId::INVALID {
        remote
    } else {
        RandomIdGenerator::default().new_trace_id()
    };
    let trace_id = format!("{trace_id:032x}");
    span.record("trace_id", trace_id.as_str());
    (span, RequestIds { request_id, trace_id })
}

fn uuid_like(id: TraceId) -> String {
    let hex = format!("{id:032x}");
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callers_trace_id_is_kept_and_a_bad_request_id_replaced() {
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
        headers.insert("x-request-id", "abc def\u{7f}".parse().unwrap_or(http::HeaderValue::from_static("abc def")));
        let (_span, ids) = request_span(&headers, &http::Method::POST, "/mcp", "/mcp");
        assert_eq!(ids.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_ne!(ids.request_id, "abc def");
        assert_eq!(ids.request_id.len(), 36);

        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", "garbage".parse().unwrap());
        headers.insert("x-request-id", "req-42".parse().unwrap());
        let (_span, ids) = request_span(&headers, &http::Method::GET, "/readyz", "/readyz");
        assert_eq!(ids.request_id, "req-42");
        assert_eq!(ids.trace_id.len(), 32);
        assert_ne!(ids.trace_id, "00000000000000000000000000000000");
    }
}
