use crate::{Pos, Span};

/// Byte offsets of line starts, for turning offsets into line and column.
#[derive(Debug, Clone)]
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self { text, starts }
    }

    pub fn pos(&self, offset: usize) -> Pos {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|s| *s <= offset) - 1;
        let col = self.text[self.starts[line]..offset].chars().count();
        Pos { offset, line, col }
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
