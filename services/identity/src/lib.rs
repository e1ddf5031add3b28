//! obsidian-tc as the OAuth 2.1 authorization server of its own MCP endpoints (the MCP
//! authorization spec, 2025-11-25), signing people in through each tenant's OpenID Connect
//! identity provider.
//!
//! - [`clients`]: who may ask: clients registered here (RFC 7591) and Client ID Metadata
//!   Documents (a client_id that is an https URL, fetched through [`net::Outbound`]).
//! - [`authorize`]: `/authorize` to the redirect back: the request checked, the tenant found by
//!   the person's email domain, the leg to the tenant's provider ([`federation`]), consent, the
//!   code. Each step's state is a [`flow::Flow`] in Redis, so any gateway takes any step.
//! - [`tokens`]: the token endpoint (authorization code with PKCE S256, refresh with rotation
//!   and reuse detection, the JWT-bearer grant for an enterprise IdP's identity assertion) and
//!   revocation. Access tokens are short-lived ES256 JWTs bound to one resource (RFC 8707),
//!   and rows of `api_tokens`, so the gateway checks them as it checks API tokens and a
//!   revocation reaches every gateway through the tenant's token generation.
//! - [`admin`]: a tenant's identity provider and its people's grants, for the CLI and /v1.
//!
//! Protocol shapes stay here as plain JSON values and [`OAuthError`]s; the gateway only routes.

pub mod admin;
pub mod authorize;
pub mod clients;
pub mod console;
pub mod federation;
pub mod flow;
mod keys;
/// Outbound requests to addresses other people chose ([`otc_egress`]).
pub use otc_egress as net;
pub mod scim;
pub mod tokens;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use otc_auth::seal::Sealer;
use otc_kv::Kv;
use otc_store::Store;

/// The grant type of an identity assertion (RFC 7523).
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

#[derive(Debug, Clone)]
pub struct IdentitySettings {
    /// Access tokens live this long (short: a revocation also reaches every gateway at once).
    pub access_token_ttl: Duration,
    pub refresh_token_ttl: Duration,
    pub code_ttl: Duration,
    /// How long a person has to finish signing in.
    pub flow_ttl: Duration,
    /// A signing key signs this long, then the next one takes over.
    pub key_rotation: Duration,
    /// `host:port` pairs outbound requests may reach although they are not public addresses
    /// (an identity provider on the deployment's own network; tests on loopback).
    pub private_hosts: Vec<String>,
    /// The limit on each outbound request.
    pub fetch_timeout: Duration,
    /// A grant's absolute lifetime: past it a refresh is refused and the person signs in again
    /// (None: no limit).
    pub max_grant_age: Option<Duration>,
    /// Custom redirect URI schemes allowed besides reverse-domain ones (lowercase).
    pub redirect_schemes: Vec<String>,
}

impl Default for IdentitySettings {
    fn default() -> Self {
        Self {
            access_token_ttl: Duration::from_secs(900),
            refresh_token_ttl: Duration::from_secs(30 * 24 * 3600),
            code_ttl: Duration::from_secs(60),
            flow_ttl: Duration::from_secs(600),
            key_rotation: Duration::from_secs(30 * 24 * 3600),
            private_hosts: Vec::new(),
            fetch_timeout: Duration::from_secs(5),
            max_grant_age: Some(Duration::from_secs(90 * 24 * 3600)),
            redirect_schemes: Vec::new(),
        }
    }
}

/// What went wrong inside (never shown to a caller; logged with its chain).
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("store: {0}")]
    Store(#[from] otc_store::StoreError),
    #[error("redis: {0}")]
    Kv(#[from] otc_kv::KvError),
    #[error("{0}")]
    Internal(String),
}

/// An OAuth error answer (RFC 6749 §5.2): the code, a description safe to show, the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    pub error: &'static str,
    pub description: String,
    pub status: u16,
}

impl OAuthError {
    fn new(error: &'static str, status: u16, description: impl Into<String>) -> Self {
        let description: String = description.into();
        // Descriptions echo input sometimes; keep them to one short line.
        let description = description.chars().filter(|c| !c.is_control()).take(300).collect();
        OAuthError { error, description, status }
    }
    pub fn invalid_request(d: impl Into<String>) -> Self {
        Self::new("invalid_request", 400, d)
    }
    pub fn invalid_client(d: impl Into<String>) -> Self {
        Self::new("invalid_client", 401, d)
    }
    pub fn invalid_grant(d: impl Into<String>) -> Self {
        Self::new("invalid_grant", 400, d)
    }
    pub fn unauthorized_client(d: impl Into<String>) -> Self {
        Self::new("unauthorized_client", 400, d)
    }
    pub fn unsupported_grant_type(d: impl Into<String>) -> Self {
        Self::new("unsupported_grant_type", 400, d)
    }
    pub fn invalid_scope(d: impl Into<String>) -> Self {
        Self::new("invalid_scope", 400, d)
    }
    pub fn invalid_target(d: impl Into<String>) -> Self {
        Self::new("invalid_target", 400, d)
    }
    pub fn invalid_redirect_uri(d: impl Into<String>) -> Self {
        Self::new("invalid_redirect_uri", 400, d)
    }
    pub fn invalid_client_metadata(d: impl Into<String>) -> Self {
        Self::new("invalid_client_metadata", 400, d)
    }
    pub fn access_denied(d: impl Into<String>) -> Self {
        Self::new("access_denied", 400, d)
    }
    pub fn server_error() -> Self {
        Self::new("server_error", 500, "the server could not answer; try again")
    }
    pub fn temporarily_unavailable() -> Self {
        Self::new("temporarily_unavailable", 503, "the server is briefly unavailable; try again")
    }

    pub fn body(&self) -> wire::OAuthErrorBody {
        wire::OAuthErrorBody { error: self.error.to_string(), error_description: self.description.clone() }
    }
}

impl From<IdentityError> for OAuthError {
    fn from(err: IdentityError) -> Self {
        log_internal(&err);
        match err {
            IdentityError::Store(otc_store::StoreError::Unavailable(_)) | IdentityError::Kv(_) => {
                OAuthError::temporarily_unavailable()
            }
            _ => OAuthError::server_error(),
        }
    }
}

impl From<otc_store::StoreError> for OAuthError {
    fn from(err: otc_store::StoreError) -> Self {
        IdentityError::Store(err).into()
    }
}

pub(crate) fn log_internal(err: &(dyn std::error::Error + 'static)) {
    tracing::error!(error = %otc_errors::error_chain(err), "authorization server");
}

/// The authorization server: shared by every request of a gateway.
pub struct Identity {
    pub(crate) store: Store,
    pub(crate) kv: Arc<Kv>,
    pub(crate) sealer: Sealer,
    pub(crate) settings: IdentitySettings,
    pub(crate) keys: keys::KeyRing,
    pub(crate) outbound: net::Outbound,
    /// Providers' discovery documents with their keys, by issuer, and when each was read.
    discovery: std::sync::Mutex<
        std::collections::HashMap<String, (std::time::Instant, openidconnect::core::CoreProviderMetadata)>,
    >,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity").field("settings", &self.settings).finish_non_exhaustive()
    }
}

/// The paths of the endpoints, under the issuer (the server's base URL).
pub mod paths {
    pub const AUTHORIZE: &str = "/oauth/authorize";
    pub const SIGN_IN: &str = "/oauth/signin";
    pub const CALLBACK: &str = "/oauth/callback";
    pub const CONSENT: &str = "/oauth/consent";
    pub const TOKEN: &str = "/oauth/token";
    pub const REGISTER: &str = "/oauth/register";
    pub const REVOKE: &str = "/oauth/revoke";
    pub const JWKS: &str = "/oauth/jwks";
}

impl Identity {
    pub fn new(store: Store, kv: Arc<Kv>, sealer: Sealer, settings: IdentitySettings) -> Self {
        let outbound = net::Outbound::new(settings.private_hosts.clone(), settings.fetch_timeout);
        Identity {
            keys: keys::KeyRing::new(settings.key_rotation, settings.access_token_ttl),
            store,
            kv,
            sealer,
            settings,
            outbound,
            discovery: Default::default(),
        }
    }

    pub(crate) fn discovered(&self, issuer: &str) -> Option<openidconnect::core::CoreProviderMetadata> {
        let cache = self.discovery.lock().expect("discovery cache lock");
        cache.get(issuer).filter(|(at, _)| at.elapsed() < federation::DISCOVERY_TTL).map(|(_, m)| m.clone())
    }

    /// Drops a provider's cached discovery when it is older than a few seconds (so a flood of
    /// assertions with unknown key ids reads the provider at most that often); whether it did.
    pub(crate) fn forget_discovery(&self, issuer: &str) -> bool {
        let mut cache = self.discovery.lock().expect("discovery cache lock");
        match cache.get(issuer) {
            Some((at, _)) if at.elapsed() > std::time::Duration::from_secs(10) => cache.remove(issuer).is_some(),
            _ => false,
        }
    }

    /// Drops a provider's cached discovery whatever its age (an admin testing the connection
    /// after fixing the provider).
    pub(crate) fn forget_discovery_now(&self, issuer: &str) {
        self.discovery.lock().expect("discovery cache lock").remove(issuer);
    }

    pub(crate) fn remember_discovery(&self, issuer: &str, metadata: &openidconnect::core::CoreProviderMetadata) {
        let mut cache = self.discovery.lock().expect("discovery cache lock");
        // Tenants' providers are few; a full cache starts again rather than grow.
        if cache.len() > 10_000 {
            cache.clear();
        }
        cache.insert(issuer.to_string(), (std::time::Instant::now(), metadata.clone()));
    }

    /// RFC 8414 authorization-server metadata for `issuer` (also served as OpenID discovery,
    /// where some clients look). `scopes` are the scopes the tools declare.
    pub fn metadata(&self, issuer: &str, scopes: &[String], openid: bool) -> wire::ServerMetadata {
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let auth_methods = strings(&["none", "client_secret_basic", "client_secret_post"]);
        wire::ServerMetadata {
            issuer: issuer.to_string(),
            authorization_endpoint: format!("{issuer}{}", paths::AUTHORIZE),
            token_endpoint: format!("{issuer}{}", paths::TOKEN),
            registration_endpoint: format!("{issuer}{}", paths::REGISTER),
            revocation_endpoint: format!("{issuer}{}", paths::REVOKE),
            jwks_uri: format!("{issuer}{}", paths::JWKS),
            response_types_supported: strings(&["code"]),
            response_modes_supported: strings(&["query"]),
            grant_types_supported: strings(&["authorization_code", "refresh_token", JWT_BEARER]),
            code_challenge_methods_supported: strings(&["S256"]),
            token_endpoint_auth_methods_supported: auth_methods.clone(),
            revocation_endpoint_auth_methods_supported: auth_methods,
            scopes_supported: scopes.to_vec(),
            client_id_metadata_document_supported: true,
            authorization_response_iss_parameter_supported: true,
            subject_types_supported: openid.then(|| strings(&["public"])),
            id_token_signing_alg_values_supported: openid.then(|| strings(&["ES256"])),
        }
    }

    /// The JWK Set of the keys that sign access tokens.
    pub async fn jwks(&self) -> Result<wire::JwkSet, IdentityError> {
        // Make the first key on first use, so the set is never empty once anyone looks.
        self.keys.signing_key(&self.store, &self.sealer).await?;
        Ok(wire::JwkSet { keys: self.keys.public_keys(&self.store, None).await? })
    }
}
