//! Ranked search (BM25) and text search over a vault's segments, as one caller may see them.
//!
//! The caller hands in every segment with a visibility mask over its paths: the note is live
//! there (not replaced by a later segment), readable under the caller's folder ACL, not in
//! Excluded files and inside the search's scope (root, `path:`, `tag:`). Everything here —
//! hits, totals and the BM25 statistics themselves (document count, average length, document
//! frequency) — counts visible documents only, so nothing about a hidden note shapes an answer.

use std::collections::HashMap;

use crate::segment::Segment;

/// BM25's term-frequency saturation and length normalisation (the usual values).
pub const K1: f32 = 1.2;
pub const B: f32 = 0.75;

/// One segment and which of its paths the search sees.
pub struct Part<'a> {
    pub seg: &'a Segment,
    /// Per path index of the segment.
    pub visible: &'a [bool],
}

impl Part<'_> {
    fn doc_visible(&self, doc: u32) -> bool {
        self.visible[self.seg.docs[doc as usize].path as usize]
    }
}

/// The visible collection's statistics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub docs: u64,
    pub avgdl: f32,
}

pub fn stats(parts: &[Part<'_>]) -> Stats {
    let (mut docs, mut len) = (0u64, 0u64);
    for p in parts {
        for d in &p.seg.docs {
            if p.visible[d.path as usize] {
                docs += 1;
                len += d.len as u64;
            }
        }
    }
    Stats { docs, avgdl: if docs == 0 { 0.0 } else { len as f32 / docs as f32 } }
}

pub fn idf(docs: u64, df: u64) -> f32 {
    (1.0 + (docs as f32 - df as f32 + 0.5) / (df as f32 + 0.5)).ln()
}

fn bm25(tf: f32, idf: f32, dl: f32, avgdl: f32) -> f32 {
    let norm = if avgdl > 0.0 { 1.0 - B + B * dl / avgdl } else { 1.0 };
    idf * tf * (K1 + 1.0) / (tf + K1 * norm)
}

/// A ranked query: words ranked, phrases required, exclusions left out (all folded tokens).
#[derive(Debug, Default, Clone)]
pub struct Ranked<'q> {
    pub words: &'q [String],
    pub phrases: &'q [Vec<String>],
    pub excluded: &'q [Vec<String>],
}

/// One note found: its best chunk and score.
#[derive(Debug, Clone)]
pub struct Hit {
    pub part: usize,
    /// Path index in the part's segment.
    pub path: u32,
    pub score: f32,
    /// The best-scoring document (chunk).
    pub doc: u32,
}

/// How a hit's score came about (its best chunk).
#[derive(Debug, Clone, PartialEq)]
pub struct Explain {
    pub doc_len: u32,
    pub avgdl: f32,
    pub docs: u64,
    pub terms: Vec<TermScore>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TermScore {
    pub term: String,
    pub tf: u32,
    pub df: u64,
    pub idf: f32,
    pub score: f32,
}

/// Ranks notes by BM25 over their chunks (a note scores as its best chunk). Hits come in no
/// order: [`top`] takes a page of them, and [`explain`] tells how the page's scores came about.
pub fn rank(parts: &[Part<'_>], q: &Ranked<'_>) -> Vec<Hit> {
    let st = stats(parts);
    let per_term: Vec<Vec<(usize, u32, u32)>> = q.words.iter().map(|w| visible_postings(parts, w).collect()).collect();
    // Documents that must hold every phrase (sorted, per part), and notes left out.
    let mut required: Option<Vec<Vec<u32>>> = None;
    for phrase in q.phrases {
        let found = phrase_docs(parts, &exact(phrase));
        required = Some(match required {
            None => found,
            Some(prev) => prev
                .into_iter()
                .zip(found)
                .map(|(mut a, b)| {
                    a.retain(|d| b.binary_search(d).is_ok());
                    a
                })
                .collect(),
        });
    }
    let mut out_notes: Vec<std::collections::HashSet<u32>> = vec![Default::default(); parts.len()];
    for ex in q.excluded {
        for (k, docs) in phrase_docs(parts, &exact(ex)).into_iter().enumerate() {
            out_notes[k].extend(docs.iter().map(|d| parts[k].seg.docs[*d as usize].path));
        }
    }
    // Dense per-document scores (documents touched listed apart), then each note's best chunk.
    let idfs: Vec<f32> = per_term.iter().map(|l| idf(st.docs, l.len() as u64)).collect();
    let mut scores: Vec<Vec<f32>> = parts.iter().map(|p| vec![0.0; p.seg.docs.len()]).collect();
    let mut touched: Vec<Vec<u32>> = vec![Vec::new(); parts.len()];
    for (i, list) in per_term.iter().enumerate() {
        for &(k, d, tf) in list {
            if let Some(req) = &required
                && req[k].binary_search(&d).is_err()
            {
                continue;
            }
            let doc = &parts[k].seg.docs[d as usize];
            if !out_notes[k].is_empty() && out_notes[k].contains(&doc.path) {
                continue;
            }
            let slot = &mut scores[k][d as usize];
            if *slot == 0.0 {
                touched[k].push(d);
            }
            *slot += bm25(tf as f32, idfs[i], doc.len as f32, st.avgdl);
        }
    }
    let mut hits: Vec<Hit> = Vec::new();
    for (part, docs) in touched.into_iter().enumerate() {
        let seg = parts[part].seg;
        // Best (score, doc) per path, by path index.
        let mut best: Vec<(f32, u32)> = Vec::new();
        let mut notes: Vec<u32> = Vec::new();
        for d in docs {
            let score = scores[part][d as usize];
            let path = seg.docs[d as usize].path as usize;
            if best.is_empty() {
                best = vec![(f32::NEG_INFINITY, u32::MAX); seg.paths.len()];
            }
            let e = &mut best[path];
            if e.1 == u32::MAX {
                notes.push(path as u32);
            }
            if score > e.0 || (score == e.0 && d < e.1) {
                *e = (score, d);
            }
        }
        hits.extend(notes.into_iter().map(|path| {
            let (score, doc) = best[path as usize];
            Hit { part, path, score, doc }
        }));
    }
    hits
}

/// A word's postings among the visible documents: (part, document, term frequency), part by
/// part in document order. What [`rank`] scores and [`explain`] counts again.
fn visible_postings<'a>(parts: &'a [Part<'a>], word: &'a str) -> impl Iterator<Item = (usize, u32, u32)> + 'a {
    parts.iter().enumerate().flat_map(move |(k, p)| {
        let postings = p.seg.find(word).map(|t| p.seg.postings(t));
        postings.into_iter().flatten().filter(|(d, _)| p.doc_visible(*d)).map(move |(d, tf)| (k, d, tf))
    })
}

/// How each of `hits` (a page of [`rank`]'s, for the same parts and query) scored: the same
/// statistics [`rank`] used, gathered again for these documents only, so a ranking that
/// explains nothing pays nothing for explanations.
pub fn explain(parts: &[Part<'_>], q: &Ranked<'_>, hits: &[Hit]) -> Vec<Explain> {
    let st = stats(parts);
    let wanted: HashMap<(usize, u32), usize> = hits.iter().enumerate().map(|(i, h)| ((h.part, h.doc), i)).collect();
    // Per term: its document frequency among visible docs, and its tf in each wanted doc.
    let mut df = vec![0u64; q.words.len()];
    let mut tfs: Vec<Vec<(usize, u32)>> = vec![Vec::new(); hits.len()];
    for (i, w) in q.words.iter().enumerate() {
        for (k, d, tf) in visible_postings(parts, w) {
            df[i] += 1;
            if let Some(&h) = wanted.get(&(k, d)) {
                tfs[h].push((i, tf));
            }
        }
    }
    hits.iter()
        .zip(tfs)
        .map(|(h, tfs)| {
            let doc_len = parts[h.part].seg.docs[h.doc as usize].len;
            Explain {
                doc_len,
                avgdl: st.avgdl,
                docs: st.docs,
                terms: tfs
                    .into_iter()
                    .map(|(i, tf)| {
                        let idf = idf(st.docs, df[i]);
                        TermScore {
                            term: q.words[i].clone(),
                            tf,
                            df: df[i],
                            idf,
                            score: bm25(tf as f32, idf, doc_len as f32, st.avgdl),
                        }
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The best `n` of `items` in ranked order (score, then path) that come after `after` (a
/// previous page's last score and path), without sorting the rest.
pub fn top<'p, T: 'p>(
    mut items: Vec<T>,
    score: impl Fn(&T) -> f32,
    path: impl Fn(&T) -> &'p str,
    after: Option<(f32, &str)>,
    n: usize,
) -> Vec<T> {
    if let Some((s, p)) = after {
        items.retain(|h| score(h) < s || (score(h) == s && path(h) > p));
    }
    let order = |a: &T, b: &T| score(b).total_cmp(&score(a)).then_with(|| path(a).cmp(path(b)));
    if items.len() > n && n > 0 {
        items.select_nth_unstable_by(n - 1, order);
        items.truncate(n);
    }
    if n == 0 {
        items.clear();
    }
    items.sort_by(order);
    items
}

/// How a query token meets a dictionary term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// The whole term.
    Exact,
    /// Anywhere in the term.
    Within,
    /// The term's end (the first token of a text query that may start inside a word).
    Suffix,
    /// The term's start (the last token of a text query that may end inside a word).
    Prefix,
}

fn exact(tokens: &[String]) -> Vec<(&str, Edge)> {
    tokens.iter().map(|t| (t.as_str(), Edge::Exact)).collect()
}

/// The edges of a text query's tokens: inside words unless `whole_word`.
pub fn text_edges(tokens: &[String], whole_word: bool) -> Vec<(&str, Edge)> {
    let n = tokens.len();
    tokens
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let edge = if whole_word {
                Edge::Exact
            } else if n == 1 {
                Edge::Within
            } else if i == 0 {
                Edge::Suffix
            } else if i == n - 1 {
                Edge::Prefix
            } else {
                Edge::Exact
            };
            (t.as_str(), edge)
        })
        .collect()
}

fn term_ids(seg: &Segment, token: &str, edge: Edge) -> Vec<usize> {
    match edge {
        Edge::Exact => seg.find(token).into_iter().collect(),
        Edge::Prefix => seg.prefixed(token).collect(),
        Edge::Suffix => {
            seg.terms().iter().enumerate().filter(|(_, t)| t.term.ends_with(token)).map(|(i, _)| i).collect()
        }
        Edge::Within => {
            seg.terms().iter().enumerate().filter(|(_, t)| t.term.contains(token)).map(|(i, _)| i).collect()
        }
    }
}

/// Per part: the visible documents where the tokens occur in a row, prefix fields included,
/// sorted. What a phrase's presence needs; [`text_matches`] also keeps where each run starts.
pub fn phrase_docs(parts: &[Part<'_>], tokens: &[(&str, Edge)]) -> Vec<Vec<u32>> {
    parts.iter().map(|p| part_matches(p, tokens, false).into_iter().map(|(d, _)| d).collect()).collect()
}

/// One part's visible documents where the tokens occur in a row (only in the text, after the
/// prefix fields, when `text_only`), sorted, each with the sorted positions where a run
/// starts. A lone token outside `text_only` needs no positions: its lists are left empty.
fn part_matches(part: &Part<'_>, tokens: &[(&str, Edge)], text_only: bool) -> Vec<(u32, Vec<u32>)> {
    let Some(((first, first_edge), rest)) = tokens.split_first() else { return Vec::new() };
    let positions = text_only || !rest.is_empty();
    let mut current = occurrences(part, first, *first_edge, |d| part.doc_visible(d), positions);
    if text_only {
        current.retain_mut(|(d, starts)| {
            let from = part.seg.docs[*d as usize].text_start;
            starts.retain(|p| *p >= from);
            !starts.is_empty()
        });
    }
    for (i, (token, edge)) in rest.iter().enumerate() {
        if current.is_empty() {
            break;
        }
        let offset = i as u32 + 1;
        let next = occurrences(part, token, *edge, |d| current.binary_search_by_key(&d, |c| c.0).is_ok(), true);
        // Both sorted by document: walk them together.
        let mut j = 0;
        current.retain_mut(|(d, starts)| {
            while next.get(j).is_some_and(|n| n.0 < *d) {
                j += 1;
            }
            let Some((_, at)) = next.get(j).filter(|n| n.0 == *d) else { return false };
            starts.retain(|s| at.binary_search(&(s + offset)).is_ok());
            !starts.is_empty()
        });
    }
    current
}

/// The documents `want` takes among those holding `token` (any of the terms it meets at
/// `edge`), sorted, each with its sorted positions when `positions` (else an empty list).
/// Positions of documents not wanted are skipped, never collected.
fn occurrences(
    part: &Part<'_>,
    token: &str,
    edge: Edge,
    want: impl Fn(u32) -> bool,
    positions: bool,
) -> Vec<(u32, Vec<u32>)> {
    let ids = term_ids(part.seg, token, edge);
    let mut out: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut buf = Vec::new();
    for &t in &ids {
        if positions {
            let mut list = part.seg.postings_with_positions(t);
            while let Some((d, kept)) = list.next_if(&want, &mut buf) {
                if kept {
                    out.push((d, std::mem::take(&mut buf)));
                }
            }
        } else {
            out.extend(part.seg.postings(t).filter(|(d, _)| want(*d)).map(|(d, _)| (d, Vec::new())));
        }
    }
    // One term's postings come in document order; several terms' are merged.
    if ids.len() > 1 {
        out.sort_by_key(|o| o.0);
        let mut merged: Vec<(u32, Vec<u32>)> = Vec::with_capacity(out.len());
        for (d, ps) in out {
            match merged.last_mut() {
                Some((last, at)) if *last == d => at.extend(ps),
                _ => merged.push((d, ps)),
            }
        }
        for (_, ps) in &mut merged {
            ps.sort_unstable();
            ps.dedup();
        }
        out = merged;
    }
    out
}

/// A note a text search found.
#[derive(Debug, Clone)]
pub struct TextHit {
    pub part: usize,
    pub path: u32,
    pub score: f32,
    /// Every match as (doc, start position), in the note's order.
    pub matches: Vec<(u32, u32)>,
}

/// Text search: notes whose text holds the tokens in a row (separators between them are not
/// compared), ranked by BM25 with the match count as the term frequency over the note's text
/// length. In no order: [`top`] takes a page of them.
pub fn text_matches(parts: &[Part<'_>], tokens: &[(&str, Edge)]) -> Vec<TextHit> {
    // Note count and total text length over visible notes; a hit's own length is summed below.
    let mut notes = 0u64;
    let mut total_len = 0u64;
    for p in parts {
        notes += p.visible.iter().filter(|v| **v).count() as u64;
        total_len += p
            .seg
            .docs
            .iter()
            .filter(|d| p.visible[d.path as usize])
            .map(|d| (d.len - d.text_start) as u64)
            .sum::<u64>();
    }
    let text_len = |part: usize, path: u32| -> u32 {
        let seg = parts[part].seg;
        seg.docs_of_path[path as usize]
            .iter()
            .map(|&d| seg.docs[d as usize].len - seg.docs[d as usize].text_start)
            .sum()
    };
    let avg = if notes == 0 { 0.0 } else { total_len as f32 / notes as f32 };
    let mut hits: Vec<TextHit> = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        let mut by_note: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
        for (d, starts) in part_matches(p, tokens, true) {
            let doc = &p.seg.docs[d as usize];
            by_note.entry(doc.path).or_default().extend(starts.into_iter().map(|s| (d, s)));
        }
        for (path, mut matches) in by_note {
            matches.sort_unstable_by_key(|&(d, s)| (p.seg.docs[d as usize].ord, s));
            hits.push(TextHit { part: k, path, score: 0.0, matches });
        }
    }
    let w = idf(notes, hits.len() as u64);
    for h in &mut hits {
        let dl = text_len(h.part, h.path) as f32;
        h.score = bm25(h.matches.len() as f32, w, dl, avg);
    }
    hits
}

/// Per part: the visible notes (path indexes) whose text may contain `literal`, for narrowing
/// a scan: every note holding the literal is in it (a note holds each of its tokens, the first
/// possibly ending a word, the last possibly starting one), and so is every note holding a word
/// longer than the index keeps of it. None when the literal has no token to narrow by.
pub fn may_contain(parts: &[Part<'_>], literal: &str) -> Option<Vec<std::collections::HashSet<u32>>> {
    let tokens = crate::tokenize::terms(literal);
    if tokens.is_empty() {
        return None;
    }
    let edges = text_edges(&tokens, false);
    Some(
        parts
            .iter()
            .map(|p| {
                let mut notes: Option<std::collections::HashSet<u32>> = None;
                for (token, edge) in &edges {
                    let mut with: std::collections::HashSet<u32> = std::collections::HashSet::new();
                    for t in term_ids(p.seg, token, *edge) {
                        with.extend(
                            p.seg
                                .postings(t)
                                .filter(|(d, _)| p.doc_visible(*d))
                                .map(|(d, _)| p.seg.docs[d as usize].path),
                        );
                    }
                    notes = Some(match notes {
                        None => with,
                        Some(prev) => prev.intersection(&with).copied().collect(),
                    });
                }
                let mut notes = notes.unwrap_or_default();
                for (i, t) in p.seg.terms().iter().enumerate() {
                    if t.term.len() >= crate::tokenize::MAX_TOKEN_BYTES - 3 {
                        notes.extend(
                            p.seg
                                .postings(i)
                                .filter(|(d, _)| p.doc_visible(*d))
                                .map(|(d, _)| p.seg.docs[d as usize].path),
                        );
                    }
                }
                notes
            })
            .collect(),
    )
}

/// The byte ranges of the tokens of `text`, in the order positions count them.
pub fn token_spans(text: &str) -> Vec<(usize, usize)> {
    crate::tokenize::tokens(text).into_iter().map(|t| (t.start, t.end)).collect()
}

/// A snippet of `text` around the densest run of `words`, at most about `width` bytes, with
/// each matching token wrapped in `**`. Cut on char boundaries, `…` marking cuts.
pub fn snippet(text: &str, words: &[String], width: usize) -> String {
    let tokens = crate::tokenize::tokens(text);
    let hits: Vec<(usize, usize)> =
        tokens.iter().filter(|t| words.contains(&t.text)).map(|t| (t.start, t.end)).collect();
    let (from, to) = match hits.first() {
        None => (0, text.floor_char_boundary(width)),
        Some(_) => {
            // The window starting at a hit that covers the most hits.
            let mut best = (0usize, 0usize);
            for (i, h) in hits.iter().enumerate() {
                let n = hits[i..].iter().take_while(|x| x.1 <= h.0 + width).count();
                if n > best.1 {
                    best = (i, n);
                }
            }
            let start = hits[best.0].0;
            let lead = width / 4;
            let from = text.floor_char_boundary(start.saturating_sub(lead));
            // Start at a word boundary when the cut is inside one.
            let from = text[from..start]
                .char_indices()
                .find(|(_, c)| c.is_whitespace())
                .map_or(from, |(i, c)| from + i + c.len_utf8())
                .min(start);
            (from, text.floor_char_boundary(from + width))
        }
    };
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    let mut at = from;
    for &(s, e) in hits.iter().filter(|(s, e)| *s >= from && *e <= to) {
        out.push_str(&text[at..s]);
        out.push_str("**");
        out.push_str(&text[s..e]);
        out.push_str("**");
        at = e;
    }
    out.push_str(&text[at..to]);
    if to < text.len() {
        out.push('…');
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::{DocSource, SegmentBuilder};

    fn seg(docs: &[(&str, u32, &str)]) -> Segment {
        let mut b = SegmentBuilder::new();
        for (path, ord, text) in docs {
            let title = path.trim_end_matches(".md");
            b.add(&DocSource { path, ord: *ord, prefix: &[title], text, offset: 0 });
        }
        Segment::decode(b.finish()).unwrap()
    }

    fn paths(parts: &[Part<'_>], hits: &[Hit]) -> Vec<String> {
        hits.iter().map(|h| parts[h.part].seg.paths[h.path as usize].clone()).collect()
    }

    fn ranked(parts: &[Part<'_>], hits: Vec<Hit>) -> Vec<Hit> {
        top(hits, |h| h.score, |h| parts[h.part].seg.paths[h.path as usize].as_str(), None, usize::MAX)
    }

    #[test]
    fn bm25_prefers_rarer_terms_and_shorter_docs() {
        let s = seg(&[
            ("a.md", 0, "apple apple banana"),
            ("b.md", 0, "apple banana banana cherry cherry cherry cherry cherry"),
            ("c.md", 0, "durian"),
        ]);
        let vis = vec![true; s.paths.len()];
        let parts = [Part { seg: &s, visible: &vis }];
        let words = ["apple".to_string()];
        let q = Ranked { words: &words, ..Default::default() };
        let hits = ranked(&parts, rank(&parts, &q));
        assert_eq!(paths(&parts, &hits), ["a.md", "b.md"]);
        let explained = explain(&parts, &q, &hits);
        let e = &explained[0];
        assert_eq!(e.terms[0].tf, 2);
        assert_eq!(e.terms[0].df, 2);
        assert_eq!(e.docs, 3);
        assert!((hits[0].score - e.terms[0].score).abs() < 1e-6);
        // Two words: each hit's explanation adds up to its score, naming only the words it has.
        let words = ["apple".to_string(), "cherry".to_string()];
        let q = Ranked { words: &words, ..Default::default() };
        let hits = ranked(&parts, rank(&parts, &q));
        assert_eq!(paths(&parts, &hits), ["b.md", "a.md"]);
        for (h, e) in hits.iter().zip(explain(&parts, &q, &hits)) {
            assert!((h.score - e.terms.iter().map(|t| t.score).sum::<f32>()).abs() < 1e-5);
        }
        let e = explain(&parts, &q, &hits[1..]);
        assert_eq!(e[0].terms.iter().map(|t| (t.term.as_str(), t.tf)).collect::<Vec<_>>(), [("apple", 2)]);
    }

    #[test]
    fn phrases_exclusions_and_visibility() {
        let s = seg(&[
            ("a.md", 0, "the project plan is here"),
            ("b.md", 0, "plan the project"),
            ("c.md", 0, "project plan draft"),
            ("secret.md", 0, "project plan"),
        ]);
        let mut vis = vec![true; s.paths.len()];
        vis[s.path_index("secret.md").unwrap() as usize] = false;
        let parts = [Part { seg: &s, visible: &vis }];
        let words = ["project".to_string(), "plan".to_string()];
        let phrase = [vec!["project".to_string(), "plan".to_string()]];
        let hits = ranked(&parts, rank(&parts, &Ranked { words: &words, phrases: &phrase, excluded: &[] }));
        assert_eq!(paths(&parts, &hits), ["c.md", "a.md"]);
        let excluded = [vec!["draft".to_string()]];
        let hits = ranked(&parts, rank(&parts, &Ranked { words: &words, phrases: &phrase, excluded: &excluded }));
        assert_eq!(paths(&parts, &hits), ["a.md"]);
        // The hidden note does not even count in the statistics.
        assert_eq!(stats(&parts).docs, 3);
    }

    #[test]
    fn text_matches_inside_words_and_across_separators() {
        let s = seg(&[
            ("a.md", 0, "Meeting notes: the meetings went well"),
            ("b.md", 0, "we meet at noon"),
            ("meet.md", 0, "nothing here"),
        ]);
        let vis = vec![true; s.paths.len()];
        let parts = [Part { seg: &s, visible: &vis }];
        let tokens = ["meet".to_string()];
        let hits = text_matches(&parts, &text_edges(&tokens, false));
        // The title of meet.md is not its text.
        let found: Vec<_> = hits.iter().map(|h| (s.paths[h.path as usize].as_str(), h.matches.len())).collect();
        assert_eq!(found.len(), 2);
        assert!(found.contains(&("a.md", 2)) && found.contains(&("b.md", 1)));
        let hits = text_matches(&parts, &text_edges(&tokens, true));
        assert_eq!(hits.len(), 1);
        // "ting no" spans a separator: suffix of one word, prefix of the next.
        let tokens = ["ting".to_string(), "no".to_string()];
        let hits = text_matches(&parts, &text_edges(&tokens, false));
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].matches, [(0, 2)]);
    }

    #[test]
    fn top_pages_through_ranked_order() {
        let items = vec![(1.0f32, "b"), (3.0, "a"), (1.0, "a"), (2.0, "z"), (3.0, "c")];
        let page = |after, n| top(items.clone(), |x| x.0, |x| x.1, after, n);
        assert_eq!(page(None, 2), [(3.0, "a"), (3.0, "c")]);
        assert_eq!(page(Some((3.0, "c")), 2), [(2.0, "z"), (1.0, "a")]);
        assert_eq!(page(Some((1.0, "a")), 9), [(1.0, "b")]);
        assert_eq!(page(None, 99).len(), 5);
    }

    #[test]
    fn may_contain_is_a_superset_of_the_notes_holding_a_literal() {
        let long = "x".repeat(100);
        let s = seg(&[
            ("a.md", 0, "the quick brown fox"),
            ("b.md", 0, "quick"),
            ("b.md", 1, "brownish dog"),
            ("c.md", 0, "slow"),
            ("d.md", 0, &long),
        ]);
        let vis = vec![true; s.paths.len()];
        let parts = [Part { seg: &s, visible: &vis }];
        let found = |lit: &str| {
            let mut v: Vec<&str> =
                may_contain(&parts, lit).unwrap()[0].iter().map(|&p| s.paths[p as usize].as_str()).collect();
            v.sort();
            v
        };
        // Across a chunk boundary too (b.md): tokens are checked per note, not as a phrase.
        assert_eq!(found("ick brow"), ["a.md", "b.md", "d.md"]);
        assert_eq!(found("slow"), ["c.md", "d.md"]);
        assert!(may_contain(&parts, "!!").is_none());
    }

    #[test]
    fn snippets_highlight_the_densest_window() {
        let text = format!("{} the cat sat with another cat {}", "filler ".repeat(50), "tail ".repeat(50));
        let s = snippet(&text, &["cat".to_string()], 80);
        assert!(s.contains("**cat** sat with another **cat**"), "{s}");
        assert!(s.starts_with('…') && s.ends_with('…'));
        assert!(s.len() < 120);
        assert_eq!(snippet("short", &["x".to_string()], 80), "short");
        // A cut inside a word moves past the next whitespace, which may be wider than a byte
        // (U+00A0 is two).
        let text = format!("{}ab\u{a0}cd {}", "x".repeat(56), "cat");
        assert!(snippet(&text, &["cat".to_string()], 16).contains("**cat**"));
    }
}
