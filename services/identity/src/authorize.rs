//! From `/authorize` to the redirect back to the client: the request is checked (client, redirect
//! URI, PKCE S256, scopes, resource), the person names their work email (home-realm discovery:
//! the domain routes to the tenant) or arrives with a login hint, signs in at the tenant's
//! identity provider, sees what the client asks for, and allows or refuses it.

use std::collections::{BTreeMap, BTreeSet};

use otc_auth::{CODE_PREFIX, Scope};
use otc_store::{IdpConfig, NewGrant, OAuthClient};
use serde_json::Value;

use crate::clients::redirect_matches;
use crate::federation::{self, FederationError};
use crate::flow::{self, Flow, SignedIn};
use crate::{Identity, IdentityError, paths};

/// The query of an authorization request.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct AuthorizeRequest {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
    pub login_hint: Option<String>,
}

/// Why a step cannot go on.
#[derive(Debug)]
pub enum Refusal {
    /// Shown to the person: the client or its redirect URI cannot be trusted with an error
    /// (RFC 6749 §4.1.2.1), or the flow is gone.
    Page { title: String, message: String },
    /// The sign-in page again, with what to correct.
    Retry { flow: String, message: String },
    /// An error sent back to the client's redirect URI.
    Redirect(url::Url),
}

impl Refusal {
    pub(crate) fn page(title: &str, message: impl Into<String>) -> Self {
        Refusal::Page { title: title.to_string(), message: message.into() }
    }
}

impl From<IdentityError> for Refusal {
    fn from(err: IdentityError) -> Self {
        crate::log_internal(&err);
        Refusal::page("Something went wrong", "The server could not go on with this sign-in. Try again in a moment.")
    }
}

impl From<otc_store::StoreError> for Refusal {
    fn from(err: otc_store::StoreError) -> Self {
        IdentityError::Store(err).into()
    }
}

/// `uri` with the parameters added to its query.
pub fn with_params(uri: &str, params: &[(&str, &str)]) -> url::Url {
    let mut url = url::Url::parse(uri).expect("redirect URIs were checked when the client registered");
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in params {
            query.append_pair(k, v);
        }
    }
    url
}

/// An error for the client, at its redirect URI, with its state and our issuer (RFC 9207).
fn to_client(flow_like: (&str, Option<&str>, &str), error: &str, description: &str) -> Refusal {
    let (redirect_uri, state, issuer) = flow_like;
    let mut params = vec![("error", error), ("error_description", description)];
    if let Some(state) = state {
        params.push(("state", state));
    }
    params.push(("iss", issuer));
    Refusal::Redirect(with_params(redirect_uri, &params))
}

fn flow_target(flow: &Flow) -> (&str, Option<&str>, &str) {
    (&flow.redirect_uri, flow.state.as_deref(), &flow.issuer)
}

/// Parses a space-separated scope list.
pub(crate) fn parse_scope(text: &str) -> Result<Vec<String>, String> {
    let mut out = BTreeSet::new();
    for s in text.split(' ').filter(|s| !s.is_empty()) {
        if s.len() > 100 || out.len() >= 100 {
            return Err("too many or too long scopes".into());
        }
        // OAuth clients add scopes of their own (offline_access, openid); they grant nothing here.
        if matches!(s, "offline_access" | "openid" | "profile" | "email") {
            continue;
        }
        let scope: Scope = s.parse().map_err(|_| format!("{s:?} is not a scope of this server"))?;
        out.insert(scope.to_string());
    }
    Ok(out.into_iter().collect())
}

/// The scopes `allowed` lets a person grant of those `asked`. A client that asked for nothing
/// gets what the person may grant short of administration (`*` becomes every other action's
/// wildcard): administering a tenant is only ever granted when asked for by name.
pub(crate) fn grantable(asked: Option<&[String]>, allowed: &[String]) -> Vec<String> {
    let allowed: Vec<Scope> = allowed.iter().filter_map(|s| s.parse().ok()).collect();
    match asked {
        None => allowed
            .iter()
            .flat_map(|s| match s.as_str() {
                "*" => otc_auth::SCOPE_ACTIONS.iter().filter(|a| **a != "admin").map(|a| format!("{a}:*")).collect(),
                other if other.starts_with("admin:") => vec![],
                other => vec![other.to_string()],
            })
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        Some(asked) => asked.iter().filter(|a| allowed.iter().any(|s| s.grants(a))).cloned().collect(),
    }
}

/// What the provider's groups mean here: the scopes the person may grant (the tenant's
/// defaults and each group's), and the ACL groups they belong to.
pub(crate) fn map_groups(idp: &IdpConfig, groups: &[String]) -> (Vec<String>, Vec<String>) {
    let mut scopes: BTreeSet<String> = idp.default_scopes.iter().cloned().collect();
    let mut acl = BTreeSet::new();
    let listed = |map: &Value, key: &str| -> Option<Vec<String>> {
        map.get(key)?.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
    };
    for group in groups {
        scopes.extend(listed(&idp.group_scopes, group).unwrap_or_default());
        // Only the tenant's explicit mapping makes a provider's group an ACL group: a provider
        // group that merely shares an ACL group's name grants nothing.
        acl.extend(listed(&idp.group_acl, group).unwrap_or_default());
    }
    (scopes.into_iter().collect(), acl.into_iter().filter(|g| otc_vault::acl::is_group_name(g)).collect())
}

pub(crate) fn email_domain(email: &str) -> Option<String> {
    let (local, domain) = email.rsplit_once('@')?;
    (!local.is_empty() && !domain.is_empty()).then(|| domain.to_ascii_lowercase())
}

impl Identity {
    /// Checks an authorization request and starts its flow. `resources` are the resource URLs
    /// this server serves (the first is the default). Answers the flow and the secret its
    /// browser keeps (in a cookie) to continue it.
    pub async fn begin(
        &self,
        issuer: &str,
        req: AuthorizeRequest,
        resources: &[String],
    ) -> Result<(Flow, String), Refusal> {
        let client_id = req.client_id.as_deref().filter(|c| !c.is_empty()).ok_or_else(|| {
            Refusal::page("The request is incomplete", "The application did not say who it is (client_id is missing).")
        })?;
        let client = match self.client(client_id).await {
            Ok(Some(client)) => client,
            Ok(None) => return Err(Refusal::page("Unknown application", "This application is not registered here.")),
            Err(e) => return Err(Refusal::page("Unknown application", e.description)),
        };
        let redirect_uri = req.redirect_uri.clone().ok_or_else(|| {
            Refusal::page(
                "The request is incomplete",
                "The application did not say where to return (redirect_uri is missing).",
            )
        })?;
        if !redirect_matches(&client.redirect_uris, &redirect_uri) {
            return Err(Refusal::page(
                "Unexpected return address",
                "The application asked to return somewhere it did not register, so the request was stopped.",
            ));
        }
        let target = (redirect_uri.as_str(), req.state.as_deref(), issuer);
        if req.response_type.as_deref() != Some("code") {
            return Err(to_client(target, "unsupported_response_type", "response_type must be code"));
        }
        match (req.code_challenge.as_deref(), req.code_challenge_method.as_deref()) {
            (Some(c), Some("S256")) if otc_auth::pkce::is_s256_challenge(c) => {}
            (None, _) => {
                return Err(to_client(target, "invalid_request", "PKCE is required: code_challenge is missing"));
            }
            _ => return Err(to_client(target, "invalid_request", "code_challenge_method must be S256")),
        }
        let scope = match req.scope.as_deref() {
            Some(text) => Some(parse_scope(text).map_err(|why| to_client(target, "invalid_scope", &why))?),
            None => None,
        };
        let resource = match req.resource.as_deref() {
            None => resources[0].clone(),
            Some(r) if resources.iter().any(|ours| ours == r.trim_end_matches('/')) => {
                r.trim_end_matches('/').to_string()
            }
            Some(_) => return Err(to_client(target, "invalid_target", "the resource is not served here")),
        };
        if req.state.as_ref().is_some_and(|s| s.len() > 2048) {
            return Err(to_client((&redirect_uri, None, issuer), "invalid_request", "state is longer than 2048 bytes"));
        }
        let secret = flow::new_id();
        let flow = Flow {
            id: flow::new_id(),
            browser_key: flow::browser_key(&secret),
            issuer: issuer.to_string(),
            client_id: client.client_id.clone(),
            client_name: client.client_name.clone(),
            redirect_uri,
            state: req.state,
            code_challenge: req.code_challenge.unwrap_or_default(),
            scope,
            resource,
            tenant: None,
            tenant_name: None,
            idp: None,
            user: None,
        };
        flow::save(&self.kv, &flow, self.settings.flow_ttl).await?;
        Ok((flow, secret))
    }

    /// The flow a page or form names, if it is still going.
    pub async fn flow(&self, id: &str) -> Result<Option<Flow>, IdentityError> {
        flow::load(&self.kv, id).await
    }

    /// The flow a page or form names, if it is still going and `secret` (the browser's cookie)
    /// is the one of the browser that began it: what the steps after `/authorize` (sign_in,
    /// callback, consent) take.
    pub async fn flow_for_browser(&self, id: &str, secret: Option<&str>) -> Result<Option<Flow>, IdentityError> {
        let Some(secret) = secret else { return Ok(None) };
        let flow = self.flow(id).await?;
        Ok(flow.filter(|f| f.browser_key == flow::browser_key(secret)))
    }

    /// Home-realm discovery: the tenant whose identity provider signs in `email`'s domain, or
    /// the tenant `email` names by its id (slug) when it is not an address (the organisation's
    /// own sign-in, for people whose addresses are on a shared domain); then the URL that sends
    /// the person there.
    pub async fn sign_in(&self, mut flow: Flow, email: &str) -> Result<url::Url, Refusal> {
        let email = email.trim();
        let retry = |flow: &Flow, message: String| Refusal::Retry { flow: flow.id.clone(), message };
        if email.is_empty() || email.len() > 320 || email.chars().any(char::is_control) {
            return Err(retry(&flow, "Enter your work email address or your organisation's id.".into()));
        }
        let (tenant, hint, unknown) = match email_domain(email) {
            Some(domain) => (
                self.store.tenant_by_email_domain(&domain).await?,
                Some(email),
                format!("No organisation here signs in people with {domain} addresses."),
            ),
            None if !email.contains('@') => (
                self.store.tenant_id_by_slug(&email.to_ascii_lowercase()).await?,
                None,
                format!("No organisation here has the id {email}."),
            ),
            None => (None, None, "Enter your work email address or your organisation's id.".into()),
        };
        let Some(tenant) = tenant else { return Err(retry(&flow, unknown)) };
        let mut tx = self.store.begin(tenant).await?;
        let idp = tx.idp().await?;
        let name = tx.tenant().await?.map(|t| t.name);
        tx.commit().await?;
        let Some(idp) = idp else {
            return Err(retry(
                &flow,
                "Your organisation has no sign-in configured here. Ask your administrator.".into(),
            ));
        };
        let client = self.client(&flow.client_id).await.ok().flatten();
        if let Some(client) = client
            && !cimd_allowed(&client, &idp)
        {
            return Err(to_client(
                flow_target(&flow),
                "access_denied",
                "your organisation does not allow this application",
            ));
        }
        let redirect = format!("{}{}", flow.issuer, paths::CALLBACK);
        let (url, leg) = federation::start(self, &idp, tenant, &redirect, &flow.id, hint)
            .await
            .map_err(|e| federation_refusal(&e))?;
        flow.tenant = Some(tenant);
        flow.tenant_name = name;
        flow.idp = Some(leg);
        flow::save(&self.kv, &flow, self.settings.flow_ttl).await?;
        Ok(url)
    }

    /// The provider sent the person back: the id token is checked, the person becomes (or is
    /// found as) a principal of the tenant with the groups the provider names, and the flow
    /// moves on to consent.
    pub async fn callback(&self, mut flow: Flow, code: Option<&str>, error: Option<&str>) -> Result<Flow, Refusal> {
        let (Some(tenant), Some(leg)) = (flow.tenant, flow.idp.clone()) else {
            return Err(Refusal::page("This sign-in has not started", "Start again from the application."));
        };
        if let Some(error) = error {
            flow::finish(&self.kv, &flow).await?;
            let described = format!("the identity provider answered {}", error.chars().take(64).collect::<String>());
            return Err(to_client(flow_target(&flow), "access_denied", &described));
        }
        let code = code.ok_or_else(|| Refusal::page("The sign-in failed", "Your identity provider sent no code."))?;
        let mut tx = self.store.begin(tenant).await?;
        let idp =
            tx.idp().await?.ok_or_else(|| Refusal::page("Sign-in is not configured", "Ask your administrator."))?;
        tx.commit().await?;
        let redirect = format!("{}{}", flow.issuer, paths::CALLBACK);
        let vouched =
            federation::finish(self, &idp, tenant, &redirect, &leg, code).await.map_err(|e| federation_refusal(&e))?;
        if vouched.email_verified == Some(false) {
            return Err(Refusal::page(
                "Email not verified",
                "Your identity provider has not verified your email address.",
            ));
        }
        if !idp.email_domains.is_empty() {
            let domain = vouched.email.as_deref().and_then(email_domain);
            if !domain.is_some_and(|d| idp.email_domains.contains(&d)) {
                return Err(Refusal::page(
                    "Wrong organisation",
                    "The account you signed in with does not belong to this organisation's email domains.",
                ));
            }
        }
        let name = vouched.email.clone().unwrap_or_else(|| vouched.subject.clone());
        let mut tx = self.store.begin(tenant).await?;
        let person = tx
            .federated_principal(&vouched.subject, &name, vouched.email.as_deref(), vouched.groups.as_deref())
            .await?;
        let principal = person.id;
        if !person.active {
            return Err(Refusal::page("Account deactivated", "Your organisation has deactivated your account here."));
        }
        let (allowed, acl_groups) = map_groups(&idp, &person.idp_groups);
        if vouched.groups.is_some() {
            tx.set_sign_in_groups(principal, &acl_groups).await?;
        }
        tx.commit().await?;
        // Group changes reach every gateway's cached checks of this person's tokens.
        if let Err(e) = self.kv.bump_generation(otc_kv::Generation::Tokens(tenant)).await {
            tracing::warn!(error = %e, "could not move the tenant's token generation after a sign-in");
        }
        let scopes = grantable(flow.scope.as_deref(), &allowed);
        if scopes.is_empty() {
            flow::finish(&self.kv, &flow).await?;
            return Err(to_client(
                flow_target(&flow),
                "access_denied",
                "your organisation grants you none of the scopes this application asked for",
            ));
        }
        flow.user = Some(SignedIn { principal_id: principal, name, email: vouched.email, scopes });
        flow::save(&self.kv, &flow, self.settings.flow_ttl).await?;
        Ok(flow)
    }

    /// The person allowed (or refused) what the consent page listed: the code goes back to the
    /// client. A flow is consented once.
    pub async fn consent(&self, flow: Flow, allow: bool) -> Result<url::Url, Refusal> {
        let (Some(tenant), Some(user)) = (flow.tenant, flow.user.clone()) else {
            return Err(Refusal::page("Sign in first", "This request has no signed-in person yet."));
        };
        // A console sign-in ends in a session, never in a code.
        if flow.is_console() {
            return Err(Refusal::page("Start again", "This sign-in belongs to the console."));
        }
        if !flow::finish(&self.kv, &flow).await? {
            return Err(expired());
        }
        if !allow {
            return Err(to_client(flow_target(&flow), "access_denied", "the person refused the request"));
        }
        let code = otc_auth::mint_with(CODE_PREFIX, tenant);
        let expires = chrono::Utc::now() + chrono::Duration::from_std(self.settings.code_ttl).unwrap_or_default();
        let mut tx = self.store.begin(tenant).await?;
        let grant = tx
            .create_grant(NewGrant {
                principal_id: user.principal_id,
                client_id: &flow.client_id,
                client_name: flow.client_name.as_deref(),
                scopes: &user.scopes,
                resource: &flow.resource,
                via: "authorization_code",
            })
            .await?;
        tx.store_code(&code.hash.0, grant.id, &flow.redirect_uri, &flow.code_challenge, expires).await?;
        tx.commit().await?;
        let mut params = vec![("code", code.plaintext.as_str())];
        if let Some(state) = flow.state.as_deref() {
            params.push(("state", state));
        }
        params.push(("iss", &flow.issuer));
        Ok(with_params(&flow.redirect_uri, &params))
    }
}

fn expired() -> Refusal {
    Refusal::page("This sign-in has expired", "Start again from the application you were connecting.")
}

fn federation_refusal(err: &FederationError) -> Refusal {
    crate::log_internal(err);
    match err {
        FederationError::Config(_) => Refusal::page(
            "Sign-in is misconfigured",
            "Your organisation's identity provider settings are not usable. Ask your administrator.",
        ),
        FederationError::Unreachable(_) => Refusal::page(
            "Identity provider unreachable",
            "Your organisation's identity provider did not answer. Try again.",
        ),
        FederationError::Refused(_) => {
            Refusal::page("The sign-in failed", "Your identity provider's answer could not be verified. Try again.")
        }
    }
}

/// Whether a tenant lets its people authorize this client: a registered client always; a
/// metadata-document client when the tenant lists no hosts or lists its host.
fn cimd_allowed(client: &OAuthClient, idp: &IdpConfig) -> bool {
    if client.kind != "cimd" || idp.cimd_hosts.is_empty() {
        return true;
    }
    let host = url::Url::parse(&client.client_id).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase));
    host.is_some_and(|h| idp.cimd_hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(&h)))
}

/// The scopes and their descriptions, for the consent page.
pub fn describe_scopes(scopes: &[String]) -> BTreeMap<String, String> {
    scopes
        .iter()
        .map(|s| {
            let (action, resource) = s.split_once(':').unwrap_or(("all", "everything"));
            let verb = match action {
                "read" => "Read",
                "write" => "Create and change",
                "delete" => "Delete",
                "admin" => "Administer",
                "execute" => "Run",
                "bulk" => "Make bulk changes to",
                _ => "Do everything with",
            };
            let what = if resource == "*" { "everything".to_string() } else { resource.replace('-', " ") };
            (s.clone(), format!("{verb} {what}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_are_granted_only_as_far_as_allowed() {
        let allowed = vec!["read:*".to_string(), "write:notes".to_string()];
        let asked = parse_scope("read:notes write:notes delete:notes offline_access").unwrap();
        assert_eq!(grantable(Some(&asked), &allowed), ["read:notes", "write:notes"]);
        assert_eq!(grantable(None, &allowed), ["read:*", "write:notes"]);
        let everything = vec!["*".to_string(), "admin:acl".to_string()];
        assert_eq!(grantable(None, &everything), ["bulk:*", "delete:*", "execute:*", "read:*", "write:*"]);
        assert_eq!(grantable(Some(&["admin:acl".to_string()]), &everything), ["admin:acl"]);
        assert!(parse_scope("read:notes bogus").is_err());
    }

    #[test]
    fn groups_map_to_scopes_and_acl_groups() {
        let idp = IdpConfig {
            issuer: "https://idp.example".into(),
            client_id: "c".into(),
            sealed_secret: None,
            email_domains: vec![],
            groups_claim: "groups".into(),
            default_scopes: vec!["read:*".into()],
            group_scopes: json!({"eng": ["write:notes"], "admins": ["admin:*"]}),
            group_acl: json!({"eng": ["engineering"]}),
            cimd_hosts: vec![],
        };
        // "engineering" is also an ACL group's name: the provider's group of that name is not
        // mapped, so it grants nothing.
        let (scopes, acl) = map_groups(&idp, &["eng".into(), "ops".into(), "engineering".into(), "bad group!".into()]);
        assert_eq!(scopes, ["read:*", "write:notes"]);
        assert_eq!(acl, ["engineering"]);
        let (_, acl) = map_groups(&idp, &["ops".into(), "engineering".into()]);
        assert!(acl.is_empty(), "unmapped groups open nothing: {acl:?}");
    }
}
