//! The leg to a tenant's identity provider, with `openidconnect`: discovery, the authorization
//! code flow with PKCE and a nonce, and the id token checked whole (signature against the
//! provider's keys, issuer, audience, nonce, expiry) before anything is read from it. Identity
//! assertions (ID-JAG) are JWTs signed by the same keys; [`verify_assertion`] checks one.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreJsonWebKey, CoreJsonWebKeySet, CoreJwsSigningAlgorithm,
    CoreProviderMetadata,
};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, JsonWebKey, Nonce, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, Scope,
};
use otc_store::IdpConfig;
use serde_json::Value;

use crate::Identity;
use crate::flow::IdpLeg;
use crate::net::describe;

/// Why the leg to the provider failed; each says what a person or an admin can do.
#[derive(Debug, thiserror::Error)]
pub enum FederationError {
    #[error("the organisation's identity provider is misconfigured: {0}")]
    Config(String),
    #[error("the organisation's identity provider could not be reached: {0}")]
    Unreachable(String),
    #[error("the identity provider's answer was refused: {0}")]
    Refused(String),
}

/// A person as their provider vouched for them.
#[derive(Debug, Clone)]
pub struct Vouched {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    pub name: Option<String>,
    /// The provider's groups for the person (from the configured claim); None when the token
    /// has no such claim (Google's never do), which leaves the groups the tenant already knows.
    pub groups: Option<Vec<String>>,
}

/// The largest discovery document or key set read from a provider.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// How long a provider's discovery document and keys are used before they are read again.
pub(crate) const DISCOVERY_TTL: std::time::Duration = std::time::Duration::from_secs(300);

/// The provider's metadata and keys: read through [`crate::net::Outbound`] (every URL checked
/// before it is requested, bodies capped), and kept a few minutes per issuer.
async fn discover(identity: &Identity, idp: &IdpConfig) -> Result<CoreProviderMetadata, FederationError> {
    if let Some(cached) = identity.discovered(&idp.issuer) {
        return Ok(cached);
    }
    let issuer_url = url::Url::parse(&idp.issuer).map_err(|_| FederationError::Config("issuer is not a URL".into()))?;
    let document_url =
        url::Url::parse(&format!("{}/.well-known/openid-configuration", idp.issuer.trim_end_matches('/')))
            .map_err(|_| FederationError::Config("issuer is not a URL".into()))?;
    identity.outbound.check(&issuer_url).map_err(|e| FederationError::Config(format!("issuer: {e}")))?;
    let document = identity
        .outbound
        .get_json(&document_url, MAX_DOCUMENT_BYTES)
        .await
        .map_err(|e| FederationError::Unreachable(format!("discovery: {e}")))?;
    let metadata: CoreProviderMetadata = serde_json::from_value(document)
        .map_err(|e| FederationError::Config(format!("the discovery document: {e}")))?;
    if metadata.issuer().as_str().trim_end_matches('/') != idp.issuer.trim_end_matches('/') {
        return Err(FederationError::Config(format!(
            "the discovery document names issuer {}",
            metadata.issuer().as_str()
        )));
    }
    // Discovery named the other endpoints; they are held to the same rule as the issuer.
    let mut endpoints = vec![metadata.authorization_endpoint().url().clone(), metadata.jwks_uri().url().clone()];
    if let Some(token) = metadata.token_endpoint() {
        endpoints.push(token.url().clone());
    }
    for url in &endpoints {
        identity.outbound.check(url).map_err(|e| FederationError::Config(format!("{url}: {e}")))?;
    }
    let keys = identity
        .outbound
        .get_json(metadata.jwks_uri().url(), MAX_DOCUMENT_BYTES)
        .await
        .map_err(|e| FederationError::Unreachable(format!("the provider's keys: {e}")))?;
    let keys: CoreJsonWebKeySet =
        serde_json::from_value(keys).map_err(|e| FederationError::Config(format!("the provider's keys: {e}")))?;
    let metadata = metadata.set_jwks(keys);
    identity.remember_discovery(&idp.issuer, &metadata);
    Ok(metadata)
}

fn client(
    identity: &Identity,
    idp: &IdpConfig,
    metadata: CoreProviderMetadata,
    tenant: uuid::Uuid,
    redirect: &str,
) -> Result<
    CoreClient<
        openidconnect::EndpointSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointMaybeSet,
        openidconnect::EndpointMaybeSet,
    >,
    FederationError,
> {
    let secret = match &idp.sealed_secret {
        Some(sealed) => Some(ClientSecret::new(
            String::from_utf8(identity.sealer.open(sealed, &crate::admin::secret_aad(tenant)).map_err(|_| {
                FederationError::Config("the client secret does not open with oauth.secret_key".into())
            })?)
            .map_err(|_| FederationError::Config("the client secret is not text".into()))?,
        )),
        None => None,
    };
    Ok(CoreClient::from_provider_metadata(metadata, ClientId::new(idp.client_id.clone()), secret)
        .set_redirect_uri(RedirectUrl::new(redirect.to_string()).map_err(|e| FederationError::Config(e.to_string()))?))
}

/// The URL that sends the person to their provider, and what the callback needs back.
pub(crate) async fn start(
    identity: &Identity,
    idp: &IdpConfig,
    tenant: uuid::Uuid,
    redirect: &str,
    state: &str,
    login_hint: Option<&str>,
) -> Result<(url::Url, IdpLeg), FederationError> {
    let metadata = discover(identity, idp).await?;
    let client = client(identity, idp, metadata, tenant, redirect)?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let state = state.to_string();
    let mut request = client
        .authorize_url(CoreAuthenticationFlow::AuthorizationCode, move || CsrfToken::new(state), Nonce::new_random)
        .add_scope(Scope::new("email".into()))
        .add_scope(Scope::new("profile".into()))
        .set_pkce_challenge(challenge);
    if let Some(hint) = login_hint {
        request = request.add_extra_param("login_hint", hint.to_string());
    }
    let (url, _, nonce) = request.url();
    Ok((url, IdpLeg { nonce: nonce.secret().clone(), pkce_verifier: verifier.secret().clone() }))
}

/// Redeems the provider's code and checks its id token.
pub(crate) async fn finish(
    identity: &Identity,
    idp: &IdpConfig,
    tenant: uuid::Uuid,
    redirect: &str,
    leg: &IdpLeg,
    code: &str,
) -> Result<Vouched, FederationError> {
    let metadata = discover(identity, idp).await?;
    let client = client(identity, idp, metadata, tenant, redirect)?;
    let response = client
        .exchange_code(AuthorizationCode::new(code.to_string()))
        .map_err(|e| FederationError::Config(e.to_string()))?
        .set_pkce_verifier(PkceCodeVerifier::new(leg.pkce_verifier.clone()))
        .request_async(identity.outbound.client())
        .await
        .map_err(|e| FederationError::Refused(format!("the code exchange failed: {:?}", describe(&e))))?;
    use openidconnect::TokenResponse;
    let id_token = response.id_token().ok_or_else(|| FederationError::Refused("no id token".into()))?;
    let verifier = client.id_token_verifier();
    let claims = id_token
        .claims(&verifier, &Nonce::new(leg.nonce.clone()))
        .map_err(|e| FederationError::Refused(format!("the id token: {e}")))?;
    // The token is verified; its payload is read again for the claims openidconnect does not
    // model (the groups claim, whose name each tenant configures).
    let raw = payload(&id_token.to_string()).unwrap_or_default();
    Ok(Vouched {
        subject: claims.subject().as_str().to_string(),
        email: claims.email().map(|e| e.as_str().to_lowercase()),
        email_verified: claims.email_verified(),
        name: claims.name().and_then(|n| n.get(None)).map(|n| n.as_str().to_string()),
        groups: raw.get(&idp.groups_claim).map(|_| groups(&raw, &idp.groups_claim)),
    })
}

/// One step of a provider's connection test.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ConnectionStep {
    /// `discovery`, `keys`, `client_secret` or `client_credentials`.
    pub step: String,
    pub ok: bool,
    /// What was found, or what to fix.
    pub detail: String,
}

/// Tests the provider as sign-in uses it, with no person signing in: its discovery document
/// (read again, not from the cache) and the endpoints it names, its signing keys, the stored
/// client secret, and the client's credentials at the token endpoint, presented with a code
/// that was never issued: a provider that knows the client and its secret answers
/// `invalid_grant`, one that does not `invalid_client`. Stops at the first step that fails.
pub(crate) async fn test_connection(
    identity: &Identity,
    idp: &IdpConfig,
    tenant: uuid::Uuid,
    redirect: &str,
) -> Vec<ConnectionStep> {
    let mut steps = Vec::new();
    let mut step = |name: &str, outcome: Result<String, String>| {
        let ok = outcome.is_ok();
        steps.push(ConnectionStep { step: name.into(), ok, detail: outcome.unwrap_or_else(|e| e) });
        ok
    };
    identity.forget_discovery_now(&idp.issuer);
    let metadata = match discover(identity, idp).await {
        Ok(metadata) => metadata,
        Err(e) => {
            step("discovery", Err(e.to_string()));
            return steps;
        }
    };
    step("discovery", Ok(format!("issuer {} answered its discovery document", metadata.issuer().as_str())));
    let signing = metadata
        .jwks()
        .keys()
        .iter()
        .filter(|k| k.key_use().is_none_or(|u| matches!(u, openidconnect::core::CoreJsonWebKeyUse::Signature)))
        .count();
    if !step(
        "keys",
        if signing > 0 {
            Ok(format!("{signing} signing key(s) at {}", metadata.jwks_uri().url()))
        } else {
            Err("the provider publishes no signing key: no id token could be checked".into())
        },
    ) {
        return steps;
    }
    let Some(token_url) = metadata.token_endpoint().map(|t| t.url().clone()) else {
        step("client_credentials", Err("the discovery document names no token endpoint".into()));
        return steps;
    };
    let client = match client(identity, idp, metadata, tenant, redirect) {
        Ok(client) => client,
        Err(e) => {
            step("client_secret", Err(e.to_string()));
            return steps;
        }
    };
    if idp.sealed_secret.is_some() {
        step("client_secret", Ok("the stored client secret opens".into()));
    }
    let never_issued = AuthorizationCode::new(format!("obsidian-tc-connection-test-{}", uuid::Uuid::new_v4()));
    let exchange = match client.exchange_code(never_issued) {
        Ok(request) => request.request_async(identity.outbound.client()).await,
        Err(e) => {
            step("client_credentials", Err(e.to_string()));
            return steps;
        }
    };
    use openidconnect::core::CoreErrorResponseType as Kind;
    let outcome = match exchange {
        Err(openidconnect::RequestTokenError::ServerResponse(answer)) => match answer.error() {
            Kind::InvalidGrant => Ok(format!("{token_url} accepted the client id and secret")),
            Kind::InvalidClient | Kind::UnauthorizedClient => {
                Err(format!("{token_url} refused the client ({}): check the client id and secret", answer.error()))
            }
            other => Err(format!("{token_url} answered {other}: check the client's settings at the provider")),
        },
        Err(e) => Err(format!("{token_url}: {}", describe(&e))),
        Ok(_) => Err(format!("{token_url} issued tokens for a code it never issued: the provider is not safe to use")),
    };
    step("client_credentials", outcome);
    steps
}

impl Identity {
    /// Tests the tenant's identity provider as sign-in would use it, with no person signing in
    /// ([`ConnectionStep`]); `issuer` is this server's, for the callback URL
    /// the provider is told.
    pub async fn test_idp(
        &self,
        tenant: uuid::Uuid,
        issuer: &str,
    ) -> Result<Vec<ConnectionStep>, crate::admin::AdminError> {
        let mut tx = self.store.begin(tenant).await?;
        let idp = tx.idp().await?;
        tx.commit().await?;
        let idp = idp.ok_or_else(|| crate::admin::AdminError::NotFound("identity provider".into()))?;
        let redirect = format!("{}{}", issuer.trim_end_matches('/'), crate::paths::CALLBACK);
        Ok(test_connection(self, &idp, tenant, &redirect).await)
    }
}

/// A JWT's payload as JSON, read without checking anything (only for tokens checked already).
fn payload(jwt: &str) -> Option<Value> {
    let part = jwt.split('.').nth(1)?;
    serde_json::from_slice(&B64.decode(part).ok()?).ok()
}

/// A group name worth keeping: short, no control characters (Postgres keeps no NUL).
fn usable(group: &str) -> bool {
    !group.is_empty() && group.len() <= 256 && !group.chars().any(char::is_control)
}

/// The groups a claim carries: a list of strings, or one string.
pub(crate) fn groups(claims: &Value, claim: &str) -> Vec<String> {
    match claims.get(claim) {
        Some(Value::Array(items)) => {
            items.iter().filter_map(Value::as_str).filter(|g| usable(g)).map(str::to_string).take(1000).collect()
        }
        Some(Value::String(one)) if usable(one) => vec![one.clone()],
        _ => Vec::new(),
    }
}

/// Checks an identity assertion's signature against the provider's published keys and answers
/// its header and claims; the claims' meaning is checked by the caller.
pub(crate) async fn verify_assertion(
    identity: &Identity,
    idp: &IdpConfig,
    assertion: &str,
) -> Result<(Value, Value), FederationError> {
    let refused = |why: &str| FederationError::Refused(why.to_string());
    let (input, signature) = assertion.rsplit_once('.').ok_or_else(|| refused("not a JWT"))?;
    let (header, claims) = input.split_once('.').ok_or_else(|| refused("not a JWT"))?;
    let decode = |part: &str| -> Option<Value> { serde_json::from_slice(&B64.decode(part).ok()?).ok() };
    let header = decode(header).ok_or_else(|| refused("the header is not JSON"))?;
    let claims = decode(claims).ok_or_else(|| refused("the claims are not JSON"))?;
    let signature = B64.decode(signature).map_err(|_| refused("the signature is not base64url"))?;
    let alg: CoreJwsSigningAlgorithm =
        serde_json::from_value(header["alg"].clone()).map_err(|_| refused("unknown alg"))?;
    if matches!(alg, CoreJwsSigningAlgorithm::None)
        || matches!(
            alg,
            CoreJwsSigningAlgorithm::HmacSha256
                | CoreJwsSigningAlgorithm::HmacSha384
                | CoreJwsSigningAlgorithm::HmacSha512
        )
    {
        return Err(refused("the assertion must be signed with the provider's key"));
    }
    let kid = header["kid"].as_str();
    let has_kid = |m: &CoreProviderMetadata| {
        m.jwks().keys().iter().any(|k| kid.is_none() || k.key_id().map(|id| id.as_str()) == kid)
    };
    let mut metadata = discover(identity, idp).await?;
    if !has_kid(&metadata) && identity.forget_discovery(&idp.issuer) {
        // The provider may have rotated its keys since they were cached: read them once more.
        metadata = discover(identity, idp).await?;
    }
    let keys: Vec<&CoreJsonWebKey> =
        metadata.jwks().keys().iter().filter(|k| kid.is_none() || k.key_id().map(|id| id.as_str()) == kid).collect();
    if keys.is_empty() {
        return Err(refused("no key of the provider matches the assertion's kid"));
    }
    if !keys.iter().any(|k| k.verify_signature(&alg, input.as_bytes(), &signature).is_ok()) {
        return Err(refused("the signature does not verify with the provider's keys"));
    }
    Ok((header, claims))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn groups_come_from_the_configured_claim() {
        let claims = json!({"groups": ["eng", "ops", 3], "roles": "admin"});
        assert_eq!(groups(&claims, "groups"), ["eng", "ops"]);
        assert_eq!(groups(&claims, "roles"), ["admin"]);
        assert!(groups(&claims, "missing").is_empty());
    }
}
