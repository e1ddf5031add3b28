//! What checking a bearer token costs a gateway per request, before any I/O: an API token's
//! parse and hash; an OAuth access token's tenant claim and hash (the cache-hit path); its
//! full ES256 verification (a cache miss); signing one (the token endpoint).
//!
//!   cargo bench -p otc-auth

use std::hint::black_box;
use std::time::Instant;

use otc_auth::jwt::{SigningKey, Unverified};
use otc_auth::{PresentedToken, TokenHash};
use serde_json::json;

fn time(name: &str, n: u32, mut f: impl FnMut()) {
    for _ in 0..n / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    let per = start.elapsed() / n;
    println!("{name:<44} {:>8.2} µs", per.as_nanos() as f64 / 1000.0);
}

fn main() {
    let tenant = uuid::Uuid::new_v4();
    let api = otc_auth::mint(tenant).plaintext;
    let (_, key) = SigningKey::generate().unwrap();
    let claims = json!({"iss": "https://mcp.example.com", "sub": uuid::Uuid::new_v4(), "aud": "https://mcp.example.com/mcp",
                        "client_id": "otcd_0123456789abcdef0123456789abcdef", "scope": "read:notes write:notes",
                        "tid": tenant, "iat": 1_800_000_000, "exp": 1_800_000_900, "jti": "0123456789abcdef0123456789abcdef"});
    let access = key.sign("at+jwt", &claims).unwrap();
    let keys = vec![key.public_jwk()];
    println!("access token: {} bytes", access.len());
    time("API token: parse + SHA-256", 200_000, || {
        black_box(black_box(&api).parse::<PresentedToken>().unwrap());
    });
    time("access token: tid claim + SHA-256 (cache hit)", 200_000, || {
        black_box(otc_auth::jwt::tenant_claim(black_box(&access)).unwrap());
        black_box(TokenHash::of(&access));
    });
    time("access token: ES256 verification (cache miss)", 5_000, || {
        Unverified::parse(black_box(&access)).unwrap().verify_es256(&keys).unwrap();
    });
    time("access token: signing (token endpoint)", 5_000, || {
        black_box(key.sign("at+jwt", &claims).unwrap());
    });
}
