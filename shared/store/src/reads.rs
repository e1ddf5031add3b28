//! The read side of the index, for the read tools. Visibility is passed in as `readable`: the
//! anchored regular expressions of the caller's read ACL (`None`: unrestricted). The always
//! hidden folders (`.obsidian/`, `.trash/`, `.git/`) are excluded here too, so a path the
//! caller may not read never reaches a result, a count or a cursor.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::files::Hash;
use crate::index::{LinkRecord, LinkRow, link};
use crate::{Result, TenantTx};

/// What the index knows of one note.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteMeta {
    pub path: String,
    pub title: String,
    pub aliases: Vec<String>,
    pub frontmatter: Option<Value>,
    pub frontmatter_error: Option<String>,
    pub tags: Vec<String>,
    pub headings: Value,
    pub blocks: Value,
    /// The 0-based line where the body starts.
    pub body_line: i32,
    pub size: i64,
    pub mtime: DateTime<Utc>,
    pub content_hash: Hash,
}

/// A file of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub path: String,
    pub kind: String,
    pub size: i64,
    pub mtime: DateTime<Utc>,
}

/// What a content scan (search_regex, search_jsonlogic) narrows its candidates by in SQL,
/// before it reads any note. Every filter only leaves out notes that could not match: the
/// scanner still matches each candidate itself.
#[derive(Debug, Clone, Default)]
pub struct ScanFilter {
    /// The path prefix every candidate starts with (a root folder as "Folder/", the literal
    /// head of a path glob); "" for the whole vault.
    pub prefix: String,
    /// Only these paths (from a full-text index that knows which notes can match).
    pub paths: Option<Vec<String>>,
    /// Tags every candidate carries (compared lower-cased, so a case variant is kept).
    pub tags: Vec<String>,
    /// Top-level frontmatter properties every candidate has: (key, JSON value). A value of
    /// another JSON type, or an array or object, is kept (loose equality may still hold).
    pub properties: Vec<(String, Value)>,
    /// Read each candidate's frontmatter and tags from the index.
    pub with_meta: bool,
    /// Read when each candidate's path last came into being (its newest create record).
    pub with_created: bool,
}

/// A note a scan may visit: its manifest row, and what [`ScanFilter`] asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanCandidate {
    pub path: String,
    pub hash: Hash,
    pub size: i64,
    pub mtime: DateTime<Utc>,
    pub frontmatter: Option<Value>,
    pub tags: Vec<String>,
    /// When the path was last created (a move creates it anew), when asked for.
    pub created: Option<DateTime<Utc>>,
}

impl TenantTx {
    /// The note's index row, if the note exists and is readable.
    pub async fn note_meta(
        &mut self,
        vault: Uuid,
        path: &str,
        readable: Option<&[String]>,
    ) -> Result<Option<NoteMeta>> {
        let row = sqlx::query!(
            r#"SELECT path, title, aliases, frontmatter, frontmatter_error, tags, headings, blocks, body_line, size, mtime,
                      content_hash
                 FROM notes WHERE tenant_id = $1 AND vault_id = $2 AND path = $3
                  AND path !~ '(^|/)\.' AND ($4::text[] IS NULL OR path ~ ANY($4))"#,
            self.tenant,
            vault,
            path,
            readable
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(row.map(|r| NoteMeta {
            path: r.path,
            title: r.title,
            aliases: r.aliases,
            frontmatter: r.frontmatter,
            frontmatter_error: r.frontmatter_error,
            tags: r.tags,
            headings: r.headings,
            blocks: r.blocks,
            body_line: r.body_line,
            size: r.size,
            mtime: r.mtime,
            content_hash: crate::files::to_hash(&r.content_hash),
        }))
    }

    /// Tags of a note in file order: (tag, source).
    pub async fn note_tag_list(&mut self, vault: Uuid, path: &str) -> Result<Vec<(String, String)>> {
        let rows = sqlx::query!(
            "SELECT tag, source FROM note_tags WHERE tenant_id = $1 AND vault_id = $2 AND path = $3 ORDER BY ord",
            self.tenant,
            vault,
            path
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (r.tag, r.source)).collect())
    }

    /// A note's links in file order.
    pub async fn outgoing_links(&mut self, vault: Uuid, path: &str) -> Result<Vec<LinkRecord>> {
        let rows = sqlx::query_as!(
            LinkRow,
            r#"SELECT ord, source_path, kind, wiki, raw, target, name_key, resolved_path, subpath_kind, subpath, alias,
                      property, start_offset, end_offset, line, col
                 FROM links WHERE tenant_id = $1 AND vault_id = $2 AND source_path = $3 ORDER BY ord"#,
            self.tenant,
            vault,
            path
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| link(r).2).collect())
    }

    /// Links from readable notes (other than `target` itself) that resolve to `target`, in
    /// (source, position) order after `after`, at most `limit`. Under a restricted view a link
    /// resolves among the readable files, as if the hidden ones were absent: a link Obsidian
    /// sends to a hidden note counts here when, without it, it would reach `target`.
    pub async fn backlinks(
        &mut self,
        vault: Uuid,
        target: &str,
        readable: Option<&[String]>,
        after: Option<(&str, i32)>,
        limit: i64,
    ) -> Result<Vec<(i32, String, LinkRecord)>> {
        if limit <= 0 {
            return Ok(Vec::new());
        }
        let keys = otc_vault::links::affected_link_keys(target);
        let mut kept = Vec::new();
        let mut cursor = after.map(|(p, o)| (p.to_string(), o));
        loop {
            let (after_path, after_ord) = cursor.clone().map_or((None, 0), |(p, o)| (Some(p), o));
            let rows = sqlx::query_as!(
                LinkRow,
                r#"SELECT ord, source_path, kind, wiki, raw, target, name_key, resolved_path, subpath_kind, subpath,
                          alias, property, start_offset, end_offset, line, col
                     FROM links WHERE tenant_id = $1 AND vault_id = $2 AND source_path <> $3
                      AND source_path !~ '(^|/)\.' AND ($4::text[] IS NULL OR source_path ~ ANY($4))
                      AND (resolved_path = $3
                           OR (name_key = ANY($8) AND resolved_path IS NOT NULL
                               AND (resolved_path ~ '(^|/)\.'
                                    OR ($4::text[] IS NOT NULL AND NOT resolved_path ~ ANY($4)))))
                      AND ($5::text IS NULL OR (source_path, ord) > ($5::text COLLATE "C", $6))
                    ORDER BY source_path, ord LIMIT $7"#,
                self.tenant,
                vault,
                target,
                readable,
                after_path,
                after_ord,
                limit,
                &keys
            )
            .fetch_all(&mut *self.tx)
            .await?;
            let exhausted = (rows.len() as i64) < limit;
            let mut rows: Vec<_> = rows.into_iter().map(link).collect();
            cursor = rows.last().map(|(ord, source, _)| (source.clone(), *ord));
            self.resolve_hidden(vault, readable, &mut rows, |l| l.resolved_path.as_deref() != Some(target)).await?;
            kept.extend(rows.into_iter().filter(|(_, _, l)| l.resolved_path.as_deref() == Some(target)));
            if exhausted || kept.len() as i64 >= limit {
                kept.truncate(limit as usize);
                return Ok(kept);
            }
        }
    }

    /// Links from readable notes (under `folder`, a path prefix) whose target does not
    /// resolve among the files the caller can read (a note they cannot read is no target, as
    /// if it were absent): in (source, position) order after `after`, at most `limit`.
    pub async fn unresolved_links(
        &mut self,
        vault: Uuid,
        folder: &str,
        readable: Option<&[String]>,
        after: Option<(&str, i32)>,
        limit: i64,
    ) -> Result<Vec<(i32, String, LinkRecord)>> {
        if limit <= 0 {
            return Ok(Vec::new());
        }
        let mut kept = Vec::new();
        let mut cursor = after.map(|(p, o)| (p.to_string(), o));
        loop {
            let (after_path, after_ord) = cursor.clone().map_or((None, 0), |(p, o)| (Some(p), o));
            let rows = sqlx::query_as!(
                LinkRow,
                r#"SELECT ord, source_path, kind, wiki, raw, target, name_key, resolved_path, subpath_kind, subpath,
                          alias, property, start_offset, end_offset, line, col
                     FROM links WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(source_path, $3)
                      AND source_path !~ '(^|/)\.' AND ($4::text[] IS NULL OR source_path ~ ANY($4))
                      AND (resolved_path IS NULL OR resolved_path ~ '(^|/)\.'
                           OR ($4::text[] IS NOT NULL AND NOT resolved_path ~ ANY($4)))
                      AND ($5::text IS NULL OR (source_path, ord) > ($5::text COLLATE "C", $6))
                    ORDER BY source_path, ord LIMIT $7"#,
                self.tenant,
                vault,
                folder,
                readable,
                after_path,
                after_ord,
                limit
            )
            .fetch_all(&mut *self.tx)
            .await?;
            let exhausted = (rows.len() as i64) < limit;
            let mut rows: Vec<_> = rows.into_iter().map(link).collect();
            cursor = rows.last().map(|(ord, source, _)| (source.clone(), *ord));
            // Those Obsidian sends to a hidden note may still reach a readable one.
            self.resolve_hidden(vault, readable, &mut rows, |l| l.resolved_path.is_some()).await?;
            kept.extend(rows.into_iter().filter(|(_, _, l)| l.resolved_path.is_none()));
            if exhausted || kept.len() as i64 >= limit {
                kept.truncate(limit as usize);
                return Ok(kept);
            }
        }
    }

    /// Resolves again, among the files the caller can read, the links `hidden` picks (those
    /// whose stored resolution the caller cannot see): each gets that resolution, or none.
    async fn resolve_hidden(
        &mut self,
        vault: Uuid,
        readable: Option<&[String]>,
        rows: &mut [(i32, String, LinkRecord)],
        hidden: impl Fn(&LinkRecord) -> bool,
    ) -> Result<()> {
        let picked: Vec<usize> = (0..rows.len()).filter(|&i| hidden(&rows[i].2)).collect();
        let asked: Vec<(&str, &str)> =
            picked.iter().map(|&i| (rows[i].2.target.as_str(), rows[i].1.as_str())).collect();
        let resolved = self.resolve_among_readable(vault, readable, &asked).await?;
        for (i, to) in picked.into_iter().zip(resolved) {
            rows[i].2.resolved_path = to;
        }
        Ok(())
    }

    /// Where each (target, source) link resolves among the files the caller can read, as if
    /// the others were absent (Obsidian's rule over fewer files).
    pub async fn resolve_among_readable(
        &mut self,
        vault: Uuid,
        readable: Option<&[String]>,
        links: &[(&str, &str)],
    ) -> Result<Vec<Option<String>>> {
        if links.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = links
            .iter()
            .flat_map(|(target, _)| otc_vault::links::lookup_keys(target))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let files = sqlx::query_scalar!(
            r#"SELECT path FROM index_files WHERE tenant_id = $1 AND vault_id = $2 AND name_key = ANY($3)
                  AND path !~ '(^|/)\.' AND ($4::text[] IS NULL OR path ~ ANY($4))"#,
            self.tenant,
            vault,
            &keys,
            readable
        )
        .fetch_all(&mut *self.tx)
        .await?;
        let resolver = otc_vault::links::Resolver::new(files);
        Ok(links.iter().map(|(target, source)| resolver.resolve(target, source).map(str::to_string)).collect())
    }

    /// Readable notes under `folder` that no other readable note links to (body, embed or
    /// property link alike), in path order after `after`, at most `limit`. With
    /// `require_no_outgoing`, only those that link nowhere themselves. Walks the notes in
    /// index order a chunk at a time and checks each chunk's inbound links by index, so a page
    /// costs the same whatever the planner knows about the tables. The notes at `skip` (a
    /// wiki's generated pages) are neither orphans nor sources of inbound links.
    #[allow(clippy::too_many_arguments)]
    pub async fn orphans(
        &mut self,
        vault: Uuid,
        folder: &str,
        readable: Option<&[String]>,
        require_no_outgoing: bool,
        skip: &[String],
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<String>> {
        const CHUNK: i64 = 500;
        let mut found = Vec::new();
        let mut cursor = after.map(str::to_string);
        loop {
            let candidates = sqlx::query_scalar!(
                r#"SELECT path FROM notes
                    WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(path, $3)
                      AND path !~ '(^|/)\.' AND ($4::text[] IS NULL OR path ~ ANY($4))
                      AND path > COALESCE($5, '') AND NOT path = ANY($7)
                    ORDER BY path LIMIT $6"#,
                self.tenant,
                vault,
                folder,
                readable,
                cursor.as_deref(),
                CHUNK,
                skip
            )
            .fetch_all(&mut *self.tx)
            .await?;
            let Some(last) = candidates.last().cloned() else { return Ok(found) };
            let linked: std::collections::HashSet<String> = sqlx::query_scalar!(
                r#"SELECT DISTINCT resolved_path AS "path!" FROM links
                    WHERE tenant_id = $1 AND vault_id = $2 AND resolved_path = ANY($3) AND source_path <> resolved_path
                      AND source_path !~ '(^|/)\.' AND ($4::text[] IS NULL OR source_path ~ ANY($4))
                      AND NOT source_path = ANY($5)"#,
                self.tenant,
                vault,
                &candidates,
                readable,
                skip
            )
            .fetch_all(&mut *self.tx)
            .await?
            .into_iter()
            .collect();
            // Links Obsidian sends to a note the caller cannot read may reach one of these instead.
            let mut linked = linked;
            let keys: Vec<String> = candidates
                .iter()
                .filter(|p| !linked.contains(*p))
                .flat_map(|p| otc_vault::links::affected_link_keys(p))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let shadowed = sqlx::query!(
                r#"SELECT source_path, target FROM links
                    WHERE tenant_id = $1 AND vault_id = $2 AND name_key = ANY($3) AND resolved_path IS NOT NULL
                      AND (resolved_path ~ '(^|/)\.' OR ($4::text[] IS NOT NULL AND NOT resolved_path ~ ANY($4)))
                      AND source_path !~ '(^|/)\.' AND ($4::text[] IS NULL OR source_path ~ ANY($4))
                      AND NOT source_path = ANY($5)"#,
                self.tenant,
                vault,
                &keys,
                readable,
                skip
            )
            .fetch_all(&mut *self.tx)
            .await?;
            let asked: Vec<(&str, &str)> =
                shadowed.iter().map(|l| (l.target.as_str(), l.source_path.as_str())).collect();
            let resolved = self.resolve_among_readable(vault, readable, &asked).await?;
            for ((_, source), to) in asked.iter().zip(resolved) {
                if let Some(to) = to.filter(|to| to != source) {
                    linked.insert(to);
                }
            }
            let linking: std::collections::HashSet<String> = if require_no_outgoing {
                sqlx::query_scalar!(
                    r#"SELECT DISTINCT source_path FROM links
                        WHERE tenant_id = $1 AND vault_id = $2 AND source_path = ANY($3) AND target <> ''"#,
                    self.tenant,
                    vault,
                    &candidates
                )
                .fetch_all(&mut *self.tx)
                .await?
                .into_iter()
                .collect()
            } else {
                Default::default()
            };
            let exhausted = (candidates.len() as i64) < CHUNK;
            for path in candidates {
                if !linked.contains(&path) && !linking.contains(&path) {
                    found.push(path);
                    if found.len() as i64 >= limit {
                        return Ok(found);
                    }
                }
            }
            if exhausted {
                return Ok(found);
            }
            cursor = Some(last);
        }
    }

    /// Where each note's body starts (0-based line), for the notes given.
    pub async fn body_lines(
        &mut self,
        vault: Uuid,
        paths: &[String],
    ) -> Result<std::collections::HashMap<String, i32>> {
        let rows = sqlx::query!(
            "SELECT path, body_line FROM notes WHERE tenant_id = $1 AND vault_id = $2 AND path = ANY($3)",
            self.tenant,
            vault,
            paths
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (r.path, r.body_line)).collect())
    }

    /// Readable notes under `folder` whose frontmatter does not parse: (path, error), at most
    /// `limit`, in path order.
    pub async fn frontmatter_failures(
        &mut self,
        vault: Uuid,
        folder: &str,
        readable: Option<&[String]>,
        limit: i64,
    ) -> Result<Vec<(String, String)>> {
        let rows = sqlx::query!(
            r#"SELECT path, frontmatter_error AS "error!" FROM notes
                WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(path, $3) AND frontmatter_error IS NOT NULL
                  AND path !~ '(^|/)\.' AND ($4::text[] IS NULL OR path ~ ANY($4))
                ORDER BY path LIMIT $5"#,
            self.tenant,
            vault,
            folder,
            readable,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (r.path, r.error)).collect())
    }

    /// Readable notes in the whole vault. Unrestricted, it counts by index ranges (every note,
    /// less those in the always-hidden folders) instead of testing each path.
    pub async fn note_count(&mut self, vault: Uuid, readable: Option<&[String]>) -> Result<i64> {
        if readable.is_some() {
            return self.notes_in_scope(vault, "", readable, i64::MAX).await;
        }
        Ok(sqlx::query_scalar!(
            r#"SELECT (SELECT count(*) FROM notes WHERE tenant_id = $1 AND vault_id = $2)
                    - (SELECT count(*) FROM notes WHERE tenant_id = $1 AND vault_id = $2
                          AND ((path >= '.obsidian/' AND path < '.obsidian0') OR (path >= '.trash/' AND path < '.trash0')
                               OR (path >= '.git/' AND path < '.git0'))) AS "n!""#,
            self.tenant,
            vault
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// How many readable notes under `folder` a scan of at most `max_notes` covers.
    pub async fn notes_in_scope(
        &mut self,
        vault: Uuid,
        folder: &str,
        readable: Option<&[String]>,
        max_notes: i64,
    ) -> Result<i64> {
        Ok(sqlx::query_scalar!(
            r#"SELECT count(*) AS "n!" FROM (SELECT path FROM notes
                WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(path, $3)
                  AND path !~ '(^|/)\.' AND ($4::text[] IS NULL OR path ~ ANY($4))
                ORDER BY path LIMIT $5) s"#,
            self.tenant,
            vault,
            folder,
            readable,
            max_notes
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// Tags over the first `max_notes` readable notes under `folder` (path order): (tag as
    /// first spelled, notes carrying it), most used first.
    pub async fn tag_counts(
        &mut self,
        vault: Uuid,
        folder: &str,
        readable: Option<&[String]>,
        max_notes: i64,
    ) -> Result<Vec<(String, i64)>> {
        let rows = sqlx::query!(
            r#"WITH scope AS (
                   SELECT path FROM notes
                    WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(path, $3)
                      AND path !~ '(^|/)\.' AND ($4::text[] IS NULL OR path ~ ANY($4))
                    ORDER BY path LIMIT $5)
               SELECT (array_agg(t.tag ORDER BY t.path, t.ord))[1] AS "tag!", count(DISTINCT t.path) AS "notes!"
                 FROM note_tags t JOIN scope s ON s.path = t.path
                WHERE t.tenant_id = $1 AND t.vault_id = $2
                GROUP BY t.tag_key ORDER BY count(DISTINCT t.path) DESC, t.tag_key"#,
            self.tenant,
            vault,
            folder,
            readable,
            max_notes
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (r.tag, r.notes)).collect())
    }

    /// Readable notes under `folder` carrying `tag` or a tag nested under it (case-insensitive),
    /// in path order after `after`, at most `limit`: (path, the matching tags as spelled).
    pub async fn notes_with_tag(
        &mut self,
        vault: Uuid,
        tag: &str,
        folder: &str,
        readable: Option<&[String]>,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<(String, Vec<String>)>> {
        let key = tag.trim_start_matches('#').to_lowercase();
        // The range (every key starting with the tag and a byte below '0', '/' among them) lets
        // note_tags_key serve it; the condition after it is the exact one.
        let rows = sqlx::query!(
            r#"SELECT path AS "path!", array_agg(DISTINCT tag) AS "tags!" FROM note_tags
                WHERE tenant_id = $1 AND vault_id = $2 AND tag_key >= $3 AND tag_key < $3 || '0' AND (tag_key = $3 OR starts_with(tag_key, $3 || '/'))
                  AND starts_with(path, $4)
                  AND path !~ '(^|/)\.' AND ($5::text[] IS NULL OR path ~ ANY($5))
                  AND ($6::text IS NULL OR path > $6)
                GROUP BY path ORDER BY path LIMIT $7"#,
            self.tenant,
            vault,
            key,
            folder,
            readable,
            after,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (r.path, r.tags)).collect())
    }

    /// Top-level properties over the first `max_notes` readable notes under `folder`: (key,
    /// notes having it, the JSON types its values take), most used first.
    pub async fn property_counts(
        &mut self,
        vault: Uuid,
        folder: &str,
        readable: Option<&[String]>,
        max_notes: i64,
    ) -> Result<Vec<(String, i64, Vec<String>)>> {
        let rows = sqlx::query!(
            r#"WITH scope AS (
                   SELECT path FROM notes
                    WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(path, $3)
                      AND path !~ '(^|/)\.' AND ($4::text[] IS NULL OR path ~ ANY($4))
                    ORDER BY path LIMIT $5)
               SELECT p.key AS "key!", count(*) AS "notes!", array_agg(DISTINCT jsonb_typeof(p.value)) AS "types!"
                 FROM note_properties p JOIN scope s ON s.path = p.path
                WHERE p.tenant_id = $1 AND p.vault_id = $2
                GROUP BY p.key ORDER BY count(*) DESC, p.key"#,
            self.tenant,
            vault,
            folder,
            readable,
            max_notes
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (r.key, r.notes, r.types)).collect())
    }

    /// Readable notes under `folder` whose frontmatter has a value at `key_path` (a path of
    /// keys into nested mappings), equal to `value` or, for a list, holding it, when `value` is
    /// given: (path, the value), in path order after `after`, at most `limit`.
    #[allow(clippy::too_many_arguments)]
    pub async fn notes_with_property(
        &mut self,
        vault: Uuid,
        key_path: &[String],
        value: Option<&Value>,
        folder: &str,
        readable: Option<&[String]>,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<(String, Value)>> {
        let rows = sqlx::query!(
            r#"SELECT path, frontmatter #> $3 AS "value!" FROM notes
                WHERE tenant_id = $1 AND vault_id = $2 AND frontmatter #> $3 IS NOT NULL
                  AND ($4::jsonb IS NULL OR frontmatter #> $3 = $4
                       OR (jsonb_typeof(frontmatter #> $3) = 'array' AND frontmatter #> $3 @> jsonb_build_array($4)))
                  AND starts_with(path, $5)
                  AND path !~ '(^|/)\.' AND ($6::text[] IS NULL OR path ~ ANY($6))
                  AND ($7::text IS NULL OR path > $7)
                ORDER BY path LIMIT $8"#,
            self.tenant,
            vault,
            key_path,
            value,
            folder,
            readable,
            after,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (r.path, r.value)).collect())
    }

    /// Coverage of one top-level property over the readable notes under `folder` that match
    /// one of `include` (all when None) and none of `exclude` (anchored regular expressions):
    /// (notes, notes with a non-empty value) and the first `limit` paths without one, in path
    /// order. Empty means null, "" or [].
    #[allow(clippy::too_many_arguments)]
    pub async fn property_coverage(
        &mut self,
        vault: Uuid,
        key: &str,
        folder: &str,
        readable: Option<&[String]>,
        include: Option<&[String]>,
        exclude: Option<&[String]>,
        limit: i64,
    ) -> Result<(i64, i64, Vec<String>)> {
        let counts = sqlx::query!(
            r#"SELECT count(*) AS "notes!",
                      count(*) FILTER (WHERE COALESCE(frontmatter -> $3, 'null'::jsonb)
                                             NOT IN ('null'::jsonb, '""'::jsonb, '[]'::jsonb)) AS "cited!"
                 FROM notes
                WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(path, $4)
                  AND path !~ '(^|/)\.' AND ($5::text[] IS NULL OR path ~ ANY($5))
                  AND ($6::text[] IS NULL OR path ~ ANY($6)) AND NOT ($7::text[] IS NOT NULL AND path ~ ANY($7))"#,
            self.tenant,
            vault,
            key,
            folder,
            readable,
            include,
            exclude
        )
        .fetch_one(&mut *self.tx)
        .await?;
        let missing = sqlx::query_scalar!(
            r#"SELECT path FROM notes
                WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(path, $4)
                  AND COALESCE(frontmatter -> $3, 'null'::jsonb) IN ('null'::jsonb, '""'::jsonb, '[]'::jsonb)
                  AND path !~ '(^|/)\.' AND ($5::text[] IS NULL OR path ~ ANY($5))
                  AND ($6::text[] IS NULL OR path ~ ANY($6)) AND NOT ($7::text[] IS NOT NULL AND path ~ ANY($7))
                ORDER BY path LIMIT $8"#,
            self.tenant,
            vault,
            key,
            folder,
            readable,
            include,
            exclude,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok((counts.notes, counts.cited, missing))
    }

    /// How many readable notes link to each of `paths`.
    pub async fn reference_counts(
        &mut self,
        vault: Uuid,
        paths: &[String],
        readable: Option<&[String]>,
    ) -> Result<std::collections::HashMap<String, i64>> {
        let rows = sqlx::query!(
            r#"SELECT resolved_path AS "path!", count(DISTINCT source_path) AS "n!" FROM links
                WHERE tenant_id = $1 AND vault_id = $2 AND resolved_path = ANY($3)
                  AND source_path !~ '(^|/)\.' AND ($4::text[] IS NULL OR source_path ~ ANY($4))
                GROUP BY resolved_path"#,
            self.tenant,
            vault,
            paths,
            readable
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| (r.path, r.n)).collect())
    }

    /// The readable notes that link to `path`, in path order, at most `limit`.
    pub async fn referencing_notes(
        &mut self,
        vault: Uuid,
        path: &str,
        readable: Option<&[String]>,
        limit: i64,
    ) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar!(
            r#"SELECT DISTINCT source_path FROM links
                WHERE tenant_id = $1 AND vault_id = $2 AND resolved_path = $3 AND source_path <> $3
                  AND source_path !~ '(^|/)\.' AND ($4::text[] IS NULL OR source_path ~ ANY($4))
                ORDER BY source_path LIMIT $5"#,
            self.tenant,
            vault,
            path,
            readable,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// The readable notes a content scan visits, in path order: every note of the manifest
    /// (`.md`) the caller may read, outside the always-hidden folders and Obsidian's Excluded
    /// files, narrowed by `filter`. The manifest decides what the vault holds and each note's
    /// content; the index adds the Excluded flag, frontmatter and tags (a note not indexed yet
    /// counts as not excluded, with no frontmatter and no tags).
    pub async fn scan_candidates(
        &mut self,
        vault: Uuid,
        readable: Option<&[String]>,
        filter: &ScanFilter,
    ) -> Result<Vec<ScanCandidate>> {
        // Distinct keys: the tag filter counts how many of them a note holds.
        let tag_keys: Vec<String> = filter
            .tags
            .iter()
            .map(|t| t.trim_start_matches('#').to_lowercase())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let keys: Vec<String> = filter.properties.iter().map(|(k, _)| k.clone()).collect();
        let values: Vec<String> = filter.properties.iter().map(|(_, v)| v.to_string()).collect();
        // Planned for its arguments each time: its filters are optional, and the generic plan
        // a prepared statement gets from its sixth run cannot tell a list of ten candidate
        // paths from none (it read the whole vault: 1 s instead of 0.1 s at 100k notes).
        sqlx::query("SET LOCAL plan_cache_mode = force_custom_plan").execute(&mut *self.tx).await?;
        let rows = sqlx::query!(
            r#"SELECT v.path, v.blob_hash, v.size, v.mtime,
                      CASE WHEN $8 THEN n.frontmatter END AS "frontmatter?",
                      CASE WHEN $8 THEN n.tags END AS "tags?",
                      CASE WHEN $9 THEN (SELECT c.committed_at FROM change_log c
                                          WHERE c.tenant_id = v.tenant_id AND c.vault_id = v.vault_id
                                            AND c.path = v.path AND c.op = 'create'
                                          ORDER BY c.seq DESC LIMIT 1) END AS "created?"
                 FROM vault_files v
                 LEFT JOIN index_files f ON f.tenant_id = v.tenant_id AND f.vault_id = v.vault_id AND f.path = v.path
                 LEFT JOIN notes n ON n.tenant_id = v.tenant_id AND n.vault_id = v.vault_id AND n.path = v.path
                WHERE v.tenant_id = $1 AND v.vault_id = $2 AND v.kind = 'note'
                  AND starts_with(v.path, $3)
                  AND v.path !~ '(^|/)\.' AND ($4::text[] IS NULL OR v.path ~ ANY($4))
                  AND NOT COALESCE(f.excluded, false)
                  AND ($5::text[] IS NULL OR v.path = ANY($5))
                  AND (cardinality($6::text[]) = 0
                       OR v.path IN (SELECT t.path FROM note_tags t
                                      WHERE t.tenant_id = $1 AND t.vault_id = $2 AND t.tag_key = ANY($6)
                                      GROUP BY t.path HAVING count(DISTINCT t.tag_key) = cardinality($6)))
                  AND NOT EXISTS (
                      SELECT 1 FROM unnest($7::text[], $10::text[]) AS want(key, value)
                       WHERE NOT EXISTS (SELECT 1 FROM note_properties p
                                          WHERE p.tenant_id = v.tenant_id AND p.vault_id = v.vault_id
                                            AND p.path = v.path AND p.key = want.key
                                            AND (p.value = want.value::jsonb
                                                 OR jsonb_typeof(p.value) <> jsonb_typeof(want.value::jsonb)
                                                 OR jsonb_typeof(p.value) IN ('array', 'object'))))
                ORDER BY v.path"#,
            self.tenant,
            vault,
            &filter.prefix,
            readable,
            filter.paths.as_deref(),
            &tag_keys,
            &keys,
            filter.with_meta,
            filter.with_created,
            &values
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| ScanCandidate {
                path: r.path,
                hash: crate::files::to_hash(&r.blob_hash),
                size: r.size,
                mtime: r.mtime,
                frontmatter: r.frontmatter,
                tags: r.tags.unwrap_or_default(),
                created: r.created,
            })
            .collect())
    }

    /// Readable files under `folder` (a path prefix ending in `/`, or "" for the root), in
    /// path order after `after`, at most `limit`; only directly inside the folder unless
    /// `recursive`; only the given lower-cased extensions (with the dot) when any are given.
    #[allow(clippy::too_many_arguments)]
    pub async fn list_files(
        &mut self,
        vault: Uuid,
        folder: &str,
        recursive: bool,
        extensions: Option<&[String]>,
        readable: Option<&[String]>,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Listed>> {
        let rows = sqlx::query!(
            r#"SELECT path, kind, size, mtime FROM vault_files
                WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(path, $3)
                  AND ($4 OR strpos(substr(path, length($3) + 1), '/') = 0)
                  AND ($5::text[] IS NULL OR lower(substring(path from '\.[^./]*$')) = ANY($5))
                  AND path !~ '(^|/)\.' AND ($6::text[] IS NULL OR path ~ ANY($6))
                  AND ($7::text IS NULL OR path > $7)
                ORDER BY path LIMIT $8"#,
            self.tenant,
            vault,
            folder,
            recursive,
            extensions,
            readable,
            after,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| Listed { path: r.path, kind: r.kind, size: r.size, mtime: r.mtime }).collect())
    }

    /// Readable files that are not notes under `folder` (recursive), with one of the given
    /// lower-cased extensions (with the dot), in path order after `after`, at most `limit`.
    /// Apart from [`Self::list_files`] so the planner can walk the index of non-note files
    /// (a 100k-note vault holds a few hundred of them) instead of every path.
    pub async fn list_attachments(
        &mut self,
        vault: Uuid,
        folder: &str,
        extensions: &[String],
        readable: Option<&[String]>,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Listed>> {
        let rows = sqlx::query!(
            r#"SELECT path, kind, size, mtime FROM vault_files
                WHERE tenant_id = $1 AND vault_id = $2 AND kind <> 'note' AND starts_with(path, $3)
                  AND lower(substring(path from '\.[^./]*$')) = ANY($4)
                  AND path !~ '(^|/)\.' AND ($5::text[] IS NULL OR path ~ ANY($5))
                  AND ($6::text IS NULL OR path > $6)
                ORDER BY path LIMIT $7"#,
            self.tenant,
            vault,
            folder,
            extensions,
            readable,
            after,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| Listed { path: r.path, kind: r.kind, size: r.size, mtime: r.mtime }).collect())
    }
}

/// A task line of the index, where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskLine {
    pub path: String,
    /// 0-based line in its note.
    pub line: i32,
    /// The character between the brackets.
    pub status: String,
    /// The text after the checkbox.
    pub text: String,
    /// The heading path of the section it sits in ("" above the first heading).
    pub heading_path: String,
}

impl TenantTx {
    /// The task lines of the readable notes under `folder` (only those in `paths`, when given),
    /// in path and line order, at most `limit`.
    pub async fn task_lines(
        &mut self,
        vault: Uuid,
        folder: &str,
        paths: Option<&[String]>,
        readable: Option<&[String]>,
        limit: i64,
    ) -> Result<Vec<TaskLine>> {
        let rows = sqlx::query!(
            r#"SELECT t.path, t.line, t.status, t.text,
                      COALESCE((SELECT c.heading_path FROM chunks c
                                 WHERE c.tenant_id = t.tenant_id AND c.vault_id = t.vault_id AND c.path = t.path
                                   AND c.start_offset <= t.start_offset
                                 ORDER BY c.start_offset DESC LIMIT 1), '') AS "heading_path!"
                 FROM note_tasks t
                WHERE t.tenant_id = $1 AND t.vault_id = $2 AND starts_with(t.path, $3)
                  AND ($4::text[] IS NULL OR t.path = ANY($4))
                  AND t.path !~ '(^|/)\.' AND ($5::text[] IS NULL OR t.path ~ ANY($5))
                ORDER BY t.path, t.ord LIMIT $6"#,
            self.tenant,
            vault,
            folder,
            paths,
            readable,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| TaskLine {
                path: r.path,
                line: r.line,
                status: r.status,
                text: r.text,
                heading_path: r.heading_path,
            })
            .collect())
    }
}
