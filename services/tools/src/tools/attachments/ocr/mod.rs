//! Text in images for ocr_attachment and ocr_bulk: the configured Tesseract run on the image's
//! bytes (through stdin, no file written), under a deadline, killed past it; each text cached
//! in Redis per tenant, image content and languages, so an image is read once.

pub mod ocr_attachment;
pub mod ocr_bulk;

use std::process::Stdio;
use std::time::{Duration, Instant};

use otc_errors::{ErrorCode, Hint, ToolError};
use otc_store::Hash;
use tokio::io::AsyncWriteExt;

use otc_kernel::CallContext;

/// The image types Tesseract reads.
pub const IMAGE_EXTENSIONS: [&str; 9] = [".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".pnm"];

/// What one image gave.
pub struct Recognized {
    pub text: String,
    pub cached: bool,
    pub duration_ms: u64,
}

const NO_ENGINE: &[Hint] = &[Hint {
    text: "This server has no OCR engine: whoever runs it installs Tesseract (Debian's tesseract-ocr and a language \
           pack) and sets ocr.command.",
    tools: &[],
}];

/// Whether `path` is an image Tesseract reads; else invalid_input naming `field`.
pub fn check_image(path: &str, field: &str) -> Result<(), ToolError> {
    let lower = path.to_lowercase();
    if IMAGE_EXTENSIONS.iter().any(|e| lower.ends_with(e)) {
        return Ok(());
    }
    Err(ToolError::with_message(
        ErrorCode::InvalidInput,
        format!("OCR reads images ({}); a PDF or other file is not read", IMAGE_EXTENSIONS.join(", ")),
    )
    .detail("field", field.to_string()))
}

fn cache_key(ctx: &CallContext<'_>, hash: &Hash, languages: &str) -> String {
    format!("ocr:{}:{}:{languages}", ctx.caller.tenant_id, hex::encode(hash))
}

/// The text in the image with content `hash`, from the cache unless `force`.
pub async fn recognize(ctx: &CallContext<'_>, hash: &Hash, force: bool) -> Result<Recognized, ToolError> {
    let tool = ctx.tool;
    let config = &ctx.services().config.ocr;
    if config.command.is_empty() {
        return Err(unavailable(tool, "OCR is turned off here (ocr.command is empty)"));
    }
    let key = cache_key(ctx, hash, &config.languages);
    let kv = &ctx.services().kv;
    if !force && let Ok(Some(text)) = kv.get_record(&key).await {
        return Ok(Recognized { text, cached: true, duration_ms: 0 });
    }
    let bytes = otc_kernel::writing::blob(ctx, hash).await?;
    if bytes.len() as u64 > config.max_bytes {
        return Err(ToolError::with_message(ErrorCode::Overflow, "the image is larger than ocr.max_bytes")
            .detail("size", bytes.len())
            .detail("limit", config.max_bytes));
    }
    let started = Instant::now();
    let mut child = match tokio::process::Command::new(&config.command)
        .args(["stdin", "stdout", "-l", &config.languages])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(unavailable(tool, "the OCR engine (tesseract) is not installed on this server"));
        }
        Err(e) => return Err(otc_kernel::internal(tool, &e)),
    };
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let feed = async move {
        let _ = stdin.write_all(&bytes).await;
        drop(stdin);
    };
    let deadline = Duration::from_millis(config.timeout_ms);
    let run = async {
        feed.await;
        child.wait_with_output().await
    };
    let output = match tokio::time::timeout(deadline, run).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(otc_kernel::internal(tool, &e)),
        Err(_) => {
            return Err(ToolError::with_message(
                ErrorCode::OperationTimeout,
                "the image took longer than ocr.timeout_ms",
            )
            .detail("timeout_ms", config.timeout_ms));
        }
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        tracing::warn!(tool, status = ?output.status, stderr = %stderr.chars().take(500).collect::<String>(), "ocr failed");
        return Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            "the OCR engine could not read this file as an image",
        )
        .detail("field", "path"));
    }
    let text = String::from_utf8_lossy(&output.stdout).trim_end().to_string();
    let _ = kv.put_record(&key, &text, Duration::from_secs(config.cache_secs.max(1))).await;
    Ok(Recognized { text, cached: false, duration_ms: started.elapsed().as_millis() as u64 })
}

fn unavailable(tool: &str, why: &str) -> ToolError {
    ToolError::with_message(ErrorCode::PluginUnavailable, format!("{tool}: {why}"))
        .detail("needs", "an OCR engine")
        .with_hints(NO_ENGINE)
}
