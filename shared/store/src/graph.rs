//! The link graph as one caller may see it, for the graph tools: the readable notes and, per
//! linking pair, how many links join them.

use uuid::Uuid;

use crate::{Result, TenantTx};

/// Readable notes and the links between them.
#[derive(Debug, Clone, Default)]
pub struct LinkEdges {
    pub notes: Vec<String>,
    /// (source, target, links): every link kind (body, embed, property), between two readable
    /// notes, a note's links to itself left out.
    pub edges: Vec<(String, String, u32)>,
    /// Per readable note that holds links: how many of every kind (same-note links to a
    /// heading or block included), and how many of those resolve to nothing the caller can
    /// read.
    pub counts: Vec<LinkCounts>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkCounts {
    pub path: String,
    pub links: u32,
    pub unresolved: u32,
}

/// What the quality report reads of each readable note.
#[derive(Debug, Clone)]
pub struct NoteFacts {
    pub path: String,
    pub content_hash: crate::files::Hash,
    pub size: i64,
    pub mtime: chrono::DateTime<chrono::Utc>,
    pub frontmatter_error: bool,
    /// The body holds nothing but blanks (the indexer cut no chunk from it).
    pub empty: bool,
}

impl TenantTx {
    /// The vault's readable notes (`readable`: the read ACL's expressions, None for any; the
    /// always hidden folders never) and the links between them. A link that the index resolved
    /// to a note the caller cannot read is resolved again among the readable ones, as
    /// Obsidian would without that note, so the graph a caller sees is the one it would have
    /// if the hidden notes did not exist.
    pub async fn link_graph(&mut self, vault: Uuid, readable: Option<&[String]>) -> Result<LinkEdges> {
        let mut notes = sqlx::query_scalar!(
            r#"SELECT path FROM notes
                WHERE tenant_id = $1 AND vault_id = $2
                  AND path !~ '(^|/)\.' AND ($3::text[] IS NULL OR path ~ ANY($3))"#,
            self.tenant,
            vault,
            readable
        )
        .fetch_all(&mut *self.tx)
        .await?;
        notes.sort_unstable();
        // One pass over the readable notes' links, per (source, where it leads): the edges, the
        // counts, and which lead to a note the caller cannot read.
        let rows = sqlx::query!(
            r#"SELECT source_path, resolved_path, count(*)::int AS "links!",
                      COALESCE(resolved_path !~ '(^|/)\.'
                               AND ($3::text[] IS NULL OR resolved_path ~ ANY($3)), false) AS "visible!"
                 FROM links
                WHERE tenant_id = $1 AND vault_id = $2
                  AND source_path !~ '(^|/)\.' AND ($3::text[] IS NULL OR source_path ~ ANY($3))
                GROUP BY source_path, resolved_path"#,
            self.tenant,
            vault,
            readable
        )
        .fetch_all(&mut *self.tx)
        .await?;
        let mut edges: Vec<(String, String, u32)> = Vec::with_capacity(rows.len());
        let mut counts: std::collections::BTreeMap<String, LinkCounts> = std::collections::BTreeMap::new();
        let mut any_hidden = false;
        for r in rows {
            let n = r.links.max(1) as u32;
            let c = counts.entry(r.source_path.clone()).or_insert_with(|| LinkCounts {
                path: r.source_path.clone(),
                links: 0,
                unresolved: 0,
            });
            c.links += n;
            match r.resolved_path {
                None => c.unresolved += n,
                Some(to) if to == r.source_path => {}
                Some(to) if r.visible => edges.push((r.source_path, to, n)),
                // Resolved again below, among what the caller can read.
                Some(_) => any_hidden = true,
            }
        }
        if any_hidden {
            let shadowed = sqlx::query!(
                r#"SELECT source_path, target FROM links
                    WHERE tenant_id = $1 AND vault_id = $2 AND resolved_path IS NOT NULL
                      AND (resolved_path ~ '(^|/)\.' OR ($3::text[] IS NOT NULL AND NOT resolved_path ~ ANY($3)))
                      AND source_path !~ '(^|/)\.' AND ($3::text[] IS NULL OR source_path ~ ANY($3))"#,
                self.tenant,
                vault,
                readable
            )
            .fetch_all(&mut *self.tx)
            .await?;
            let asked: Vec<(&str, &str)> =
                shadowed.iter().map(|l| (l.target.as_str(), l.source_path.as_str())).collect();
            let resolved = self.resolve_among_readable(vault, readable, &asked).await?;
            for ((_, source), to) in asked.iter().zip(resolved) {
                match to {
                    Some(to) if to != *source => edges.push((source.to_string(), to, 1)),
                    Some(_) => {}
                    None => {
                        if let Some(c) = counts.get_mut(*source) {
                            c.unresolved += 1;
                        }
                    }
                }
            }
        }
        Ok(LinkEdges { notes, edges, counts: counts.into_values().collect() })
    }

    /// Size, age, hash and state of each readable note under `prefix` ("" for all), for the
    /// quality report and lint_wiki.
    pub async fn note_facts(
        &mut self,
        vault: Uuid,
        prefix: &str,
        readable: Option<&[String]>,
    ) -> Result<Vec<NoteFacts>> {
        let rows = sqlx::query!(
            r#"SELECT n.path, n.content_hash, n.size, n.mtime, n.frontmatter_error IS NOT NULL AS "frontmatter_error!",
                      NOT EXISTS (SELECT 1 FROM chunks c
                                   WHERE c.tenant_id = n.tenant_id AND c.vault_id = n.vault_id AND c.path = n.path)
                        AS "empty!"
                 FROM notes n
                WHERE n.tenant_id = $1 AND n.vault_id = $2 AND starts_with(n.path, $4)
                  AND n.path !~ '(^|/)\.' AND ($3::text[] IS NULL OR n.path ~ ANY($3))
                ORDER BY n.path"#,
            self.tenant,
            vault,
            readable,
            prefix
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| NoteFacts {
                path: r.path,
                content_hash: crate::files::to_hash(&r.content_hash),
                size: r.size,
                mtime: r.mtime,
                frontmatter_error: r.frontmatter_error,
                empty: r.empty,
            })
            .collect())
    }
}
