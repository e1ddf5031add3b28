//! Entity memory (`memory_entities`, `memory_observations`, `memory_relations`): entities of a
//! vault with observations that hold over a span of time, and typed relations between them.
//! A changed fact closes the observation it replaces (`valid_to`, `superseded_by`), so what
//! held at any past time stays answerable.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{Result, TenantTx};

/// One entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    pub id: Uuid,
    pub vault_id: Uuid,
    pub kind: String,
    pub name: String,
    /// active, archived or deleted.
    pub status: String,
    pub note_path: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One observation of an entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub id: Uuid,
    pub entity_id: Uuid,
    pub key: Option<String>,
    pub text: String,
    pub valid_from: DateTime<Utc>,
    pub valid_to: Option<DateTime<Utc>>,
    pub superseded_by: Option<Uuid>,
    pub retired: bool,
    pub created_at: DateTime<Utc>,
}

/// One relation: `source_id` —relation_type→ `target_id`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Relation {
    pub source_id: Uuid,
    pub target_id: Uuid,
    pub relation_type: String,
}

/// An observation to store.
#[derive(Debug, Clone)]
pub struct NewObservation {
    pub key: Option<String>,
    pub text: String,
    pub valid_from: DateTime<Utc>,
    pub valid_to: Option<DateTime<Utc>>,
}

impl TenantTx {
    /// Stores a new entity. A live entity of the same type and name (case-insensitively) in the
    /// vault refuses it (`StoreError::Conflict`).
    pub async fn create_entity(
        &mut self,
        vault: Uuid,
        kind: &str,
        name: &str,
        note_path: Option<&str>,
        by: Option<Uuid>,
    ) -> Result<Entity> {
        Ok(sqlx::query_as!(
            Entity,
            r#"INSERT INTO memory_entities (tenant_id, vault_id, id, type, name, type_key, name_key, note_path, created_by)
               VALUES ($1, $2, $3, $4, $5, lower($4), lower($5), $6, $7)
               RETURNING id, vault_id, type AS kind, name, status, note_path, created_at, updated_at"#,
            self.tenant,
            vault,
            Uuid::new_v4(),
            kind,
            name,
            note_path,
            by
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// The live (not deleted) entity of this type and name, case-insensitively.
    pub async fn entity_named(&mut self, vault: Uuid, kind: &str, name: &str) -> Result<Option<Entity>> {
        Ok(sqlx::query_as!(
            Entity,
            r#"SELECT id, vault_id, type AS kind, name, status, note_path, created_at, updated_at FROM memory_entities
                WHERE tenant_id = $1 AND vault_id = $2 AND type_key = lower($3) AND name_key = lower($4)
                  AND status <> 'deleted'"#,
            self.tenant,
            vault,
            kind,
            name
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// The entity with this id in the vault, deleted or not.
    pub async fn entity(&mut self, vault: Uuid, id: Uuid) -> Result<Option<Entity>> {
        Ok(sqlx::query_as!(
            Entity,
            r#"SELECT id, vault_id, type AS kind, name, status, note_path, created_at, updated_at FROM memory_entities
                WHERE tenant_id = $1 AND vault_id = $2 AND id = $3"#,
            self.tenant,
            vault,
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// These entities of the vault (deleted ones left out), in id order.
    pub async fn entities(&mut self, vault: Uuid, ids: &[Uuid]) -> Result<Vec<Entity>> {
        Ok(sqlx::query_as!(
            Entity,
            r#"SELECT id, vault_id, type AS kind, name, status, note_path, created_at, updated_at FROM memory_entities
                WHERE tenant_id = $1 AND vault_id = $2 AND id = ANY($3) AND status <> 'deleted' ORDER BY id"#,
            self.tenant,
            vault,
            ids
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Renames an entity and/or sets its status (and its mirror note's path), unless it was
    /// deleted meanwhile (false then); a live namesake refuses a new name
    /// (`StoreError::Conflict`).
    pub async fn update_entity(
        &mut self,
        vault: Uuid,
        id: Uuid,
        name: &str,
        status: &str,
        note_path: Option<&str>,
    ) -> Result<bool> {
        Ok(sqlx::query!(
            r#"UPDATE memory_entities SET name = $4, name_key = lower($4), status = $5, note_path = $6, updated_at = now()
                WHERE tenant_id = $1 AND vault_id = $2 AND id = $3 AND status <> 'deleted'"#,
            self.tenant,
            vault,
            id,
            name,
            status,
            note_path
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected()
            == 1)
    }

    /// Removes an entity for good, with its observations and relations. Returns how many of
    /// each went.
    pub async fn delete_entity(&mut self, vault: Uuid, id: Uuid) -> Result<(u64, u64)> {
        let observations = sqlx::query!(
            "DELETE FROM memory_observations WHERE tenant_id = $1 AND vault_id = $2 AND entity_id = $3",
            self.tenant,
            vault,
            id
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected();
        let relations = self.remove_relations_of(vault, id).await?;
        sqlx::query!(
            "DELETE FROM memory_entities WHERE tenant_id = $1 AND vault_id = $2 AND id = $3",
            self.tenant,
            vault,
            id
        )
        .execute(&mut *self.tx)
        .await?;
        Ok((observations, relations))
    }

    /// Removes every relation from or to the entity; returns how many.
    pub async fn remove_relations_of(&mut self, vault: Uuid, id: Uuid) -> Result<u64> {
        Ok(sqlx::query!(
            "DELETE FROM memory_relations WHERE tenant_id = $1 AND vault_id = $2 AND (source_id = $3 OR target_id = $3)",
            self.tenant,
            vault,
            id
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected())
    }

    /// Locks the entity's row until the transaction ends: its observations change one call at
    /// a time, so a key never has two current facts.
    pub async fn lock_entity(&mut self, vault: Uuid, id: Uuid) -> Result<bool> {
        Ok(sqlx::query_scalar!(
            "SELECT id FROM memory_entities WHERE tenant_id = $1 AND vault_id = $2 AND id = $3 FOR UPDATE",
            self.tenant,
            vault,
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .is_some())
    }

    /// Adds an observation (the entity's row locked first). One with a key takes its place in
    /// that key's timeline: the fact holding at its valid_from (keys compared
    /// case-insensitively) is closed there (valid_to, superseded_by), and a later fact of the
    /// key bounds it (its valid_to is at most that fact's valid_from), so facts of one key never
    /// overlap, back-dated or not. Returns the new observation and the ids it superseded.
    pub async fn add_observation(
        &mut self,
        vault: Uuid,
        entity: Uuid,
        new: &NewObservation,
        by: Option<Uuid>,
    ) -> Result<(Observation, Vec<Uuid>)> {
        self.lock_entity(vault, entity).await?;
        let id = Uuid::new_v4();
        let (superseded, valid_to) = match &new.key {
            Some(key) => {
                let next = sqlx::query_scalar!(
                    r#"SELECT min(valid_from) FROM memory_observations
                        WHERE tenant_id = $1 AND vault_id = $2 AND entity_id = $3 AND lower(key) = lower($4)
                          AND NOT retired AND valid_from > $5"#,
                    self.tenant,
                    vault,
                    entity,
                    key,
                    new.valid_from
                )
                .fetch_one(&mut *self.tx)
                .await?;
                let closed = sqlx::query_scalar!(
                    r#"UPDATE memory_observations SET valid_to = $5, superseded_by = $6
                        WHERE tenant_id = $1 AND vault_id = $2 AND entity_id = $3 AND lower(key) = lower($4)
                          AND NOT retired AND valid_from <= $5 AND (valid_to IS NULL OR valid_to > $5)
                        RETURNING id"#,
                    self.tenant,
                    vault,
                    entity,
                    key,
                    new.valid_from,
                    id
                )
                .fetch_all(&mut *self.tx)
                .await?;
                let bounded = match (new.valid_to, next) {
                    (Some(to), Some(next)) => Some(to.min(next)),
                    (to, next) => to.or(next),
                };
                (closed, bounded)
            }
            None => (Vec::new(), new.valid_to),
        };
        let observation = sqlx::query_as!(
            Observation,
            r#"INSERT INTO memory_observations (tenant_id, vault_id, id, entity_id, key, text, valid_from, valid_to, created_by)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
               RETURNING id, entity_id, key, text, valid_from, valid_to, superseded_by, retired, created_at"#,
            self.tenant,
            vault,
            id,
            entity,
            new.key,
            new.text,
            new.valid_from,
            valid_to,
            by
        )
        .fetch_one(&mut *self.tx)
        .await?;
        self.touch_entity(vault, entity).await?;
        Ok((observation, superseded))
    }

    /// One observation of the entity.
    pub async fn observation(&mut self, vault: Uuid, entity: Uuid, id: Uuid) -> Result<Option<Observation>> {
        Ok(sqlx::query_as!(
            Observation,
            r#"SELECT id, entity_id, key, text, valid_from, valid_to, superseded_by, retired, created_at
                 FROM memory_observations WHERE tenant_id = $1 AND vault_id = $2 AND entity_id = $3 AND id = $4"#,
            self.tenant,
            vault,
            entity,
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// Closes an observation still holding at `at`: retired by hand, or superseded by
    /// `successor`. False when it no longer held.
    pub async fn close_observation(
        &mut self,
        vault: Uuid,
        id: Uuid,
        at: DateTime<Utc>,
        successor: Option<Uuid>,
    ) -> Result<bool> {
        Ok(sqlx::query!(
            r#"UPDATE memory_observations SET valid_to = $4, superseded_by = $5, retired = ($5::uuid IS NULL)
                WHERE tenant_id = $1 AND vault_id = $2 AND id = $3 AND NOT retired AND (valid_to IS NULL OR valid_to > $4)"#,
            self.tenant,
            vault,
            id,
            at,
            successor
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected()
            == 1)
    }

    /// The observations of these entities, oldest first: those holding at `as_of` (valid_from
    /// <= as_of < valid_to), or with `all` every one made by then.
    pub async fn observations(
        &mut self,
        vault: Uuid,
        entities: &[Uuid],
        as_of: DateTime<Utc>,
        all: bool,
    ) -> Result<Vec<Observation>> {
        Ok(sqlx::query_as!(
            Observation,
            r#"SELECT id, entity_id, key, text, valid_from, valid_to, superseded_by, retired, created_at
                 FROM memory_observations
                WHERE tenant_id = $1 AND vault_id = $2 AND entity_id = ANY($3)
                  AND valid_from <= $4 AND ($5 OR valid_to IS NULL OR valid_to > $4)
                ORDER BY entity_id, valid_from, created_at"#,
            self.tenant,
            vault,
            entities,
            as_of,
            all
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Adds a relation; false when it was already there.
    pub async fn link_entities(&mut self, vault: Uuid, relation: &Relation, by: Option<Uuid>) -> Result<bool> {
        let added = sqlx::query!(
            r#"INSERT INTO memory_relations (tenant_id, vault_id, source_id, target_id, relation_type, created_by)
               VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING"#,
            self.tenant,
            vault,
            relation.source_id,
            relation.target_id,
            relation.relation_type,
            by
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected();
        Ok(added > 0)
    }

    /// Removes a relation; false when there was none.
    pub async fn unlink_entities(&mut self, vault: Uuid, relation: &Relation) -> Result<bool> {
        let removed = sqlx::query!(
            r#"DELETE FROM memory_relations WHERE tenant_id = $1 AND vault_id = $2 AND source_id = $3
                  AND target_id = $4 AND relation_type = $5"#,
            self.tenant,
            vault,
            relation.source_id,
            relation.target_id,
            relation.relation_type
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected();
        Ok(removed > 0)
    }

    /// Every relation from or to these entities, in (source, type, target) order.
    pub async fn relations_of(&mut self, vault: Uuid, entities: &[Uuid]) -> Result<Vec<Relation>> {
        Ok(sqlx::query_as!(
            Relation,
            r#"SELECT source_id, target_id, relation_type FROM memory_relations
                WHERE tenant_id = $1 AND vault_id = $2 AND (source_id = ANY($3) OR target_id = ANY($3))
                ORDER BY source_id, relation_type, target_id"#,
            self.tenant,
            vault,
            entities
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    async fn touch_entity(&mut self, vault: Uuid, id: Uuid) -> Result<()> {
        sqlx::query!(
            "UPDATE memory_entities SET updated_at = now() WHERE tenant_id = $1 AND vault_id = $2 AND id = $3",
            self.tenant,
            vault,
            id
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }
}
