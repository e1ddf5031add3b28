//! What written text is screened for before a wiki commit stores it: instructions aimed at an
//! AI reader (prompt injection) and secrets. An explicit attempt to take over a reader's
//! instructions refuses the write (content_rejected); a weaker sign is a problem to look at;
//! a secret is replaced by a marker before anything is stored.
//!
//! The screen itself lives in `otc-screen` (normalised views, decoders, languages, bounds and the
//! labelled set it is measured on).

pub use otc_screen::{Screened, screen};

/// `record` with its episode's summary screened: secrets replaced, and blocked when it reads as
/// an attempt to instruct a later reader (the audit writer stores episodes this way).
pub fn screened(mut record: otc_store::AuditRecord) -> otc_store::AuditRecord {
    if let Some(episode) = &mut record.episode {
        let screen = screen(&episode.summary);
        episode.summary = screen.text;
        episode.blocked = screen.refused.is_some() || !screen.suspects.is_empty();
        episode.suspects = screen.refused.into_iter().chain(screen.suspects).map(String::from).collect();
        // What a rerun replays keeps no secret either: a redacted argument replays as written.
        if let Some(replay) = &mut episode.replay {
            redact(&mut replay.args);
            if let Some(excerpt) = &mut replay.excerpt {
                redact(excerpt);
            }
        }
    }
    record
}

/// Every string in `value` with its secrets replaced.
fn redact(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) if text.len() >= 8 => *text = screen(text).text,
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact),
        serde_json::Value::Object(map) => map.values_mut().for_each(redact),
        _ => {}
    }
}
