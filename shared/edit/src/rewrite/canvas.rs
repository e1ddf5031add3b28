//! The backlink update of a move, for a canvas (JSON Canvas 1.0): file nodes show a vault path,
//! text nodes hold markdown with links of their own.

use std::collections::HashMap;

use otc_formats::canvas;
use otc_parser::LinkKind;
use otc_vault::links::Resolver;
use serde_json::Value;

use super::{ChangedLink, Moved, Refusal, Rewrite, plan_note};

/// Rewrites a canvas's links for a set of moves, as [`plan_note`] does a note's: a file node
/// whose file moved (its path, compared exactly, a `#subpath` in it kept) shows the new path,
/// and each text node's links are planned and proven as a note's are. The canvas is written
/// back in its own layout and proven by parsing it again: the same nodes, edges and top-level
/// keys, each unchanged but for the fields rewritten. A canvas that does not render back to its
/// own bytes (a layout this server does not write, numbers JSON cannot carry exactly) is refused
/// rather than reformatted. `Ok(None)` when nothing changes, or when the file is not a canvas
/// that parses (it then has no links).
pub fn plan_canvas(
    text: &str,
    source_before: &str,
    source_after: &str,
    before: &Resolver,
    after: &Resolver,
    moves: &[Moved],
) -> Result<Option<Rewrite>, Refusal> {
    let Ok(mut canvas) = canvas::parse(text) else { return Ok(None) };
    let original = canvas.clone();
    let faithful = canvas::render(&original) == text;
    let moved: HashMap<&str, &str> = moves.iter().map(|m| (m.from, m.to)).collect();
    let line_of = |needle: &str| text.find(needle).map_or(0, |at| text[..at].matches('\n').count());
    let mut links = Vec::new();
    // (node index, field, new value) of each rewrite, for the proof.
    let mut rewritten: Vec<(usize, &'static str, String)> = Vec::new();
    for (index, node) in canvas.nodes.iter_mut().enumerate() {
        match node.get("type").and_then(Value::as_str) {
            Some("file") => {
                let Some(file) = node.get("file").and_then(Value::as_str).filter(|f| !f.is_empty()) else { continue };
                // A file node names its file by vault path: it moves only when that file does.
                let (path, sub) = file.split_once('#').map_or((file, None), |(p, s)| (p, Some(s)));
                let Some(desired) = moved.get(path).copied() else { continue };
                let new = match sub {
                    Some(sub) => format!("{desired}#{sub}"),
                    None => desired.to_string(),
                };
                links.push(ChangedLink {
                    line: line_of(&serde_json::to_string(file).unwrap_or_default()),
                    before: file.to_string(),
                    after: new.clone(),
                    kind: LinkKind::Embed,
                });
                rewritten.push((index, "file", new.clone()));
                node.insert("file".into(), Value::String(new));
            }
            Some("text") => {
                let Some(body) = node.get("text").and_then(Value::as_str) else { continue };
                let Some(rewrite) = plan_note(body, source_before, source_after, before, after, moves)? else {
                    continue;
                };
                let at = line_of(&serde_json::to_string(body).unwrap_or_default());
                links.extend(rewrite.links.into_iter().map(|l| ChangedLink { line: at + l.line, ..l }));
                rewritten.push((index, "text", rewrite.text.clone()));
                node.insert("text".into(), Value::String(rewrite.text));
            }
            _ => {}
        }
    }
    if rewritten.is_empty() {
        return Ok(None);
    }
    if !faithful {
        return Err(Refusal {
            target: links.first().map(|l| l.after.clone()).unwrap_or_default(),
            line: links.first().map_or(0, |l| l.line),
            reason: "the canvas is not written in a layout this server can write back unchanged, so its links \
                     cannot be rewritten without reformatting it"
                .into(),
        });
    }
    let new_text = canvas::render(&canvas);
    prove(&original, &new_text, &rewritten)?;
    Ok(Some(Rewrite { text: new_text, links }))
}

/// The written canvas parses back to the original with exactly the rewritten fields changed.
fn prove(original: &canvas::Canvas, written: &str, rewritten: &[(usize, &'static str, String)]) -> Result<(), Refusal> {
    let refuse = |reason: &str| Refusal { target: String::new(), line: 0, reason: reason.to_string() };
    let again = canvas::parse(written).map_err(|_| refuse("the rewritten canvas does not parse"))?;
    if again.edges != original.edges || again.extra != original.extra || again.nodes.len() != original.nodes.len() {
        return Err(refuse("the rewritten canvas changed more than its links"));
    }
    for (index, (old, new)) in original.nodes.iter().zip(&again.nodes).enumerate() {
        let mut expected = old.clone();
        for (_, field, value) in rewritten.iter().filter(|(i, _, _)| *i == index) {
            expected.insert((*field).to_string(), Value::String(value.clone()));
        }
        if *new != expected {
            return Err(refuse("the rewritten canvas changed more than its links"));
        }
    }
    Ok(())
}
