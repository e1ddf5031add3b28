use std::sync::OnceLock;

use crate::{Pos, Span};

/// Columns further than this from their line's start are counted through the block index
/// rather than from the line's start.
const BLOCK: usize = 256;

/// Byte offsets of line starts, for turning offsets into line and column.
///
/// Every lookup costs O(log lines) plus at most a few hundred bytes of counting, however long
/// the line: a note of one huge line with many items in it would otherwise count its
/// characters from the line's start for every item.
#[derive(Debug, Clone)]
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// Characters in `text[..k * BLOCK]` for every k, built the first time a column lies
    /// further than a block from its line's start.
    chars_before: OnceLock<Vec<usize>>,
}

/// Characters that start within `bytes` (UTF-8: every byte but the continuation bytes).
fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| (**b as i8) >= -0x40).count()
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self { text, starts, chars_before: OnceLock::new() }
    }

    pub fn pos(&self, offset: usize) -> Pos {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|s| *s <= offset) - 1;
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
        self.starts.partition_point(|s| *s <= offset) - 1
    }
}
