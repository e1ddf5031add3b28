//! PKCE (RFC 7636), S256 only: the one method OAuth 2.1 and the MCP authorization spec allow.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use sha2::{Digest, Sha256};

/// Whether `challenge` has the shape of an S256 challenge (43 base64url characters).
pub fn is_s256_challenge(challenge: &str) -> bool {
    challenge.len() == 43 && challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether `verifier` (43 to 128 unreserved characters) hashes to `challenge`.
pub fn verifies(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    well_formed && B64.encode(Sha256::digest(verifier.as_bytes())) == challenge
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_example_verifies() {
        // RFC 7636, appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(is_s256_challenge(challenge));
        assert!(verifies(verifier, challenge));
        assert!(!verifies("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXx", challenge));
        assert!(!verifies("short", challenge));
        assert!(!is_s256_challenge("plain"));
    }
}
