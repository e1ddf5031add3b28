//! What the search tools share: a vault's full-text segments as one caller may search them.
//!
//! Postgres lists a vault's segments (and which paths each no longer holds) on every search, so
//! a search after a write's answer sees the write. The segments' bytes never change once
//! written, so each gateway keeps the decoded segments in memory ([`SegmentCache`], least
//! recently used out past its byte limit) and fetches only the ones it has not seen. What the
//! caller may see is a mask over each segment's paths: live there, readable under the folder
//! ACL, outside the hidden folders and Excluded files, inside the search's scope. The ACL part
//! of a mask is cached per segment and ACL, since matching globs over 100k paths is the
//! costly part.

use std::collections::HashSet;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use otc_errors::ToolError;
use otc_fts::Query;
use otc_fts::Segment;
use otc_fts::search::{Hit, Part, Ranked};
use uuid::Uuid;

use crate::reading::{Content, View};
use crate::{CallContext, internal};

type MaskKey = (Uuid, i64, u64);

/// Decoded segments by (tenant, segment id), and ACL masks over them, each bounded in bytes
/// (`caches.segments_bytes`, `caches.masks_bytes`), the least recently used evicted first.
/// A segment never changes once written, so neither goes stale; a mask outlives its segment
/// only until it is evicted in turn.
pub struct SegmentCache {
    segments: otc_cache::Bounded<(Uuid, i64), Arc<Segment>>,
    masks: otc_cache::Bounded<MaskKey, Arc<Vec<bool>>>,
}

impl SegmentCache {
    pub fn new(segment_bytes: u64, mask_bytes: u64) -> Self {
        Self {
            // A decoded segment takes about half as much again as its own estimate.
            segments: otc_cache::Bounded::new("search_segments", usize::MAX, segment_bytes, |_, seg: &Arc<Segment>| {
                seg.weight() * 3 / 2
            }),
            masks: otc_cache::Bounded::new("search_masks", usize::MAX, mask_bytes, |_, mask: &Arc<Vec<bool>>| {
                mask.len()
            }),
        }
    }

    /// What the two caches hold and have done.
    pub fn figures(&self) -> [otc_cache::Figures; 2] {
        [self.segments.figures(), self.masks.figures()]
    }

    fn get(&self, tenant: Uuid, id: i64) -> Option<Arc<Segment>> {
        self.segments.get(&(tenant, id))
    }

    fn put(&self, tenant: Uuid, id: i64, seg: Arc<Segment>) {
        self.segments.put((tenant, id), seg);
    }

    fn mask(&self, key: MaskKey, seg: &Segment, view: &View) -> Arc<Vec<bool>> {
        if let Some(mask) = self.masks.get(&key) {
            return mask;
        }
        let mask = Arc::new(seg.paths.iter().map(|p| view.can_read(p)).collect::<Vec<bool>>());
        self.masks.put(key, mask.clone());
        mask
    }
}

/// Which notes a search looks at, besides what the caller may read.
#[derive(Debug, Default, Clone)]
pub struct Scope<'a> {
    /// A folder prefix ("Projects/"), already normalised.
    pub root: Option<&'a str>,
    /// The path must contain one of these (lower-cased), when any are given.
    pub path_contains: &'a [String],
    /// The note must carry every one of these tags (or one nested under it).
    pub tags: &'a [String],
}

/// A vault's segments with the caller's masks.
pub struct Corpus {
    segments: Vec<Arc<Segment>>,
    masks: Vec<Vec<bool>>,
}

impl Corpus {
    /// The vault's segments as the caller may search them within `scope`.
    pub async fn open(ctx: &CallContext<'_>, view: &View, scope: &Scope<'_>) -> Result<Corpus, ToolError> {
        let tool = ctx.tool;
        let tenant = ctx.caller.tenant_id;
        let vault = view.vault.id;
        let services = ctx.services();
        let cache = &services.segments;
        let fail = |e: &(dyn std::error::Error + 'static)| internal(tool, e);
        let mut tx = services.store.begin(tenant).await.map_err(|e| fail(&e))?;
        let refs = tx.fts_segments(vault).await.map_err(|e| fail(&e))?;
        let excluded = tx.excluded_paths(vault).await.map_err(|e| fail(&e))?;
        let mut tagged: Option<HashSet<String>> = None;
        for tag in scope.tags {
            let paths: HashSet<String> = tx.paths_tagged(vault, tag).await.map_err(|e| fail(&e))?.into_iter().collect();
            tagged = Some(match tagged {
                None => paths,
                Some(prev) => prev.intersection(&paths).cloned().collect(),
            });
        }
        let mut segments: Vec<Option<Arc<Segment>>> = refs.iter().map(|r| cache.get(tenant, r.id)).collect();
        let missing: Vec<i64> = refs.iter().zip(&segments).filter(|(_, s)| s.is_none()).map(|(r, _)| r.id).collect();
        let fetched = if missing.is_empty() {
            Vec::new()
        } else {
            tx.fts_segment_data(vault, &missing).await.map_err(|e| fail(&e))?
        };
        tx.commit().await.map_err(|e| fail(&e))?;
        if !fetched.is_empty() {
            let decoded = tokio::task::spawn_blocking(move || {
                fetched.into_iter().map(|(id, data)| (id, Segment::decode(data))).collect::<Vec<_>>()
            })
            .await
            .map_err(|e| fail(&e))?;
            for (id, seg) in decoded {
                let seg = Arc::new(seg.map_err(|e| fail(&e))?);
                cache.put(tenant, id, seg.clone());
                if let Some(i) = refs.iter().position(|r| r.id == id) {
                    segments[i] = Some(seg);
                }
            }
        }
        let acl_key = {
            let mut h = DefaultHasher::new();
            let visible = view.visible();
            visible.hidden.hash(&mut h);
            visible.readable.hash(&mut h);
            h.finish()
        };
        let excluded: HashSet<&str> = excluded.iter().map(String::as_str).collect();
        let mut out = Corpus { segments: Vec::new(), masks: Vec::new() };
        // A segment deleted between the listing and the fetch (a merge) is skipped: the merge
        // holds its notes, and was listed too only if it was committed first, so a search
        // racing a merge can miss notes until the next call, never show one twice.
        for (r, seg) in refs.iter().zip(segments) {
            let Some(seg) = seg else { continue };
            let base = cache.mask((tenant, r.id, acl_key), &seg, view);
            let mut mask = (*base).clone();
            for p in &r.dead {
                if let Some(i) = seg.path_index(p) {
                    mask[i as usize] = false;
                }
            }
            for (i, p) in seg.paths.iter().enumerate() {
                if !mask[i] {
                    continue;
                }
                let keep = !excluded.contains(p.as_str())
                    && scope.root.is_none_or(|root| p.starts_with(root))
                    && (scope.path_contains.is_empty() || {
                        let lower = p.to_lowercase();
                        scope.path_contains.iter().any(|c| lower.contains(c.as_str()))
                    })
                    && tagged.as_ref().is_none_or(|t| t.contains(p));
                mask[i] = keep;
            }
            out.segments.push(seg);
            out.masks.push(mask);
        }
        Ok(out)
    }

    pub fn parts(&self) -> Vec<Part<'_>> {
        self.segments.iter().zip(&self.masks).map(|(seg, visible)| Part { seg, visible }).collect()
    }

    pub fn segment(&self, part: usize) -> &Segment {
        &self.segments[part]
    }

    pub fn path(&self, part: usize, path: u32) -> &str {
        &self.segments[part].paths[path as usize]
    }

    /// The text of document `doc` of `part` within its note's `text` (clamped: the note may
    /// have changed since it was indexed).
    pub fn chunk<'t>(&self, part: usize, doc: u32, text: &'t str) -> &'t str {
        let d = self.segments[part].docs[doc as usize];
        slice(text, d.start as usize, d.end as usize)
    }

    /// The notes matching a ranked query, in no order (BM25, a note scoring as its best chunk;
    /// take a page with [`otc_fts::search::top`]).
    pub fn rank(&self, query: &Query) -> Vec<Hit> {
        otc_fts::search::rank(&self.parts(), &ranked(query))
    }

    /// How each of `hits` (a page of [`Self::rank`]'s for `query`) scored.
    pub fn explain(&self, query: &Query, hits: &[Hit]) -> Vec<otc_fts::search::Explain> {
        otc_fts::search::explain(&self.parts(), &ranked(query), hits)
    }
}

fn ranked(query: &Query) -> Ranked<'_> {
    Ranked { words: &query.words, phrases: &query.phrases, excluded: &query.excluded }
}

/// These notes as stored now (None for one gone since it was indexed), read concurrently: what
/// search results quote from. The paths come from the caller's own search, so they are
/// readable to it.
pub async fn note_texts(
    ctx: &CallContext<'_>,
    vault: Uuid,
    paths: &[String],
) -> Result<Vec<Option<Content>>, ToolError> {
    use futures::{StreamExt, TryStreamExt};
    let config = &ctx.services().config;
    // A note too large to parse is quoted from its first part, which is all the index holds.
    let most = config.tools.max_parse_bytes;
    let reads: Vec<_> = paths
        .iter()
        .map(|path| async move {
            let Some(entry) = crate::reading::file_entry(ctx, vault, path).await? else { return Ok(None) };
            let blobs = &ctx.services().blobs;
            let bytes = match u64::try_from(entry.size).unwrap_or(0) > most {
                true => blobs.get_blob_range(ctx.caller.tenant_id, &entry.hash, 0..most).await?,
                false => blobs.get_blob(ctx.caller.tenant_id, &entry.hash).await?,
            };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            Ok::<_, ToolError>(Some(Content { text, content_hash: hex::encode(entry.hash), entry }))
        })
        .collect();
    // A few at a time: each may take a pooled connection for its manifest row.
    futures::stream::iter(reads).buffered(config.fair_share.connections_per_call.max(1) as usize).try_collect().await
}

/// `text[start..end]` with both ends moved down to char boundaries and clamped (the text may
/// have changed since the offsets were indexed).
pub fn slice(text: &str, start: usize, end: usize) -> &str {
    let (s, e) = (text.floor_char_boundary(start), text.floor_char_boundary(end));
    &text[s..e.max(s)]
}

/// The 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = slice(text, 0, offset);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}

/// The heading a chunk starts with (chunks start at headings), if it does.
pub fn section_of(chunk: &str) -> Option<String> {
    let first = chunk.lines().next()?.trim_start();
    let title = first.trim_start_matches('#');
    (first.starts_with('#') && title.starts_with(' ')).then(|| title.trim().trim_end_matches('#').trim().to_string())
}

/// The keyset position of a ranked hit: its score, then its path.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct RankKey {
    pub s: f32,
    pub p: String,
}

/// The notes the caller may read that may contain every one of `literals` (a superset of those
/// that do: see [`otc_fts::search::may_contain`]), sorted; None when no literal gives anything
/// to narrow by (none has a letter or digit), so every note must be scanned.
pub async fn notes_that_may_contain(
    ctx: &CallContext<'_>,
    view: &View,
    scope: &Scope<'_>,
    literals: &[String],
) -> Result<Option<Vec<String>>, ToolError> {
    if literals.is_empty() {
        return Ok(None);
    }
    let corpus = Corpus::open(ctx, view, scope).await?;
    let parts = corpus.parts();
    let mut all: Option<Vec<HashSet<u32>>> = None;
    for literal in literals {
        let Some(per_part) = otc_fts::search::may_contain(&parts, literal) else { continue };
        all = Some(match all {
            None => per_part,
            Some(prev) => prev.into_iter().zip(per_part).map(|(a, b)| a.intersection(&b).copied().collect()).collect(),
        });
    }
    let Some(all) = all else { return Ok(None) };
    let mut out: Vec<String> = all
        .into_iter()
        .enumerate()
        .flat_map(|(k, notes)| notes.into_iter().map(move |p| (k, p)))
        .map(|(k, p)| corpus.path(k, p).to_string())
        .collect();
    out.sort_unstable();
    Ok(Some(out))
}
