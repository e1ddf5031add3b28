//! What the tools crate's features hand the kernel without the kernel knowing them: the state a
//! feature builds once from the configuration (its clients, such as the wiki's judge or the PLUR
//! store), found by type, the jobs a commit queues for a feature's workers (a wiki's pages), and
//! the check a tool's commit passes before it lands (a wiki's conventions).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use otc_errors::ToolError;
use otc_store::{Change, NewJob};

use crate::CallContext;
use crate::reading::View;

/// The jobs a commit of changes to `paths` queues, written in the commit's own transaction.
pub type CommitJobs = fn(&View, &mut dyn Iterator<Item = &str>) -> Vec<NewJob>;

/// Vets a tool's commit of `changes` in `view`'s vault before it lands: an error refuses it and
/// nothing is written.
pub type VetCommit = for<'a> fn(&'a CallContext<'a>, &'a View, &'a [Change]) -> BoxFuture<'a, Result<(), ToolError>>;

/// The features' state and hooks, built at start-up.
#[derive(Default)]
pub struct Features {
    state: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    commit_jobs: Option<CommitJobs>,
    vet_commit: Option<VetCommit>,
}

impl Features {
    /// With `value`, found later by its type through [`Features::get`] (one value a type).
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.state.insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// The value of type `T`, when one was given.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.state.get(&TypeId::of::<T>()).and_then(|v| v.downcast_ref::<T>())
    }

    /// With the hook [`Features::commit_jobs`] asks.
    pub fn with_commit_jobs(mut self, hook: CommitJobs) -> Self {
        self.commit_jobs = Some(hook);
        self
    }

    /// With the hook [`Features::vet_commit`] asks.
    pub fn with_vet_commit(mut self, hook: VetCommit) -> Self {
        self.vet_commit = Some(hook);
        self
    }

    /// Whether a tool's commit of `changes` may land.
    pub async fn vet_commit<'a>(
        &self,
        ctx: &'a CallContext<'a>,
        view: &'a View,
        changes: &'a [Change],
    ) -> Result<(), ToolError> {
        match self.vet_commit {
            Some(hook) => hook(ctx, view, changes).await,
            None => Ok(()),
        }
    }

    /// The jobs a commit of changes to `paths` in `view`'s vault queues besides its index job.
    pub fn commit_jobs<'a>(&self, view: &View, mut paths: impl Iterator<Item = &'a str>) -> Vec<NewJob> {
        self.commit_jobs.map(|hook| hook(view, &mut paths)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::Features;

    #[test]
    fn state_is_found_by_its_type() {
        struct Judge(u8);
        struct Store;
        let features = Features::default().with(Judge(7));
        assert_eq!(features.get::<Judge>().map(|j| j.0), Some(7));
        assert!(features.get::<Store>().is_none());
    }
}
