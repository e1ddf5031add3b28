//! Bad input, everywhere: every tool's arguments and every /v1 endpoint's parameters and bodies,
//! malformed in the ways clients get them wrong (missing, wrong types, NUL characters, huge
//! strings, out-of-range numbers, garbage cursors), answer a typed JSON error from the
//! catalogue: never a 5xx, never internal_error, never a plain-text body, and never an answer
//! that repeats an unbounded input.

use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::harness::{Tenant, TestApp};
use crate::index::commit;
use crate::mcp::call;

/// The most bytes an error answer may take, whatever it was sent.
const MAX_ERROR_BYTES: usize = 16 * 1024;

/// Variants of `schema`'s arguments, each wrong in one way (with `vault` kept right unless the
/// variant is about it).
fn variants(schema: &Value) -> Vec<Value> {
    let props: Map<String, Value> = schema["properties"].as_object().cloned().unwrap_or_default();
    let base = || {
        let mut args = Map::new();
        if props.contains_key("vault") {
            args.insert("vault".into(), json!("Notes"));
        }
        args
    };
    let huge = "x".repeat(200_000);
    let mut out = vec![json!({}), Value::Object(base())];
    for (name, prop) in &props {
        let kind = prop["type"].as_str().unwrap_or("");
        let wrong: Vec<Value> = match kind {
            "string" => vec![
                json!("\0"),
                json!(format!("a\0b")),
                json!(huge.clone()),
                json!(12345),
                json!(""),
                json!("../../etc"),
            ],
            "integer" | "number" => vec![json!(-1), json!(1e20), json!(i64::MAX), json!("abc"), json!(0)],
            "boolean" => vec![json!("yes")],
            "array" => vec![json!({}), json!(["\0"]), json!([huge.clone()]), json!(vec![json!(1); 10_000])],
            "object" => vec![json!([]), json!({"\0": "\0"}), json!({"type": "nope"})],
            _ => vec![json!(null), json!("\0"), json!({"a": [[[[[[[[[[1]]]]]]]]]]}), json!(huge.clone())],
        };
        for value in wrong {
            let mut args = base();
            args.insert(name.clone(), value);
            out.push(Value::Object(args));
        }
    }
    for cursor in ["!!!", "\0", "eyJ0b29sIjoibm9wZSJ9", &"A".repeat(100_000)] {
        if props.contains_key("cursor") {
            let mut args = base();
            args.insert("cursor".into(), json!(cursor));
            out.push(Value::Object(args));
        }
    }
    out
}

#[tokio::test]
async fn malformed_arguments_to_every_tool_answer_a_typed_error() {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(&app, &token, "Notes", &[("Plan.md", Some("# Plan\n[[Other]] #tag\n")), ("Other.md", Some("x\n"))]).await;
    let mut problems = Vec::new();
    let mut calls = 0;
    for entry in otc_tools::toolset::all() {
        let tool = entry.declaration.spec.name;
        for args in variants(&entry.declaration.input_schema) {
            calls += 1;
            let result = call(&app, "/mcp", &token, tool, args.clone()).await;
            let text = result.to_string();
            let shown = otc_errors::echo(&args.to_string());
            if result["isError"] == true {
                let code = result["structuredContent"]["code"].as_str().unwrap_or("?");
                if matches!(code, "internal_error" | "internal") {
                    problems.push(format!("{tool} {shown}: {code}: {}", otc_errors::echo(&text)));
                }
                if text.len() > MAX_ERROR_BYTES {
                    problems.push(format!("{tool} {shown}: a {}-byte error", text.len()));
                }
            }
        }
    }
    assert!(calls > 500, "{calls}");
    assert!(problems.is_empty(), "{} of {calls} calls:\n{}", problems.len(), problems.join("\n"));
}

#[tokio::test]
async fn malformed_requests_to_every_endpoint_answer_catalogue_json() {
    let app = TestApp::spawn_with(|c| c.server.body_limit_bytes = 64 * 1024).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(&app, &token, "Notes", &[("Plan.md", Some("# Plan\n"))]).await;
    let hash = obsidian_tc::sync_client::sha256_hex(b"# Plan\n");
    let huge = "p".repeat(300_000);
    // (An out-of-range limit or since is clamped, as documented, so it is not among these.)
    let cases: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, "/v1/vaults/Notes/files?limit=abc".into(), None),
        (Method::GET, "/v1/vaults/Notes/files?limit=99999999999999999999".into(), None),
        (Method::GET, "/v1/vaults/Notes/files?after=%00".into(), None),
        (Method::GET, "/v1/vaults/Notes/changes?since=abc".into(), None),
        (Method::GET, "/v1/vaults/Notes/changes?after=%00".into(), None),
        (Method::GET, "/v1/vaults/Notes/file?path=%00".into(), None),
        (Method::GET, "/v1/vaults/Notes/file?path=a%00b.md".into(), None),
        (Method::GET, "/v1/vaults/Notes/file".into(), None),
        (Method::GET, format!("/v1/vaults/Notes/file?path={}", &huge[..60_000]), None),
        (Method::GET, "/v1/vaults/No%00tes/files".into(), None),
        (Method::GET, format!("/v1/vaults/{}/files", "v".repeat(60_000)), None),
        (Method::GET, "/v1/vaults/Notes/blobs/nothex".into(), None),
        (Method::GET, format!("/v1/vaults/Notes/blobs/{hash}?x=%00"), None),
        (Method::POST, "/v1/vaults/Notes/commit".into(), Some(json!({"changes": "nope"}))),
        (
            Method::POST,
            "/v1/vaults/Notes/commit".into(),
            Some(json!({"changes": [{"path": "\u{0}", "expect": "any", "delete": true}]})),
        ),
        (
            Method::POST,
            "/v1/vaults/Notes/commit".into(),
            Some(json!({"changes": [{"path": "a.md", "expect": "zz", "delete": true}]})),
        ),
        (
            Method::POST,
            "/v1/vaults/Notes/commit".into(),
            Some(
                json!({"changes": [{"path": "a.md", "expect": "any", "put": {"hash": hash, "mtime": "+99999-01-01T00:00:00Z"}}]}),
            ),
        ),
        (
            Method::POST,
            "/v1/vaults/Notes/commit".into(),
            Some(
                json!({"changes": [{"path": "a.md", "expect": "any", "put": {"hash": hash, "mtime": "-4000-01-01T00:00:00Z"}}]}),
            ),
        ),
        (
            Method::POST,
            "/v1/vaults/Notes/commit".into(),
            Some(json!({"changes": [{"path": huge, "expect": "any", "delete": true}]})),
        ),
        (Method::POST, "/v1/elicit".into(), Some(json!({"tool": "\0", "args_hash": "\0"}))),
        (Method::POST, "/v1/elicit".into(), Some(json!({"tool": "delete_note", "args_hash": "ab", "ttl_secs": -1}))),
        (Method::DELETE, "/v1/vaults".into(), None),
        (Method::GET, "/v1/nope".into(), None),
        (Method::GET, "/v1/acl?vault=%00".into(), None),
        (Method::GET, format!("/v1/acl?vault={}", &huge[..60_000]), None),
        (Method::PUT, "/v1/acl".into(), Some(json!({"vault": "Notes", "group": "\0", "read_paths": ["\0"]}))),
        (Method::PUT, "/v1/acl".into(), Some(json!({"vault": 7, "everyone": "yes"}))),
        (Method::DELETE, "/v1/acl?vault=Notes&everyone=maybe".into(), None),
        (Method::DELETE, "/v1/acl".into(), None),
        (Method::GET, "/v1/principals/%00/groups".into(), None),
        (Method::POST, "/v1/principals/alice/groups".into(), Some(json!({"add": [""], "remove": ["\0"]}))),
        (Method::POST, "/v1/principals/alice/groups".into(), Some(json!({"add": "x"}))),
        (Method::GET, "/v1/audit?limit=abc".into(), None),
        (Method::GET, "/v1/audit?since=yesterday".into(), None),
        (Method::GET, "/v1/audit?before=nope".into(), None),
        (Method::GET, "/v1/audit?limit=-1&action=%00".into(), None),
        (Method::GET, format!("/v1/audit?principal={}&limit=0", &huge[..60_000]), None),
    ];
    let mut problems = Vec::new();
    for (method, path, body) in cases {
        let mut request = app.http.request(method.clone(), app.url(&path)).bearer_auth(&token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        check(&mut problems, &format!("{method} {}", otc_errors::echo(&path)), request.send().await.unwrap()).await;
    }
    // A body that is not JSON, one of the wrong type, and a chunked one over the limit.
    let raw = |body: reqwest::Body, kind: &'static str| {
        app.http.post(app.url("/v1/vaults/Notes/commit")).bearer_auth(&token).header("content-type", kind).body(body)
    };
    check(&mut problems, "commit: not JSON", raw("{nope".into(), "application/json").send().await.unwrap()).await;
    check(&mut problems, "commit: text/plain", raw("{}".into(), "text/plain").send().await.unwrap()).await;
    let chunks = futures::stream::iter((0..40).map(|_| Ok::<_, std::io::Error>(vec![b' '; 4096])));
    let response = raw(reqwest::Body::wrap_stream(chunks), "application/json").send().await.unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).expect("JSON");
    assert_eq!(body["error"]["code"], "overflow", "{body}");
    let upload = app
        .http
        .put(app.url(&format!("/v1/vaults/Notes/blobs/{hash}")))
        .bearer_auth(&token)
        .body("wrong")
        .send()
        .await
        .unwrap();
    check(&mut problems, "upload with the wrong hash", upload).await;
    // MCP: a body that is not JSON-RPC, and a tool call whose arguments are not an object.
    let mcp = |body: &'static str| {
        app.http
            .post(app.url("/mcp"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };
    for body in [
        "{nope",
        "[]",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_note","arguments":"\u0000"}}"#,
    ] {
        let response = mcp(body).await.unwrap();
        assert!(!response.status().is_server_error(), "{body}: {}", response.status());
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A refusal as the catalogue gives it: 4xx, JSON with a code from the table, small.
async fn check(problems: &mut Vec<String>, what: &str, response: reqwest::Response) {
    let status = response.status();
    let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let text = response.text().await.unwrap();
    if status.is_server_error() || status.is_success() {
        problems.push(format!("{what}: {status}: {}", otc_errors::echo(&text)));
        return;
    }
    let code = serde_json::from_str::<Value>(&text).ok().and_then(|v| v["error"]["code"].as_str().map(String::from));
    match code.as_deref().and_then(otc_errors::ErrorCode::parse) {
        Some(otc_errors::ErrorCode::Internal | otc_errors::ErrorCode::InternalError) | None => {
            problems.push(format!("{what}: {status} {kind}: {}", otc_errors::echo(&text)))
        }
        Some(_) if text.len() > MAX_ERROR_BYTES => problems.push(format!("{what}: a {}-byte error", text.len())),
        Some(_) => {}
    }
}
