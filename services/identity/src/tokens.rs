//! The token endpoint and revocation, and the check of an access token the gateway makes.
//!
//! - `authorization_code`: once only (a second use revokes the grant), for the client it was
//!   issued to, at the redirect URI it was issued for, with the PKCE verifier of its challenge.
//! - `refresh_token`: each use rotates it; presenting a rotated one revokes the whole grant.
//! - the JWT-bearer grant (RFC 7523) with an Identity Assertion JWT Authorization Grant (ID-JAG)
//!   from a tenant's identity provider: signature, type, issuer, audience (our issuer), client,
//!   resource, expiry and a jti seen once; an access token for the asserted person with the
//!   scopes both the assertion and the tenant allow, and no refresh token.

use std::collections::HashMap;

use chrono::Utc;
use otc_auth::jwt::Unverified;
use otc_auth::{PresentedToken, REFRESH_PREFIX, TokenHash};
use otc_store::{Grant, NewAccessToken, NewGrant, Redemption, TenantTx};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::authorize::{grantable, map_groups, parse_scope};
use crate::wire::TokenResponse;
use crate::{Identity, IdentityError, JWT_BEARER, OAuthError, federation};

/// The JWT type of an access token (RFC 9068) and of an identity assertion.
pub const ACCESS_TOKEN_TYP: &str = "at+jwt";
pub const ID_JAG_TYP: &str = "oauth-id-jag+jwt";
/// Clock skew allowed when checking an assertion's times.
const LEEWAY_SECS: i64 = 30;
/// The longest an identity assertion may be valid.
const MAX_ASSERTION_SECS: i64 = 3600;

/// The form fields of a token or revocation request.
pub type Form = HashMap<String, String>;

fn field<'a>(form: &'a Form, name: &str) -> Option<&'a str> {
    form.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

impl Identity {
    /// `POST /token`. `basic` is the client's HTTP Basic credential, if it sent one.
    pub async fn token(
        &self,
        issuer: &str,
        resources: &[String],
        form: &Form,
        basic: Option<(String, String)>,
    ) -> Result<TokenResponse, OAuthError> {
        let client = self.authenticate_client(basic, field(form, "client_id"), field(form, "client_secret")).await?;
        self.store.touch_oauth_client(&client.client_id).await?;
        match field(form, "grant_type") {
            Some("authorization_code") => self.redeem_code(issuer, &client.client_id, form).await,
            Some("refresh_token") => self.refresh(issuer, &client.client_id, form).await,
            // An assertion is a bearer credential for the client it names: only a client that
            // proves who it is (with its secret) may redeem one.
            Some(JWT_BEARER) if client.secret_hash.is_none() => Err(OAuthError::unauthorized_client(
                "the JWT-bearer grant is for confidential clients (register with a client secret)",
            )),
            Some(JWT_BEARER) => self.redeem_assertion(issuer, resources, &client.client_id, form).await,
            Some(other) => Err(OAuthError::unsupported_grant_type(format!("grant_type {other} is not supported"))),
            None => Err(OAuthError::invalid_request("grant_type is required")),
        }
    }

    async fn redeem_code(&self, issuer: &str, client_id: &str, form: &Form) -> Result<TokenResponse, OAuthError> {
        let code = field(form, "code").ok_or_else(|| OAuthError::invalid_request("code is required"))?;
        let presented = PresentedToken::parse_with(otc_auth::CODE_PREFIX, code)
            .map_err(|_| OAuthError::invalid_grant("the code is not valid"))?;
        let mut tx = self.store.begin(presented.tenant).await?;
        let binding = match tx.redeem_code(&presented.hash.0).await? {
            Redemption::Fresh(binding) => binding,
            other => {
                tx.commit().await?;
                return Err(self.refused_redemption(presented.tenant, other, "code").await);
            }
        };
        // From here a failed check still spends the code: it was shown once, to the wrong party
        // or with the wrong proof.
        let refusal = if binding.grant.client_id != client_id {
            Some(OAuthError::invalid_grant("the code was issued to another client"))
        } else if field(form, "redirect_uri") != Some(binding.redirect_uri.as_str()) {
            Some(OAuthError::invalid_grant("redirect_uri differs from the authorization request's"))
        } else if !field(form, "code_verifier").is_some_and(|v| otc_auth::pkce::verifies(v, &binding.code_challenge)) {
            Some(OAuthError::invalid_grant("the PKCE code_verifier does not match the code_challenge"))
        } else if field(form, "resource").is_some_and(|r| r.trim_end_matches('/') != binding.grant.resource) {
            Some(OAuthError::invalid_target("the resource differs from the one authorized"))
        } else {
            None
        };
        if let Some(refusal) = refusal {
            tx.commit().await?;
            return Err(refusal);
        }
        let answer = self.mint(&mut tx, issuer, &binding.grant, &binding.grant.scopes, true).await?;
        tx.commit().await?;
        Ok(answer)
    }

    async fn refresh(&self, issuer: &str, client_id: &str, form: &Form) -> Result<TokenResponse, OAuthError> {
        let token =
            field(form, "refresh_token").ok_or_else(|| OAuthError::invalid_request("refresh_token is required"))?;
        let presented = PresentedToken::parse_with(REFRESH_PREFIX, token)
            .map_err(|_| OAuthError::invalid_grant("the refresh token is not valid"))?;
        let mut tx = self.store.begin(presented.tenant).await?;
        // Whose token it is, before it is rotated: another client's is refused untouched.
        if let Some(grant) = tx.refresh_token_grant(&presented.hash.0).await?
            && let Some(grant) = tx.grant(grant).await?
            && grant.client_id != client_id
        {
            return Err(OAuthError::invalid_grant("the refresh token was issued to another client"));
        }
        let grant = match tx.rotate_refresh_token(&presented.hash.0).await? {
            Redemption::Fresh(grant) => grant,
            other => {
                tx.commit().await?;
                return Err(self.refused_redemption(presented.tenant, other, "refresh token").await);
            }
        };
        if field(form, "resource").is_some_and(|r| r.trim_end_matches('/') != grant.resource) {
            return Err(OAuthError::invalid_target("the resource differs from the one authorized"));
        }
        if let Some(max_age) = self.settings.max_grant_age
            && grant_too_old(grant.created_at, max_age, chrono::Utc::now())
        {
            tx.revoke_grant(grant.id, "older than the deployment's maximum grant age").await?;
            tx.commit().await?;
            self.tokens_changed(presented.tenant).await;
            return Err(OAuthError::invalid_grant(format!(
                "this grant is older than {} days; sign in again",
                max_age.as_secs() / 86_400
            )));
        }
        // A narrower scope may be asked for; never a wider one.
        let scopes = match field(form, "scope") {
            Some(text) => narrowed(&grant.scopes, parse_scope(text).map_err(OAuthError::invalid_scope)?)
                .map_err(OAuthError::invalid_scope)?,
            None => grant.scopes.clone(),
        };
        // What the person may still grant: the provider's groups may have changed since.
        let scopes = match tx.idp().await? {
            Some(idp) => {
                let (allowed, _) = map_groups(&idp, &tx.principal_idp_groups(grant.principal_id).await?);
                grantable(Some(&scopes), &allowed)
            }
            None => scopes,
        };
        if scopes.is_empty() {
            tx.revoke_grant(grant.id, "the person may no longer grant its scopes").await?;
            tx.commit().await?;
            self.tokens_changed(presented.tenant).await;
            return Err(OAuthError::invalid_grant("the person may no longer grant what this grant holds"));
        }
        let answer = self.mint(&mut tx, issuer, &grant, &scopes, true).await?;
        tx.commit().await?;
        Ok(answer)
    }

    /// The answer to a code or refresh token that cannot be redeemed; a replay has revoked its
    /// grant, which every gateway learns through the tenant's token generation.
    async fn refused_redemption<T>(&self, tenant: Uuid, redemption: Redemption<T>, what: &str) -> OAuthError {
        match redemption {
            Redemption::Replayed { grant_id } => {
                tracing::warn!(%tenant, grant = %grant_id, "{what} presented again: grant revoked");
                self.tokens_changed(tenant).await;
                OAuthError::invalid_grant(format!("the {what} was already used; every token of its grant is revoked"))
            }
            Redemption::Expired => OAuthError::invalid_grant(format!("the {what} has expired")),
            Redemption::Revoked => OAuthError::invalid_grant(format!("the {what}'s grant was revoked")),
            Redemption::Missing | Redemption::Fresh(_) => OAuthError::invalid_grant(format!("the {what} is not valid")),
        }
    }

    pub(crate) async fn tokens_changed(&self, tenant: Uuid) {
        if let Err(e) = self.kv.bump_generation(otc_kv::Generation::Tokens(tenant)).await {
            tracing::warn!(error = %e, %tenant, "could not move the tenant's token generation");
        }
    }

    /// An access token (and a refresh token, when `refresh`) for `grant`.
    async fn mint(
        &self,
        tx: &mut TenantTx,
        issuer: &str,
        grant: &Grant,
        scopes: &[String],
        refresh: bool,
    ) -> Result<TokenResponse, IdentityError> {
        let key = self.keys.signing_key(&self.store, &self.sealer).await?;
        let now = Utc::now();
        let ttl = self.settings.access_token_ttl.as_secs() as i64;
        let mut jti = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut jti);
        let claims = json!({
            "iss": issuer,
            "sub": grant.principal_id,
            "aud": grant.resource,
            "client_id": grant.client_id,
            "scope": scopes.join(" "),
            "tid": tx.tenant_id(),
            "iat": now.timestamp(),
            "exp": now.timestamp() + ttl,
            "jti": hex::encode(jti),
        });
        let access = key.sign(ACCESS_TOKEN_TYP, &claims).map_err(|e| IdentityError::Internal(e.to_string()))?;
        let hash = TokenHash::of(&access);
        let mut scoped = grant.clone();
        scoped.scopes = scopes.to_vec();
        tx.record_access_token(NewAccessToken {
            hash: &hash.0,
            hint: &access[access.len() - 4..],
            grant: &scoped,
            audience: &grant.resource,
            expires_at: now + chrono::Duration::seconds(ttl),
        })
        .await?;
        let mut answer = TokenResponse {
            access_token: access,
            token_type: "Bearer".into(),
            expires_in: ttl,
            scope: scopes.join(" "),
            refresh_token: None,
        };
        if refresh {
            let token = otc_auth::mint_with(REFRESH_PREFIX, tx.tenant_id());
            let expires = now + chrono::Duration::from_std(self.settings.refresh_token_ttl).unwrap_or_default();
            tx.store_refresh_token(&token.hash.0, grant.id, expires).await?;
            answer.refresh_token = Some(token.plaintext);
        }
        Ok(answer)
    }

    async fn redeem_assertion(
        &self,
        issuer: &str,
        resources: &[String],
        client_id: &str,
        form: &Form,
    ) -> Result<TokenResponse, OAuthError> {
        let bad = |why: &str| OAuthError::invalid_grant(format!("the identity assertion {why}"));
        let assertion = field(form, "assertion").ok_or_else(|| OAuthError::invalid_request("assertion is required"))?;
        let unverified = Unverified::parse(assertion).map_err(|_| bad("is not a JWT"))?;
        if unverified.header["typ"].as_str().map(str::to_ascii_lowercase).as_deref() != Some(ID_JAG_TYP) {
            return Err(bad("is not of type oauth-id-jag+jwt"));
        }
        let claims = &unverified.claims;
        let asserted_issuer = claims["iss"]
            .as_str()
            .filter(|i| i.len() <= 2048 && !i.chars().any(char::is_control))
            .ok_or_else(|| bad("names no usable issuer"))?;
        // The tenant: the one whose provider is the issuer; where several share one issuer, the
        // one that owns the asserted email's domain.
        let mut tenants = self.store.tenants_by_idp_issuer(asserted_issuer).await?;
        if tenants.len() > 1 {
            let domain = claims["email"]
                .as_str()
                .filter(|e| e.len() <= 320 && !e.chars().any(char::is_control))
                .and_then(|e| e.rsplit_once('@'))
                .map(|(_, d)| d.to_ascii_lowercase());
            let owner = match domain {
                Some(d) => self.store.tenant_by_email_domain(&d).await?,
                None => None,
            };
            tenants.retain(|t| Some(*t) == owner);
        }
        let [tenant] = tenants[..] else { return Err(bad("comes from an issuer no organisation here trusts")) };
        let mut tx = self.store.begin(tenant).await?;
        let idp = tx.idp().await?.ok_or_else(|| bad("comes from an issuer no organisation here trusts"))?;
        tx.commit().await?;
        let (_, claims) = federation::verify_assertion(self, &idp, assertion).await.map_err(|e| {
            crate::log_internal(&e);
            bad("does not verify with its issuer's keys")
        })?;
        let audience_ok = match &claims["aud"] {
            Value::String(aud) => aud == issuer,
            Value::Array(auds) => auds.iter().any(|a| a == issuer),
            _ => false,
        };
        if !audience_ok {
            return Err(bad("is for another audience"));
        }
        if claims["client_id"].as_str() != Some(client_id) {
            return Err(bad("was issued for another client"));
        }
        let now = Utc::now().timestamp();
        let exp = claims["exp"].as_i64().ok_or_else(|| bad("has no expiry"))?;
        if exp + LEEWAY_SECS < now {
            return Err(bad("has expired"));
        }
        // A short-lived credential: one valid for longer than this is refused, so its jti
        // need not be remembered for long.
        if exp > now + MAX_ASSERTION_SECS {
            return Err(bad("is valid for longer than an hour"));
        }
        if claims["iat"].as_i64().is_some_and(|iat| iat > now + LEEWAY_SECS) {
            return Err(bad("was issued in the future"));
        }
        if claims["nbf"].as_i64().is_some_and(|nbf| nbf > now + LEEWAY_SECS) {
            return Err(bad("is not valid yet"));
        }
        let resource = match (claims["resource"].as_str(), field(form, "resource")) {
            (Some(asserted), asked) => {
                let asserted = asserted.trim_end_matches('/');
                if !resources.iter().any(|r| r == asserted) {
                    return Err(OAuthError::invalid_target("the assertion's resource is not served here"));
                }
                if asked.is_some_and(|a| a.trim_end_matches('/') != asserted) {
                    return Err(OAuthError::invalid_target("the resource differs from the assertion's"));
                }
                asserted.to_string()
            }
            (None, Some(asked)) if resources.iter().any(|r| r == asked.trim_end_matches('/')) => {
                asked.trim_end_matches('/').to_string()
            }
            (None, Some(_)) => return Err(OAuthError::invalid_target("the resource is not served here")),
            (None, None) => resources[0].clone(),
        };
        // Postgres keeps no NUL: a claim with control characters is refused, not stored.
        let clean = |s: &&str| !s.is_empty() && s.len() <= 512 && !s.chars().any(char::is_control);
        let subject = claims["sub"].as_str().filter(clean).ok_or_else(|| bad("names no usable subject"))?;
        let jti = claims["jti"].as_str().filter(clean).ok_or_else(|| bad("has no usable jti"))?;
        let email = claims["email"].as_str().filter(clean).map(str::to_ascii_lowercase);
        if !idp.email_domains.is_empty()
            && let Some(email) = &email
            && !email.rsplit_once('@').is_some_and(|(_, d)| idp.email_domains.iter().any(|ok| ok == d))
        {
            return Err(bad("names a person outside the organisation's email domains"));
        }
        // The groups the assertion names; without a groups claim, the ones the provider named
        // at the person's last sign-in.
        let asserted_groups = claims.get(&idp.groups_claim).map(|_| federation::groups(&claims, &idp.groups_claim));
        let mut tx = self.store.begin(tenant).await?;
        let exp_at = chrono::DateTime::from_timestamp(exp, 0).unwrap_or_else(Utc::now);
        if !tx.record_assertion_jti(&format!("{asserted_issuer} {jti}"), exp_at).await? {
            return Err(bad("was already used (its jti was seen before)"));
        }
        let name = email.clone().unwrap_or_else(|| subject.to_string());
        let person = tx.federated_principal(subject, &name, email.as_deref(), asserted_groups.as_deref()).await?;
        if !person.active {
            tx.commit().await?;
            return Err(bad("names a person whose account is deactivated"));
        }
        let (allowed, acl_groups) = map_groups(&idp, &person.idp_groups);
        let asserted_scopes =
            claims["scope"].as_str().map(parse_scope).transpose().map_err(OAuthError::invalid_scope)?;
        let mut scopes = grantable(asserted_scopes.as_deref(), &allowed);
        if let Some(asked) = field(form, "scope") {
            let asked = parse_scope(asked).map_err(OAuthError::invalid_scope)?;
            scopes.retain(|s| asked.contains(s));
        }
        if scopes.is_empty() {
            return Err(OAuthError::invalid_scope("the organisation grants this person none of the scopes asserted"));
        }
        if asserted_groups.is_some() {
            tx.set_sign_in_groups(person.id, &acl_groups).await?;
        }
        let client = self.client(client_id).await?;
        let grant = tx
            .create_grant(NewGrant {
                principal_id: person.id,
                client_id,
                client_name: client.as_ref().and_then(|c| c.client_name.as_deref()),
                scopes: &scopes,
                resource: &resource,
                via: "jwt_bearer",
            })
            .await?;
        let answer = self.mint(&mut tx, issuer, &grant, &scopes, false).await?;
        tx.commit().await?;
        self.tokens_changed(tenant).await;
        Ok(answer)
    }

    /// `POST /revoke` (RFC 7009): a refresh or access token of the authenticated client ends its
    /// grant. Unknown tokens, and other clients' tokens, are answered the same (nothing to tell).
    pub async fn revoke(&self, form: &Form, basic: Option<(String, String)>) -> Result<(), OAuthError> {
        let client = self.authenticate_client(basic, field(form, "client_id"), field(form, "client_secret")).await?;
        let token = field(form, "token").ok_or_else(|| OAuthError::invalid_request("token is required"))?;
        let (tenant, grant) = if let Ok(presented) = PresentedToken::parse_with(REFRESH_PREFIX, token) {
            let mut tx = self.store.begin(presented.tenant).await?;
            let grant = tx.refresh_token_grant(&presented.hash.0).await?;
            tx.commit().await?;
            (presented.tenant, grant)
        } else if let Some(tenant) = self.access_token_tenant_for(token, None).await {
            let mut tx = self.store.begin(tenant).await?;
            let grant = tx.access_token_grant(&TokenHash::of(token).0).await?;
            tx.commit().await?;
            (tenant, grant)
        } else {
            return Ok(());
        };
        let Some(grant) = grant else { return Ok(()) };
        let mut tx = self.store.begin(tenant).await?;
        let owned = tx.grant(grant).await?.is_some_and(|g| g.client_id == client.client_id);
        if owned {
            tx.revoke_grant(grant, "revoked by the client").await?;
        }
        tx.commit().await?;
        if owned {
            self.tokens_changed(tenant).await;
        }
        Ok(())
    }

    /// The tenant of an access token this server signed, if its signature holds, it names
    /// `issuer` (when given) and it has not expired. What it grants is then read as for any
    /// token, by its hash.
    pub async fn access_token_tenant_for(&self, token: &str, issuer: Option<&str>) -> Option<Uuid> {
        let parsed = Unverified::parse(token).ok()?;
        if parsed.header["typ"] != ACCESS_TOKEN_TYP {
            return None;
        }
        let keys = match self.keys.public_keys(&self.store, parsed.kid()).await {
            Ok(keys) => keys,
            Err(e) => {
                crate::log_internal(&e);
                return None;
            }
        };
        parsed.verify_es256(&keys).ok()?;
        if issuer.is_some_and(|i| parsed.claims["iss"] != i) {
            return None;
        }
        if parsed.claims["exp"].as_i64().is_none_or(|exp| exp <= Utc::now().timestamp()) {
            return None;
        }
        parsed.claims["tid"].as_str().and_then(|t| Uuid::try_parse(t).ok())
    }
}

/// The scopes a refresh asks for, when each is held by the grant (`read:notes` under a grant
/// of `read:*`): a refresh may narrow what it gets, never widen it.
fn narrowed(granted: &[String], asked: Vec<String>) -> Result<Vec<String>, String> {
    let held: Vec<otc_auth::Scope> = granted.iter().filter_map(|s| s.parse().ok()).collect();
    match asked.iter().find(|a| !held.iter().any(|g| g.grants(a))) {
        Some(wider) => Err(format!("a refresh cannot widen the granted scopes ({wider} is not granted)")),
        None => Ok(asked),
    }
}

/// Whether a grant made at `created` has outlived `max_age` at `now`.
fn grant_too_old(created: chrono::DateTime<Utc>, max_age: std::time::Duration, now: chrono::DateTime<Utc>) -> bool {
    chrono::Duration::from_std(max_age).is_ok_and(|age| created + age <= now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refresh_may_narrow_a_wildcard_but_never_widen() {
        let granted = ["read:*".to_string(), "write:notes".to_string()];
        let ask = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(narrowed(&granted, ask(&["read:notes"])).unwrap(), ["read:notes"]);
        assert_eq!(narrowed(&granted, ask(&["read:*", "write:notes"])).unwrap(), ["read:*", "write:notes"]);
        assert!(narrowed(&granted, ask(&["write:*"])).is_err());
        assert!(narrowed(&granted, ask(&["*"])).is_err());
        assert!(narrowed(&granted, ask(&["delete:notes"])).is_err());
    }

    #[test]
    fn a_grant_has_an_absolute_age() {
        let now = Utc::now();
        let day = std::time::Duration::from_secs(86_400);
        assert!(grant_too_old(now - chrono::Duration::days(400), 90 * day, now));
        assert!(grant_too_old(now - chrono::Duration::days(90), 90 * day, now));
        assert!(!grant_too_old(now - chrono::Duration::days(89), 90 * day, now));
    }
}
