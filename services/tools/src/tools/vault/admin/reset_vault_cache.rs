//! reset_vault_cache: drops what is derived from a vault and builds it again, for repair: the
//! gateways' caches of it, its embedding vectors (every model's; the configured model's set is
//! started again, so the workers embed every chunk anew, unchanged text from the tenant's
//! embedding cache) and its index (rebuilt as index_vault does). The files are never touched.
//! Needs confirmation; the answer counts what was dropped.

use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, Sometimes, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use otc_kernel::{CallContext, Tool, caller_vault, writing};

pub struct ResetVaultCache;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    Caches,
    Embeddings,
    Index,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Default all three.
    #[serde(default)]
    pub include: Option<Vec<Part>>,
    /// Confirmation token.
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub id: String,
    pub reset: Vec<Part>,
    /// With caches: what was dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caches_dropped: Vec<&'static str>,
    /// With embeddings: the vectors deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vectors_dropped: Option<i64>,
    /// With embeddings: the model the workers embed the vault with again (none when no provider
    /// is configured: the vectors are dropped and none are made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// With index: index_vault's answer (its result, or a task handle to poll).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub index: Option<Value>,
}

impl Tool for ResetVaultCache {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Index),
        scopes: &["admin:vault"],
        scope_class: ScopeClass::Admin,
        destructive: Sometimes::Always,
        hitl: Sometimes::Always,
        core: false,
        response_format: Format::Fixed { why: "an acknowledgement with the rows dropped: the blast radius" },
        ..ToolSpec::base(
            "reset_vault_cache",
            "Reset a vault's derived data",
            "Drops and rebuilds a vault's derived data: server caches, embedding vectors and the index. Notes are not \
             touched. Needs confirmation.",
            Domain::Vault,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let vault = caller_vault(ctx, &input.vault).await?;
        let mut parts = input.include.unwrap_or_else(|| vec![Part::Caches, Part::Embeddings, Part::Index]);
        parts.sort_by_key(|p| *p as u8);
        parts.dedup();
        let what: Vec<&str> = parts
            .iter()
            .map(|p| match p {
                Part::Caches => "every server's cached state",
                Part::Embeddings => "its embedding vectors",
                Part::Index => "its index",
            })
            .collect();
        writing::confirm(ctx, true, &format!("drop {} of vault {} and build it again", what.join(", "), vault.name))
            .await?;
        let mut out = Output {
            vault: vault.name.clone(),
            id: vault.id.to_string(),
            reset: parts.clone(),
            caches_dropped: Vec::new(),
            vectors_dropped: None,
            embedding_model: None,
            index: None,
        };
        if parts.contains(&Part::Embeddings) {
            let active = ctx.services().embeddings.active().map(|e| (e.model().to_string(), e.dims()));
            let mut tx = ctx.begin().await?;
            let status = tx.embedding_status(vault.id).await?;
            for model in &status.models {
                tx.drop_vault_model(vault.id, &model.model).await?;
            }
            if let Some((model, dims)) = &active {
                tx.start_vault_model(vault.id, model, *dims as i32).await?;
            }
            tx.commit().await?;
            out.vectors_dropped = Some(status.vectors.iter().sum());
            out.embedding_model = active.map(|(model, _)| model);
        }
        if parts.contains(&Part::Index) {
            out.index = Some(ctx.call_part_json("index_vault", json!({"vault": vault.name})).await?);
        }
        if parts.contains(&Part::Caches) {
            out.caches_dropped = super::drop_cached(ctx, &vault).await?;
        }
        Ok(out)
    }
}
