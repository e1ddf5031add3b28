//! Outbound HTTP to addresses other people chose (a client's metadata document URL, a tenant's
//! identity provider, a tenant's chat endpoint): public addresses only, bounded in time, size
//! and redirects.
//!
//! Every name is resolved by [`PublicOnly`], which refuses loopback, private, link-local,
//! shared, unique-local, multicast and unspecified addresses (so DNS rebinding cannot reach
//! inside either); a URL whose host is an address literal is checked before the request. The
//! deployment may exempt named `host:port` pairs (`oauth.private_hosts`, for the identity
//! providers and the tenants' chat endpoints alike), for a server on its own network or a test
//! on loopback; `host:*` exempts every port of a host.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{0} is not a public address")]
    Private(String),
    #[error("the URL is not acceptable: {0}")]
    BadUrl(String),
    #[error("the response is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the server answered {0}")]
    Status(u16),
    #[error("the request failed: {0}")]
    Request(String),
}

/// Whether an address is one an outside party may make us call.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_unspecified()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // shared address space (RFC 6598)
                || (a == 192 && b == 0) // IETF protocol assignments
                || (a == 198 && (b == 18 || b == 19)) // benchmarking
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let segments = v6.segments();
            let first = segments[0];
            // IPv4-compatible (::a.b.c.d, deprecated but routed by some stacks) judged as IPv4.
            if segments[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
                let [a, b] = segments[6].to_be_bytes();
                let [c, d] = segments[7].to_be_bytes();
                return is_public(IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, d)));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link local
                || (first & 0xffc0) == 0xfec0 // site local (deprecated)
                || first == 0x2002 // 6to4: embeds an IPv4 address
                || first == 0x2001 && v6.segments()[1] == 0xdb8 // documentation
                || first == 0x64 && v6.segments()[1] == 0xff9b) // NAT64 can reach anything
        }
    }
}

/// Resolves names to public addresses only (unless the `host:port` is exempt).
struct PublicOnly {
    exempt: Arc<Vec<String>>,
}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let exempt = self.exempt.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let exempt_host = exempt.iter().any(|e| e.rsplit_once(':').map(|(h, _)| h) == Some(host.as_str()));
            let allowed: Vec<SocketAddr> = addrs.into_iter().filter(|a| exempt_host || is_public(a.ip())).collect();
            if allowed.is_empty() {
                return Err(Box::new(FetchError::Private(host)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The guarded client and its limits.
#[derive(Clone)]
pub struct Outbound {
    client: reqwest::Client,
    exempt: Arc<Vec<String>>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound").field("exempt", &self.exempt).finish()
    }
}

impl Outbound {
    pub fn new(exempt: Vec<String>, timeout: Duration) -> Self {
        let exempt = Arc::new(exempt);
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(PublicOnly { exempt: exempt.clone() }))
            // A redirect is not followed (openidconnect asks the same of its HTTP client: a
            // redirect could lead the token request elsewhere).
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent("obsidian-tc")
            .build()
            .expect("a client with these settings builds");
        Outbound { client, exempt }
    }

    /// The client, for openidconnect's requests; check each URL with [`Outbound::check`] first.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Whether the URL's host is exempt on some port (the resolver knows only names, so a name
    /// exempt on one port must not be reached on another: [`Outbound::check`] refuses that).
    fn exempt_host(&self, url: &url::Url) -> bool {
        let host = url.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
        self.exempt.iter().any(|e| e.rsplit_once(':').is_some_and(|(h, _)| h == host))
    }

    fn exempt(&self, url: &url::Url) -> bool {
        let host = url.host_str().unwrap_or("");
        let port = url.port_or_known_default().unwrap_or(0);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.exempt.iter().any(|e| e == &format!("{host}:{port}") || e == &format!("{host}:*"))
    }

    /// Whether a URL may be fetched: https (or http to an exempt host), no credentials, and a
    /// host that is a name or a public address.
    pub fn check(&self, url: &url::Url) -> Result<(), FetchError> {
        let exempt = self.exempt(url);
        if !exempt && self.exempt_host(url) {
            return Err(FetchError::Private(format!("{} on this port", url.host_str().unwrap_or(""))));
        }
        match url.scheme() {
            "https" => {}
            "http" if exempt => {}
            other => return Err(FetchError::BadUrl(format!("scheme {other} (https is required)"))),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(FetchError::BadUrl("credentials in the URL".into()));
        }
        let ip = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            Some(url::Host::Domain(d)) if d.eq_ignore_ascii_case("localhost") || d.ends_with(".localhost") => {
                if exempt {
                    None
                } else {
                    return Err(FetchError::Private(d.to_string()));
                }
            }
            Some(url::Host::Domain(_)) => None,
            None => return Err(FetchError::BadUrl("no host".into())),
        };
        if let Some(ip) = ip
            && !exempt
            && !is_public(ip)
        {
            return Err(FetchError::Private(ip.to_string()));
        }
        Ok(())
    }

    /// GETs a JSON document of at most `max_bytes`.
    pub async fn get_json(&self, url: &url::Url, max_bytes: usize) -> Result<serde_json::Value, FetchError> {
        self.check(url)?;
        let mut response =
            self.client.get(url.clone()).header("accept", "application/json").send().await.map_err(|e| describe(&e))?;
        if !response.status().is_success() {
            return Err(FetchError::Status(response.status().as_u16()));
        }
        if response.content_length().is_some_and(|n| n as usize > max_bytes) {
            return Err(FetchError::TooLarge(max_bytes));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e))? {
            body.extend_from_slice(&chunk);
            if body.len() > max_bytes {
                return Err(FetchError::TooLarge(max_bytes));
            }
        }
        serde_json::from_slice(&body).map_err(|e| FetchError::Request(format!("not JSON: {e}")))
    }
}

/// A request error named by its innermost cause (the resolver's refusal included).
pub fn describe(err: &(dyn std::error::Error + 'static)) -> FetchError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(FetchError::Private(host)) = e.downcast_ref::<FetchError>() {
            return FetchError::Private(host.clone());
        }
        source = e.source();
    }
    FetchError::Request(otc_errors::error_chain(err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "::127.0.0.1",
            "::10.0.0.1",
            "2002:a00:1::1",
            "fec0::1",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "224.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn urls_are_checked_before_any_request() {
        let out = Outbound::new(vec!["127.0.0.1:8080".into()], Duration::from_secs(1));
        let check = |u: &str| out.check(&url::Url::parse(u).unwrap());
        assert!(check("https://example.com/client.json").is_ok());
        assert!(matches!(check("https://127.0.0.1/x"), Err(FetchError::Private(_))));
        assert!(matches!(check("https://[::1]/x"), Err(FetchError::Private(_))));
        assert!(matches!(check("https://localhost/x"), Err(FetchError::Private(_))));
        assert!(matches!(check("http://example.com/x"), Err(FetchError::BadUrl(_))));
        assert!(matches!(check("https://u:p@example.com/x"), Err(FetchError::BadUrl(_))));
        assert!(matches!(check("file:///etc/passwd"), Err(FetchError::BadUrl(_))));
        // The exempt pair, and only it.
        assert!(check("http://127.0.0.1:8080/client.json").is_ok());
        assert!(matches!(check("http://127.0.0.1:8081/client.json"), Err(FetchError::Private(_))));
        assert!(matches!(check("https://127.0.0.1:8081/client.json"), Err(FetchError::Private(_))));
        let any_port = Outbound::new(vec!["127.0.0.1:*".into()], Duration::from_secs(1));
        assert!(any_port.check(&url::Url::parse("http://127.0.0.1:8081/x").unwrap()).is_ok());
        assert!(any_port.check(&url::Url::parse("http://10.0.0.1:8081/x").unwrap()).is_err());
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_by_the_resolver() {
        use std::str::FromStr;
        let resolver = PublicOnly { exempt: Arc::new(vec![]) };
        let err = match resolver.resolve(Name::from_str("localhost").unwrap()).await {
            Ok(_) => panic!("localhost resolved"),
            Err(e) => e,
        };
        assert!(matches!(err.downcast_ref::<FetchError>(), Some(FetchError::Private(_))), "{err:?}");
        let exempt = PublicOnly { exempt: Arc::new(vec!["localhost:8080".into()]) };
        assert!(exempt.resolve(Name::from_str("localhost").unwrap()).await.is_ok());
    }
}
