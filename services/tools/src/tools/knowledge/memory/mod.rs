//! What the entity-memory tools share: finding an entity the caller may see (an entity mirrored
//! into a note the caller cannot read is answered as missing), the shapes they answer with, and
//! the mirror note (`[memory] entity_folder`/<type>/<name>.md) rewritten after every change.

pub mod add_observation;
pub mod create_entity;
pub mod delete_entity;
pub mod get_entity;
pub mod link_entities;
pub mod query_entity_graph;
pub mod rename_entity;
pub mod unlink_entities;
pub mod update_observation;

use chrono::{DateTime, Utc};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{Entity, Observation, Relation, TenantTx};
use schemars::JsonSchema;
use serde::Serialize;
use uuid::Uuid;

use otc_kernel::reading::View;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, internal};

/// An id argument (an entity's, an observation's, a capture's, a session's, a goal's).
pub fn entity_id(text: &str, field: &str) -> Result<Uuid, ToolError> {
    Uuid::parse_str(text.trim()).map_err(|_| {
        ToolError::with_message(ErrorCode::InvalidInput, format!("{field} is an id (a UUID)"))
            .detail("field", field.to_string())
    })
}

/// A `YYYY-MM-DD` or RFC 3339 time argument.
pub fn time_arg(text: Option<&str>, field: &str) -> Result<Option<DateTime<Utc>>, ToolError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(Some(at.with_timezone(&Utc)));
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| Some(t.and_utc()))
        .ok_or_else(|| {
            ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("{field} is a date (YYYY-MM-DD) or an RFC 3339 time"),
            )
            .detail("field", field.to_string())
        })
}

/// The refusal of an entity the caller cannot see: missing, deleted, or mirrored where they
/// cannot read.
pub fn not_found(id: &str) -> ToolError {
    ToolError::with_message(ErrorCode::NotFound, "no such entity in this vault").detail("entity_id", id.to_string())
}

/// Whether the caller may see the entity: not deleted, and its mirror (if any) readable.
pub fn visible(view: &View, entity: &Entity) -> bool {
    entity.status != "deleted" && entity.note_path.as_deref().is_none_or(|p| view.can_read(p))
}

/// The entity `id` as the caller may see it.
pub async fn find(tx: &mut TenantTx, view: &View, id: Uuid) -> Result<Entity, ToolError> {
    tx.entity(view.vault.id, id).await?.filter(|e| visible(view, e)).ok_or_else(|| not_found(&id.to_string()))
}

/// A store refusal of a duplicate entity name.
pub fn name_taken(kind: &str, name: &str) -> ToolError {
    ToolError::with_message(ErrorCode::Conflict, format!("this vault already has a {kind} named {name:?}"))
        .detail("type", kind.to_string())
        .detail("name", name.to_string())
}

/// An entity as the tools answer it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EntityOut {
    pub entity_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note_path: Option<String>,
    /// Detailed only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

impl EntityOut {
    pub fn of(e: &Entity, detailed: bool) -> Self {
        Self {
            entity_id: e.id.to_string(),
            kind: e.kind.clone(),
            name: e.name.clone(),
            status: e.status.clone(),
            note_path: e.note_path.clone(),
            created_at: detailed.then(|| e.created_at.to_rfc3339()),
            updated_at: detailed.then(|| e.updated_at.to_rfc3339()),
        }
    }
}

/// An observation as the tools answer it: concise keeps {text, key}, and valid_to and
/// superseded_by when the fact no longer holds.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ObservationOut {
    pub observation_id: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Closed by hand, with no successor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retired: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

impl ObservationOut {
    pub fn of(o: &Observation, detailed: bool) -> Self {
        Self {
            observation_id: o.id.to_string(),
            text: o.text.clone(),
            key: o.key.clone(),
            valid_from: detailed.then(|| o.valid_from.to_rfc3339()),
            valid_to: o.valid_to.map(|t| t.to_rfc3339()),
            superseded_by: o.superseded_by.map(|s| s.to_string()),
            retired: o.retired,
            created_at: detailed.then(|| o.created_at.to_rfc3339()),
        }
    }
}

/// A relation as the tools answer it.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
pub struct RelationOut {
    pub source_id: String,
    pub relation_type: String,
    pub target_id: String,
}

impl RelationOut {
    pub fn of(r: &Relation) -> Self {
        Self {
            source_id: r.source_id.to_string(),
            relation_type: r.relation_type.clone(),
            target_id: r.target_id.to_string(),
        }
    }
}

/// A fact as it may be stored: secrets redacted; text that tries to instruct an AI reader
/// (which would reach every mirror note and every session that loads it) refused.
pub fn screen_fact(text: &str) -> Result<otc_kernel::screening::Screened, ToolError> {
    let screened = otc_kernel::screening::screen(text);
    if let Some(kind) = screened.refused {
        return Err(ToolError::with_message(
            ErrorCode::ContentRejected,
            "the text tries to instruct an AI reader; memory does not keep it",
        )
        .detail("poison", kind));
    }
    Ok(screened)
}

/// Refuses a change whose mirror notes the caller may not rewrite, before anything is changed.
pub fn check_mirrors(view: &View, entities: &[Entity]) -> Result<(), ToolError> {
    for path in entities.iter().filter_map(|e| e.note_path.as_deref()) {
        writing::check_write(view, path, "entity_id")?;
    }
    Ok(())
}

/// The entities related to `id` (either way) that the caller may see.
pub async fn visible_neighbours(tx: &mut TenantTx, view: &View, id: Uuid) -> Result<Vec<Entity>, ToolError> {
    let relations = tx.relations_of(view.vault.id, &[id]).await?;
    let mut others: Vec<Uuid> = relations
        .iter()
        .map(|r| if r.source_id == id { r.target_id } else { r.source_id })
        .filter(|n| *n != id)
        .collect();
    others.sort_unstable();
    others.dedup();
    let found = tx.entities(view.vault.id, &others).await?;
    Ok(found.into_iter().filter(|e| visible(view, e)).collect())
}

/// Where an entity of `kind` named `name` is mirrored.
pub fn mirror_path(ctx: &CallContext<'_>, kind: &str, name: &str) -> String {
    let folder = ctx.services().config.memory.entity_folder.trim_matches('/').to_string();
    let file = format!("{}/{}.md", kind.trim(), name.trim());
    if folder.is_empty() { file } else { format!("{folder}/{file}") }
}

/// Checks that a new mirror may be written at `path` for an entity of `kind` named `name`: one
/// folder and one file name (no `/` or `\\` in either), writable, a link-safe new name, and no
/// file there already (`except`: the entity's own mirror, on a rename).
pub async fn check_mirror(
    ctx: &CallContext<'_>,
    view: &View,
    (kind, name): (&str, &str),
    path: &str,
    except: Option<&str>,
) -> Result<(), ToolError> {
    for (field, text) in [("type", kind), ("name", name)] {
        if text.contains(['/', '\\']) {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("a mirrored entity's {field} is a file name: it may not hold / or \\"),
            )
            .detail("field", field));
        }
    }
    writing::check_write(view, path, "name")?;
    writing::check_new_name_except(ctx, view, path, "name", except).await?;
    if except != Some(path) && writing::current(ctx, view.vault.id, path).await?.is_some() {
        return Err(ToolError::with_message(
            ErrorCode::NoteExists,
            "a note already exists where the entity would be mirrored",
        )
        .detail("path", path.to_string()));
    }
    Ok(())
}

/// The mirror note of an entity: its facts now and its relations, as a person reads them in
/// Obsidian (frontmatter holds the id; other mirrored entities are wikilinks).
fn mirror_text(entity: &Entity, observations: &[Observation], relations: &[Relation], names: &[Entity]) -> String {
    let mut text = format!(
        "---\nentity_id: {}\nentity_type: {}\nstatus: {}\n---\n# {}\n\n## Observations\n",
        entity.id,
        serde_json::to_string(&entity.kind).unwrap_or_default(),
        entity.status,
        entity.name
    );
    for o in observations {
        let key = o.key.as_deref().map(|k| format!("**{k}**: ")).unwrap_or_default();
        text.push_str(&format!("- {key}{} (since {})\n", o.text.replace('\n', " "), o.valid_from.format("%Y-%m-%d")));
    }
    if !relations.is_empty() {
        text.push_str("\n## Relations\n");
        // A neighbour mirrored outside this note's top folder (the memory folder) may be hidden
        // from this note's readers: it is named by id only. Within it, a wikilink; a neighbour
        // not mirrored, by name (any memory reader sees it).
        let folder = |p: &str| p.split_once('/').map_or(String::new(), |(f, _)| f.to_string());
        let here = entity.note_path.as_deref().map(folder);
        let name_of = |id: Uuid| match names.iter().find(|e| e.id == id) {
            None => format!("entity {id}"),
            Some(e) => match e.note_path.as_deref() {
                None => e.name.clone(),
                Some(p) if Some(folder(p)) == here => format!("[[{}|{}]]", p.trim_end_matches(".md"), e.name),
                Some(_) => format!("entity {id}"),
            },
        };
        for r in relations {
            if r.source_id == entity.id {
                text.push_str(&format!("- {} → {}\n", r.relation_type, name_of(r.target_id)));
            } else {
                text.push_str(&format!("- {} ← {}\n", r.relation_type, name_of(r.source_id)));
            }
        }
    }
    text
}

/// Rewrites the mirror notes of these entities (those that have one) from the store, through
/// the commit engine with the call's provenance. Returns how many were written.
pub async fn remirror(ctx: &CallContext<'_>, view: &View, ids: &[Uuid]) -> Result<usize, ToolError> {
    let tool = ctx.tool;
    let store_err = |e: otc_store::StoreError| internal(tool, &e);
    let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
    let entities: Vec<Entity> = tx
        .entities(view.vault.id, ids)
        .await
        .map_err(store_err)?
        .into_iter()
        .filter(|e| e.note_path.is_some())
        .collect();
    if entities.is_empty() {
        tx.commit().await.map_err(store_err)?;
        return Ok(0);
    }
    let own: Vec<Uuid> = entities.iter().map(|e| e.id).collect();
    let observations = tx.observations(view.vault.id, &own, Utc::now(), false).await.map_err(store_err)?;
    let relations = tx.relations_of(view.vault.id, &own).await.map_err(store_err)?;
    let mut others: Vec<Uuid> = relations.iter().flat_map(|r| [r.source_id, r.target_id]).collect();
    others.sort_unstable();
    others.dedup();
    let names = tx.entities(view.vault.id, &others).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    let mut written = 0;
    for entity in &entities {
        let path = entity.note_path.clone().unwrap_or_default();
        let mine: Vec<Observation> = observations.iter().filter(|o| o.entity_id == entity.id).cloned().collect();
        let rels: Vec<Relation> =
            relations.iter().filter(|r| r.source_id == entity.id || r.target_id == entity.id).cloned().collect();
        let text = mirror_text(entity, &mine, &rels, &names);
        writing::check_write(view, &path, "note_path")?;
        let edited = writing::edit_note(ctx, view, &path, None, None, |_, _| {
            Ok(Planned { text: text.clone(), extra: (), trash_old: false })
        })
        .await?;
        written += usize::from(edited.changed);
    }
    Ok(written)
}

/// Moves the mirror note at `path` into the vault's trash (an entity deleted, or renamed: its
/// new mirror is written by [`remirror`]). Nothing when there is no note there.
pub async fn unmirror(ctx: &CallContext<'_>, view: &View, path: &str) -> Result<(), ToolError> {
    writing::check_delete(view, path, "note_path")?;
    let Some(entry) = writing::current(ctx, view.vault.id, path).await? else { return Ok(()) };
    let (changes, _) = writing::delete_changes(ctx, view, path, &entry, false).await?;
    writing::commit(ctx, view, &changes, None).await?.map_err(|stale| writing::stale_error(view, &stale))?;
    Ok(())
}

/// A capture as the tools answer it. Concise omits empty fields but always keeps
/// `poison_assessment` and `redactions`, which are safety signals.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CaptureOut {
    pub capture_id: String,
    /// queued, committing or committed.
    pub status: String,
    /// none, suspect (signs worth a look) or poisoned (quarantined: never committed).
    pub poison_assessment: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub poison_signals: Vec<String>,
    /// Kinds of secret replaced before the capture was stored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<String>,
    /// What commit_capture compares against.
    pub content_hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_path_hint: Option<String>,
    /// Detailed only: the captured text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

impl CaptureOut {
    pub fn of(c: &otc_store::Capture, detailed: bool) -> Self {
        Self {
            capture_id: c.id.to_string(),
            status: c.status.clone(),
            poison_assessment: c.poison_assessment.clone(),
            poison_signals: c.poison_signals.clone(),
            redactions: c.redactions.clone(),
            content_hash: c.content_hash.clone(),
            title: c.title.clone(),
            tags: c.tags.clone(),
            source: c.source.clone(),
            target_path_hint: c.target_path_hint.clone(),
            content: detailed.then(|| c.content.clone()),
            committed_path: c.committed_path.clone(),
            created_at: detailed.then(|| c.created_at.to_rfc3339()),
        }
    }
}
