//! The tools, one file each under [`tools`], the toolset as data ([`toolset`]), and the features
//! whose helpers they share. Every call runs through the kernel (`otc_kernel`), which knows no
//! feature: what a feature hands it is built here ([`features`]).

pub mod compat;
pub mod tools;
pub mod toolset;

use otc_kernel::features::Features;

/// A feature's configuration section that does not make a client.
#[derive(Debug, thiserror::Error)]
#[error("{section}: {source}")]
pub struct FeatureConfigError {
    pub section: &'static str,
    #[source]
    source: reqwest::Error,
}

/// What the features hand the kernel: the wiki's judge and the PLUR store when configured, and
/// the wiki's page jobs a commit queues.
pub fn features(config: &otc_config::Config) -> Result<Features, FeatureConfigError> {
    let mut features = Features::default()
        .with_commit_jobs(tools::knowledge::wiki::pages::jobs_for)
        .with_vet_commit(tools::knowledge::wiki::vet::vet);
    let judge = tools::knowledge::wiki::judge::Judge::from_config(&config.wiki.judge)
        .map_err(|source| FeatureConfigError { section: "wiki.judge", source })?;
    if let Some(judge) = judge {
        features = features.with(judge);
    }
    let plur = tools::knowledge::plur::Plur::from_config(&config.memory.plur)
        .map_err(|source| FeatureConfigError { section: "memory.plur", source })?;
    if let Some(plur) = plur {
        features = features.with(plur);
    }
    Ok(features)
}
