//! Clients: registered here (RFC 7591 dynamic registration) or described by a Client ID Metadata
//! Document (the MCP spec's preferred way: the client_id is an https URL serving the client's
//! metadata, fetched here with size, time and redirect limits, never from a private address).

use chrono::Utc;
use otc_auth::TokenHash;
use otc_store::OAuthClient;
use rand::RngCore;
use serde_json::Value;

use crate::net::FetchError;
use crate::wire::{ClientMetadata, RegisteredClient};
use crate::{Identity, JWT_BEARER, OAuthError};

/// The largest metadata document fetched.
const MAX_DOCUMENT_BYTES: usize = 16 * 1024;
/// How long a fetched document is used before it is fetched again.
const DOCUMENT_TTL: chrono::Duration = chrono::Duration::minutes(10);
const MAX_REDIRECT_URIS: usize = 20;

/// Whether a client_id names a metadata document (an https URL with a path).
pub fn is_metadata_document_url(client_id: &str) -> bool {
    url::Url::parse(client_id)
        .is_ok_and(|u| matches!(u.scheme(), "https" | "http") && u.path() != "/" && u.host().is_some())
}

fn is_loopback_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    }
}

/// A redirect URI a client may register (OAuth 2.1 §2.3.1 and §7.5, RFC 8252, the MCP
/// security guidance): https to a named host or address; http only on a loopback address (a
/// native app's local listener, RFC 8252 §7.3); a private-use scheme in reverse-domain form
/// (`com.example.app:/cb`, RFC 8252 §7.1) or one of `schemes` (the deployment's list of native
/// clients' claimed schemes). Never a fragment, user information, a wildcard, or a scheme a
/// browser would run.
pub fn check_redirect_uri(uri: &str, schemes: &[String]) -> Result<url::Url, String> {
    if uri.contains('*') {
        return Err(format!("{uri:?}: a redirect URI is exact; wildcards are not allowed"));
    }
    let url = url::Url::parse(uri).map_err(|_| format!("{uri:?} is not an absolute URL"))?;
    if url.fragment().is_some() {
        return Err(format!("{uri:?} has a fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("{uri:?} carries user information (user:password@)"));
    }
    if let Some(url::Host::Domain(domain)) = url.host()
        && !domain.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    {
        return Err(format!("{uri:?}: the host is not a plain domain name"));
    }
    let scheme = url.scheme();
    match scheme {
        "https" if url.host().is_some() => Ok(url),
        "http" if is_loopback_host(&url) => Ok(url),
        "http" => Err(format!("{uri:?}: http is allowed only for a loopback address")),
        "https" | "javascript" | "data" | "file" | "vbscript" | "about" | "blob" | "ftp" | "ws" | "wss" => {
            Err(format!("{uri:?}: scheme {scheme} is not allowed"))
        }
        _ if scheme.contains('.') || schemes.iter().any(|s| s == scheme) => Ok(url),
        _ => Err(format!(
            "{uri:?}: a custom scheme must be reverse-domain (com.example.app:/cb) or one this server allows ({})",
            schemes.join(", ")
        )),
    }
}

/// Whether `asked` is one of `registered`: the same string, or for a loopback http URI the
/// same but for the port (a native app picks its port when it starts, RFC 8252 §7.3). Never
/// one with a fragment or user information.
pub fn redirect_matches(registered: &[String], asked: &str) -> bool {
    let Ok(parsed) = url::Url::parse(asked) else { return false };
    if parsed.fragment().is_some() || !parsed.username().is_empty() || parsed.password().is_some() {
        return false;
    }
    if registered.iter().any(|r| r == asked) {
        return true;
    }
    if parsed.scheme() != "http" || !is_loopback_host(&parsed) {
        return false;
    }
    registered.iter().filter_map(|r| url::Url::parse(r).ok()).any(|r| {
        r.scheme() == "http"
            && r.host() == parsed.host()
            && r.path() == parsed.path()
            && r.query() == parsed.query()
            && r.fragment().is_none()
    })
}

fn strings(value: &Value, field: &str) -> Result<Option<Vec<String>>, OAuthError> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| OAuthError::invalid_client_metadata(format!("{field} must be a list of strings")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(OAuthError::invalid_client_metadata(format!("{field} must be a list of strings"))),
    }
}

/// The metadata every client gives, checked: its redirect URIs, name, grant and response types.
struct Checked {
    redirect_uris: Vec<String>,
    client_name: Option<String>,
    auth_method: String,
}

fn check_metadata(doc: &Value, schemes: &[String]) -> Result<Checked, OAuthError> {
    if !doc.is_object() {
        return Err(OAuthError::invalid_client_metadata("the client metadata must be a JSON object"));
    }
    let redirect_uris = strings(doc, "redirect_uris")?.unwrap_or_default();
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::invalid_redirect_uri(format!("redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs")));
    }
    for uri in &redirect_uris {
        if uri.len() > 2000 {
            return Err(OAuthError::invalid_redirect_uri("a redirect URI is longer than 2000 bytes"));
        }
        check_redirect_uri(uri, schemes).map_err(OAuthError::invalid_redirect_uri)?;
    }
    for grant in strings(doc, "grant_types")?.unwrap_or_default() {
        if !matches!(grant.as_str(), "authorization_code" | "refresh_token") && grant != JWT_BEARER {
            return Err(OAuthError::invalid_client_metadata(format!("grant type {grant:?} is not supported")));
        }
    }
    for response in strings(doc, "response_types")?.unwrap_or_default() {
        if response != "code" {
            return Err(OAuthError::invalid_client_metadata(format!("response type {response:?} is not supported")));
        }
    }
    let client_name = match doc.get("client_name") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(name.chars().filter(|c| !c.is_control()).take(200).collect()),
        Some(_) => return Err(OAuthError::invalid_client_metadata("client_name must be a string")),
    };
    let auth_method = match doc.get("token_endpoint_auth_method") {
        None | Some(Value::Null) => "client_secret_basic".to_string(),
        Some(Value::String(m)) if ["none", "client_secret_basic", "client_secret_post"].contains(&m.as_str()) => {
            m.clone()
        }
        Some(other) => {
            return Err(OAuthError::invalid_client_metadata(format!(
                "token_endpoint_auth_method {other} is not supported (none, client_secret_basic, client_secret_post)"
            )));
        }
    };
    Ok(Checked { redirect_uris, client_name, auth_method })
}

impl Identity {
    /// Dynamic client registration (RFC 7591): answers the registration with its client_id (and
    /// a client_secret for a confidential client, shown this once).
    pub async fn register(&self, request: &Value) -> Result<RegisteredClient, OAuthError> {
        if request.to_string().len() > MAX_DOCUMENT_BYTES {
            return Err(OAuthError::invalid_client_metadata("the registration is larger than 16 KB"));
        }
        let checked = check_metadata(request, &self.settings.redirect_schemes)?;
        let mut id = [0u8; 16];
        rand::rng().fill_bytes(&mut id);
        let client_id = format!("otcd_{}", hex::encode(id));
        let secret = (checked.auth_method != "none").then(|| {
            let mut bytes = [0u8; 32];
            rand::rng().fill_bytes(&mut bytes);
            format!("otcs_{}", hex::encode(bytes))
        });
        let client = OAuthClient {
            client_id: client_id.clone(),
            kind: "dcr".into(),
            client_name: checked.client_name.clone(),
            redirect_uris: checked.redirect_uris.clone(),
            token_endpoint_auth_method: checked.auth_method.clone(),
            secret_hash: secret.as_ref().map(|s| TokenHash::of(s).0.to_vec()),
            metadata: request.clone(),
            created_at: Utc::now(),
            fetched_at: None,
        };
        self.store.put_oauth_client(&client).await?;
        // The metadata as registered: what was sent, with the checked fields as they were kept.
        let mut other = request.as_object().cloned().unwrap_or_default();
        let read = ["redirect_uris", "token_endpoint_auth_method", "grant_types", "response_types", "client_name"];
        let assigned = ["client_id", "client_id_issued_at", "client_secret", "client_secret_expires_at"];
        for name in read.iter().chain(&assigned) {
            other.remove(*name);
        }
        let metadata = ClientMetadata {
            redirect_uris: checked.redirect_uris,
            token_endpoint_auth_method: Some(checked.auth_method),
            grant_types: strings(request, "grant_types")?,
            response_types: strings(request, "response_types")?,
            client_name: request.get("client_name").and_then(Value::as_str).map(str::to_string),
            client_id: None,
            other,
        };
        Ok(RegisteredClient {
            metadata,
            client_id,
            client_id_issued_at: client.created_at.timestamp(),
            client_secret_expires_at: secret.is_some().then_some(0),
            client_secret: secret,
        })
    }

    /// The client a client_id names: a registered one, or a metadata document (fetched, or from
    /// the cache while it is fresh).
    pub async fn client(&self, client_id: &str) -> Result<Option<OAuthClient>, OAuthError> {
        if client_id.is_empty() || client_id.len() > 2048 || client_id.chars().any(char::is_control) {
            return Ok(None);
        }
        let cached = self.store.oauth_client(client_id).await?;
        match cached {
            Some(c) if c.kind == "dcr" => Ok(Some(c)),
            Some(c) if c.fetched_at.is_some_and(|at| at > Utc::now() - DOCUMENT_TTL) => Ok(Some(c)),
            _ if is_metadata_document_url(client_id) => self.fetch_document(client_id).await.map(Some),
            _ => Ok(None),
        }
    }

    async fn fetch_document(&self, client_id: &str) -> Result<OAuthClient, OAuthError> {
        let url = url::Url::parse(client_id).map_err(|_| OAuthError::invalid_client("client_id is not a URL"))?;
        // A host named by a DNS name gets one answer whether it resolved to a private address or
        // not at all, so the answers map no one's internal names.
        let named = matches!(url.host(), Some(url::Host::Domain(d)) if d != "localhost" && !d.ends_with(".localhost"));
        let doc = self.outbound.get_json(&url, MAX_DOCUMENT_BYTES).await.map_err(|e| match e {
            FetchError::Private(_) | FetchError::Request(_) if named => {
                OAuthError::invalid_client("the client metadata document could not be fetched from a public address")
            }
            FetchError::Private(host) => OAuthError::invalid_client(format!(
                "the client metadata document's host {host} is not a public address"
            )),
            FetchError::BadUrl(why) => OAuthError::invalid_client(format!("the client metadata document URL: {why}")),
            other => OAuthError::invalid_client(format!("the client metadata document could not be fetched: {other}")),
        })?;
        if doc.get("client_id").and_then(Value::as_str) != Some(client_id) {
            return Err(OAuthError::invalid_client("the client metadata document's client_id is not its own URL"));
        }
        let checked = check_metadata(&doc, &self.settings.redirect_schemes)
            .map_err(|e| OAuthError::invalid_client(e.description))?;
        if checked.auth_method != "none" && doc.get("token_endpoint_auth_method").is_some() {
            return Err(OAuthError::invalid_client("a metadata-document client authenticates with none"));
        }
        let client = OAuthClient {
            client_id: client_id.to_string(),
            kind: "cimd".into(),
            client_name: checked.client_name,
            redirect_uris: checked.redirect_uris,
            token_endpoint_auth_method: "none".into(),
            secret_hash: None,
            metadata: doc,
            created_at: Utc::now(),
            fetched_at: Some(Utc::now()),
        };
        self.store.put_oauth_client(&client).await?;
        Ok(client)
    }

    /// Authenticates the client at the token and revocation endpoints: a confidential client by
    /// its secret (HTTP Basic or in the form), a public one by its client_id alone.
    pub async fn authenticate_client(
        &self,
        basic: Option<(String, String)>,
        form_id: Option<&str>,
        form_secret: Option<&str>,
    ) -> Result<OAuthClient, OAuthError> {
        let (client_id, secret) = match (&basic, form_id) {
            (Some((id, secret)), form) => {
                if form.is_some_and(|f| f != id) {
                    return Err(OAuthError::invalid_client("client_id differs from the authenticated client"));
                }
                (id.as_str(), Some(secret.as_str()))
            }
            (None, Some(id)) => (id, form_secret),
            (None, None) => return Err(OAuthError::invalid_client("client_id is required")),
        };
        let client = self.client(client_id).await?.ok_or_else(|| OAuthError::invalid_client("unknown client"))?;
        match (&client.secret_hash, secret) {
            (Some(hash), Some(secret)) if TokenHash::of(secret).0[..] == hash[..] => Ok(client),
            (Some(_), _) => Err(OAuthError::invalid_client("the client's secret is missing or wrong")),
            (None, None) => Ok(client),
            (None, Some(_)) => Err(OAuthError::invalid_client("this client has no secret")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redirect_uris_are_held_to_the_native_app_rules() {
        let schemes = ["cursor".to_string()];
        for good in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://127.0.0.1:3000/cb",
            "http://localhost/cb",
            "http://[::1]:8/cb",
            "cursor://anysphere.cursor-retrieval/oauth/callback",
            "com.example.app:/oauth2redirect",
        ] {
            assert!(check_redirect_uri(good, &schemes).is_ok(), "{good}");
        }
        for bad in [
            "http://evil.example/cb",
            "https://a.example/cb#frag",
            "https://a.example/cb#",
            "javascript:alert(1)",
            "data:text/html,x",
            "/relative",
            "file:///x",
            "https://*.evil.example/cb",
            "https://app.example/*",
            "https://user:pw@app.example/cb",
            "https://user@app.example/cb",
            "http://user:pw@127.0.0.1:3000/cb",
            "myapp://cb",
            "vscode://x/cb",
        ] {
            assert!(check_redirect_uri(bad, &schemes).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_loopback_redirect_may_change_port_and_nothing_else() {
        let registered = vec!["http://127.0.0.1:3000/cb".to_string(), "https://app.example/cb".to_string()];
        assert!(redirect_matches(&registered, "http://127.0.0.1:49152/cb"));
        assert!(redirect_matches(&registered, "https://app.example/cb"));
        assert!(!redirect_matches(&registered, "http://127.0.0.1:49152/other"));
        assert!(!redirect_matches(&registered, "https://app.example/cb/../evil"));
        assert!(!redirect_matches(&registered, "https://app.example:444/cb"));
        assert!(!redirect_matches(&registered, "https://evil.example/cb"));
        assert!(!redirect_matches(&registered, "http://localhost:3000/cb"));
        // A registered URI plus a fragment or user information is another URI.
        assert!(!redirect_matches(&registered, "http://127.0.0.1:49152/cb#x"));
        assert!(!redirect_matches(&registered, "http://127.0.0.1:3000/cb#"));
        assert!(!redirect_matches(&registered, "https://app.example/cb#x"));
        assert!(!redirect_matches(&registered, "http://u:p@127.0.0.1:3000/cb"));
    }

    #[test]
    fn metadata_is_checked() {
        assert!(
            check_metadata(
                &json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "none"}),
                &[]
            )
            .is_ok()
        );
        for bad in [
            json!({}),
            json!({"redirect_uris": []}),
            json!({"redirect_uris": ["http://evil.example/cb"]}),
            json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["implicit"]}),
            json!({"redirect_uris": ["https://a.example/cb"], "response_types": ["token"]}),
            json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
            json!([1]),
        ] {
            assert!(check_metadata(&bad, &[]).is_err(), "{bad}");
        }
    }
}
