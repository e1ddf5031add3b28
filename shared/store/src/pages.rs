//! What find_existing_page and the wiki tools ask of the index: the notes whose names match a
//! topic, and the links whose text does.

use uuid::Uuid;

use crate::{Result, TenantTx};

/// A note one of whose names is the topic, and which names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameMatch {
    pub path: String,
    /// The path itself (with or without .md).
    pub by_path: bool,
    /// The file name without .md.
    pub by_file_name: bool,
    pub by_alias: bool,
    /// A `wikidata` property holding the topic's QID (or a URL ending in it).
    pub by_wikidata: bool,
    /// A `title` property.
    pub by_title: bool,
    /// The first level-1 heading.
    pub by_h1: bool,
}

/// Links whose text (alias, or the target as written) is the topic, by where they lead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkTextMatch {
    /// Where the links lead (None: nowhere, a page others want).
    pub resolved_path: Option<String>,
    /// Distinct readable notes holding such a link.
    pub sources: Vec<String>,
}

impl TenantTx {
    /// Readable notes (`readable`, the always hidden folders never) under `prefix` whose names
    /// match `topic` (already normalised as `otc_name_norm` does) or whose `wikidata` property
    /// holds `qid`.
    pub async fn notes_named(
        &mut self,
        vault: Uuid,
        readable: Option<&[String]>,
        prefix: &str,
        topic: &str,
        qid: Option<&str>,
    ) -> Result<Vec<NameMatch>> {
        let rows = sqlx::query!(
            r#"WITH n AS (
                 SELECT path, title, aliases, frontmatter,
                        (SELECT h->>'text' FROM jsonb_array_elements(headings) h
                          WHERE (h->>'level')::int = 1 LIMIT 1) AS h1
                   FROM notes
                  WHERE tenant_id = $1 AND vault_id = $2 AND starts_with(path, $4)
                    AND path !~ '(^|/)\.' AND ($3::text[] IS NULL OR path ~ ANY($3))
               ), m AS (
                 SELECT path,
                        otc_name_norm(path) = $5 OR otc_name_norm(regexp_replace(path, '\.md$', '', 'i')) = $5 AS by_path,
                        otc_name_norm(title) = $5 AS by_file_name,
                        EXISTS (SELECT 1 FROM unnest(aliases) a WHERE otc_name_norm(a) = $5) AS by_alias,
                        COALESCE($6::text IS NOT NULL AND jsonb_typeof(frontmatter->'wikidata') = 'string'
                          AND upper(frontmatter->>'wikidata') ~ ('(^|[/:])' || $6 || '$'), false) AS by_wikidata,
                        COALESCE(jsonb_typeof(frontmatter->'title') = 'string'
                          AND otc_name_norm(frontmatter->>'title') = $5, false) AS by_title,
                        COALESCE(otc_name_norm(h1) = $5, false) AS by_h1
                   FROM n
               )
               SELECT path AS "path!", by_path AS "by_path!", by_file_name AS "by_file_name!", by_alias AS "by_alias!",
                      by_wikidata AS "by_wikidata!", by_title AS "by_title!", by_h1 AS "by_h1!"
                 FROM m WHERE by_path OR by_file_name OR by_alias OR by_wikidata OR by_title OR by_h1
                ORDER BY path"#,
            self.tenant,
            vault,
            readable,
            prefix,
            topic,
            qid
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| NameMatch {
                path: r.path,
                by_path: r.by_path,
                by_file_name: r.by_file_name,
                by_alias: r.by_alias,
                by_wikidata: r.by_wikidata,
                by_title: r.by_title,
                by_h1: r.by_h1,
            })
            .collect())
    }

    /// Links from readable notes whose alias, or target as written when it has none, is
    /// `topic` (normalised), grouped by where they lead. A link that leads to a note the caller
    /// cannot read is grouped with the unresolved ones, as the caller sees it.
    pub async fn links_with_text(
        &mut self,
        vault: Uuid,
        readable: Option<&[String]>,
        topic: &str,
    ) -> Result<Vec<LinkTextMatch>> {
        let rows = sqlx::query!(
            r#"SELECT CASE WHEN resolved_path IS NULL OR resolved_path ~ '(^|/)\.'
                             OR ($3::text[] IS NOT NULL AND NOT resolved_path ~ ANY($3)) THEN NULL
                           ELSE resolved_path END AS resolved_path,
                      array_agg(DISTINCT source_path ORDER BY source_path) AS "sources!"
                 FROM links
                WHERE tenant_id = $1 AND vault_id = $2
                  AND source_path !~ '(^|/)\.' AND ($3::text[] IS NULL OR source_path ~ ANY($3))
                  AND (otc_name_norm(alias) = $4
                       OR (alias IS NULL AND otc_name_norm(regexp_replace(regexp_replace(target, '^.*/', ''), '\.md$', '', 'i')) = $4))
                GROUP BY 1
                ORDER BY 1 NULLS LAST"#,
            self.tenant,
            vault,
            readable,
            topic
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows.into_iter().map(|r| LinkTextMatch { resolved_path: r.resolved_path, sources: r.sources }).collect())
    }
}
