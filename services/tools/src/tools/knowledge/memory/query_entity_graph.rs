//! query_entity_graph: the entities around a seed, breadth-first along their relations.

use std::collections::{BTreeSet, HashMap};

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::tools::knowledge::memory::{self, EntityOut, ObservationOut, RelationOut};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{decode_cursor, encode_cursor};
use otc_kernel::{CallContext, Tool, internal};

pub struct QueryEntityGraph;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Out,
    In,
    #[default]
    Both,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub seed_entity_id: String,
    /// Hops (default 2).
    #[serde(default)]
    #[schemars(range(min = 1, max = 4))]
    pub depth: Option<u32>,
    #[serde(default)]
    pub relation_types: Option<Vec<String>>,
    #[serde(default)]
    pub entity_types: Option<Vec<String>>,
    /// out: from the seed (default both).
    #[serde(default)]
    pub direction: Option<Direction>,
    /// Also facts no longer true.
    #[serde(default)]
    pub include_retired: Option<bool>,
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Nearest first (the seed at depth 0).
    pub entities: Vec<Node>,
    /// The relations walked among the entities listed on this page.
    pub relations: Vec<RelationOut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Node {
    #[serde(flatten)]
    pub entity: EntityOut,
    pub depth: u32,
    pub observations: Vec<ObservationOut>,
}

impl Tool for QueryEntityGraph {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Graph),
        scopes: &["read:memory"],
        response_format: Format::Takes,
        essentials: true,
        ..ToolSpec::base(
            "query_entity_graph",
            "Walk the memory graph",
            "Walks the memory graph breadth-first from a seed entity: entities with current facts, and relations.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let seed = memory::entity_id(&input.seed_entity_id, "seed_entity_id")?;
        let depth = otc_kernel::reading::bounded(input.depth, 2, 1..=4, "depth")? as u32;
        let limit = otc_kernel::reading::bounded(input.limit, 50, 1..=500, "limit")?;
        let skip: usize = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?.unwrap_or(0);
        let direction = input.direction.unwrap_or_default();
        let wanted_relations: Option<BTreeSet<String>> = input.relation_types.map(|t| t.into_iter().collect());
        let wanted_types: Option<BTreeSet<String>> =
            input.entity_types.map(|t| t.iter().map(|t| t.to_lowercase()).collect());
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let first = memory::find(&mut tx, &view, seed).await?;
        // Breadth-first: each hop reads the relations of the frontier and the entities they reach.
        let mut found: Vec<(otc_store::Entity, u32)> = vec![(first, 0)];
        let mut at: HashMap<Uuid, u32> = HashMap::from([(seed, 0)]);
        let mut walked: BTreeSet<otc_store::Relation> = BTreeSet::new();
        let mut frontier = vec![seed];
        // A hub at depth 4 could reach the whole memory: the walk stops at this many entities.
        const MOST: usize = 5_000;
        for hop in 1..=depth {
            if frontier.is_empty() || found.len() >= MOST {
                break;
            }
            let relations = tx.relations_of(view.vault.id, &frontier).await.map_err(store_err)?;
            let mut next: Vec<Uuid> = Vec::new();
            for r in relations {
                if wanted_relations.as_ref().is_some_and(|w| !w.contains(&r.relation_type)) {
                    continue;
                }
                let step = match direction {
                    Direction::Out => frontier.contains(&r.source_id).then_some(r.target_id),
                    Direction::In => frontier.contains(&r.target_id).then_some(r.source_id),
                    Direction::Both => Some(if frontier.contains(&r.source_id) { r.target_id } else { r.source_id }),
                };
                let Some(other) = step else { continue };
                walked.insert(r);
                if !at.contains_key(&other) && !next.contains(&other) {
                    next.push(other);
                }
            }
            let reached = tx.entities(view.vault.id, &next).await.map_err(store_err)?;
            frontier = Vec::new();
            for e in reached {
                if !memory::visible(&view, &e) || found.len() >= MOST {
                    continue;
                }
                at.insert(e.id, hop);
                frontier.push(e.id);
                found.push((e, hop));
            }
        }
        found.sort_by(|(a, da), (b, db)| {
            da.cmp(db).then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase())).then(a.id.cmp(&b.id))
        });
        let kept: Vec<(otc_store::Entity, u32)> = found
            .into_iter()
            .filter(|(e, d)| *d == 0 || wanted_types.as_ref().is_none_or(|w| w.contains(&e.kind.to_lowercase())))
            .collect();
        let more = kept.len() > skip + limit;
        let page: Vec<(otc_store::Entity, u32)> = kept.into_iter().skip(skip).take(limit).collect();
        let ids: Vec<Uuid> = page.iter().map(|(e, _)| e.id).collect();
        let observations = tx
            .observations(view.vault.id, &ids, chrono::Utc::now(), input.include_retired.unwrap_or(false))
            .await
            .map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        let on_page: BTreeSet<Uuid> = ids.iter().copied().collect();
        Ok(Output {
            vault: view.vault.name.clone(),
            entities: page
                .iter()
                .map(|(e, d)| Node {
                    entity: EntityOut::of(e, detailed),
                    depth: *d,
                    observations: observations
                        .iter()
                        .filter(|o| o.entity_id == e.id)
                        .map(|o| ObservationOut::of(o, detailed))
                        .collect(),
                })
                .collect(),
            relations: walked
                .iter()
                .filter(|r| on_page.contains(&r.source_id) && on_page.contains(&r.target_id))
                .map(RelationOut::of)
                .collect(),
            next_cursor: more.then(|| encode_cursor(ctx.tool, &(skip + limit))),
        })
    }
}
