//! DNS-rebinding and cross-origin guard for every authenticated route, /v1 and /mcp alike: the
//! request must carry exactly one Host header, naming a host in `mcp.allowed_hosts` (empty: any),
//! and an Origin header, when present, must be one of `mcp.allowed_origins` (`scheme://host`,
//! with `:port` or `:*`); its URL may not hold an encoded NUL (no vault name, path or cursor
//! can). Refusals are the catalogue's JSON (403 forbidden; 400 for a request with no Host or
//! several, or a NUL).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use otc_errors::{ErrorCode, ToolError};

use crate::ApiError;

pub async fn guard(State(allowed): State<Arc<Allowed>>, request: Request, next: Next) -> Response {
    match allowed.check(&request) {
        Ok(()) => next.run(request).await,
        Err(refused) => crate::error::refuse(request, refused.into_response()).await,
    }
}

/// The Host half of [`guard`], for the OAuth routes: their answers name this server's issuer
/// and resources from the Host (when `mcp.public_url` is unset), so a Host this server does not
/// answer to must not reach them. Their forms are posted from this server's own pages, whose
/// Origin the authorization server checks itself.
pub async fn host_guard(State(allowed): State<Arc<Allowed>>, request: Request, next: Next) -> Response {
    match allowed.check_host(&request) {
        Ok(()) => next.run(request).await,
        Err(refused) => crate::error::refuse(request, refused.into_response()).await,
    }
}

/// `mcp.allowed_hosts` and `mcp.allowed_origins`, parsed once (entries that do not parse allow
/// nothing).
pub struct Allowed {
    /// No list: any host.
    any_host: bool,
    /// (host, port; None for any port).
    hosts: Vec<(String, Option<u16>)>,
    /// (scheme, host, port; None for any port).
    origins: Vec<(String, String, Option<u16>)>,
}

impl Allowed {
    pub fn new(hosts: &[String], origins: &[String]) -> Self {
        Self {
            any_host: hosts.is_empty(),
            hosts: hosts.iter().filter_map(|h| allowed_authority(h)).collect(),
            origins: origins.iter().filter_map(|o| allowed_origin(o)).collect(),
        }
    }

    fn check(&self, request: &Request) -> Result<(), ApiError> {
        self.check_host(request)?;
        let Some(origin) = request.headers().get(header::ORIGIN) else { return Ok(()) };
        let not_allowed =
            || refuse(StatusCode::FORBIDDEN, "requests from this Origin are not allowed (mcp.allowed_origins)");
        let (scheme, host, port) = origin.to_str().ok().and_then(parse_origin).ok_or_else(not_allowed)?;
        let matches =
            |(s, h, p): &(String, String, Option<u16>)| *s == scheme && *h == host && p.is_none_or(|p| Some(p) == port);
        if self.origins.iter().any(matches) { Ok(()) } else { Err(not_allowed()) }
    }

    fn check_host(&self, request: &Request) -> Result<(), ApiError> {
        let uri = request.uri();
        let encoded_nul = |text: &str| text.as_bytes().windows(3).any(|w| w == b"%00");
        if encoded_nul(uri.path()) || uri.query().is_some_and(encoded_nul) {
            return Err(refuse(StatusCode::BAD_REQUEST, "a URL may not contain a NUL character (%00)"));
        }
        let mut hosts = request.headers().get_all(header::HOST).iter();
        let host = match (hosts.next(), hosts.next()) {
            (Some(host), None) => {
                host.to_str().map_err(|_| refuse(StatusCode::BAD_REQUEST, "the Host header is not text"))?
            }
            (None, _) => match uri.authority() {
                Some(authority) => authority.as_str(),
                None => return Err(refuse(StatusCode::BAD_REQUEST, "a request needs a Host header")),
            },
            (Some(_), Some(_)) => {
                return Err(refuse(StatusCode::BAD_REQUEST, "a request may carry one Host header only"));
            }
        };
        let (host, port) =
            split_authority(host).ok_or_else(|| refuse(StatusCode::BAD_REQUEST, "the Host header is malformed"))?;
        let host_allowed = self.any_host || self.hosts.iter().any(|(h, p)| *h == host && (p.is_none() || *p == port));
        if !host_allowed {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "this Host is not one this server answers to (mcp.allowed_hosts)",
            ));
        }
        Ok(())
    }
}

fn refuse(status: StatusCode, message: &str) -> ApiError {
    let code = if status == StatusCode::FORBIDDEN { ErrorCode::Forbidden } else { ErrorCode::InvalidInput };
    ApiError::from_tool(ToolError::with_message(code, message)).with_status(status)
}

/// An `mcp.allowed_hosts` entry: `host`, `host:port`, or a bare IPv6 address (`::1`).
fn allowed_authority(entry: &str) -> Option<(String, Option<u16>)> {
    match entry.trim().parse::<std::net::Ipv6Addr>() {
        Ok(ip) => Some((ip.to_string(), None)),
        Err(_) => split_authority(entry),
    }
}

/// A host as compared: lower-cased, without IPv6 brackets.
fn bare_host(host: &str) -> String {
    host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()
}

/// (host, port) of `host[:port]`.
fn split_authority(text: &str) -> Option<(String, Option<u16>)> {
    let authority: axum::http::uri::Authority = text.trim().parse().ok()?;
    Some((bare_host(authority.host()), authority.port_u16()))
}

/// An Origin as (scheme, host, port), the port as written.
fn origin_parts(text: &str) -> Option<(String, String, Option<u16>)> {
    let uri: Uri = text.trim().parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    Some((scheme, bare_host(authority.host()), authority.port_u16()))
}

/// An Origin a request sent, its port filled in with the scheme's default.
fn parse_origin(text: &str) -> Option<(String, String, Option<u16>)> {
    let (scheme, host, port) = origin_parts(text)?;
    let default = match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    };
    Some((scheme, host, port.or(default)))
}

/// An `mcp.allowed_origins` entry: `scheme://host:port` for that port; `scheme://host:*`, or
/// no port at all, for any.
fn allowed_origin(entry: &str) -> Option<(String, String, Option<u16>)> {
    match entry.trim().strip_suffix(":*") {
        Some(base) => origin_parts(base).map(|(scheme, host, _)| (scheme, host, None)),
        None => origin_parts(entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(hosts: &[&str], origin: Option<&str>) -> Request {
        let mut builder = Request::builder().uri("/v1/vaults");
        for host in hosts {
            builder = builder.header(header::HOST, *host);
        }
        if let Some(origin) = origin {
            builder = builder.header(header::ORIGIN, origin);
        }
        builder.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn hosts_and_origins_are_checked_like_the_mcp_transport_does() {
        let hosts = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into(), "api.example.com:8443".into()];
        let origins = vec!["http://localhost:*".to_string(), "https://app.example.com".into()];
        let allowed = Allowed::new(&hosts, &origins);
        let status = |hosts_sent: &[&str], origin| allowed.check(&request(hosts_sent, origin)).err().map(|e| e.status);
        assert_eq!(status(&["localhost:8080"], None), None);
        assert_eq!(status(&["[::1]:80"], None), None);
        assert_eq!(status(&["API.example.com:8443"], None), None);
        assert_eq!(status(&["api.example.com:9000"], None), Some(StatusCode::FORBIDDEN));
        assert_eq!(status(&["evil.example"], None), Some(StatusCode::FORBIDDEN));
        assert_eq!(status(&["localhost", "evil.example"], None), Some(StatusCode::BAD_REQUEST));
        assert_eq!(status(&["localhost", "localhost"], None), Some(StatusCode::BAD_REQUEST));
        assert_eq!(status(&["local host"], None), Some(StatusCode::BAD_REQUEST));
        assert_eq!(status(&["localhost"], Some("http://localhost:3000")), None);
        assert_eq!(status(&["localhost"], Some("https://app.example.com")), None);
        assert_eq!(status(&["localhost"], Some("https://app.example.com:443")), None);
        assert_eq!(status(&["localhost"], Some("https://evil.example")), Some(StatusCode::FORBIDDEN));
        assert_eq!(status(&["localhost"], Some("null")), Some(StatusCode::FORBIDDEN));
        assert!(Allowed::new(&[], &[]).check(&request(&["anything.example"], None)).is_ok());
        let nul = Request::builder().uri("/v1/vaults/a%00b/files").header(header::HOST, "localhost");
        let nul = nul.body(axum::body::Body::empty()).unwrap();
        assert_eq!(allowed.check(&nul).err().map(|e| e.status), Some(StatusCode::BAD_REQUEST));
    }
}

/// The base URL clients reach this server at: the configured public URL (`mcp.public_url`),
/// else the request's Host (https when a proxy says so).
pub fn base_url(public_url: Option<&str>, headers: &axum::http::HeaderMap) -> String {
    if let Some(url) = public_url {
        return url.trim_end_matches('/').to_string();
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
    let scheme = match headers.get("x-forwarded-proto").and_then(|h| h.to_str().ok()) {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}
