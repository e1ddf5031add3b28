use std::collections::BTreeMap;

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, Hint, ToolError};
use otc_formats::excalidraw;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::reading::{Content, read_content};
use otc_kernel::{CallContext, Tool};

pub struct ReadExcalidraw;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    Summary,
    Scene,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Filesystem,
    /// Needs a running Excalidraw plugin; not on a hosted vault.
    Companion,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// A .excalidraw.md or .excalidraw file.
    pub path: String,
    /// Default summary.
    #[serde(default)]
    pub format: Option<Shape>,
    #[serde(default)]
    pub source: Option<Source>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// Elements in the scene (deleted ones left out).
    pub elements: usize,
    pub by_type: BTreeMap<String, usize>,
    /// Text elements: id and text.
    pub texts: Vec<Text>,
    /// Links of elements and of the Element Links section.
    pub links: Vec<String>,
    /// Embedded files (images, equations).
    pub files: usize,
    /// Whether the drawing data is stored compressed.
    pub compressed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scene: Option<Map<String, Value>>,
    /// The expected hash for your next write (prev_hash).
    pub content_hash: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Text {
    pub id: String,
    pub text: String,
}

impl Tool for ReadExcalidraw {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:excalidraw"],
        response_format: Format::Fixed { why: "fixed fields of the drawing's parse" },
        core: false,
        ..ToolSpec::base(
            "read_excalidraw",
            "Read an Excalidraw drawing",
            "Reads an Excalidraw drawing: element counts by type, texts and links; format scene adds the scene.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        if input.source == Some(Source::Companion) {
            return Err(ToolError::with_message(
                ErrorCode::PluginUnavailable,
                "read_excalidraw: source companion needs the Excalidraw plugin in a running Obsidian",
            )
            .detail("needs", "the Excalidraw plugin")
            .with_hints(&[Hint { text: "Leave source out: the drawing is read from its file.", tools: &[] }]));
        }
        let Content { text, content_hash, .. } = read_content(ctx, &view, &input.path).await?;
        if !excalidraw::is_drawing(&input.path, &text) {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "the file is not an Excalidraw drawing")
                .detail("field", "path"));
        }
        let drawing = excalidraw::parse(&text)?;
        let summary = excalidraw::summary(&drawing);
        let scene = match input.format.unwrap_or(Shape::Summary) {
            Shape::Scene => drawing.scene.as_object().cloned(),
            Shape::Summary => None,
        };
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            elements: summary.elements,
            by_type: summary.by_type,
            texts: summary.texts.into_iter().map(|t| Text { id: t.id, text: t.text }).collect(),
            links: summary.links,
            files: summary.files,
            compressed: drawing.compressed,
            scene,
            content_hash,
        })
    }
}
