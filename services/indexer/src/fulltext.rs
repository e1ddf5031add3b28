//! The full-text side of indexing: each batch of notes becomes one segment (otc-fts), and
//! small or mostly dead segments are merged so a vault keeps few of them.
//!
//! A note's documents, in note order: its frontmatter block (so properties are found and a
//! text search covers the whole note), then each chunk. Every document is prefixed with the
//! note's title, aliases and tags, and a chunk also with its heading path: they weigh in the
//! ranking, but text search looks at the text alone.

use otc_fts::{DocSource, Segment, SegmentBuilder};
use otc_store::{NoteRecord, SegmentRef};

/// Segments of one size tier (live notes within a factor of [`TIER_FANOUT`]) a vault may keep
/// before they are merged into one of the next tier.
pub const TIER_FANOUT: usize = 4;
/// Past this many segments the smallest are merged whatever their tiers.
pub const MAX_SEGMENTS: usize = 24;

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

/// Which segments to merge, tiered: segments are grouped by size (live notes, in powers of
/// [`TIER_FANOUT`]); the smallest tier holding [`TIER_FANOUT`] or more segments is merged
/// into one, which lands in a higher tier. Each note is so rewritten about once per tier, a
/// handful of times in all, however many commits a vault takes. Past [`MAX_SEGMENTS`] the
/// smallest merge anyway (unless that would rewrite one large segment to absorb a few small
/// ones), and a mostly dead segment is rewritten to drop what it no longer holds. Only as many
/// live notes as `limit` allows (a commit's path merges small segments only; the workers have
/// no limit). At least two segments, or one mostly dead one, or none.
pub fn plan(segments: &[SegmentRef], limit: i64) -> Vec<i64> {
    let mostly_dead = |s: &SegmentRef| s.notes >= 8 && s.live * 2 < s.notes;
    let tier = |s: &SegmentRef| {
        let mut t = 0;
        let mut live = s.live.max(1) as i64;
        while live >= TIER_FANOUT as i64 {
            live /= TIER_FANOUT as i64;
            t += 1;
        }
        t
    };
    let mut by_size: Vec<&SegmentRef> = segments.iter().collect();
    by_size.sort_by_key(|s| (s.live, s.id));
    let within = |picked: &[&SegmentRef]| picked.iter().map(|s| s.live as i64).sum::<i64>() <= limit;
    let mut picked: Vec<&SegmentRef> = Vec::new();
    let mut tiers: std::collections::BTreeMap<u32, Vec<&SegmentRef>> = std::collections::BTreeMap::new();
    for s in &by_size {
        tiers.entry(tier(s)).or_default().push(s);
    }
    if let Some(full) = tiers.values().find(|t| t.len() >= TIER_FANOUT)
        && within(full)
    {
        picked = full.clone();
    } else if segments.len() > MAX_SEGMENTS {
        let want = segments.len() - MAX_SEGMENTS + 2;
        picked = by_size.iter().take(want).copied().collect();
        while picked.len() > 2 && !within(&picked) {
            picked.pop();
        }
        // Never rewrite a large segment only to absorb a few small ones: the next commit
        // would rewrite it again. The tiers gather small segments cheaply; the workers' merge
        // clears the backlog.
        let largest = picked.last().map_or(0, |s| s.live as i64);
        let rest = picked.iter().map(|s| s.live as i64).sum::<i64>() - largest;
        if !within(&picked) || largest > TIER_FANOUT as i64 * rest.max(1) {
            picked.clear();
        }
    }
    for s in segments.iter().filter(|s| mostly_dead(s) && s.live as i64 <= limit) {
        if !picked.iter().any(|p| p.id == s.id) {
            picked.push(s);
        }
    }
    if picked.len() == 1 && !mostly_dead(picked[0]) {
        picked.clear();
    }
    let mut ids: Vec<i64> = picked.iter().map(|s| s.id).collect();
    ids.sort_unstable();
    ids
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
    fn few_segments_of_different_sizes_stay() {
        let segs = vec![seg(1, 1, 1), seg(2, 10, 10), seg(3, 100, 100), seg(4, 100_000, 100_000)];
        assert!(plan(&segs, i64::MAX).is_empty());
    }

    #[test]
    fn a_full_tier_merges_into_the_next() {
        let mut segs: Vec<_> = (1..=4).map(|i| seg(i, 1, 1)).collect();
        segs.push(seg(10, 50_000, 50_000));
        assert_eq!(plan(&segs, 2_000), [1, 2, 3, 4]);
        // Four 500-note segments (one tier) fit a commit's limit; four of 3,000 do not.
        let mid: Vec<_> = (1..=4).map(|i| seg(i, 500, 500)).collect();
        assert_eq!(plan(&mid, 2_000), [1, 2, 3, 4]);
        let big: Vec<_> = (1..=4).map(|i| seg(i, 3_000, 3_000)).collect();
        assert!(plan(&big, 2_000).is_empty());
        assert_eq!(plan(&big, i64::MAX).len(), 4);
    }

    #[test]
    fn many_commits_rewrite_each_note_a_few_times() {
        // 2,000 one-note commits, merging as a commit's path does.
        let mut segs: Vec<SegmentRef> = Vec::new();
        let mut next = 0;
        let mut rewritten = 0i64;
        for _ in 0..2_000 {
            next += 1;
            segs.push(seg(next, 1, 1));
            loop {
                let picked = plan(&segs, 2_000);
                if picked.is_empty() {
                    break;
                }
                let live: i32 = segs.iter().filter(|s| picked.contains(&s.id)).map(|s| s.live).sum();
                rewritten += live as i64;
                segs.retain(|s| !picked.contains(&s.id));
                next += 1;
                segs.push(seg(next, live, live));
            }
        }
        assert!(segs.len() <= 16, "{} segments", segs.len());
        assert!(rewritten <= 2_000 * 6, "{rewritten} notes rewritten");
    }

    #[test]
    fn commits_over_a_backlog_of_segments_do_not_rewrite_it_each_time() {
        // An import left 50 segments of 2,000 notes and one of 1,179 (past MAX_SEGMENTS) for
        // the workers; 200 one-note commits follow before they merge.
        let mut segs: Vec<SegmentRef> = (1..=50).map(|i| seg(i, 2_000, 2_000)).collect();
        segs.push(seg(51, 1_179, 1_179));
        let mut next = 100;
        let mut rewritten = 0i64;
        for _ in 0..200 {
            next += 1;
            segs.push(seg(next, 1, 1));
            loop {
                let picked = plan(&segs, 2_000);
                if picked.is_empty() {
                    break;
                }
                let live: i32 = segs.iter().filter(|s| picked.contains(&s.id)).map(|s| s.live).sum();
                rewritten += live as i64;
                segs.retain(|s| !picked.contains(&s.id));
                next += 1;
                segs.push(seg(next, live, live));
            }
        }
        assert!(rewritten <= 200 * 6, "{rewritten} notes rewritten");
        // The workers' merge (no limit) still brings the count down.
        assert!(plan(&segs, i64::MAX).len() > 2);
    }

    #[test]
    fn a_mostly_dead_segment_is_rewritten() {
        let segs = vec![seg(1, 100, 10), seg(2, 1_000, 1_000)];
        assert_eq!(plan(&segs, 1_000), [1]);
        assert!(plan(&[seg(1, 100_000, 10_000)], 1_000).is_empty());
    }
}
