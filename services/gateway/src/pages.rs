//! The few pages a person sees while signing a client in: where to sign in (their work email),
//! what the client asks for (consent), and what went wrong. Server-rendered HTML, no scripts,
//! every interpolated value escaped; labelled inputs, a heading per page, the tenant's name.

use std::collections::BTreeMap;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a}\
h1{font-size:1.4rem}label{display:block;font-weight:600;margin-top:1rem}input[type=email]{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}\
button{margin-top:1rem;margin-right:.5rem;padding:.5rem 1.2rem;font-size:1rem;cursor:pointer}\
.error{color:#a00000;font-weight:600}ul{padding-left:1.2rem}code{background:#f3f3f3;padding:0 .2rem}";

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<title>{title}</title><style>{STYLE}</style></head><body><main>{body}</main></body></html>",
        title = escape(title)
    );
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Not to be framed (clickjacking a consent), and nothing loaded from elsewhere.
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' http: https:; frame-ancestors 'none'",
        ),
    );
    // Never to another site (the flow's id is in the URL); to ours, so that a browser's form
    // post carries this origin (under no-referrer it sends `Origin: null`, which the
    // same-origin check of the forms refuses).
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

/// An error a person reads (the client could not be told).
pub fn error(status: StatusCode, title: &str, message: &str) -> Response {
    page(status, title, &format!("<h1>{}</h1><p>{}</p>", escape(title), escape(message)))
}

/// Where to sign in: the person's work email picks their organisation.
pub fn sign_in(action: &str, flow: &str, client: &str, message: Option<&str>) -> Response {
    let error = message.map(|m| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(m))).unwrap_or_default();
    let body = format!(
        "<h1>Sign in to connect {client}</h1>{error}\
<form method=\"post\" action=\"{action}\"><input type=\"hidden\" name=\"flow\" value=\"{flow}\">\
<label for=\"email\">Work email or organisation id</label><input id=\"email\" name=\"email\" type=\"text\" inputmode=\"email\" autocomplete=\"email\" required autofocus aria-describedby=\"email-help\">\
<p id=\"email-help\">Your email's domain finds your organisation; you then sign in with its identity provider.</p>\
<button type=\"submit\">Continue</button></form>",
        client = escape(client),
        action = escape(action),
        flow = escape(flow),
    );
    page(StatusCode::OK, "Sign in", &body)
}

/// What the client asks for, to allow or deny.
pub struct Consent<'a> {
    pub action: &'a str,
    pub flow: &'a str,
    pub client_name: &'a str,
    pub client_id: &'a str,
    pub redirect_host: &'a str,
    pub tenant: &'a str,
    pub person: &'a str,
    pub scopes: BTreeMap<String, String>,
}

pub fn consent(c: &Consent<'_>) -> Response {
    let scopes: String = c
        .scopes
        .iter()
        .map(|(scope, what)| format!("<li>{} <code>{}</code></li>", escape(what), escape(scope)))
        .collect();
    let body = format!(
        "<h1>Allow {client} to use {tenant}'s vaults?</h1>\
<p>Signed in as <strong>{person}</strong> ({tenant}).</p>\
<p><strong>{client}</strong> (<code>{client_id}</code>) asks to:</p><ul>{scopes}</ul>\
<p>You will be returned to <strong>{host}</strong>. You can revoke this access at any time.</p>\
<form method=\"post\" action=\"{action}\"><input type=\"hidden\" name=\"flow\" value=\"{flow}\">\
<button type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\
<button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>",
        client = escape(c.client_name),
        client_id = escape(c.client_id),
        tenant = escape(c.tenant),
        person = escape(c.person),
        host = escape(c.redirect_host),
        action = escape(c.action),
        flow = escape(c.flow),
    );
    page(StatusCode::OK, "Allow access", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolated_text_is_escaped() {
        assert_eq!(escape("<script>\"x\"&'y'</script>"), "&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/script&gt;");
    }
}
