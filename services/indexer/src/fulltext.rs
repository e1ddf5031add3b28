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

/// Which segments to merge: once a vault holds more than [`MAX_SEGMENTS`], the smallest ones
/// (by live notes) that bring it back to half that, as far as `limit` live notes allow; and a
/// mostly dead segment within the limit, to drop what it no longer holds. At least two
/// segments, or one mostly dead one, or none. A large segment is left alone until it is among
/// the smallest or mostly dead, so each note is rewritten a few times, not at every merge.
pub fn plan(segments: &[SegmentRef], limit: i64) -> Vec<i64> {
    let mostly_dead = |s: &SegmentRef| s.notes >= 8 && s.live * 2 < s.notes;
    let mut by_size: Vec<&SegmentRef> = segments.iter().collect();
    by_size.sort_by_key(|s| (s.live, s.id));
    let mut picked: Vec<i64> = Vec::new();
    if segments.len() > MAX_SEGMENTS {
        let want = segments.len() - MAX_SEGMENTS / 2 + 1;
        let mut total = 0i64;
        for s in by_size.iter().take(want) {
            if total + s.live as i64 > limit {
                break;
            }
            total += s.live as i64;
            picked.push(s.id);
        }
        if picked.len() < 2 {
            picked.clear();
        }
    }
    for s in segments.iter().filter(|s| mostly_dead(s) && s.live as i64 <= limit) {
        if !picked.contains(&s.id) {
            picked.push(s.id);
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
        // Ten segments: the seven smallest merge, leaving four.
        assert_eq!(plan(&segs, 2_000), (1..=7).collect::<Vec<_>>());
        assert_eq!(plan(&segs, i64::MAX), (1..=7).collect::<Vec<_>>());
        // Past the limit nothing merges on a commit's path; the workers have no limit.
        let big: Vec<_> = (1..=9).map(|i| seg(i, 3_000, 3_000)).collect();
        assert!(plan(&big, 2_000).is_empty());
        assert_eq!(plan(&big, i64::MAX).len(), 6);
    }

    #[test]
    fn a_mostly_dead_segment_is_rewritten() {
        let segs = vec![seg(1, 100, 10), seg(2, 100, 100)];
        assert_eq!(plan(&segs, 1_000), [1]);
        assert!(plan(&[seg(1, 100_000, 10_000)], 1_000).is_empty());
    }
}
