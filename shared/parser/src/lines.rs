use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{Pos, Span};

/// Columns further than this from their line's start are counted through the block index
/// rather than from the line's start.
const BLOCK: usize = 256;

/// Byte offsets of line starts, for turning offsets into line and column.
///
/// Every lookup costs O(log lines) plus at most a few hundred bytes of counting, however long
/// the line: a note of one huge line with many items in it would otherwise count its
/// characters from the line's start for every item.
#[derive(Debug)]
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// Characters in `text[..k * BLOCK]` for every k, built the first time a column lies
    /// further than a block from its line's start.
    chars_before: OnceLock<Vec<usize>>,
    /// The line of the last lookup: the parser looks up offsets in file order, mostly on that
    /// line or the next, which then needs no binary search (over millions of lines, that search
    /// misses the cache at every step).
    last_line: AtomicUsize,
}

impl Clone for Lines<'_> {
    fn clone(&self) -> Self {
        Self {
            text: self.text,
            starts: self.starts.clone(),
            chars_before: self.chars_before.clone(),
            last_line: AtomicUsize::new(self.last_line.load(Ordering::Relaxed)),
        }
    }
}

/// Characters that start within `bytes` (UTF-8: every byte but the continuation bytes).
fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| (**b as i8) >= -0x40).count()
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self { text, starts, chars_before: OnceLock::new(), last_line: AtomicUsize::new(0) }
    }

    pub fn pos(&self, offset: usize) -> Pos {
        let offset = offset.min(self.text.len());
        let line = self.line_of(offset);
        let start = self.starts[line];
        let col = if offset - start <= 2 * BLOCK {
            char_starts(&self.text.as_bytes()[start..offset])
        } else {
            self.chars_to(offset) - self.chars_to(start)
        };
        Pos { offset, line, col }
    }

    /// Characters in `text[..offset]`.
    fn chars_to(&self, offset: usize) -> usize {
        let bytes = self.text.as_bytes();
        let index = self.chars_before.get_or_init(|| {
            let mut seen = 0;
            let mut index = Vec::with_capacity(bytes.len() / BLOCK + 1);
            index.push(0);
            for block in bytes.chunks_exact(BLOCK) {
                seen += char_starts(block);
                index.push(seen);
            }
            index
        });
        let block = offset / BLOCK;
        index[block] + char_starts(&bytes[block * BLOCK..offset])
    }

    pub fn span(&self, range: std::ops::Range<usize>) -> Span {
        Span { start: self.pos(range.start), end: self.pos(range.end) }
    }

    /// The byte range of line `line`, without its line break.
    pub fn line_range(&self, line: usize) -> std::ops::Range<usize> {
        let start = self.starts[line];
        let end = self.starts.get(line + 1).map(|s| s - 1).unwrap_or(self.text.len());
        let end = if end > start && self.text.as_bytes()[end - 1] == b'\r' { end - 1 } else { end };
        start..end
    }

    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// The line holding `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        let holds = |line: usize| {
            self.starts.get(line).is_some_and(|s| *s <= offset)
                && self.starts.get(line + 1).is_none_or(|next| offset < *next)
        };
        let last = self.last_line.load(Ordering::Relaxed);
        let line = if holds(last) {
            last
        } else if holds(last + 1) {
            last + 1
        } else {
            self.starts.partition_point(|s| *s <= offset) - 1
        };
        self.last_line.store(line, Ordering::Relaxed);
        line
    }
}
