//! The cookie that binds a sign-in flow to the browser that began it (the flow's secret; see
//! `authorization`): set where a flow starts (`/oauth/authorize`, the console's sign-in), read
//! at each step after. Scoped to `/oauth`, where every later step is.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;

const FLOW_COOKIE: &str = "otc_oauth_flow";

/// The flow secret this browser holds, if any.
pub fn read(headers: &HeaderMap) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        (name == FLOW_COOKIE).then(|| value.to_string())
    })
}

/// Gives the browser a flow's secret for `ttl_secs` (Secure when the issuer is https).
pub fn set(response: &mut Response, issuer: &str, secret: &str, ttl_secs: u64) {
    let secure = if issuer.starts_with("https://") { "; Secure" } else { "" };
    let cookie = format!("{FLOW_COOKIE}={secret}; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age={ttl_secs}{secure}");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}
