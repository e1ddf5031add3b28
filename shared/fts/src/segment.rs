//! A segment: an immutable inverted index over some chunks of a vault's notes, as one byte
//! string (stored in Postgres, cached by the gateways: it never changes once written).
//!
//! Layout (every integer a LEB128 varint):
//!
//! ```text
//! "OTCFTS1\0"
//! paths:  count, then per path: byte length, bytes
//! docs:   count, then per doc: path index, chunk ord, length in tokens, first text position,
//!         byte offset in the note, byte length
//! terms:  count, then per term (sorted by bytes): byte length, bytes, doc frequency,
//!         postings byte length, positions byte length
//! then every term's postings (doc delta, term frequency) and then every term's positions
//! (per posting: tf position deltas, from 0 for each doc), in term order
//! ```
//!
//! A document is one chunk of a note. Its tokens are the note's prefix fields (title, aliases,
//! tags, the chunk's heading path), a gap, then the chunk's text: `text_start` is the position
//! of the text's first token, so text search can tell text matches from the prefix.

use std::collections::HashMap;
use std::ops::Range;

use rustc_hash::FxHashMap;

use crate::tokenize::{fold_into, for_each_token};

const MAGIC: &[u8; 8] = b"OTCFTS1\0";

#[derive(Debug, thiserror::Error)]
#[error("full-text segment is corrupt: {0}")]
pub struct Corrupt(pub &'static str);

/// One document: a chunk of a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Doc {
    /// Index into the segment's paths.
    pub path: u32,
    /// The chunk's ord within its note.
    pub ord: u32,
    /// Tokens in the document, prefix fields included.
    pub len: u32,
    /// The position of the chunk text's first token.
    pub text_start: u32,
    /// Where the chunk's text sits in the note (byte offsets).
    pub start: u32,
    pub end: u32,
}

/// What a document is made of.
pub struct DocSource<'a> {
    pub path: &'a str,
    pub ord: u32,
    /// Fields indexed before the text (title, aliases, tags, heading path): ranked, but not
    /// part of the note's text.
    pub prefix: &'a [&'a str],
    pub text: &'a str,
    /// Where `text` starts in the note (byte offset).
    pub offset: u32,
}

struct TermAcc {
    term: Box<str>,
    postings: Vec<u8>,
    positions: Vec<u8>,
    df: u32,
    last_doc: Option<u32>,
}

/// Builds a segment from documents added in any order.
#[derive(Default)]
pub struct SegmentBuilder {
    paths: Vec<String>,
    path_ix: HashMap<String, u32>,
    docs: Vec<Doc>,
    /// Every term met, by id, and the ids by term.
    terms: Vec<TermAcc>,
    term_ix: FxHashMap<Box<str>, u32>,
    /// Scratch for one document: (term id, position) per token, and a folded token.
    occurrences: Vec<(u32, u32)>,
    folded: String,
}

impl SegmentBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    pub fn docs(&self) -> usize {
        self.docs.len()
    }

    /// Notes (distinct paths) in the segment.
    pub fn notes(&self) -> usize {
        self.paths.len()
    }

    /// Registers a note with no documents of its own yet (so it counts as held here).
    pub fn path_index(&mut self, path: &str) -> u32 {
        if let Some(&i) = self.path_ix.get(path) {
            return i;
        }
        let i = self.paths.len() as u32;
        self.paths.push(path.to_string());
        self.path_ix.insert(path.to_string(), i);
        i
    }

    pub fn add(&mut self, doc: &DocSource<'_>) {
        let path = self.path_index(doc.path);
        let id = self.docs.len() as u32;
        let mut occurrences = std::mem::take(&mut self.occurrences);
        occurrences.clear();
        let mut pos: u32 = 0;
        for field in doc.prefix {
            for_each_token(field, |s, e| self.occur(&field[s..e], &mut pos, &mut occurrences));
            pos += 1; // no phrase spans two fields
        }
        let text_start = pos;
        for_each_token(doc.text, |s, e| self.occur(&doc.text[s..e], &mut pos, &mut occurrences));
        let (start, end) = (doc.offset, doc.offset + doc.text.len() as u32);
        self.docs.push(Doc { path, ord: doc.ord, len: pos, text_start, start, end });
        // Each term's positions together, in order.
        occurrences.sort_unstable();
        for run in occurrences.chunk_by(|a, b| a.0 == b.0) {
            let acc = &mut self.terms[run[0].0 as usize];
            let delta = id - acc.last_doc.map_or(0, |d| d + 1);
            put(&mut acc.postings, delta as u64);
            put(&mut acc.postings, run.len() as u64);
            let mut prev = 0;
            for &(_, p) in run {
                put(&mut acc.positions, (p - prev) as u64);
                prev = p;
            }
            acc.df += 1;
            acc.last_doc = Some(id);
        }
        self.occurrences = occurrences;
    }

    /// Records one token of the current document at `pos` (an empty fold takes no position).
    fn occur(&mut self, word: &str, pos: &mut u32, occurrences: &mut Vec<(u32, u32)>) {
        fold_into(word, &mut self.folded);
        if self.folded.is_empty() {
            return;
        }
        let term = match self.term_ix.get(self.folded.as_str()) {
            Some(&t) => t,
            None => {
                let t = self.terms.len() as u32;
                let term: Box<str> = self.folded.as_str().into();
                self.terms.push(TermAcc {
                    term: term.clone(),
                    postings: Vec::new(),
                    positions: Vec::new(),
                    df: 0,
                    last_doc: None,
                });
                self.term_ix.insert(term, t);
                t
            }
        };
        occurrences.push((term, *pos));
        *pos += 1;
    }

    pub fn finish(self) -> Vec<u8> {
        let mut terms = self.terms;
        terms.sort_unstable_by(|a, b| a.term.cmp(&b.term));
        let parts: Vec<(&str, u32, &[u8], &[u8])> =
            terms.iter().map(|a| (&*a.term, a.df, a.postings.as_slice(), a.positions.as_slice())).collect();
        encode(&self.paths, &self.docs, &parts)
    }
}

fn encode(paths: &[String], docs: &[Doc], terms: &[(&str, u32, &[u8], &[u8])]) -> Vec<u8> {
    let body: usize = terms.iter().map(|t| t.2.len() + t.3.len() + t.0.len() + 12).sum();
    let mut out = Vec::with_capacity(64 + body + paths.iter().map(|p| p.len() + 2).sum::<usize>() + docs.len() * 8);
    out.extend_from_slice(MAGIC);
    put(&mut out, paths.len() as u64);
    for p in paths {
        put(&mut out, p.len() as u64);
        out.extend_from_slice(p.as_bytes());
    }
    put(&mut out, docs.len() as u64);
    for d in docs {
        put(&mut out, d.path as u64);
        put(&mut out, d.ord as u64);
        put(&mut out, d.len as u64);
        put(&mut out, d.text_start as u64);
        put(&mut out, d.start as u64);
        put(&mut out, (d.end - d.start) as u64);
    }
    put(&mut out, terms.len() as u64);
    for (t, df, postings, positions) in terms {
        put(&mut out, t.len() as u64);
        out.extend_from_slice(t.as_bytes());
        put(&mut out, *df as u64);
        put(&mut out, postings.len() as u64);
        put(&mut out, positions.len() as u64);
    }
    for (_, _, postings, _) in terms {
        out.extend_from_slice(postings);
    }
    for (_, _, _, positions) in terms {
        out.extend_from_slice(positions);
    }
    out
}

/// A term of a segment's dictionary.
#[derive(Debug, Clone)]
pub struct TermEntry {
    pub term: Box<str>,
    pub df: u32,
    postings: Range<usize>,
    positions: Range<usize>,
}

/// A segment read back.
#[derive(Debug)]
pub struct Segment {
    pub paths: Vec<String>,
    path_ix: HashMap<String, u32>,
    pub docs: Vec<Doc>,
    /// The documents of each path, in ord order.
    pub docs_of_path: Vec<Vec<u32>>,
    terms: Vec<TermEntry>,
    data: Vec<u8>,
}

impl Segment {
    pub fn decode(data: Vec<u8>) -> Result<Self, Corrupt> {
        let mut at = 0;
        if data.get(..8) != Some(MAGIC.as_slice()) {
            return Err(Corrupt("bad magic"));
        }
        at += 8;
        let n = get(&data, &mut at)? as usize;
        let mut paths = Vec::with_capacity(n.min(1 << 20));
        for _ in 0..n {
            let len = get(&data, &mut at)? as usize;
            let bytes = data.get(at..at + len).ok_or(Corrupt("path"))?;
            paths.push(String::from_utf8(bytes.to_vec()).map_err(|_| Corrupt("path utf-8"))?);
            at += len;
        }
        let n = get(&data, &mut at)? as usize;
        let mut docs = Vec::with_capacity(n.min(1 << 22));
        let mut docs_of_path = vec![Vec::new(); paths.len()];
        for id in 0..n {
            let path = get(&data, &mut at)? as u32;
            let ord = get(&data, &mut at)? as u32;
            let len = get(&data, &mut at)? as u32;
            let text_start = get(&data, &mut at)? as u32;
            let start = get(&data, &mut at)? as u32;
            let end = start.saturating_add(get(&data, &mut at)? as u32);
            let doc = Doc { path, ord, len, text_start, start, end };
            docs_of_path.get_mut(doc.path as usize).ok_or(Corrupt("doc path"))?.push(id as u32);
            docs.push(doc);
        }
        let n = get(&data, &mut at)? as usize;
        let mut heads = Vec::with_capacity(n.min(1 << 22));
        for _ in 0..n {
            let len = get(&data, &mut at)? as usize;
            let bytes = data.get(at..at + len).ok_or(Corrupt("term"))?;
            let term: Box<str> = std::str::from_utf8(bytes).map_err(|_| Corrupt("term utf-8"))?.into();
            at += len;
            let df = get(&data, &mut at)? as u32;
            let p = get(&data, &mut at)? as usize;
            let q = get(&data, &mut at)? as usize;
            heads.push((term, df, p, q));
        }
        let mut terms = Vec::with_capacity(heads.len());
        let mut p_at = at;
        let mut q_at = at + heads.iter().map(|h| h.2).sum::<usize>();
        for (term, df, p, q) in heads {
            terms.push(TermEntry { term, df, postings: p_at..p_at + p, positions: q_at..q_at + q });
            p_at += p;
            q_at += q;
        }
        if q_at > data.len() {
            return Err(Corrupt("postings past the end"));
        }
        let path_ix = paths.iter().enumerate().map(|(i, p)| (p.clone(), i as u32)).collect();
        Ok(Self { paths, path_ix, docs, docs_of_path, terms, data })
    }

    /// The segment's size in memory, roughly.
    pub fn weight(&self) -> usize {
        self.data.len()
            + self.paths.iter().map(|p| p.len() * 2 + 48).sum::<usize>()
            + self.docs.len() * 20
            + self.terms.len() * 48
    }

    pub fn path_index(&self, path: &str) -> Option<u32> {
        self.path_ix.get(path).copied()
    }

    pub fn terms(&self) -> &[TermEntry] {
        &self.terms
    }

    /// The index of `term` in the dictionary.
    pub fn find(&self, term: &str) -> Option<usize> {
        self.terms.binary_search_by(|t| (*t.term).cmp(term)).ok()
    }

    /// The dictionary's terms starting with `prefix` (a range of indexes).
    pub fn prefixed(&self, prefix: &str) -> Range<usize> {
        let start = self.terms.partition_point(|t| *t.term < *prefix);
        let end = start + self.terms[start..].partition_point(|t| t.term.starts_with(prefix));
        start..end
    }

    /// The postings of term `i`: (doc, tf), in doc order.
    pub fn postings(&self, i: usize) -> Postings<'_> {
        let t = &self.terms[i];
        Postings { data: &self.data[t.postings.clone()], at: 0, doc: 0, first: true }
    }

    /// The postings of term `i` with each posting's positions.
    pub fn postings_with_positions(&self, i: usize) -> PositionedPostings<'_> {
        let t = &self.terms[i];
        PositionedPostings { postings: self.postings(i), positions: &self.data[t.positions.clone()], at: 0 }
    }
}

/// (doc, tf) pairs of one term.
pub struct Postings<'a> {
    data: &'a [u8],
    at: usize,
    doc: u32,
    first: bool,
}

impl Iterator for Postings<'_> {
    type Item = (u32, u32);
    fn next(&mut self) -> Option<(u32, u32)> {
        if self.at >= self.data.len() {
            return None;
        }
        let delta = get(self.data, &mut self.at).ok()? as u32;
        let tf = get(self.data, &mut self.at).ok()? as u32;
        self.doc = if self.first { delta } else { self.doc + 1 + delta };
        self.first = false;
        Some((self.doc, tf))
    }
}

/// (doc, positions) pairs of one term.
pub struct PositionedPostings<'a> {
    postings: Postings<'a>,
    positions: &'a [u8],
    at: usize,
}

impl Iterator for PositionedPostings<'_> {
    type Item = (u32, Vec<u32>);
    fn next(&mut self) -> Option<(u32, Vec<u32>)> {
        let mut out = Vec::new();
        let (doc, _) = self.next_if(|_| true, &mut out)?;
        Some((doc, out))
    }
}

impl PositionedPostings<'_> {
    /// The next posting's document and whether `want` took it: then its positions are in
    /// `out` (replacing what it held); a posting not wanted has its positions skipped, never
    /// collected.
    pub fn next_if(&mut self, want: impl FnOnce(u32) -> bool, out: &mut Vec<u32>) -> Option<(u32, bool)> {
        let (doc, tf) = self.postings.next()?;
        if !want(doc) {
            for _ in 0..tf {
                get(self.positions, &mut self.at).ok()?;
            }
            return Some((doc, false));
        }
        out.clear();
        let mut p = 0u32;
        for _ in 0..tf {
            p += get(self.positions, &mut self.at).ok()? as u32;
            out.push(p);
        }
        Some((doc, true))
    }
}

/// Merges segments into one, keeping only the documents of paths `live` says are live.
/// Returns the new segment's bytes and its note count.
///
/// Documents keep their order: a part's live documents follow the previous part's, each path's
/// documents together (as a builder and a merge lay them out), so every posting list stays in
/// document order without sorting, and a part with nothing dead is copied byte for byte but
/// for the first document delta of each list.
pub fn merge(parts: &[(&Segment, &dyn Fn(u32) -> bool)]) -> (Vec<u8>, usize) {
    let mut paths: Vec<String> = Vec::new();
    let mut docs: Vec<Doc> = Vec::new();
    // Per part: old doc id -> new doc id, and the shift when every doc is kept.
    let mut remaps: Vec<Vec<Option<u32>>> = Vec::new();
    let mut shifts: Vec<Option<u32>> = Vec::new();
    for (seg, live) in parts {
        let base = docs.len() as u32;
        let mut remap = vec![None; seg.docs.len()];
        let mut linear = true;
        for (path_i, doc_ids) in seg.docs_of_path.iter().enumerate() {
            if !live(path_i as u32) {
                linear &= doc_ids.is_empty();
                continue;
            }
            let new_path = paths.len() as u32;
            paths.push(seg.paths[path_i].clone());
            for &d in doc_ids {
                linear &= d == docs.len() as u32 - base;
                remap[d as usize] = Some(docs.len() as u32);
                docs.push(Doc { path: new_path, ..seg.docs[d as usize] });
            }
        }
        shifts.push((linear && docs.len() as u32 - base == seg.docs.len() as u32).then_some(base));
        remaps.push(remap);
    }
    let mut all: Vec<(&str, usize, usize)> = Vec::new();
    for (k, (seg, _)) in parts.iter().enumerate() {
        all.extend(seg.terms.iter().enumerate().map(|(i, t)| (&*t.term, k, i)));
    }
    all.sort_unstable();
    let mut encoded: Vec<(&str, u32, Vec<u8>, Vec<u8>)> = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let term = all[i].0;
        let mut postings = Vec::new();
        let mut positions = Vec::new();
        let mut last: Option<u32> = None;
        let mut df = 0u32;
        while i < all.len() && all[i].0 == term {
            let (_, k, t) = all[i];
            i += 1;
            let seg = parts[k].0;
            let entry = &seg.terms[t];
            if let Some(base) = shifts[k] {
                // Copy: only the first delta changes; the last doc is found by walking deltas.
                let bytes = &seg.data[entry.postings.clone()];
                let mut at = 0;
                let (Ok(first), Ok(tf)) = (get(bytes, &mut at), get(bytes, &mut at)) else { continue };
                let mut doc = first as u32;
                let mut walk = at;
                while walk < bytes.len() {
                    let (Ok(delta), Ok(_)) = (get(bytes, &mut walk), get(bytes, &mut walk)) else { break };
                    doc += 1 + delta as u32;
                }
                put(&mut postings, (base + first as u32 - last.map_or(0, |d| d + 1)) as u64);
                put(&mut postings, tf);
                postings.extend_from_slice(&bytes[at..]);
                positions.extend_from_slice(&seg.data[entry.positions.clone()]);
                last = Some(base + doc);
                df += entry.df;
                continue;
            }
            for (doc, ps) in seg.postings_with_positions(t) {
                let Some(new) = remaps[k][doc as usize] else { continue };
                put(&mut postings, (new - last.map_or(0, |d| d + 1)) as u64);
                put(&mut postings, ps.len() as u64);
                let mut prev = 0;
                for p in ps {
                    put(&mut positions, (p - prev) as u64);
                    prev = p;
                }
                last = Some(new);
                df += 1;
            }
        }
        if df > 0 {
            encoded.push((term, df, postings, positions));
        }
    }
    let parts: Vec<(&str, u32, &[u8], &[u8])> =
        encoded.iter().map(|(t, df, p, q)| (*t, *df, p.as_slice(), q.as_slice())).collect();
    (encode(&paths, &docs, &parts), paths.len())
}

pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn get(data: &[u8], at: &mut usize) -> Result<u64, Corrupt> {
    let mut v: u64 = 0;
    let mut shift = 0;
    loop {
        let b = *data.get(*at).ok_or(Corrupt("truncated varint"))?;
        *at += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err(Corrupt("varint too long"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(docs: &[(&str, u32, &str)]) -> Segment {
        let mut b = SegmentBuilder::new();
        for (path, ord, text) in docs {
            let title = path.trim_end_matches(".md");
            b.add(&DocSource { path, ord: *ord, prefix: &[title], text, offset: 0 });
        }
        Segment::decode(b.finish()).unwrap()
    }

    #[test]
    fn round_trip() {
        let s = build(&[("a.md", 0, "the cat sat on the mat"), ("b.md", 0, "a dog"), ("a.md", 1, "cat again")]);
        assert_eq!(s.paths, ["a.md", "b.md"]);
        assert_eq!(s.docs.len(), 3);
        assert_eq!(s.docs_of_path[0], [0, 2]);
        let cat = s.find("cat").unwrap();
        assert_eq!(s.terms()[cat].df, 2);
        let p: Vec<_> = s.postings_with_positions(cat).collect();
        // Title "a" at 0, gap, text from 2.
        assert_eq!(p, [(0, vec![3]), (2, vec![2])]);
        let the = s.find("the").unwrap();
        assert_eq!(s.postings(the).collect::<Vec<_>>(), [(0, 2)]);
        assert_eq!(s.docs[0].text_start, 2);
        assert_eq!(s.docs[0].len, 8);
        assert_eq!(s.prefixed("ca").len(), 1);
        assert!(s.find("zebra").is_none());
    }

    #[test]
    fn merge_drops_dead_paths_and_keeps_postings() {
        let a = build(&[("a.md", 0, "alpha beta"), ("b.md", 0, "beta gamma")]);
        let b = build(&[("c.md", 0, "gamma delta beta"), ("a.md", 0, "alpha new")]);
        let dead_a = |p: u32| a.paths[p as usize] != "a.md";
        let all = |_p: u32| true;
        let (bytes, notes) = merge(&[(&a, &dead_a), (&b, &all)]);
        let m = Segment::decode(bytes).unwrap();
        assert_eq!(notes, 3);
        assert_eq!(m.paths, ["b.md", "c.md", "a.md"]);
        let beta = m.find("beta").unwrap();
        let docs: Vec<_> =
            m.postings_with_positions(beta).map(|(d, _)| m.paths[m.docs[d as usize].path as usize].clone()).collect();
        assert_eq!(docs, ["b.md", "c.md"]);
        let alpha = m.find("alpha").unwrap();
        assert_eq!(m.terms()[alpha].df, 1); // only the live a.md
        let delta: Vec<_> = m.postings_with_positions(m.find("delta").unwrap()).collect();
        assert_eq!(delta, [(1, vec![3])]);
    }

    #[test]
    fn merging_live_segments_copies_them_and_searches_the_same() {
        let a = build(&[("a.md", 0, "one two three"), ("a.md", 1, "two again"), ("b.md", 0, "three")]);
        let b = build(&[("c.md", 0, "two three four"), ("d.md", 0, "four")]);
        let all = |_p: u32| true;
        let (bytes, notes) = merge(&[(&a, &all), (&b, &all)]);
        let m = Segment::decode(bytes).unwrap();
        assert_eq!(notes, 4);
        let list = |s: &Segment, t: &str| s.postings_with_positions(s.find(t).unwrap()).collect::<Vec<_>>();
        assert_eq!(list(&m, "two"), [(0, vec![3]), (1, vec![2]), (3, vec![2])]);
        assert_eq!(list(&m, "three"), [(0, vec![4]), (2, vec![2]), (3, vec![3])]);
        assert_eq!(list(&m, "four"), [(3, vec![4]), (4, vec![2])]);
        assert_eq!(m.terms()[m.find("two").unwrap()].df, 3);
        // Merging the merge with nothing dead is the identity.
        let (again, _) = merge(&[(&m, &all)]);
        assert_eq!(again, m.data);
    }

    #[test]
    fn corrupt_input_is_an_error_not_a_panic() {
        assert!(Segment::decode(b"nope".to_vec()).is_err());
        let mut good = build(&[("a.md", 0, "x y z")]).data;
        good.truncate(good.len() - 3);
        assert!(Segment::decode(good).is_err());
    }
}
