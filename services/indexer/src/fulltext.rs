//! The full-text side of indexing: each batch of notes becomes one segment (otc-fts), and
//! small or mostly dead segments are merged so a vault keeps few of them.
//!
//! A note's documents, in note order: its frontmatter block (so properties are found and a
//! text search covers the whole note), then each chunk. Every document is prefixed with the
//! note's title, aliases and tags, and a chunk also with its heading path: they weigh in the
//! ranking, but text search looks at the text alone.

use otc_fts::{DocSource, Segment, SegmentBuilder};
use otc_store::{NoteRecord, SegmentRef};

/// Segments a vault may keep before the small ones are merged.
pub const MAX_SEGMENTS: usize = 8;

/// A note and the raw text of its frontmatter block (if it has one).
pub struct FtsNote<'a> {
    pub record: &'a NoteRecord,
    pub front: Option<&'a str>,
}

/// The frontmatter block of a note's text: everything before the body's first line, when the
/// note has frontmatter.
pub fn front_text(record: &NoteRecord, text: &[u8]) -> Option<String> {
    if record.body_line <= 0 {
        return None;
    }
    let mut end = 0;
    for _ in 0..record.body_line {
        match memchr_newline(&text[end..]) {
            Some(i) => end += i + 1,
            None => {
                end = text.len();
                break;
            }
        }
    }
    Some(String::from_utf8_lossy(&text[..end]).into_owned())
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// The segment for these notes: its bytes, or None when there are no notes.
pub fn build(notes: &[FtsNote<'_>]) -> Option<Vec<u8>> {
    if notes.is_empty() {
        return None;
    }
    let mut b = SegmentBuilder::new();
    for n in notes {
        let r = n.record;
        let aliases = r.aliases.join(" ");
        let tags = r.tags.join(" ");
        let mut ord = 0;
        let base = [r.title.as_str(), aliases.as_str(), tags.as_str()];
        if let Some(front) = n.front {
            b.add(&DocSource { path: &r.path, ord, prefix: &base, text: front, offset: 0 });
            ord += 1;
        }
        for c in &r.chunks {
            let prefix = [r.title.as_str(), aliases.as_str(), tags.as_str(), c.heading_path.as_str()];
            b.add(&DocSource { path: &r.path, ord, prefix: &prefix, text: &c.text, offset: c.start as u32 });
            ord += 1;
        }
        if ord == 0 {
            // Nothing but a name: still found by it.
            b.add(&DocSource { path: &r.path, ord, prefix: &base, text: "", offset: 0 });
        }
    }
    Some(b.finish())
}

/// Which segments to merge: the smallest ones (by live notes), up to `limit` live notes in
/// all, once the vault holds more than [`MAX_SEGMENTS`] segments or one of them is mostly
/// dead. At least two, or none.
pub fn plan(segments: &[SegmentRef], limit: i64) -> Vec<i64> {
    let mostly_dead = |s: &SegmentRef| s.notes >= 8 && s.live * 2 < s.notes;
    if segments.len() <= MAX_SEGMENTS && !segments.iter().any(mostly_dead) {
        return Vec::new();
    }
    let mut by_size: Vec<&SegmentRef> = segments.iter().collect();
    by_size.sort_by_key(|s| (s.live, s.id));
    let mut picked = Vec::new();
    let mut total = 0i64;
    for s in by_size {
        if total + s.live as i64 > limit && picked.len() >= 2 {
            break;
        }
        if s.live as i64 > limit {
            break;
        }
        total += s.live as i64;
        picked.push(s.id);
    }
    // A lone mostly-dead segment is worth rewriting on its own.
    if picked.len() < 2 {
        picked = segments.iter().filter(|s| mostly_dead(s) && s.live as i64 <= limit).map(|s| s.id).take(1).collect();
        if picked.is_empty() {
            return Vec::new();
        }
    }
    picked.sort_unstable();
    picked
}

/// Merges the segments (decoded from `data`, with their dead paths) into one. Returns its
/// bytes and live note count, or None when nothing in them is live.
pub fn merge(data: Vec<(Vec<u8>, Vec<String>)>) -> Result<Option<(Vec<u8>, i32)>, otc_fts::Corrupt> {
    let mut segs = Vec::with_capacity(data.len());
    for (bytes, dead) in data {
        let seg = Segment::decode(bytes)?;
        let mut live = vec![true; seg.paths.len()];
        for p in &dead {
            if let Some(i) = seg.path_index(p) {
                live[i as usize] = false;
            }
        }
        segs.push((seg, live));
    }
    let checks: Vec<Box<dyn Fn(u32) -> bool + '_>> =
        segs.iter().map(|(_, live)| Box::new(move |p: u32| live[p as usize]) as Box<dyn Fn(u32) -> bool>).collect();
    let parts: Vec<(&Segment, &dyn Fn(u32) -> bool)> =
        segs.iter().zip(&checks).map(|((seg, _), check)| (seg, check.as_ref())).collect();
    let (bytes, notes) = otc_fts::merge(&parts);
    Ok((notes > 0).then_some((bytes, notes as i32)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(id: i64, notes: i32, live: i32) -> SegmentRef {
        SegmentRef { id, notes, live, bytes: 0, dead: Vec::new() }
    }

    #[test]
    fn few_healthy_segments_stay() {
        let segs: Vec<_> = (1..=MAX_SEGMENTS as i64).map(|i| seg(i, 10, 10)).collect();
        assert!(plan(&segs, 1_000).is_empty());
    }

    #[test]
    fn the_smallest_merge_within_the_limit() {
        let mut segs: Vec<_> = (1..=9).map(|i| seg(i, 10, 10)).collect();
        segs.push(seg(100, 50_000, 50_000));
        let picked = plan(&segs, 2_000);
        assert_eq!(picked, (1..=9).collect::<Vec<_>>());
        // Unlimited (the workers, the end of a rebuild): everything.
        assert_eq!(plan(&segs, i64::MAX).len(), 10);
    }

    #[test]
    fn a_mostly_dead_segment_is_rewritten() {
        let segs = vec![seg(1, 100, 10), seg(2, 100, 100)];
        assert_eq!(plan(&segs, 1_000), [1, 2]);
        assert_eq!(plan(&[seg(1, 100, 10)], 1_000), [1]);
    }
}
