//! DNS-rebinding and cross-origin guard for every authenticated route, /v1 and /mcp alike: the
//! request must carry exactly one Host header, naming a host in `mcp.allowed_hosts` (empty: any),
//! and an Origin header, when present, must be one of `mcp.allowed_origins` (`scheme://host`,
//! with `:port` or `:*`); its URL may not hold an encoded NUL (no vault name, path or cursor
//! can). Refusals are the catalogue's JSON (403 forbidden; 400 for a request with no Host or
//! several, or a NUL).

use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use otc_errors::{ErrorCode, ToolError};

use crate::{ApiError, AppState};

pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match check(&state.mcp.allowed_hosts, &state.mcp.allowed_origins, &request) {
        Ok(()) => next.run(request).await,
        Err(refused) => refused.into_response(),
    }
}

fn refuse(status: StatusCode, message: &str) -> ApiError {
    let code = if status == StatusCode::FORBIDDEN { ErrorCode::Forbidden } else { ErrorCode::InvalidInput };
    ApiError::from_tool(ToolError::with_message(code, message)).with_status(status)
}

fn check(allowed_hosts: &[String], allowed_origins: &[String], request: &Request) -> Result<(), ApiError> {
    let uri = request.uri();
    let encoded_nul = |text: &str| text.as_bytes().windows(3).any(|w| w[0] == b'%' && w[1] == b'0' && w[2] == b'0');
    if encoded_nul(uri.path()) || uri.query().is_some_and(encoded_nul) {
        return Err(refuse(StatusCode::BAD_REQUEST, "a URL may not contain a NUL character (%00)"));
    }
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(host), None) => {
            host.to_str().map_err(|_| refuse(StatusCode::BAD_REQUEST, "the Host header is not text"))?
        }
        (None, _) => match request.uri().authority() {
            Some(authority) => authority.as_str(),
            None => return Err(refuse(StatusCode::BAD_REQUEST, "a request needs a Host header")),
        },
        (Some(_), Some(_)) => return Err(refuse(StatusCode::BAD_REQUEST, "a request may carry one Host header only")),
    };
    let (host, port) =
        split_authority(host).ok_or_else(|| refuse(StatusCode::BAD_REQUEST, "the Host header is malformed"))?;
    let host_allowed = allowed_hosts.is_empty()
        || allowed_hosts
            .iter()
            .filter_map(|a| allowed_authority(a))
            .any(|(h, p)| h == host && (p.is_none() || p == port));
    if !host_allowed {
        return Err(refuse(StatusCode::FORBIDDEN, "this Host is not one this server answers to (mcp.allowed_hosts)"));
    }
    let Some(origin) = request.headers().get(header::ORIGIN) else { return Ok(()) };
    let not_allowed =
        || refuse(StatusCode::FORBIDDEN, "requests from this Origin are not allowed (mcp.allowed_origins)");
    let origin = origin.to_str().ok().and_then(parse_origin).ok_or_else(not_allowed)?;
    if allowed_origins.iter().any(|allowed| origin_matches(allowed, &origin)) { Ok(()) } else { Err(not_allowed()) }
}

/// An `mcp.allowed_hosts` entry: `host`, `host:port`, or a bare IPv6 address (`::1`).
fn allowed_authority(entry: &str) -> Option<(String, Option<u16>)> {
    match entry.trim().parse::<std::net::Ipv6Addr>() {
        Ok(ip) => Some((ip.to_string(), None)),
        Err(_) => split_authority(entry),
    }
}

/// (lower-cased host without IPv6 brackets, port) of `host[:port]`.
fn split_authority(text: &str) -> Option<(String, Option<u16>)> {
    let authority: axum::http::uri::Authority = text.trim().parse().ok()?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    Some((host, authority.port_u16()))
}

/// An Origin as (scheme, host, port with the scheme's default filled in).
fn parse_origin(text: &str) -> Option<(String, String, Option<u16>)> {
    let uri: Uri = text.trim().parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let port = authority.port_u16().or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    });
    Some((scheme, host, port))
}

/// Whether `origin` matches an allowed entry (`scheme://host`, `scheme://host:port`, or
/// `scheme://host:*` for any port).
fn origin_matches(allowed: &str, origin: &(String, String, Option<u16>)) -> bool {
    let (base, any_port) = match allowed.strip_suffix(":*") {
        Some(base) => (base, true),
        None => (allowed, false),
    };
    match parse_origin(base) {
        Some((scheme, host, port)) => {
            scheme == origin.0 && host == origin.1 && (any_port || !base_has_port(base) || port == origin.2)
        }
        None => false,
    }
}

fn base_has_port(base: &str) -> bool {
    base.parse::<Uri>().ok().and_then(|u| u.port_u16()).is_some()
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
        let status =
            |hosts_sent: &[&str], origin| check(&hosts, &origins, &request(hosts_sent, origin)).err().map(|e| e.status);
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
        assert!(check(&[], &[], &request(&["anything.example"], None)).is_ok());
        let nul = Request::builder().uri("/v1/vaults/a%00b/files").header(header::HOST, "localhost");
        let nul = nul.body(axum::body::Body::empty()).unwrap();
        assert_eq!(check(&hosts, &origins, &nul).err().map(|e| e.status), Some(StatusCode::BAD_REQUEST));
    }
}
