//! The access tokens the authorization server issues: JWTs (RFC 9068, `typ: at+jwt`) signed with
//! ES256 by a key of the deployment's rotating set, published as a JWK Set. Only what signing and
//! checking our own tokens needs; an identity provider's tokens are checked with `openidconnect`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("not a JWT: {0}")]
    Malformed(&'static str),
    #[error("no key with this token's kid")]
    UnknownKey,
    #[error("bad signature")]
    BadSignature,
    #[error("bad key: {0}")]
    BadKey(&'static str),
}

/// One ES256 signing key: its id and the key pair.
pub struct SigningKey {
    pub kid: String,
    pair: EcdsaKeyPair,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("kid", &self.kid).finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new key: its PKCS#8 document (to seal and store) and the key.
    pub fn generate() -> Result<(Vec<u8>, SigningKey), JwtError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| JwtError::BadKey("could not generate"))?;
        let key = Self::from_pkcs8_with_new_kid(pkcs8.as_ref())?;
        Ok((pkcs8.as_ref().to_vec(), key))
    }

    fn from_pkcs8_with_new_kid(pkcs8: &[u8]) -> Result<SigningKey, JwtError> {
        let mut key = Self::from_pkcs8("", pkcs8)?;
        // The kid is the JWK thumbprint (RFC 7638), so it names the key's content.
        key.kid = thumbprint(&key.public_jwk());
        Ok(key)
    }

    pub fn from_pkcs8(kid: &str, pkcs8: &[u8]) -> Result<SigningKey, JwtError> {
        let pair = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &SystemRandom::new())
            .map_err(|_| JwtError::BadKey("not an ES256 PKCS#8 key"))?;
        Ok(SigningKey { kid: kid.to_string(), pair })
    }

    /// The public half as a JWK (with `kid`, `alg` and `use`).
    pub fn public_jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        // An uncompressed P-256 point: 0x04, x, y.
        json!({
            "kty": "EC", "crv": "P-256",
            "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65]),
            "kid": self.kid, "alg": "ES256", "use": "sig",
        })
    }

    /// Signs `claims` as a JWT of type `typ`.
    pub fn sign(&self, typ: &str, claims: &Value) -> Result<String, JwtError> {
        let header = json!({"alg": "ES256", "typ": typ, "kid": self.kid});
        let input = format!("{}.{}", B64.encode(header.to_string()), B64.encode(claims.to_string()));
        let sig =
            self.pair.sign(&SystemRandom::new(), input.as_bytes()).map_err(|_| JwtError::BadKey("signing failed"))?;
        Ok(format!("{input}.{}", B64.encode(sig.as_ref())))
    }
}

/// The RFC 7638 thumbprint of an EC public JWK.
fn thumbprint(jwk: &Value) -> String {
    use sha2::{Digest, Sha256};
    let canonical = format!(
        r#"{{"crv":"{}","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["crv"].as_str().unwrap_or(""),
        jwk["x"].as_str().unwrap_or(""),
        jwk["y"].as_str().unwrap_or("")
    );
    B64.encode(Sha256::digest(canonical.as_bytes()))
}

/// The tenant an access token names (its `tid` claim), read without checking anything: enough
/// to find a cached check of exactly these bytes, on every request, cheaply (only the claims
/// are decoded, and only `tid` of them).
pub fn tenant_claim(token: &str) -> Option<uuid::Uuid> {
    #[derive(serde::Deserialize)]
    struct Tenant {
        tid: uuid::Uuid,
    }
    let claims = token.split('.').nth(1)?;
    let bytes = B64.decode(claims).ok()?;
    serde_json::from_slice::<Tenant>(&bytes).ok().map(|t| t.tid)
}

/// A JWT split into its parts, nothing checked but its shape.
#[derive(Debug)]
pub struct Unverified<'a> {
    pub header: Value,
    pub claims: Value,
    signing_input: &'a str,
    signature: Vec<u8>,
}

impl<'a> Unverified<'a> {
    pub fn parse(token: &'a str) -> Result<Self, JwtError> {
        let (signing_input, signature) = token.rsplit_once('.').ok_or(JwtError::Malformed("no signature"))?;
        let (header, claims) = signing_input.split_once('.').ok_or(JwtError::Malformed("no claims"))?;
        let decode = |part: &str, what: &'static str| -> Result<Value, JwtError> {
            let bytes = B64.decode(part).map_err(|_| JwtError::Malformed(what))?;
            let value: Value = serde_json::from_slice(&bytes).map_err(|_| JwtError::Malformed(what))?;
            if value.is_object() { Ok(value) } else { Err(JwtError::Malformed(what)) }
        };
        Ok(Unverified {
            header: decode(header, "header")?,
            claims: decode(claims, "claims")?,
            signing_input,
            signature: B64.decode(signature).map_err(|_| JwtError::Malformed("signature"))?,
        })
    }

    pub fn kid(&self) -> Option<&str> {
        self.header["kid"].as_str()
    }

    /// Checks the ES256 signature against one of `keys` (public JWKs), chosen by kid.
    pub fn verify_es256(&self, keys: &[Value]) -> Result<(), JwtError> {
        if self.header["alg"] != "ES256" {
            return Err(JwtError::Malformed("alg is not ES256"));
        }
        let kid = self.kid().ok_or(JwtError::UnknownKey)?;
        let jwk = keys.iter().find(|k| k["kid"] == kid).ok_or(JwtError::UnknownKey)?;
        let coordinate = |name: &str| -> Result<Vec<u8>, JwtError> {
            let bytes = B64.decode(jwk[name].as_str().unwrap_or("")).map_err(|_| JwtError::BadKey("coordinate"))?;
            if bytes.len() == 32 { Ok(bytes) } else { Err(JwtError::BadKey("coordinate length")) }
        };
        let mut point = vec![4u8];
        point.extend(coordinate("x")?);
        point.extend(coordinate("y")?);
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
            .verify(self.signing_input.as_bytes(), &self.signature)
            .map_err(|_| JwtError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_token_verifies_with_its_key_only() {
        let (pkcs8, key) = SigningKey::generate().unwrap();
        let again = SigningKey::from_pkcs8(&key.kid, &pkcs8).unwrap();
        assert_eq!(again.public_jwk(), key.public_jwk());
        let token = key.sign("at+jwt", &json!({"sub": "a", "aud": "https://x/mcp"})).unwrap();
        let parsed = Unverified::parse(&token).unwrap();
        assert_eq!(parsed.claims["aud"], "https://x/mcp");
        assert_eq!(parsed.header["typ"], "at+jwt");
        parsed.verify_es256(&[key.public_jwk()]).unwrap();
        assert_eq!(tenant_claim(&token), None, "no tid");
        let tenant = uuid::Uuid::new_v4();
        assert_eq!(tenant_claim(&key.sign("at+jwt", &json!({"tid": tenant})).unwrap()), Some(tenant));

        let (_, other) = SigningKey::generate().unwrap();
        assert_eq!(parsed.verify_es256(&[other.public_jwk()]), Err(JwtError::UnknownKey));
        let mut forged = other.public_jwk();
        forged["kid"] = json!(key.kid);
        assert_eq!(parsed.verify_es256(&[forged]), Err(JwtError::BadSignature));

        // A claim changed after signing.
        let (input, sig) = token.rsplit_once('.').unwrap();
        let (header, _) = input.split_once('.').unwrap();
        let tampered = format!("{header}.{}.{sig}", B64.encode(r#"{"sub":"b","aud":"https://x/mcp"}"#));
        let parsed = Unverified::parse(&tampered).unwrap();
        assert_eq!(parsed.verify_es256(&[key.public_jwk()]), Err(JwtError::BadSignature));
        for bad in ["", "a.b", "a.b.c", "e30.e30", "e30.W10.AA"] {
            assert!(Unverified::parse(bad).is_err(), "{bad}");
        }
    }
}
