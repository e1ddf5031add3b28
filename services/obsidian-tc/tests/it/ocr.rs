//! OCR of image attachments with the local Tesseract (installed by scripts/ocr): the text of
//! real images (tests/ocr, rendered in DejaVu Sans), read once and cached per content, the
//! batch form, and the typed refusals, including a server without an OCR engine.

use base64::Engine;
use serde_json::json;

use crate::harness::{Tenant, TestApp};
use crate::write::{err, ok};

const V: &str = "Notes";

fn image(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ocr").join(name);
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(path).unwrap())
}

async fn with_images(app: &TestApp) -> String {
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    for (path, file) in [("Scans/receipt.png", "receipt.png"), ("Scans/board.png", "whiteboard.png")] {
        ok(app, &token, "write_attachment", json!({"vault": V, "path": path, "content": image(file)})).await;
    }
    ok(app, &token, "write_note", json!({"vault": V, "path": "Scans/notes.md", "content": "text\n"})).await;
    token
}

#[tokio::test]
async fn images_are_read_once_and_cached() {
    let app = TestApp::spawn().await;
    let token = with_images(&app).await;
    let first = ok(&app, &token, "ocr_attachment", json!({"vault": V, "path": "Scans/receipt.png"})).await;
    assert_eq!(first["text"], "Quarterly report\n\nRevenue grew 42 percent");
    assert_eq!(first["cached"], false);
    let again = ok(&app, &token, "ocr_attachment", json!({"vault": V, "path": "Scans/receipt.png"})).await;
    assert_eq!((again["cached"].clone(), again["text"].clone()), (json!(true), first["text"].clone()));
    let forced =
        ok(&app, &token, "ocr_attachment", json!({"vault": V, "path": "Scans/receipt.png", "force": true})).await;
    assert_eq!(forced["cached"], false);

    let bulk = ok(&app, &token, "ocr_bulk", json!({"vault": V, "root": "Scans", "max_concurrent": 2})).await;
    assert_eq!(
        (bulk["succeeded"].clone(), bulk["failed"].clone(), bulk["truncated"].clone()),
        (json!(2), json!(0), json!(false))
    );
    assert_eq!(bulk["results"][0]["path"], "Scans/board.png");
    assert_eq!(bulk["results"][0]["text"], "Whiteboard sketch");
    let named = ok(&app, &token, "ocr_bulk", json!({"vault": V, "paths": ["Scans/receipt.png"]})).await;
    assert_eq!(named["results"][0]["cached"], true);

    for (tool, args, code) in [
        ("ocr_attachment", json!({"vault": V, "path": "Scans/notes.md"}), "invalid_input"),
        ("ocr_attachment", json!({"vault": V, "path": "Scans/gone.png"}), "note_not_found"),
        ("ocr_bulk", json!({"vault": V, "extensions": [".pdf"]}), "invalid_input"),
        ("ocr_bulk", json!({"vault": V, "paths": ["Scans/receipt.png"], "max_concurrent": 9}), "invalid_input"),
        ("ocr_attachment", json!({"vault": "Elsewhere", "path": "Scans/receipt.png"}), "vault_not_found"),
    ] {
        assert_eq!(err(&app, &token, tool, args.clone()).await["code"], code, "{tool} {args}");
    }
}

#[tokio::test]
async fn a_server_without_an_ocr_engine_says_so() {
    for command in ["", "/nonexistent/tesseract"] {
        let app = TestApp::spawn_with(move |c| c.ocr.command = command.into()).await;
        let token = with_images(&app).await;
        let e = err(&app, &token, "ocr_attachment", json!({"vault": V, "path": "Scans/receipt.png"})).await;
        assert_eq!(
            (e["code"].clone(), e["details"]["needs"].clone()),
            (json!("plugin_unavailable"), json!("an OCR engine")),
            "{command}"
        );
        assert!(e["hint"].as_str().unwrap().contains("tesseract-ocr"), "{e}");
        let bulk = ok(&app, &token, "ocr_bulk", json!({"vault": V, "root": "Scans"})).await;
        assert_eq!(
            (bulk["failed"].clone(), bulk["results"][0]["error"].clone()),
            (json!(2), json!("plugin_unavailable"))
        );
        app.stop().await;
    }
}
