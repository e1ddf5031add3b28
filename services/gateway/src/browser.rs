//! What the gateway's pages (the authorization server's and the console's) read from and set in
//! a browser: a cookie's value, whether a form post came from our own origin, and the cookie that
//! binds a sign-in flow to the browser that began it (the flow's secret; see `authorization`),
//! set where a flow starts (`/oauth/authorize`, the console's sign-in) and read at each step after.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;

const FLOW_COOKIE: &str = "otc_oauth_flow";

/// The value of cookie `name` the browser sent (an empty one is none).
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name && !v.is_empty()).then(|| v.to_string())
    })
}

/// A form post must come from our own pages: an Origin, when the browser sends one, is ours
/// (`base`, this server's base URL).
pub fn same_origin(headers: &HeaderMap, base: &str) -> bool {
    match headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
        Some(origin) => origin == base || base.starts_with(&format!("{origin}/")),
        None => true,
    }
}

/// The flow secret this browser holds, if any.
pub fn flow_secret(headers: &HeaderMap) -> Option<String> {
    cookie(headers, FLOW_COOKIE)
}

/// Gives the browser a flow's secret for `ttl_secs`, on `/oauth` where every later step is
/// (Secure when the issuer is https).
pub fn set_flow_secret(response: &mut Response, issuer: &str, secret: &str, ttl_secs: u64) {
    let secure = if issuer.starts_with("https://") { "; Secure" } else { "" };
    let cookie = format!("{FLOW_COOKIE}={secret}; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age={ttl_secs}{secure}");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}
