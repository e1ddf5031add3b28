//! Drawings of the Excalidraw community plugin (zsviczian/obsidian-excalidraw-plugin), read and
//! written the way the plugin lays out a `.excalidraw.md` note:
//!
//! ````text
//! ---
//! excalidraw-plugin: parsed
//! ---
//! ==⚠  Switch to EXCALIDRAW VIEW ... ⚠==        <- the header: kept byte for byte
//!
//! # Excalidraw Data
//!
//! ## Text Elements
//! Hello world ^Ab12Cd34                       <- every text element: `raw text ^id`, blank line
//!
//! ## Element Links
//! Xy12Zw34: [[Some Note]]                     <- every element link: `id: link`, blank line
//!
//! ## Embedded Files                           <- kept as written (images, equations)
//! %%
//! ## Drawing
//! ```compressed-json
//! N4KAkARALgngDgUwgLgAQQQwMYQMoEsB...         <- lz-string base64 in lines of 256, blank lines
//! ```
//! %%
//! ````
//!
//! The scene is the Excalidraw JSON (`{"type":"excalidraw","version":2,"elements":[...],...}`),
//! compressed (`compressed-json`) or plain (`json`). Older notes have `# Text Elements` without
//! `# Excalidraw Data`, a `# Drawing` heading, or the `%%` above `# Excalidraw Data`; all of them
//! parse, and [`render`] writes the current layout. A bare `.excalidraw` file (the scene JSON and
//! nothing else) parses too and renders as bare JSON.
//!
//! As in the plugin, the Markdown sections win over the JSON when they disagree (a rename updates
//! a link in `## Text Elements`, never inside the compressed block): [`parse`] copies them into
//! the scene. [`render`] then writes both sections from the scene, so they cannot drift apart.
//!
//! `serde_json` here keeps object keys sorted (no `preserve_order`), so a scene that changed is
//! written with its keys in alphabetical order; the plugin reads it the same. An unchanged scene
//! is written back exactly as it was read.
//!
//! Everything is pure (no I/O) and no input makes it panic; the decompressor is bounded (see
//! [`MAX_SCENE_CHARS`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::LazyLock;

use otc_errors::{ErrorCode, ToolError, echo};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// What the plugin writes above its data in a new drawing: the frontmatter, the warning line and
/// two blank lines.
pub const PLUGIN_HEADER: &str = "---\n\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n\n---\n\
==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠== You can decompress \
Drawing data with the command palette: 'Decompress current Excalidraw file'. For more info check in \
plugin settings under 'Saving'\n\n\n";

/// The `source` of a scene made by [`new_drawing`]. It names a plugin release because the plugin
/// reads a scene without one as an old (1.8.16) save and switches on legacy text wrapping.
pub const SCENE_SOURCE: &str = "https://github.com/zsviczian/obsidian-excalidraw-plugin/releases/tag/2.0.0";

/// The element types [`apply`] accepts.
pub const ELEMENT_TYPES: &[&str] =
    &["rectangle", "ellipse", "diamond", "line", "arrow", "freedraw", "text", "image", "frame", "embeddable"];

/// The most UTF-16 code units a compressed drawing may decompress to (128 MiB). LZ-string can
/// expand quadratically, so a small crafted block could otherwise ask for any amount of memory.
pub const MAX_SCENE_CHARS: usize = 64 << 20;

/// The plugin's line length for compressed data.
const CHUNK: usize = 256;
/// The length of the ids the plugin gives elements; its `## Text Elements` and
/// `## Element Links` readers only recognise ids of exactly this many characters.
const ID_LEN: usize = 8;
/// What closes the drawing block when a note gives nothing else.
const TRAILER: &str = "\n%%";

static DRAWING_HEADING: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^##? Drawing$").expect("regex"));
static DATA_HEADING: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^# Excalidraw Data$").expect("regex"));
static TEXT_HEADING: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^##? Text Elements$").expect("regex"));
static TEXT_ENTRY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s\^([^\s^]+)\n+").expect("regex"));
static SECTION_HEADING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^(?:##? Element Links|## Embedded Files|# Embedded files)$").expect("regex"));
static LINK_LINE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^([^\s:]+):[ \t]*(.*)$").expect("regex"));
static FILE_LINE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\w+):\s*\S").expect("regex"));

/// One text element as the `## Text Elements` section lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextElement {
    /// The element's id (the block reference after `^`).
    pub id: String,
    /// Its raw text: `rawText`, else `originalText`, else `text` (links as written, no wrapping).
    pub text: String,
}

/// A parsed drawing: the scene and what [`render`] needs to write the note back.
#[derive(Debug, Clone)]
pub struct Drawing {
    /// The Excalidraw scene: `{"type":"excalidraw","version":2,"elements":[...],"appState":{...},
    /// "files":{...}}`.
    pub scene: Value,
    /// Whether the scene is written as `compressed-json` (lz-string base64) rather than `json`.
    pub compressed: bool,
    /// The `## Text Elements` section as [`render`] writes it, in its order (the note's order,
    /// then new elements in scene order). Only the order is read back: the texts themselves
    /// always come from the scene.
    pub texts: Vec<TextElement>,
    /// The `## Element Links` section as [`render`] writes it: `(element id, link)`, in its order.
    /// As with `texts`, only the order is read back; the links come from the elements' `link`.
    pub element_links: Vec<(String, String)>,
    /// Everything before the plugin's data (`# Excalidraw Data`, or `# Text Elements` in older
    /// notes): frontmatter, warning line, back-of-the-card notes. Written back byte for byte.
    pub header: String,
    /// Whether a `%%` line sits above `# Excalidraw Data`, hiding the sections as well as the
    /// drawing block (the plugin then writes no `%%` above `## Drawing`).
    pub commented_out: bool,
    /// The sections after `## Element Links` (`## Embedded Files`: images, equations), kept as
    /// written, headings included.
    pub other_sections: String,
    /// What follows the drawing block's closing fence: `"\n%%"` as the plugin writes it.
    pub trailer: String,
    /// A bare `.excalidraw` file: the scene JSON alone, rendered as JSON with no Markdown.
    pub bare: bool,
    /// The block as it was read, to write an unchanged scene back byte for byte.
    encoded: Option<Encoded>,
}

impl PartialEq for Drawing {
    fn eq(&self, other: &Self) -> bool {
        self.scene == other.scene
            && self.compressed == other.compressed
            && self.texts == other.texts
            && self.element_links == other.element_links
            && self.header == other.header
            && self.commented_out == other.commented_out
            && self.other_sections == other.other_sections
            && self.trailer == other.trailer
            && self.bare == other.bare
    }
}

/// The drawing block as read: the scene it decoded to and its text.
#[derive(Debug, Clone)]
struct Encoded {
    scene: Value,
    compressed: bool,
    bare: bool,
    payload: String,
}

/// Changes for [`apply`]: removals first, then updates, then additions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Update {
    /// New elements; each needs a `type` from [`ELEMENT_TYPES`], the rest gets defaults.
    pub add_elements: Vec<Value>,
    /// Ids of elements to take out of the scene (and out of every reference to them).
    pub remove_element_ids: Vec<String>,
    /// Each an object with the `id` of an element and the fields to set on it.
    pub update_elements: Vec<Value>,
    /// Fields to set in the scene's `appState`.
    pub update_app_state: Option<Map<String, Value>>,
}

/// The result of [`apply`].
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The drawing after the changes.
    pub drawing: Drawing,
    /// How many elements were added.
    pub added: usize,
    /// How many elements were removed.
    pub removed: usize,
    /// How many update entries were applied.
    pub updated: usize,
    /// The ids of the added elements, in `add_elements` order (given or generated).
    pub added_ids: Vec<String>,
}

/// What a drawing holds, for a reader that does not want the scene.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Elements not marked deleted.
    pub elements: usize,
    /// Those elements by `type`.
    pub by_type: BTreeMap<String, usize>,
    /// Every text element not marked deleted, in scene order, with its raw text.
    pub texts: Vec<TextElement>,
    /// The elements' `link` fields and the element links' targets, first occurrence order.
    pub links: Vec<String>,
    /// Embedded files: the scene's `files` and the `## Embedded Files` entries (distinct ids).
    pub files: usize,
}

/// Whether a note is an Excalidraw drawing: its frontmatter has `excalidraw-plugin`, or its path
/// ends with `.excalidraw.md` or `.excalidraw` (ASCII case ignored).
pub fn is_drawing(path: &str, text: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    if lower.ends_with(".excalidraw.md") || lower.ends_with(".excalidraw") {
        return true;
    }
    otc_parser::parse_head(text)
        .frontmatter
        .and_then(|f| f.value)
        .is_some_and(|v| v.as_object().is_some_and(|m| m.contains_key("excalidraw-plugin")))
}

/// Reads a drawing note (or a bare `.excalidraw` JSON file). Refuses with `InvalidInput`
/// (`field: "path"`) a note with no drawing block, a compressed block that does not decode and
/// data that is not an Excalidraw scene.
pub fn parse(text: &str) -> Result<Drawing, ToolError> {
    let normalized;
    let text = if text.contains("\r\n") {
        normalized = text.replace("\r\n", "\n");
        normalized.as_str()
    } else {
        text
    };
    let Some(block) = find_block(text) else {
        return parse_bare(text);
    };
    let scene = decode(block.payload, block.compressed)?;
    let (header, commented_out, body) = split_head(&text[..block.data_end]);
    let sections = read_sections(body, &scene);
    let encoded =
        Encoded { scene: scene.clone(), compressed: block.compressed, bare: false, payload: block.payload.to_string() };
    let mut scene = scene;
    merge(&mut scene, &sections.texts, &sections.links);
    let prior_texts: Vec<TextElement> = sections.texts.into_iter().map(|(id, text)| TextElement { id, text }).collect();
    let texts = section_texts(&scene, &prior_texts);
    let element_links = section_links(&scene, &sections.links, &texts);
    let trailer = if block.trailer.starts_with('\n') { block.trailer.to_string() } else { TRAILER.to_string() };
    Ok(Drawing {
        scene,
        compressed: block.compressed,
        texts,
        element_links,
        header: header.to_string(),
        commented_out,
        other_sections: sections.other,
        trailer,
        bare: false,
        encoded: Some(encoded),
    })
}

/// Writes the drawing in the plugin's current layout (bare JSON for a bare file): the header as
/// it was, the text elements and element links from the scene, the other sections as they were,
/// and the scene compressed or not as `compressed` says. An unchanged scene keeps its block's
/// text exactly.
pub fn render(drawing: &Drawing) -> String {
    let payload = match &drawing.encoded {
        Some(e) if e.bare == drawing.bare && e.compressed == drawing.compressed && e.scene == drawing.scene => {
            e.payload.clone()
        }
        _ => encode(&drawing.scene, drawing.compressed && !drawing.bare),
    };
    if drawing.bare {
        return payload;
    }
    let texts = section_texts(&drawing.scene, &drawing.texts);
    let links = section_links(&drawing.scene, &drawing.element_links, &texts);
    let mut out = String::with_capacity(drawing.header.len() + payload.len() + 256);
    out.push_str(&drawing.header);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if drawing.commented_out {
        out.push_str("%%\n");
    }
    out.push_str("# Excalidraw Data\n\n## Text Elements\n");
    for t in &texts {
        out.push_str(&t.text);
        out.push_str(" ^");
        out.push_str(&t.id);
        out.push_str("\n\n");
    }
    if !links.is_empty() {
        out.push_str("## Element Links\n");
        for (id, link) in &links {
            out.push_str(id);
            out.push_str(": ");
            out.push_str(link);
            out.push_str("\n\n");
        }
    }
    out.push_str(&drawing.other_sections);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if !drawing.commented_out {
        out.push_str("%%\n");
    }
    out.push_str("## Drawing\n```");
    out.push_str(if drawing.compressed { "compressed-json" } else { "json" });
    out.push('\n');
    out.push_str(&payload);
    out.push_str("\n```");
    out.push_str(if drawing.trailer.starts_with('\n') { &drawing.trailer } else { TRAILER });
    out
}

/// A new drawing note: the plugin's frontmatter and warning line ([`PLUGIN_HEADER`]) and a scene
/// holding `elements` as given (pass them through [`apply`] to get ids and defaults), with
/// `appState` `{"gridSize":null,"viewBackgroundColor":"#ffffff"}` and no files.
pub fn new_drawing(elements: Vec<Value>, compressed: bool) -> Drawing {
    let scene = json!({
        "type": "excalidraw",
        "version": 2,
        "source": SCENE_SOURCE,
        "elements": elements,
        "appState": {"gridSize": null, "viewBackgroundColor": "#ffffff"},
        "files": {},
    });
    let texts = section_texts(&scene, &[]);
    let element_links = section_links(&scene, &[], &texts);
    Drawing {
        scene,
        compressed,
        texts,
        element_links,
        header: PLUGIN_HEADER.to_string(),
        commented_out: false,
        other_sections: String::new(),
        trailer: TRAILER.to_string(),
        bare: false,
        encoded: None,
    }
}

/// Applies `update` at time `now_ms` (ms since the epoch, written to `updated`), all or nothing.
///
/// * Removed elements leave the array, every `boundElements` entry naming them, and every
///   `containerId`, `frameId` and arrow binding pointing at them (those are cleared).
/// * Updated elements get the fields given, `version` + 1, a new `versionNonce` and `updated`;
///   setting `text` or `originalText` of a text element sets the other (and `rawText`) too.
/// * Added elements get an id when they have none (8 letters and digits, derived from the
///   change and `now_ms`: the plugin reads no other length in its sections) and the defaults
///   Excalidraw needs; a text bound to a container and an arrow bound to shapes are entered in
///   those elements' `boundElements`.
///
/// Refuses with `InvalidInput` (the field named in `details.field`): an element with no type or
/// one outside [`ELEMENT_TYPES`], an id no element has, an added id that is taken, a reference to
/// no element.
pub fn apply(mut drawing: Drawing, update: &Update, now_ms: i64) -> Result<Applied, ToolError> {
    let Some(scene) = drawing.scene.as_object_mut() else {
        return Err(invalid("scene", "the drawing's scene is not a JSON object"));
    };
    let mut elements = match scene.remove("elements") {
        Some(Value::Array(list)) => list,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(invalid("scene", "the drawing's scene has an elements field that is not an array")),
    };

    // Check everything before changing anything.
    let Checked { removing, gone, mut live, given } = check_update(&elements, update)?;

    let mut mix = Mix::new(now_ms, update, elements.len());
    let mut touched: HashSet<usize> = HashSet::new();
    remove_elements(&mut elements, &gone, &mut touched);
    update_elements(&mut elements, update, &mut touched);
    let kept = elements.len();
    let added_ids = add_elements(&mut elements, update, given, &mut live, &mut mix, now_ms);
    bind_added(&mut elements, kept, &mut touched);

    let mut touched: Vec<usize> = touched.into_iter().collect();
    touched.sort_unstable();
    for i in touched {
        if let Some(obj) = elements.get_mut(i).and_then(Value::as_object_mut) {
            bump(obj, mix.int31(), now_ms);
        }
    }

    scene.insert("elements".to_string(), Value::Array(elements));
    if let Some(fields) = &update.update_app_state {
        let state = scene.entry("appState").or_insert_with(|| Value::Object(Map::new()));
        if !state.is_object() {
            *state = Value::Object(Map::new());
        }
        if let Some(state) = state.as_object_mut() {
            for (k, v) in fields {
                state.insert(k.clone(), v.clone());
            }
        }
    }

    drawing.texts = section_texts(&drawing.scene, &drawing.texts);
    drawing.element_links = section_links(&drawing.scene, &drawing.element_links, &drawing.texts);
    let added = added_ids.len();
    Ok(Applied { drawing, added, removed: removing.len(), updated: update.update_elements.len(), added_ids })
}

/// What [`check_update`] found an update may do: the ids removed (in the order given, once
/// each) and as a set, the ids live once it is applied, and the id each added element gives.
struct Checked {
    removing: Vec<String>,
    gone: HashSet<String>,
    live: HashSet<String>,
    given: Vec<Option<String>>,
}

/// Checks an update against the elements before anything changes (see [`apply`] for the
/// refusals).
fn check_update(elements: &[Value], update: &Update) -> Result<Checked, ToolError> {
    let existing: HashSet<String> = elements.iter().filter_map(|e| element_id(e).map(str::to_owned)).collect();
    let mut removing: Vec<String> = Vec::new();
    for id in &update.remove_element_ids {
        if !existing.contains(id) {
            return Err(invalid("remove_element_ids", format!("remove_element_ids: no element has id {}", echo(id)))
                .echo("id", id));
        }
        if !removing.contains(id) {
            removing.push(id.clone());
        }
    }
    let gone: HashSet<String> = removing.iter().cloned().collect();
    for (i, u) in update.update_elements.iter().enumerate() {
        let Some(id) = u.as_object().and_then(|o| o.get("id")).and_then(Value::as_str) else {
            return Err(
                invalid("update_elements", format!("update_elements[{i}] needs an \"id\" string")).detail("index", i)
            );
        };
        if !existing.contains(id) || gone.contains(id) {
            let why = if gone.contains(id) { "is also being removed" } else { "is no element of the drawing" };
            return Err(invalid("update_elements", format!("update_elements[{i}]: {} {why}", echo(id)))
                .detail("index", i)
                .echo("id", id));
        }
        if let Some(t) = u.get("type") {
            check_type("update_elements", i, Some(t))?;
        }
    }
    let mut live: HashSet<String> = existing.difference(&gone).cloned().collect();
    let given = check_added(update, &mut live)?;
    Ok(Checked { removing, gone, live, given })
}

/// Checks the added elements: their types, their ids (entered in `live`) and what they point
/// at. Returns the id each one gives, if any.
fn check_added(update: &Update, live: &mut HashSet<String>) -> Result<Vec<Option<String>>, ToolError> {
    let mut given: Vec<Option<String>> = Vec::with_capacity(update.add_elements.len());
    for (i, a) in update.add_elements.iter().enumerate() {
        let Some(obj) = a.as_object() else {
            return Err(invalid("add_elements", format!("add_elements[{i}] is not a JSON object")).detail("index", i));
        };
        check_type("add_elements", i, obj.get("type"))?;
        match obj.get("id") {
            None | Some(Value::Null) => given.push(None),
            Some(Value::String(id)) if !id.is_empty() => {
                if !live.insert(id.clone()) {
                    return Err(invalid(
                        "add_elements",
                        format!("add_elements[{i}] has id {}, which another element already has", echo(id)),
                    )
                    .detail("index", i)
                    .echo("id", id));
                }
                given.push(Some(id.clone()));
            }
            Some(_) => {
                return Err(invalid(
                    "add_elements",
                    format!("add_elements[{i}] has an id that is not a non-empty string"),
                )
                .detail("index", i));
            }
        }
    }
    for (i, a) in update.add_elements.iter().enumerate() {
        for (key, target) in references(a) {
            if !live.contains(target) {
                return Err(invalid(
                    "add_elements",
                    format!("add_elements[{i}] points {key} at {}, which is no element of the drawing", echo(target)),
                )
                .detail("index", i)
                .echo("id", target));
            }
        }
    }
    Ok(given)
}

/// Removes the elements whose ids are in `gone` and every reference to them, noting the
/// elements that changed in `touched`.
fn remove_elements(elements: &mut Vec<Value>, gone: &HashSet<String>, touched: &mut HashSet<usize>) {
    elements.retain(|e| !element_id(e).is_some_and(|id| gone.contains(id)));
    if !gone.is_empty() {
        for (i, e) in elements.iter_mut().enumerate() {
            if let Some(obj) = e.as_object_mut()
                && unlink(obj, gone)
            {
                touched.insert(i);
            }
        }
    }
}

/// Writes the fields of `update.update_elements` into their elements, noting them in `touched`.
fn update_elements(elements: &mut [Value], update: &Update, touched: &mut HashSet<usize>) {
    for u in &update.update_elements {
        let Some(fields) = u.as_object() else { continue };
        let Some(id) = fields.get("id").and_then(Value::as_str) else { continue };
        for (i, e) in elements.iter_mut().enumerate() {
            if element_id(e) != Some(id) {
                continue;
            }
            let Some(obj) = e.as_object_mut() else { continue };
            for (k, v) in fields {
                if !matches!(k.as_str(), "id" | "version" | "versionNonce" | "updated") {
                    obj.insert(k.clone(), v.clone());
                }
            }
            mirror_text(obj, fields);
            touched.insert(i);
        }
    }
}

/// Appends the added elements with their ids (`given`, else a new one) and defaults; returns
/// their ids in order.
fn add_elements(
    elements: &mut Vec<Value>,
    update: &Update,
    given: Vec<Option<String>>,
    live: &mut HashSet<String>,
    mix: &mut Mix,
    now_ms: i64,
) -> Vec<String> {
    let mut added_ids = Vec::with_capacity(update.add_elements.len());
    for (a, id) in update.add_elements.iter().zip(given) {
        let id = id.unwrap_or_else(|| {
            let mut id = mix.id();
            while !live.insert(id.clone()) {
                id = mix.id();
            }
            id
        });
        let obj = a.as_object().cloned().unwrap_or_default();
        let element = with_defaults(obj, &id, now_ms, mix);
        elements.push(Value::Object(element));
        added_ids.push(id);
    }
    added_ids
}

/// Enters each added element (from index `kept` on) in the `boundElements` of the container
/// and shapes it is bound to, noting the elements that were there before in `touched`.
fn bind_added(elements: &mut [Value], kept: usize, touched: &mut HashSet<usize>) {
    for i in kept..elements.len() {
        let (id, kind, targets) = {
            let e = &elements[i];
            let id = element_id(e).unwrap_or_default().to_string();
            let kind = e.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
            let mut targets: Vec<(String, &'static str)> = Vec::new();
            if let Some(c) = e.get("containerId").and_then(Value::as_str) {
                targets.push((c.to_string(), "container"));
            }
            for key in ["startBinding", "endBinding"] {
                if let Some(t) = e.get(key).and_then(|b| b.get("elementId")).and_then(Value::as_str) {
                    targets.push((t.to_string(), "binding"));
                }
            }
            (id, kind, targets)
        };
        for (target, _) in targets {
            for (j, other) in elements.iter_mut().enumerate() {
                if j != i
                    && element_id(other) == Some(target.as_str())
                    && let Some(obj) = other.as_object_mut()
                    && add_bound(obj, &id, if kind == "text" { "text" } else { "arrow" })
                    && j < kept
                {
                    touched.insert(j);
                }
            }
        }
    }
}

/// Counts and lists what the drawing holds (elements marked deleted left out).
pub fn summary(drawing: &Drawing) -> Summary {
    let mut by_type = BTreeMap::new();
    let mut texts = Vec::new();
    let mut links: Vec<String> = Vec::new();
    let mut count = 0;
    for e in live_elements(&drawing.scene) {
        count += 1;
        let kind = e.get("type").and_then(Value::as_str).unwrap_or("unknown");
        *by_type.entry(kind.to_string()).or_insert(0) += 1;
        if kind == "text" {
            texts.push(TextElement { id: element_id(e).unwrap_or_default().to_string(), text: raw_text(e) });
        }
        if let Some(link) = e.get("link").and_then(Value::as_str).filter(|l| !l.is_empty())
            && !links.iter().any(|l| l == link)
        {
            links.push(link.to_string());
        }
    }
    for (_, link) in &drawing.element_links {
        if !link.is_empty() && !links.contains(link) {
            links.push(link.clone());
        }
    }
    let mut files: HashSet<String> = HashSet::new();
    if let Some(map) = drawing.scene.get("files").and_then(Value::as_object) {
        files.extend(map.keys().cloned());
    }
    let mut in_files = false;
    for line in drawing.other_sections.lines() {
        if line.starts_with('#') {
            in_files = line.to_ascii_lowercase().contains("embedded files");
        } else if in_files && let Some(c) = FILE_LINE.captures(line) {
            files.insert(c[1].to_string());
        }
    }
    Summary { elements: count, by_type, texts, links, files: files.len() }
}

// ---------------------------------------------------------------------------------------------
// Reading.

/// Where the drawing block sits in a note.
struct Block<'a> {
    /// Where the plugin's sections end: the `%%` line above the heading, or the heading.
    data_end: usize,
    compressed: bool,
    /// The block's text between the fences.
    payload: &'a str,
    /// What follows the closing fence.
    trailer: &'a str,
}

/// The last `# Drawing`/`## Drawing` heading followed by a `json` or `compressed-json` fence (or,
/// in the oldest notes, by unfenced JSON).
fn find_block(text: &str) -> Option<Block<'_>> {
    DRAWING_HEADING.find_iter(text).filter_map(|m| block_at(text, m.start(), m.end())).last()
}

fn block_at(text: &str, start: usize, end: usize) -> Option<Block<'_>> {
    let rest = text[end..].strip_prefix('\n')?;
    let gap = rest.len() - rest.trim_start().len();
    let opening = &rest[gap..];
    let data_end = comment_opener(&text[..start]).unwrap_or(start);
    let (compressed, fence) = if opening.starts_with("```compressed-json\n") {
        (true, "```compressed-json\n".len())
    } else if opening.starts_with("```json\n") {
        (false, "```json\n".len())
    } else if opening.starts_with('{') {
        let last = opening.rfind('}')?;
        return Some(Block { data_end, compressed: false, payload: &opening[..=last], trailer: &opening[last + 1..] });
    } else {
        return None;
    };
    let body = &opening[fence..];
    let close = if body.starts_with("```") { 0 } else { body.find("\n```")? + 1 };
    Some(Block {
        data_end,
        compressed,
        payload: body[..close].strip_suffix('\n').unwrap_or(&body[..close]),
        trailer: &body[close + 3..],
    })
}

/// Where a `%%` line (then only blank lines) ends `before`, if one does.
fn comment_opener(before: &str) -> Option<usize> {
    let trimmed = before.trim_end_matches('\n');
    if trimmed.len() == before.len() {
        return None;
    }
    let at = trimmed.strip_suffix("%%")?.len();
    (at == 0 || trimmed[..at].ends_with('\n')).then_some(at)
}

/// Splits what precedes the drawing block into the header, whether `%%` opens the data, and the
/// sections' body (after `## Text Elements`).
fn split_head(head: &str) -> (&str, bool, &str) {
    let (heading, data) = match DATA_HEADING.find(head) {
        Some(m) => (m, true),
        None => match TEXT_HEADING.find(head) {
            Some(m) => (m, false),
            None => return (head, false, ""),
        },
    };
    let (header, commented) = match comment_opener(&head[..heading.start()]) {
        Some(at) => (&head[..at], true),
        None => (&head[..heading.start()], false),
    };
    let mut body = &head[heading.end()..];
    body = body.strip_prefix('\n').unwrap_or(body);
    if data {
        let after = body.trim_start_matches('\n');
        for h in ["## Text Elements", "# Text Elements"] {
            if let Some(rest) = after.strip_prefix(h)
                && (rest.is_empty() || rest.starts_with('\n'))
            {
                body = rest.strip_prefix('\n').unwrap_or(rest);
                break;
            }
        }
    }
    (header, commented, body)
}

/// The sections as written.
struct Sections {
    texts: Vec<(String, String)>,
    links: Vec<(String, String)>,
    other: String,
}

/// Reads the text entries (`text ^id`, as the plugin does: an id of 8 characters, or here also
/// any id of an element of the scene), then the sections after them.
fn read_sections(body: &str, scene: &Value) -> Sections {
    let ids: HashSet<&str> = elements(scene).iter().filter_map(element_id).collect();
    let mut texts = Vec::new();
    let (mut position, mut search, mut last_end) = (0, 0, 0);
    while search <= body.len() {
        let Some(c) = TEXT_ENTRY.captures_at(body, search) else { break };
        let (Some(m), Some(id)) = (c.get(0), c.get(1)) else { break };
        if id.as_str().chars().count() == ID_LEN || ids.contains(id.as_str()) {
            texts.push((id.as_str().to_string(), body[position..m.start()].to_string()));
            position = (id.end() + 2).min(m.end());
            search = position;
            last_end = m.end();
        } else {
            search = m.start() + body[m.start()..].chars().next().map_or(1, char::len_utf8);
        }
    }
    let tail = &body[last_end..];
    let starts: Vec<usize> = SECTION_HEADING.find_iter(tail).map(|m| m.start()).collect();
    let mut links = Vec::new();
    let mut other = String::new();
    for (i, &start) in starts.iter().enumerate() {
        let section = &tail[start..starts.get(i + 1).copied().unwrap_or(tail.len())];
        if section.starts_with("## Element Links") || section.starts_with("# Element Links") {
            let entries = section.split_once('\n').map_or("", |(_, rest)| rest);
            for c in LINK_LINE.captures_iter(entries) {
                links.push((c[1].to_string(), c[2].to_string()));
            }
        } else {
            other.push_str(section);
        }
    }
    Sections { texts, links, other }
}

/// Decodes a drawing block into a scene.
fn decode(payload: &str, compressed: bool) -> Result<Value, ToolError> {
    let json = if compressed {
        let data: Vec<u8> = payload.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if data.is_empty() {
            return Err(invalid("path", "the drawing's compressed-json block is empty"));
        }
        if let Some(bad) = data.iter().find(|b| base64_value(**b).is_none()) {
            let shown = if bad.is_ascii_graphic() { format!("{:?}", *bad as char) } else { format!("byte {bad}") };
            return Err(invalid(
                "path",
                format!("the drawing's compressed-json block is not base64 (it holds {shown}), so it does not decode"),
            ));
        }
        let units = decompress_base64(&data, MAX_SCENE_CHARS).map_err(|e| match e {
            Lz::Corrupt => {
                invalid("path", "the drawing's compressed-json block does not decompress (not lz-string data)")
            }
            Lz::TooLarge => invalid(
                "path",
                format!("the drawing's compressed-json block decompresses to more than {MAX_SCENE_CHARS} characters"),
            ),
        })?;
        String::from_utf16(&units)
            .map_err(|_| invalid("path", "the drawing's compressed-json block decompresses to invalid UTF-16"))?
    } else {
        payload.to_string()
    };
    scene_from_json(&json)
}

/// The scene in `json`, cut at its last `}` as the plugin does (a sync tool may append junk).
fn scene_from_json(json: &str) -> Result<Value, ToolError> {
    let Some(last) = json.rfind('}') else {
        return Err(invalid("path", "the drawing data is not JSON (no object in it)"));
    };
    let scene: Value = serde_json::from_str(&json[..=last])
        .map_err(|e| invalid("path", format!("the drawing data is not JSON: {e}")))?;
    if !scene.get("elements").is_some_and(Value::is_array) {
        return Err(invalid("path", "the drawing data is not an Excalidraw scene (it has no elements array)"));
    }
    Ok(scene)
}

/// A bare `.excalidraw` file, or the refusal for a note with no drawing.
fn parse_bare(text: &str) -> Result<Drawing, ToolError> {
    let start = text.len() - text.trim_start().len();
    if !text[start..].starts_with('{') {
        return Err(invalid(
            "path",
            "the note holds no Excalidraw drawing: no `## Drawing` section with a ```json or ```compressed-json block",
        ));
    }
    let scene = scene_from_json(text)?;
    let texts = section_texts(&scene, &[]);
    let element_links = section_links(&scene, &[], &texts);
    Ok(Drawing {
        encoded: Some(Encoded { scene: scene.clone(), compressed: false, bare: true, payload: text.to_string() }),
        scene,
        compressed: false,
        texts,
        element_links,
        header: String::new(),
        commented_out: false,
        other_sections: String::new(),
        trailer: TRAILER.to_string(),
        bare: true,
    })
}

/// Copies the sections into the scene, as the plugin does on load: a text entry sets its text
/// element's raw text (a non-text element's link, in old notes), an element link sets `link`.
fn merge(scene: &mut Value, texts: &[(String, String)], links: &[(String, String)]) {
    let Some(list) = scene.get_mut("elements").and_then(Value::as_array_mut) else { return };
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, e) in list.iter().enumerate() {
        if !deleted(e)
            && let Some(id) = element_id(e)
        {
            index.entry(id.to_string()).or_insert(i);
        }
    }
    for (id, text) in texts {
        if let Some(obj) = index.get(id).and_then(|&i| list.get_mut(i)).and_then(Value::as_object_mut) {
            if obj.get("type").and_then(Value::as_str) == Some("text") {
                set_raw(obj, text);
            } else {
                set_link(obj, text);
            }
        }
    }
    for (id, link) in links {
        if let Some(obj) = index.get(id).and_then(|&i| list.get_mut(i)).and_then(Value::as_object_mut) {
            set_link(obj, link);
        }
    }
}

/// Sets a text element's raw text: `rawText` always; `originalText` (and `text`, when it was not
/// wrapped) when they held the raw text, i.e. the drawing was saved showing raw text.
fn set_raw(obj: &mut Map<String, Value>, new: &str) {
    let old_raw = raw_text_of(obj);
    if old_raw == new {
        return;
    }
    let original = obj.get("originalText").and_then(Value::as_str).map(str::to_owned);
    if original.as_deref().is_none_or(|o| o == old_raw) {
        let text = obj.get("text").and_then(Value::as_str);
        if text.is_none() || text == original.as_deref() {
            obj.insert("text".to_string(), Value::from(new));
        }
        obj.insert("originalText".to_string(), Value::from(new));
    }
    obj.insert("rawText".to_string(), Value::from(new));
    step_version(obj);
}

fn set_link(obj: &mut Map<String, Value>, link: &str) {
    if obj.get("link").and_then(Value::as_str) == Some(link) {
        return;
    }
    obj.insert("link".to_string(), Value::from(link));
    step_version(obj);
}

/// `version` and `versionNonce` one up, as the plugin marks an element it changed on load.
fn step_version(obj: &mut Map<String, Value>) {
    for key in ["version", "versionNonce"] {
        if let Some(n) = obj.get(key).and_then(Value::as_i64) {
            obj.insert(key.to_string(), Value::from(n.wrapping_add(1)));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Writing.

/// The `## Text Elements` entries: the ids of `prior` still in the scene in that order, then the
/// scene's other text elements in its order. Only ids of 8 characters with no whitespace are
/// listed: the plugin reads no others (and would glue such an entry's text onto the next one);
/// it gives those elements new ids and lists them itself.
fn section_texts(scene: &Value, prior: &[TextElement]) -> Vec<TextElement> {
    let mut eligible: Vec<(&str, String)> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for e in live_elements(scene) {
        if e.get("type").and_then(Value::as_str) != Some("text") {
            continue;
        }
        if let Some(id) = element_id(e).filter(|id| listable(id))
            && seen.insert(id)
        {
            eligible.push((id, raw_text(e)));
        }
    }
    order(eligible, prior.iter().map(|t| t.id.as_str()))
        .into_iter()
        .map(|(id, text)| TextElement { id: id.to_string(), text })
        .collect()
}

/// The `## Element Links` entries, as the plugin writes them: non-text elements with a link (the
/// ids of `prior` first, in that order), then text elements with a link whose raw text is what
/// they show (`rawText` equals `originalText`), in `texts` order.
fn section_links(scene: &Value, prior: &[(String, String)], texts: &[TextElement]) -> Vec<(String, String)> {
    let mut shapes: Vec<(&str, String)> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut text_links: HashMap<&str, String> = HashMap::new();
    for e in live_elements(scene) {
        let Some(id) = element_id(e).filter(|id| listable(id)) else { continue };
        let Some(link) = e.get("link").and_then(Value::as_str).filter(|l| !l.is_empty()) else { continue };
        if e.get("type").and_then(Value::as_str) == Some("text") {
            let raw = e.get("rawText").and_then(Value::as_str);
            if raw.is_none_or(|r| Some(r) == e.get("originalText").and_then(Value::as_str)) {
                text_links.entry(id).or_insert_with(|| link.to_string());
            }
        } else if seen.insert(id) {
            shapes.push((id, link.to_string()));
        }
    }
    let mut out: Vec<(String, String)> =
        order(shapes, prior.iter().map(|(id, _)| id.as_str())).into_iter().map(|(id, l)| (id.to_string(), l)).collect();
    for t in texts {
        if let Some(link) = text_links.remove(t.id.as_str()) {
            out.push((t.id.clone(), link));
        }
    }
    out
}

/// `items` with the ids of `prior` first (in that order), the rest after in their own order.
fn order<'a>(items: Vec<(&'a str, String)>, prior: impl Iterator<Item = &'a str>) -> Vec<(&'a str, String)> {
    let mut slots: Vec<Option<(&str, String)>> = items.into_iter().map(Some).collect();
    let at: HashMap<&str, usize> = slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|s| (s.0, i))).collect();
    let mut out = Vec::with_capacity(slots.len());
    for id in prior {
        if let Some(item) = at.get(id).and_then(|&i| slots[i].take()) {
            out.push(item);
        }
    }
    out.extend(slots.into_iter().flatten());
    out
}

/// Whether the plugin's section readers recognise `id`.
fn listable(id: &str) -> bool {
    id.chars().count() == ID_LEN && !id.chars().any(char::is_whitespace)
}

/// The block text for a scene: `JSON.stringify(scene, null, "\t")`, compressed as the plugin
/// does (lz-string base64, lines of 256 with a blank line between).
fn encode(scene: &Value, compressed: bool) -> String {
    let json = tab_json(scene);
    if !compressed {
        return json;
    }
    let base64 = js_base64(&json);
    let mut out = String::with_capacity(base64.len() + base64.len() / CHUNK * 2 + 2);
    for (i, chunk) in base64.as_bytes().chunks(CHUNK).enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        // Base64 is ASCII, so every chunk is whole characters.
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
    }
    out
}

fn tab_json(value: &Value) -> String {
    let mut out = Vec::new();
    let mut ser =
        serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(b"\t"));
    match value.serialize(&mut ser) {
        Ok(()) => String::from_utf8(out).unwrap_or_else(|_| value.to_string()),
        Err(_) => value.to_string(),
    }
}

/// `LZString.compressToBase64` exactly: lz-str 0.2.1 pads with one `=` too many.
fn js_base64(text: &str) -> String {
    let raw = lz_str::compress_to_base64(text);
    let core = raw.trim_end_matches('=');
    let pad = match core.len() % 4 {
        0 => "",
        1 => "===",
        2 => "==",
        _ => "=",
    };
    format!("{core}{pad}")
}

// ---------------------------------------------------------------------------------------------
// A bounded lz-string decompressor (`decompressFromBase64`). lz-str's has no bound on its output;
// this one stops at a limit and keeps the dictionary as ranges of the output (every entry after
// the first literal is a slice of it), so memory stays proportional to what it produced.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lz {
    Corrupt,
    TooLarge,
}

fn base64_value(b: u8) -> Option<u32> {
    match b {
        b'A'..=b'Z' => Some(u32::from(b - b'A')),
        b'a'..=b'z' => Some(u32::from(b - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(b - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        b'=' => Some(64),
        _ => None,
    }
}

struct Bits<'a> {
    data: &'a [u8],
    value: u32,
    position: u32,
    index: usize,
}

impl Bits<'_> {
    fn read(&mut self, count: u32) -> u64 {
        let mut bits = 0u64;
        for i in 0..count {
            let bit = self.value & self.position;
            self.position >>= 1;
            if self.position == 0 {
                self.position = 32;
                // Past the end the JS reads NaN: zero bits.
                self.value = self.data.get(self.index).and_then(|b| base64_value(*b)).unwrap_or(0);
                self.index += 1;
            }
            if bit != 0 {
                bits |= 1 << i;
            }
        }
        bits
    }
}

/// Decompresses validated base64 characters (whitespace removed) to UTF-16 code units, failing
/// past `limit` units.
fn decompress_base64(data: &[u8], limit: usize) -> Result<Vec<u16>, Lz> {
    let first = data.first().and_then(|b| base64_value(*b)).ok_or(Lz::Corrupt)?;
    let mut bits = Bits { data, value: first, position: 32, index: 1 };
    let literal = |bits: &mut Bits<'_>, code: u64| -> Result<u16, Lz> {
        match code {
            0 => Ok(bits.read(8) as u16),
            1 => Ok(bits.read(16) as u16),
            _ => Err(Lz::Corrupt),
        }
    };
    let first = match bits.read(2) {
        2 => return Ok(Vec::new()),
        code => literal(&mut bits, code)?,
    };
    // Entries 0..3 stand for the three codes and are never looked up.
    let mut dictionary: Vec<(usize, usize)> = vec![(0, 0); 3];
    dictionary.push((0, 1));
    let mut out = vec![first];
    let mut w = (0usize, 1usize);
    let mut enlarge_in: u64 = 4;
    let mut num_bits: u32 = 3;
    loop {
        if bits.index > data.len() {
            return Err(Lz::Corrupt);
        }
        let code = bits.read(num_bits);
        let mut fresh = None;
        let code = match code {
            0 | 1 => {
                fresh = Some(literal(&mut bits, code)?);
                dictionary.push((out.len(), 1));
                enlarge_in -= 1;
                dictionary.len() - 1
            }
            2 => return Ok(out),
            _ => usize::try_from(code).map_err(|_| Lz::Corrupt)?,
        };
        if enlarge_in == 0 {
            enlarge_in = 1 << num_bits;
            num_bits += 1;
        }
        let start = out.len();
        let len = if fresh.is_some() {
            1
        } else if code < dictionary.len() && code > 2 {
            dictionary[code].1
        } else if code == dictionary.len() {
            w.1 + 1
        } else {
            return Err(Lz::Corrupt);
        };
        if start + len > limit {
            return Err(Lz::TooLarge);
        }
        if let Some(unit) = fresh {
            out.push(unit);
        } else if code < dictionary.len() {
            let (s, l) = dictionary[code];
            out.extend_from_within(s..s + l);
        } else {
            out.extend_from_within(w.0..w.0 + w.1);
            out.push(out[w.0]);
        }
        // w + entry[0]: the entry follows w in the output.
        dictionary.push((w.0, w.1 + 1));
        enlarge_in -= 1;
        w = (start, len);
        if enlarge_in == 0 {
            enlarge_in = 1 << num_bits;
            num_bits += 1;
        }
        if num_bits > 32 {
            return Err(Lz::Corrupt);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Elements.

fn elements(scene: &Value) -> &[Value] {
    scene.get("elements").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn live_elements(scene: &Value) -> impl Iterator<Item = &Value> {
    elements(scene).iter().filter(|e| e.is_object() && !deleted(e))
}

fn deleted(e: &Value) -> bool {
    e.get("isDeleted").and_then(Value::as_bool) == Some(true)
}

fn element_id(e: &Value) -> Option<&str> {
    e.get("id").and_then(Value::as_str)
}

/// `rawText` (when not empty), else `originalText`, else `text`.
fn raw_text(e: &Value) -> String {
    e.as_object().map(raw_text_of).unwrap_or_default()
}

fn raw_text_of(obj: &Map<String, Value>) -> String {
    let field = |k: &str| obj.get(k).and_then(Value::as_str);
    field("rawText")
        .filter(|r| !r.is_empty())
        .or_else(|| field("originalText"))
        .or_else(|| field("text"))
        .unwrap_or("")
        .to_string()
}

fn check_type(field: &str, index: usize, kind: Option<&Value>) -> Result<(), ToolError> {
    match kind.and_then(Value::as_str) {
        Some(t) if ELEMENT_TYPES.contains(&t) => Ok(()),
        other => {
            let had = match other {
                Some(t) => format!("type {:?}", echo(t)),
                None if kind.is_some() => "a type that is not a string".to_string(),
                None => "no type".to_string(),
            };
            Err(invalid(
                field,
                format!("{field}[{index}] has {had}; an element's type is one of {}", ELEMENT_TYPES.join(", ")),
            )
            .detail("index", index))
        }
    }
}

/// The ids an added element points at: `(field, id)`.
fn references(e: &Value) -> Vec<(&'static str, &str)> {
    let mut out = Vec::new();
    for key in ["containerId", "frameId"] {
        if let Some(id) = e.get(key).and_then(Value::as_str) {
            out.push((key, id));
        }
    }
    for key in ["startBinding", "endBinding"] {
        if let Some(id) = e.get(key).and_then(|b| b.get("elementId")).and_then(Value::as_str) {
            out.push((key, id));
        }
    }
    out
}

/// Drops every reference to `gone` from one element; whether anything changed.
fn unlink(obj: &mut Map<String, Value>, gone: &HashSet<String>) -> bool {
    let mut changed = false;
    if let Some(Value::Array(list)) = obj.get_mut("boundElements") {
        let before = list.len();
        list.retain(|b| !b.get("id").and_then(Value::as_str).is_some_and(|id| gone.contains(id)));
        changed |= list.len() != before;
    }
    for key in ["containerId", "frameId"] {
        if obj.get(key).and_then(Value::as_str).is_some_and(|id| gone.contains(id)) {
            obj.insert(key.to_string(), Value::Null);
            changed = true;
        }
    }
    for key in ["startBinding", "endBinding"] {
        if obj.get(key).and_then(|b| b.get("elementId")).and_then(Value::as_str).is_some_and(|id| gone.contains(id)) {
            obj.insert(key.to_string(), Value::Null);
            changed = true;
        }
    }
    changed
}

/// Enters `{id, type}` in an element's `boundElements`; whether it was not there yet.
fn add_bound(obj: &mut Map<String, Value>, id: &str, kind: &str) -> bool {
    let list = obj.entry("boundElements").or_insert(Value::Null);
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let Some(list) = list.as_array_mut() else { return false };
    if list.iter().any(|b| b.get("id").and_then(Value::as_str) == Some(id)) {
        return false;
    }
    list.push(json!({"id": id, "type": kind}));
    true
}

/// Keeps `text`, `originalText` and `rawText` of an updated text element together.
fn mirror_text(obj: &mut Map<String, Value>, fields: &Map<String, Value>) {
    if obj.get("type").and_then(Value::as_str) != Some("text") {
        return;
    }
    let (has_text, has_original) = (fields.contains_key("text"), fields.contains_key("originalText"));
    if has_text && !has_original {
        obj.insert("originalText".to_string(), fields["text"].clone());
    }
    if has_original && !has_text {
        obj.insert("text".to_string(), fields["originalText"].clone());
    }
    if (has_text || has_original) && !fields.contains_key("rawText") && obj.contains_key("rawText") {
        let original = obj.get("originalText").cloned().unwrap_or(Value::Null);
        obj.insert("rawText".to_string(), original);
    }
}

fn bump(obj: &mut Map<String, Value>, nonce: i64, now_ms: i64) {
    let version = obj.get("version").and_then(Value::as_i64).unwrap_or(0).saturating_add(1);
    obj.insert("version".to_string(), Value::from(version));
    obj.insert("versionNonce".to_string(), Value::from(nonce));
    obj.insert("updated".to_string(), Value::from(now_ms));
}

/// An added element with what Excalidraw needs filled in where it is missing.
fn with_defaults(mut e: Map<String, Value>, id: &str, now_ms: i64, mix: &mut Mix) -> Map<String, Value> {
    let kind = e.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
    let put = |e: &mut Map<String, Value>, key: &str, value: Value| {
        e.entry(key.to_string()).or_insert(value);
    };
    e.insert("id".to_string(), Value::from(id));
    put(&mut e, "x", json!(0));
    put(&mut e, "y", json!(0));
    match kind.as_str() {
        "text" => {
            let text = match (e.get("text").and_then(Value::as_str), e.get("originalText").and_then(Value::as_str)) {
                (Some(t), _) | (None, Some(t)) => t.to_string(),
                (None, None) => String::new(),
            };
            put(&mut e, "text", Value::from(text.as_str()));
            put(&mut e, "originalText", Value::from(text.as_str()));
            put(&mut e, "fontSize", json!(20));
            put(&mut e, "fontFamily", json!(5));
            put(&mut e, "textAlign", json!("left"));
            put(&mut e, "verticalAlign", json!("top"));
            put(&mut e, "containerId", Value::Null);
            put(&mut e, "lineHeight", json!(1.25));
            put(&mut e, "autoResize", json!(true));
            let size = e.get("fontSize").and_then(Value::as_f64).unwrap_or(20.0);
            let height = e.get("lineHeight").and_then(Value::as_f64).unwrap_or(1.25);
            let lines = text.split('\n').count();
            let longest = text.split('\n').map(|l| l.chars().count()).max().unwrap_or(0);
            put(&mut e, "width", number(longest as f64 * size * 0.6));
            put(&mut e, "height", number(lines as f64 * size * height));
        }
        "line" | "arrow" | "freedraw" => {
            let w = e.get("width").and_then(Value::as_f64).unwrap_or(100.0);
            let h = e.get("height").and_then(Value::as_f64).unwrap_or(0.0);
            put(&mut e, "points", json!([[0, 0], [number(w), number(h)]]));
            let (bw, bh) = extent(e.get("points"));
            put(&mut e, "width", number(bw));
            put(&mut e, "height", number(bh));
            put(&mut e, "lastCommittedPoint", Value::Null);
            if kind == "freedraw" {
                put(&mut e, "pressures", json!([]));
                put(&mut e, "simulatePressure", json!(true));
            } else {
                put(&mut e, "startBinding", Value::Null);
                put(&mut e, "endBinding", Value::Null);
                put(&mut e, "startArrowhead", Value::Null);
                put(&mut e, "endArrowhead", if kind == "arrow" { json!("arrow") } else { Value::Null });
            }
        }
        _ => {
            put(&mut e, "width", json!(100));
            put(&mut e, "height", json!(100));
            match kind.as_str() {
                "image" => {
                    put(&mut e, "fileId", Value::Null);
                    put(&mut e, "status", json!("pending"));
                    put(&mut e, "scale", json!([1, 1]));
                }
                "frame" => put(&mut e, "name", Value::Null),
                _ => {}
            }
        }
    }
    put(&mut e, "angle", json!(0));
    put(&mut e, "strokeColor", json!("#1e1e1e"));
    put(&mut e, "backgroundColor", json!("transparent"));
    put(&mut e, "fillStyle", json!("solid"));
    put(&mut e, "strokeWidth", json!(2));
    put(&mut e, "strokeStyle", json!("solid"));
    put(&mut e, "roughness", json!(1));
    put(&mut e, "opacity", json!(100));
    put(&mut e, "groupIds", json!([]));
    put(&mut e, "frameId", Value::Null);
    put(&mut e, "roundness", Value::Null);
    put(&mut e, "seed", Value::from(mix.int31()));
    put(&mut e, "version", json!(1));
    put(&mut e, "versionNonce", Value::from(mix.int31()));
    put(&mut e, "isDeleted", json!(false));
    put(&mut e, "boundElements", json!([]));
    put(&mut e, "updated", Value::from(now_ms));
    put(&mut e, "link", Value::Null);
    put(&mut e, "locked", json!(false));
    e
}

/// Width and height of a points list (`[[x, y], ...]`).
fn extent(points: Option<&Value>) -> (f64, f64) {
    let coords: Vec<(f64, f64)> = points
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?))).collect())
        .unwrap_or_default();
    let span = |f: fn(&(f64, f64)) -> f64| {
        let values = coords.iter().map(f);
        let (min, max) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if min.is_finite() && max.is_finite() { max - min } else { 0.0 }
    };
    (span(|p| p.0), span(|p| p.1))
}

/// A JSON number, written as an integer when it is one.
fn number(value: f64) -> Value {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
        Value::from(value as i64)
    } else {
        json!(value)
    }
}

/// Deterministic numbers for ids, seeds and nonces: FNV-1a over the change, then splitmix64.
struct Mix(u64);

impl Mix {
    fn new(now_ms: i64, update: &Update, count: usize) -> Self {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut feed = |bytes: &[u8]| {
            for b in bytes {
                hash ^= u64::from(*b);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        };
        feed(&now_ms.to_le_bytes());
        feed(&(count as u64).to_le_bytes());
        feed(serde_json::to_string(update).unwrap_or_default().as_bytes());
        Self(hash)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..2^31`, like Excalidraw's `randomInteger`.
    fn int31(&mut self) -> i64 {
        (self.next() >> 33) as i64
    }

    /// 8 letters and digits, like the plugin's `nanoid`.
    fn id(&mut self) -> String {
        const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let mut n = self.next();
        (0..ID_LEN)
            .map(|_| {
                let c = ALPHABET[(n % 62) as usize] as char;
                n /= 62;
                c
            })
            .collect()
    }
}

fn invalid(field: &str, message: impl Into<String>) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, message).detail("field", field)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    /// A scene like one the plugin saves: a box with a bound label, linked to a note, an arrow
    /// from the box to an ellipse, two free texts, a deleted text and some filler shapes.
    fn scene() -> Value {
        let mut elements = vec![
            json!({"id": "rect0001", "type": "rectangle", "x": 0, "y": 0, "width": 200, "height": 80,
                   "version": 3, "versionNonce": 11, "isDeleted": false, "link": "[[Some Note]]",
                   "boundElements": [{"id": "text0001", "type": "text"}, {"id": "arrw0001", "type": "arrow"}]}),
            json!({"id": "text0001", "type": "text", "x": 10, "y": 20, "text": "Boxed", "originalText": "Boxed",
                   "rawText": "Boxed", "containerId": "rect0001", "version": 2, "isDeleted": false, "link": null}),
            json!({"id": "Ab12Cd34", "type": "text", "x": 0, "y": 200, "text": "Hello world",
                   "originalText": "Hello world", "rawText": "Hello world", "version": 1, "isDeleted": false}),
            json!({"id": "Zz99Yy88", "type": "text", "x": 0, "y": 260, "text": "Second text",
                   "originalText": "Second text", "rawText": "Second text", "version": 1, "isDeleted": false}),
            json!({"id": "arrw0001", "type": "arrow", "x": 200, "y": 40, "points": [[0, 0], [150, 0]],
                   "startBinding": {"elementId": "rect0001", "focus": 0, "gap": 1},
                   "endBinding": {"elementId": "elli0001", "focus": 0, "gap": 1}, "version": 4, "isDeleted": false}),
            json!({"id": "elli0001", "type": "ellipse", "x": 350, "y": 0, "width": 80, "height": 80,
                   "boundElements": [{"id": "arrw0001", "type": "arrow"}], "version": 2, "isDeleted": false}),
            json!({"id": "dead0001", "type": "text", "text": "gone", "originalText": "gone", "isDeleted": true}),
        ];
        for i in 0..12 {
            elements.push(json!({"id": format!("fill{i:04}"), "type": "diamond", "x": i * 37, "y": 500 + i * 11,
                "width": 40 + i, "height": 30, "strokeColor": "#1e1e1e", "backgroundColor": "#a5d8ff",
                "seed": 1000 + i * 7919, "version": 1, "isDeleted": false}));
        }
        json!({"type": "excalidraw", "version": 2, "source": SCENE_SOURCE, "elements": elements,
               "appState": {"gridSize": null, "viewBackgroundColor": "#ffffff"}, "files": {}})
    }

    /// The plugin's `compress`: `LZString.compressToBase64` of `JSON.stringify(scene, null, "\t")`,
    /// in lines of 256 with a blank line between.
    fn plugin_compress(scene: &Value) -> String {
        let mut json = Vec::new();
        let mut ser =
            serde_json::Serializer::with_formatter(&mut json, serde_json::ser::PrettyFormatter::with_indent(b"\t"));
        scene.serialize(&mut ser).unwrap();
        let base64 = lz_str::compress_to_base64(String::from_utf8(json).unwrap().as_str());
        // JS pads to a multiple of 4; lz-str 0.2.1 adds one `=` more.
        let core = base64.trim_end_matches('=');
        let padded = format!("{core}{}", "=".repeat((4 - core.len() % 4) % 4));
        padded.as_bytes().chunks(256).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join("\n\n")
    }

    const SECTIONS: &str = "# Excalidraw Data\n\n## Text Elements\nBoxed ^text0001\n\nHello world ^Ab12Cd34\n\n\
Second text ^Zz99Yy88\n\n## Element Links\nrect0001: [[Some Note]]\n\n## Embedded Files\n\
a1b2c3d4e5: [[pic.png]]\n\n";

    fn compressed_note() -> String {
        format!("{PLUGIN_HEADER}{SECTIONS}%%\n## Drawing\n```compressed-json\n{}\n```\n%%", plugin_compress(&scene()))
    }

    fn json_note() -> String {
        format!("{PLUGIN_HEADER}{SECTIONS}%%\n## Drawing\n```json\n{}\n```\n%%", tab_json(&scene()))
    }

    fn element<'a>(d: &'a Drawing, id: &str) -> &'a Value {
        elements(&d.scene).iter().find(|e| element_id(e) == Some(id)).unwrap()
    }

    fn field(err: &ToolError) -> &str {
        err.details.get("field").and_then(Value::as_str).unwrap_or_default()
    }

    fn te(id: &str, text: &str) -> TextElement {
        TextElement { id: id.into(), text: text.into() }
    }

    #[test]
    fn parses_a_compressed_note() {
        let note = compressed_note();
        assert!(note.contains("\n\n"), "the fixture spans several lines of base64");
        assert!(plugin_compress(&scene()).split("\n\n").count() > 2);
        let d = parse(&note).unwrap();
        assert!(d.compressed && !d.bare && !d.commented_out);
        assert_eq!(d.scene, scene());
        assert_eq!(d.header, PLUGIN_HEADER);
        assert_eq!(
            d.texts,
            vec![te("text0001", "Boxed"), te("Ab12Cd34", "Hello world"), te("Zz99Yy88", "Second text")]
        );
        assert_eq!(d.element_links, vec![("rect0001".to_string(), "[[Some Note]]".to_string())]);
        assert_eq!(d.other_sections, "## Embedded Files\na1b2c3d4e5: [[pic.png]]\n\n");
        assert_eq!(d.trailer, "\n%%");
    }

    #[test]
    fn renders_a_current_note_back_byte_for_byte() {
        for note in [compressed_note(), json_note()] {
            let mut d = parse(&note).unwrap();
            assert_eq!(render(&d), note);
            // Re-encoding the scene (not reusing the block) gives the plugin's bytes too.
            d.encoded = None;
            assert_eq!(render(&d), note);
        }
        // After a z-order change the plugin keeps its section order, not the scene's.
        let swapped = compressed_note().replace(
            "Hello world ^Ab12Cd34\n\nSecond text ^Zz99Yy88",
            "Second text ^Zz99Yy88\n\nHello world ^Ab12Cd34",
        );
        let d = parse(&swapped).unwrap();
        assert_eq!(d.texts[1], te("Zz99Yy88", "Second text"));
        assert_eq!(render(&d), swapped);
    }

    #[test]
    fn padding_and_lines_match_lz_string() {
        // JS pads `compressToBase64` to a multiple of 4 with at most three `=`.
        for text in ["a", "ab", "abc", "abcd", "hello world", "{\"x\":1}", "日本語 😀"] {
            let ours = js_base64(text);
            assert_eq!(ours.len() % 4, 0, "{text}");
            assert_eq!(ours.trim_end_matches('='), lz_str::compress_to_base64(text).trim_end_matches('='));
            let units = decompress_base64(ours.as_bytes(), MAX_SCENE_CHARS).unwrap();
            assert_eq!(String::from_utf16(&units).unwrap(), text);
        }
        let big = encode(&scene(), true);
        assert!(big.split("\n\n").all(|line| line.len() <= CHUNK && !line.contains('\n')));
    }

    #[test]
    fn reads_an_uncompressed_note_and_writes_json() {
        let d = parse(&json_note()).unwrap();
        assert!(!d.compressed);
        assert_eq!(d.scene, scene());
        let added = apply(d, &Update { add_elements: vec![json!({"type": "rectangle"})], ..Update::default() }, NOW)
            .unwrap()
            .drawing;
        let out = render(&added);
        assert!(out.contains("%%\n## Drawing\n```json\n{\n\t\"appState\""));
        assert!(out.ends_with("\n```\n%%"));
        assert_eq!(parse(&out).unwrap().scene, added.scene);
    }

    #[test]
    fn writes_the_current_layout_for_a_legacy_note() {
        let header = "---\n\nexcalidraw-plugin: parsed\n\n---\n==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠==\n\n\n";
        let json = serde_json::to_string(&scene()).unwrap();
        let legacy = format!(
            "{header}# Text Elements\nBoxed ^text0001\n\nHello world ^Ab12Cd34\n\nSecond text ^Zz99Yy88\n\n\
%%\n# Drawing\n```json\n{json}\n```\n%%"
        );
        let d = parse(&legacy).unwrap();
        assert_eq!(d.header, header);
        assert_eq!(d.scene, scene());
        assert_eq!(d.texts.len(), 3);
        let out = render(&d);
        assert!(out.starts_with(&format!("{header}# Excalidraw Data\n\n## Text Elements\nBoxed ^text0001\n\n")));
        assert!(out.contains("## Element Links\nrect0001: [[Some Note]]\n\n%%\n## Drawing\n```json\n"));
        // The unchanged scene keeps its one-line JSON.
        assert!(out.contains(&format!("```json\n{json}\n```\n%%")));
        let again = parse(&out).unwrap();
        assert_eq!(again.scene, d.scene);
        assert_eq!(render(&again), out);

        // The oldest notes had JSON under `# Drawing` with no fence.
        let unfenced = format!("{header}# Text Elements\nHello world ^Ab12Cd34\n\n%%\n# Drawing\n{json}%%");
        let d = parse(&unfenced).unwrap();
        assert_eq!(d.scene, scene());
        assert!(render(&d).contains(&format!("## Drawing\n```json\n{json}\n```\n%%")));
    }

    #[test]
    fn keeps_the_comment_above_excalidraw_data() {
        let note = format!(
            "{PLUGIN_HEADER}%%\n{SECTIONS}## Drawing\n```compressed-json\n{}\n```\n%%",
            plugin_compress(&scene())
        );
        let d = parse(&note).unwrap();
        assert!(d.commented_out);
        assert_eq!(d.header, PLUGIN_HEADER);
        assert_eq!(render(&d), note);
    }

    #[test]
    fn the_sections_win_over_the_scene() {
        // A rename rewrote the Markdown, not the compressed scene.
        let note = compressed_note()
            .replace("Hello world ^Ab12Cd34", "Hello [[New Name]] ^Ab12Cd34")
            .replace("rect0001: [[Some Note]]", "rect0001: [[Renamed Note]]");
        let d = parse(&note).unwrap();
        let text = element(&d, "Ab12Cd34");
        assert_eq!(text["rawText"], "Hello [[New Name]]");
        assert_eq!(text["originalText"], "Hello [[New Name]]");
        assert_eq!(text["text"], "Hello [[New Name]]");
        assert_eq!(text["version"], 2);
        assert_eq!(element(&d, "rect0001")["link"], "[[Renamed Note]]");
        assert_eq!(element(&d, "rect0001")["version"], 4);
        let out = render(&d);
        assert!(out.contains("Hello [[New Name]] ^Ab12Cd34\n\n"));
        assert!(out.contains("rect0001: [[Renamed Note]]\n\n"));
        assert_eq!(render(&parse(&out).unwrap()), out);
    }

    #[test]
    fn adds_elements_with_defaults() {
        let d = parse(&compressed_note()).unwrap();
        let update = Update {
            add_elements: vec![
                json!({"type": "text", "text": "New label\nsecond line", "x": 5, "y": 6}),
                json!({"type": "rectangle", "backgroundColor": "#ffc9c9", "link": "[[Other]]"}),
                json!({"type": "arrow", "points": [[0, 0], [40, -30]]}),
            ],
            ..Update::default()
        };
        let applied = apply(d, &update, NOW).unwrap();
        assert_eq!((applied.added, applied.removed, applied.updated), (3, 0, 0));
        let ids = applied.added_ids.clone();
        assert_eq!(ids.len(), 3);
        assert!(ids.iter().all(|id| id.len() == 8 && id.chars().all(|c| c.is_ascii_alphanumeric())));
        // Deterministic: the same change at the same time gives the same ids.
        let again = apply(parse(&compressed_note()).unwrap(), &update, NOW).unwrap();
        assert_eq!(again.added_ids, ids);
        assert_eq!(again.drawing, applied.drawing);

        let d = &applied.drawing;
        let text = element(d, &ids[0]);
        for (key, value) in [
            ("version", json!(1)),
            ("isDeleted", json!(false)),
            ("angle", json!(0)),
            ("strokeColor", json!("#1e1e1e")),
            ("backgroundColor", json!("transparent")),
            ("fillStyle", json!("solid")),
            ("strokeWidth", json!(2)),
            ("strokeStyle", json!("solid")),
            ("roughness", json!(1)),
            ("opacity", json!(100)),
            ("groupIds", json!([])),
            ("frameId", Value::Null),
            ("roundness", Value::Null),
            ("boundElements", json!([])),
            ("updated", json!(NOW)),
            ("link", Value::Null),
            ("locked", json!(false)),
            ("fontSize", json!(20)),
            ("fontFamily", json!(5)),
            ("originalText", json!("New label\nsecond line")),
            ("textAlign", json!("left")),
            ("verticalAlign", json!("top")),
            ("containerId", Value::Null),
            ("lineHeight", json!(1.25)),
            ("autoResize", json!(true)),
            ("x", json!(5)),
            ("height", json!(50)),
        ] {
            assert_eq!(text[key], value, "{key}");
        }
        assert!(text["seed"].as_i64().is_some_and(|s| (0..1 << 31).contains(&s)));
        assert!(text["versionNonce"].as_i64().is_some());
        let rect = element(d, &ids[1]);
        assert_eq!(
            (&rect["width"], &rect["height"], &rect["backgroundColor"]),
            (&json!(100), &json!(100), &json!("#ffc9c9"))
        );
        let arrow = element(d, &ids[2]);
        assert_eq!(
            (&arrow["width"], &arrow["height"], &arrow["endArrowhead"]),
            (&json!(40), &json!(30), &json!("arrow"))
        );
        assert_eq!(arrow["startBinding"], Value::Null);

        // The new text and link reach the sections.
        let out = render(d);
        assert!(
            out.contains(&format!("Second text ^Zz99Yy88\n\nNew label\nsecond line ^{}\n\n## Element Links\n", ids[0]))
        );
        assert!(out.contains(&format!("rect0001: [[Some Note]]\n\n{}: [[Other]]\n\n## Embedded Files\n", ids[1])));
        let back = parse(&out).unwrap();
        assert_eq!(back.scene, d.scene);
        assert_eq!(back.texts.last(), Some(&te(&ids[0], "New label\nsecond line")));
        assert_eq!(render(&back), out);
    }

    #[test]
    fn added_bindings_are_entered_on_both_sides() {
        let d = parse(&compressed_note()).unwrap();
        let update = Update {
            add_elements: vec![
                json!({"id": "box00002", "type": "diamond"}),
                json!({"type": "text", "text": "inside", "containerId": "box00002"}),
                json!({"type": "arrow", "startBinding": {"elementId": "elli0001", "focus": 0, "gap": 2},
                       "endBinding": {"elementId": "box00002", "focus": 0, "gap": 2}}),
            ],
            ..Update::default()
        };
        let applied = apply(d, &update, NOW).unwrap();
        let [_, text, arrow] = applied.added_ids.as_slice() else { panic!() };
        let d = &applied.drawing;
        assert_eq!(
            element(d, "box00002")["boundElements"],
            json!([{"id": text, "type": "text"}, {"id": arrow, "type": "arrow"}])
        );
        assert_eq!(element(d, "box00002")["version"], 1);
        let ellipse = element(d, "elli0001");
        assert_eq!(
            ellipse["boundElements"],
            json!([{"id": "arrw0001", "type": "arrow"}, {"id": arrow, "type": "arrow"}])
        );
        assert_eq!(ellipse["version"], 3);
        assert_eq!(ellipse["updated"], NOW);

        let bad =
            Update { add_elements: vec![json!({"type": "text", "containerId": "nope0000"})], ..Update::default() };
        let err = apply(parse(&compressed_note()).unwrap(), &bad, NOW).unwrap_err();
        assert_eq!((err.code, field(&err)), (ErrorCode::InvalidInput, "add_elements"));
        assert_eq!(err.details["id"], "nope0000");
        let taken = Update { add_elements: vec![json!({"id": "rect0001", "type": "ellipse"})], ..Update::default() };
        let err = apply(parse(&compressed_note()).unwrap(), &taken, NOW).unwrap_err();
        assert_eq!(field(&err), "add_elements");
    }

    #[test]
    fn removes_elements_and_every_reference_to_them() {
        let d = parse(&compressed_note()).unwrap();
        let update = Update {
            remove_element_ids: vec!["rect0001".into(), "Zz99Yy88".into(), "rect0001".into()],
            ..Update::default()
        };
        let applied = apply(d, &update, NOW).unwrap();
        assert_eq!((applied.added, applied.removed, applied.updated), (0, 2, 0));
        let d = &applied.drawing;
        assert!(elements(&d.scene).iter().all(|e| !matches!(element_id(e), Some("rect0001" | "Zz99Yy88"))));
        let label = element(d, "text0001");
        assert_eq!(
            (&label["containerId"], &label["version"], &label["updated"]),
            (&Value::Null, &json!(3), &json!(NOW))
        );
        let arrow = element(d, "arrw0001");
        assert_eq!(arrow["startBinding"], Value::Null);
        assert_eq!(arrow["endBinding"]["elementId"], "elli0001");
        assert_eq!(arrow["version"], 5);
        let text = serde_json::to_string(&d.scene).unwrap();
        assert!(!text.contains("rect0001") && !text.contains("Zz99Yy88"));
        assert_eq!(element(d, "elli0001")["version"], 2, "untouched elements keep their version");
        assert!(d.element_links.is_empty());
        let out = render(d);
        assert!(out.contains("## Text Elements\nBoxed ^text0001\n\nHello world ^Ab12Cd34\n\n## Embedded Files\n"));
        assert!(!out.contains("## Element Links"));

        let unknown = Update { remove_element_ids: vec!["missing1".into()], ..Update::default() };
        let err = apply(parse(&compressed_note()).unwrap(), &unknown, NOW).unwrap_err();
        assert_eq!((err.code, field(&err)), (ErrorCode::InvalidInput, "remove_element_ids"));
        assert_eq!(err.details["id"], "missing1");
    }

    #[test]
    fn updates_elements_and_app_state() {
        let d = parse(&compressed_note()).unwrap();
        let mut state = Map::new();
        state.insert("viewBackgroundColor".into(), json!("#f8f9fa"));
        let update = Update {
            update_elements: vec![
                json!({"id": "Ab12Cd34", "text": "Changed", "version": 99}),
                json!({"id": "elli0001", "backgroundColor": "#b2f2bb", "x": 400}),
            ],
            update_app_state: Some(state),
            ..Update::default()
        };
        let applied = apply(d, &update, NOW).unwrap();
        assert_eq!(applied.updated, 2);
        let d = &applied.drawing;
        let text = element(d, "Ab12Cd34");
        assert_eq!(
            (&text["text"], &text["originalText"], &text["rawText"]),
            (&json!("Changed"), &json!("Changed"), &json!("Changed"))
        );
        assert_eq!((&text["version"], &text["updated"]), (&json!(2), &json!(NOW)));
        assert_ne!(text["versionNonce"], Value::Null);
        let ellipse = element(d, "elli0001");
        assert_eq!(
            (&ellipse["backgroundColor"], &ellipse["x"], &ellipse["version"]),
            (&json!("#b2f2bb"), &json!(400), &json!(3))
        );
        assert_eq!(d.scene["appState"]["viewBackgroundColor"], "#f8f9fa");
        assert_eq!(d.scene["appState"]["gridSize"], Value::Null);
        assert!(render(d).contains("Changed ^Ab12Cd34\n\n"));
        assert_eq!(d.texts[1], te("Ab12Cd34", "Changed"));

        for (bad, want) in [
            (json!({"id": "nothere0", "x": 1}), "nothere0"),
            (json!({"x": 1}), ""),
            (json!({"id": "elli0001", "type": "hexagon"}), ""),
        ] {
            let update = Update { update_elements: vec![bad], ..Update::default() };
            let err = apply(parse(&compressed_note()).unwrap(), &update, NOW).unwrap_err();
            assert_eq!((err.code, field(&err)), (ErrorCode::InvalidInput, "update_elements"));
            assert_eq!(err.details["index"], 0);
            if !want.is_empty() {
                assert_eq!(err.details["id"], want);
            }
        }
    }

    #[test]
    fn refuses_elements_without_a_known_type() {
        for (bad, index) in [
            (vec![json!({"type": "rectangle"}), json!({"type": "star"})], 1),
            (vec![json!({"x": 1})], 0),
            (vec![json!({"type": 7})], 0),
            (vec![json!("rectangle")], 0),
        ] {
            let update = Update { add_elements: bad, ..Update::default() };
            let err = apply(parse(&compressed_note()).unwrap(), &update, NOW).unwrap_err();
            assert_eq!((err.code, field(&err)), (ErrorCode::InvalidInput, "add_elements"));
            assert_eq!(err.details["index"], index);
            assert!(err.message.contains(&format!("add_elements[{index}]")), "{}", err.message);
        }
    }

    #[test]
    fn refuses_what_does_not_decode() {
        let wrap =
            |block: &str| format!("{PLUGIN_HEADER}# Excalidraw Data\n\n## Text Elements\n%%\n## Drawing\n{block}\n%%");
        let not_json = js_base64("this is not json");
        let not_scene = js_base64("{\"type\":\"excalidraw\"}");
        for note in [
            wrap("```compressed-json\n!!!! not base64 @@\n```"),
            wrap("```compressed-json\nAAAAAAAAAAAAAAAAAAAAAAAA\n```"),
            wrap("```compressed-json\nN4KAkARALgngDgUwgLgAQQQwMYQMoEsBzA\n```"),
            wrap("```compressed-json\n\n```"),
            wrap(&format!("```compressed-json\n{not_json}\n```")),
            wrap(&format!("```compressed-json\n{not_scene}\n```")),
            wrap("```json\n{\"elements\": [\n```"),
            "# Just a note\n\nNo drawing here.\n".to_string(),
            String::new(),
        ] {
            let err = parse(&note).unwrap_err();
            assert_eq!((err.code, field(&err)), (ErrorCode::InvalidInput, "path"), "{note}");
        }
    }

    #[test]
    fn the_decompressor_agrees_with_lz_str_and_stays_bounded() {
        let mut samples: Vec<String> =
            vec!["".into(), "x".into(), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".into(), tab_json(&scene())];
        samples.push("ünïcødé 日本語 😀 \u{1}".repeat(30));
        for text in &samples {
            let ours = decompress_base64(js_base64(text).as_bytes(), MAX_SCENE_CHARS).unwrap();
            assert_eq!(Some(ours.clone()), lz_str::decompress_from_base64(&js_base64(text)));
            assert_eq!(String::from_utf16(&ours).unwrap(), *text);
        }
        // A long run compresses to little and expands a lot: the limit holds.
        let run = "a".repeat(100_000);
        assert_eq!(decompress_base64(js_base64(&run).as_bytes(), 1000), Err(Lz::TooLarge));
        // Garbage of every length never panics.
        const KEY: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
        let mut state: u64 = 42;
        for len in 0..400 {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    KEY[(state >> 33) as usize % KEY.len()]
                })
                .collect();
            let _ = decompress_base64(&data, 1 << 16);
            let text = String::from_utf8(data).unwrap();
            let _ = parse(&format!("## Drawing\n```compressed-json\n{text}\n```\n%%"));
        }
    }

    #[test]
    fn a_new_drawing_is_what_the_plugin_writes() {
        for compressed in [false, true] {
            let d = new_drawing(Vec::new(), compressed);
            let out = render(&d);
            let fence = if compressed { "compressed-json" } else { "json" };
            assert!(out.starts_with(&format!(
                "{PLUGIN_HEADER}# Excalidraw Data\n\n## Text Elements\n%%\n## Drawing\n```{fence}\n"
            )));
            assert!(out.ends_with("\n```\n%%"));
            let back = parse(&out).unwrap();
            assert_eq!(back, d);
            assert_eq!(back.scene["appState"], json!({"gridSize": null, "viewBackgroundColor": "#ffffff"}));
            assert_eq!(back.scene["files"], json!({}));
            assert_eq!(back.scene["elements"], json!([]));
            assert!(is_drawing("Drawing 2024.md", &out));
        }
        let with =
            new_drawing(vec![json!({"id": "t0000001", "type": "text", "text": "Hi", "originalText": "Hi"})], true);
        assert_eq!(with.texts, vec![te("t0000001", "Hi")]);
        assert!(render(&with).contains("## Text Elements\nHi ^t0000001\n\n%%\n## Drawing\n"));
    }

    #[test]
    fn ids_the_plugin_cannot_read_stay_out_of_the_sections() {
        let d = new_drawing(
            vec![
                json!({"id": "a-twenty-char-id-xyz", "type": "text", "text": "Long", "link": "[[L]]"}),
                json!({"id": "short", "type": "rectangle", "link": "[[S]]"}),
                json!({"id": "ok000001", "type": "text", "text": "Fine"}),
            ],
            false,
        );
        let out = render(&d);
        assert!(out.contains("## Text Elements\nFine ^ok000001\n\n%%\n"));
        assert_eq!(summary(&d).texts.len(), 2);
        // An entry with an id of the scene parses whatever its length.
        let note = out.replace("Fine ^ok000001", "Long ^a-twenty-char-id-xyz\n\nFine ^ok000001");
        let back = parse(&note).unwrap();
        assert_eq!(element(&back, "ok000001")["text"], "Fine");
        assert_eq!(element(&back, "a-twenty-char-id-xyz")["text"], "Long");
    }

    #[test]
    fn summarises_a_drawing() {
        let s = summary(&parse(&compressed_note()).unwrap());
        assert_eq!(s.elements, 18);
        assert_eq!(s.by_type["diamond"], 12);
        assert_eq!(s.by_type["text"], 3);
        assert_eq!((s.by_type["rectangle"], s.by_type["arrow"], s.by_type["ellipse"]), (1, 1, 1));
        assert_eq!(
            s.texts,
            vec![te("text0001", "Boxed"), te("Ab12Cd34", "Hello world"), te("Zz99Yy88", "Second text")]
        );
        assert_eq!(s.links, vec!["[[Some Note]]".to_string()]);
        assert_eq!(s.files, 1);
    }

    #[test]
    fn reads_a_bare_excalidraw_file() {
        let text = serde_json::to_string_pretty(&scene()).unwrap();
        let d = parse(&text).unwrap();
        assert!(d.bare);
        assert_eq!(d.scene, scene());
        assert_eq!(render(&d), text);
        let removed = apply(d, &Update { remove_element_ids: vec!["dead0001".into()], ..Update::default() }, NOW)
            .unwrap()
            .drawing;
        let out = render(&removed);
        assert!(out.starts_with("{\n\t\"appState\""));
        assert_eq!(parse(&out).unwrap().scene, removed.scene);
    }

    #[test]
    fn crlf_notes_parse() {
        let note = compressed_note().replace('\n', "\r\n");
        let d = parse(&note).unwrap();
        assert_eq!(d.scene, scene());
        assert_eq!(render(&d), compressed_note());
    }

    #[test]
    fn tells_drawings_from_notes() {
        assert!(is_drawing("a/Sketch.excalidraw.md", ""));
        assert!(is_drawing("a/Sketch.Excalidraw.MD", "# anything"));
        assert!(is_drawing("a/Sketch.excalidraw", "{}"));
        assert!(is_drawing("a/Sketch.md", "---\nexcalidraw-plugin: raw\n---\nbody"));
        assert!(is_drawing("a/Sketch.md", &compressed_note()));
        assert!(!is_drawing("a/Note.md", "---\ntags: [excalidraw]\n---\n# Excalidraw Data"));
        assert!(!is_drawing("a/Note.md", "no frontmatter"));
        assert!(!is_drawing("a/excalidraw.md.bak", "---\n: [\n---"));
    }
}
