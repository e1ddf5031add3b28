//! Credentials: API token format and hashing, confirmation tokens ([`confirm`]), and the scope
//! vocabulary.
//!
//! A token reads `otc_<tenant>_<secret>`: the tenant id (32 hex digits) lets the server look the
//! token up inside that tenant's row-level-security context, so even authentication never
//! queries across tenants; the secret is 32 random bytes (64 hex digits). Only the SHA-256 of
//! the whole token is stored. No I/O here.

pub mod confirm;
pub mod jwt;
pub mod pkce;
pub mod seal;

use std::fmt;
use std::str::FromStr;

use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

const TOKEN_PREFIX: &str = "otc_";
/// The authorization server's one-time codes and refresh tokens: shaped like API tokens (so the
/// tenant is found without a cross-tenant query), with their own prefixes so one is never
/// mistaken for another.
pub const CODE_PREFIX: &str = "otcc_";
pub const REFRESH_PREFIX: &str = "otcr_";
const SECRET_BYTES: usize = 32;

/// A freshly minted token: the only moment its plain text exists.
pub struct NewToken {
    pub plaintext: String,
    pub hash: TokenHash,
    /// The last four characters, kept so a person can tell tokens apart in `token list`.
    pub hint: String,
}

impl fmt::Debug for NewToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewToken").field("hint", &self.hint).finish_non_exhaustive()
    }
}

/// SHA-256 of a token's full text.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TokenHash(pub [u8; 32]);

impl fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenHash({}…)", &hex::encode(self.0)[..8])
    }
}

impl TokenHash {
    pub fn of(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }
}

/// Mints a new API token for `tenant`.
pub fn mint(tenant: Uuid) -> NewToken {
    mint_with(TOKEN_PREFIX, tenant)
}

/// Mints a secret of the kind `prefix` names (an API token, a code, a refresh token).
pub fn mint_with(prefix: &str, tenant: Uuid) -> NewToken {
    let mut secret = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut secret);
    let plaintext = format!("{prefix}{}_{}", tenant.simple(), hex::encode(secret));
    let hint = plaintext[plaintext.len() - 4..].to_string();
    NewToken { hash: TokenHash::of(&plaintext), plaintext, hint }
}

/// A presented token, checked for shape only: its tenant and hash, ready for lookup.
#[derive(Debug, Clone, Copy)]
pub struct PresentedToken {
    pub tenant: Uuid,
    pub hash: TokenHash,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed token")]
pub struct MalformedToken;

impl PresentedToken {
    /// Parses a secret of the kind `prefix` names.
    pub fn parse_with(prefix: &str, token: &str) -> Result<Self, MalformedToken> {
        let rest = token.strip_prefix(prefix).ok_or(MalformedToken)?;
        let (tenant, secret) = rest.split_once('_').ok_or(MalformedToken)?;
        if tenant.len() != 32 || secret.len() != SECRET_BYTES * 2 {
            return Err(MalformedToken);
        }
        if !secret.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
            return Err(MalformedToken);
        }
        let tenant = Uuid::try_parse(tenant).map_err(|_| MalformedToken)?;
        Ok(Self { tenant, hash: TokenHash::of(token) })
    }
}

impl FromStr for PresentedToken {
    type Err = MalformedToken;

    fn from_str(token: &str) -> Result<Self, MalformedToken> {
        Self::parse_with(TOKEN_PREFIX, token)
    }
}

/// The verbs a scope can grant, lowest rate-limit class first.
pub const SCOPE_ACTIONS: [&str; 6] = ["read", "write", "delete", "admin", "execute", "bulk"];

/// A permission such as `read:notes`, `write:*` or `*` (everything).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Scope(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid scope {scope:?}: expected ACTION:RESOURCE with ACTION one of read, write, delete, admin, execute, bulk (e.g. read:notes, write:*), or *"
)]
pub struct InvalidScope {
    pub scope: String,
}

impl Scope {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether holding `self` grants `required` (itself a concrete `action:resource`).
    pub fn grants(&self, required: &str) -> bool {
        if self.0 == "*" || self.0 == required {
            return true;
        }
        match (self.0.split_once(':'), required.split_once(':')) {
            (Some((action, "*")), Some((needed, _))) => action == needed,
            _ => false,
        }
    }
}

impl TryFrom<String> for Scope {
    type Error = InvalidScope;

    fn try_from(scope: String) -> Result<Self, InvalidScope> {
        if scope == "*" {
            return Ok(Self(scope));
        }
        let valid = match scope.split_once(':') {
            Some((action, resource)) => {
                SCOPE_ACTIONS.contains(&action)
                    && (resource == "*"
                        || (resource.starts_with(|c: char| c.is_ascii_lowercase())
                            && resource.len() <= 64
                            && resource.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')))
            }
            None => false,
        };
        if valid { Ok(Self(scope)) } else { Err(InvalidScope { scope }) }
    }
}

impl FromStr for Scope {
    type Err = InvalidScope;
    fn from_str(s: &str) -> Result<Self, InvalidScope> {
        Self::try_from(s.to_string())
    }
}

impl From<Scope> for String {
    fn from(scope: Scope) -> String {
        scope.0
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses a comma-separated scope list (`read:notes,write:notes`), refusing an empty list.
pub fn parse_scopes(list: &str) -> Result<Vec<Scope>, InvalidScope> {
    let mut scopes: Vec<Scope> =
        list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::parse).collect::<Result<_, _>>()?;
    if scopes.is_empty() {
        return Err(InvalidScope { scope: list.to_string() });
    }
    scopes.sort();
    scopes.dedup();
    Ok(scopes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_tokens_parse_back_to_their_tenant_and_hash() {
        let tenant = Uuid::new_v4();
        let token = mint(tenant);
        let presented: PresentedToken = token.plaintext.parse().unwrap();
        assert_eq!(presented.tenant, tenant);
        assert_eq!(presented.hash, token.hash);
        assert!(token.plaintext.ends_with(&token.hint));
        assert!(!format!("{token:?}").contains(&token.plaintext));
    }

    #[test]
    fn each_kind_parses_with_its_own_prefix_only() {
        let tenant = Uuid::new_v4();
        let refresh = mint_with(REFRESH_PREFIX, tenant);
        assert_eq!(PresentedToken::parse_with(REFRESH_PREFIX, &refresh.plaintext).unwrap().tenant, tenant);
        assert!(refresh.plaintext.parse::<PresentedToken>().is_err());
        assert!(PresentedToken::parse_with(CODE_PREFIX, &refresh.plaintext).is_err());
        assert!(PresentedToken::parse_with(REFRESH_PREFIX, &mint(tenant).plaintext).is_err());
    }

    #[test]
    fn two_mints_differ() {
        let tenant = Uuid::new_v4();
        assert_ne!(mint(tenant).plaintext, mint(tenant).plaintext);
    }

    #[test]
    fn malformed_tokens_are_refused() {
        let good = mint(Uuid::new_v4()).plaintext;
        for bad in [
            "",
            "Bearer x",
            "otc_",
            &good[..good.len() - 1],
            &good.replace("otc_", "xyz_"),
            &format!("{good}0"),
            &good.to_uppercase(),
            &format!("otc_{}_{}", "z".repeat(32), "a".repeat(64)),
        ] {
            assert!(bad.parse::<PresentedToken>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn scopes_parse_and_grant() {
        let scopes = parse_scopes("write:notes, read:*,read:notes").unwrap();
        assert_eq!(scopes.iter().map(Scope::as_str).collect::<Vec<_>>(), ["read:*", "read:notes", "write:notes"]);
        assert!(scopes[0].grants("read:vault"));
        assert!(!scopes[0].grants("write:vault"));
        assert!(scopes[2].grants("write:notes"));
        assert!(!scopes[2].grants("write:canvas"));
        assert!("*".parse::<Scope>().unwrap().grants("admin:vault"));
        for bad in ["notes", "fly:notes", "read:", "read:Notes", "read:a b", ""] {
            assert!(bad.parse::<Scope>().is_err(), "{bad:?}");
        }
        assert!(parse_scopes(" , ").is_err());
    }
}
