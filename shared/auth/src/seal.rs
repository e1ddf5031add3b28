//! Secrets at rest (an identity provider's client secret, the token-signing keys): sealed with
//! AES-256-GCM under the deployment's secret key, bound to what they belong to (the AAD), so a
//! sealed value copied onto another row does not open.

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("the secret key must be 32 bytes, base64")]
    BadKey,
    #[error("sealed value does not open with this key")]
    Open,
}

pub struct Sealer {
    key: LessSafeKey,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer")
    }
}

impl Sealer {
    pub fn new(key: &[u8]) -> Result<Self, SealError> {
        let key = UnboundKey::new(&AES_256_GCM, key).map_err(|_| SealError::BadKey)?;
        Ok(Sealer { key: LessSafeKey::new(key) })
    }

    /// From the configured base64 text (standard or URL-safe alphabet).
    pub fn from_base64(text: &str) -> Result<Self, SealError> {
        use base64::Engine;
        let text = text.trim();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text))
            .map_err(|_| SealError::BadKey)?;
        if bytes.len() != 32 {
            return Err(SealError::BadKey);
        }
        Self::new(&bytes)
    }

    /// nonce ‖ ciphertext ‖ tag.
    pub fn seal(&self, plaintext: &[u8], aad: &str) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).expect("the system random source works");
        let mut out = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad.as_bytes()), &mut out)
            .expect("AES-GCM seals any length we store");
        let mut sealed = nonce.to_vec();
        sealed.extend(out);
        sealed
    }

    pub fn open(&self, sealed: &[u8], aad: &str) -> Result<Vec<u8>, SealError> {
        if sealed.len() < NONCE_LEN {
            return Err(SealError::Open);
        }
        let (nonce, rest) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError::Open)?;
        let mut buffer = rest.to_vec();
        let plain =
            self.key.open_in_place(nonce, Aad::from(aad.as_bytes()), &mut buffer).map_err(|_| SealError::Open)?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_with_their_key_and_aad_only() {
        let sealer = Sealer::new(&[7u8; 32]).unwrap();
        let sealed = sealer.seal(b"s3cret", "idp:tenant-a");
        assert!(!sealed.windows(6).any(|w| w == b"s3cret"));
        assert_eq!(sealer.open(&sealed, "idp:tenant-a").unwrap(), b"s3cret");
        assert_eq!(sealer.open(&sealed, "idp:tenant-b"), Err(SealError::Open));
        assert_eq!(Sealer::new(&[8u8; 32]).unwrap().open(&sealed, "idp:tenant-a"), Err(SealError::Open));
        assert_ne!(sealer.seal(b"s3cret", "x"), sealer.seal(b"s3cret", "x"));
        assert!(Sealer::from_base64("c2hvcnQ=").is_err());
        assert!(Sealer::from_base64(&"A".repeat(43)).is_ok());
    }
}
