//! Whether a keyed call could have changed anything: the commits it sent of transactions that
//! wrote. A call's effects on a vault, its memory or its settings all land through a Postgres
//! transaction, and one that never sent COMMIT after writing changed nothing (blobs are
//! addressed by their content and stay unread until a commit names them). So a keyed call that
//! failed before such a commit provably did not run, and its idempotency key can be given back
//! rather than answer indeterminate_outcome.
//!
//! The count is kept for the task that runs the call: [`CallEffects::track`] scopes it. Inside,
//! each commit first asks Postgres whether its transaction wrote (one round trip, only there:
//! calls without a key are not tracked), and one that did counts for the call and for every
//! tracked call around it (a facade's, a bundle's). A commit made in a task the call spawned is
//! not seen, so tools write in their call's task.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::{Postgres, Transaction};

tokio::task_local! {
    static CURRENT: Arc<Node>;
}

struct Node {
    sent: AtomicU32,
    /// The call this one runs inside, which a commit here is a commit of too.
    outer: Option<Arc<Node>>,
}

/// One call's count of commits sent.
#[derive(Clone)]
pub struct CallEffects(Arc<Node>);

impl CallEffects {
    /// A fresh count, inside the tracked call running now (if any).
    pub fn new() -> Self {
        let outer = CURRENT.try_with(Arc::clone).ok();
        CallEffects(Arc::new(Node { sent: AtomicU32::new(0), outer }))
    }

    /// Runs `call` with its commits counted here.
    pub async fn track<F: Future>(&self, call: F) -> F::Output {
        CURRENT.scope(self.0.clone(), call).await
    }

    /// Whether any commit was sent: if not, nothing the call did can have landed.
    pub fn committed_any(&self) -> bool {
        self.0.sent.load(Ordering::Acquire) > 0
    }
}

impl Default for CallEffects {
    fn default() -> Self {
        Self::new()
    }
}

/// Commits `tx`, counted for the tracked call running now (if any) when it wrote: counted
/// before COMMIT is sent, since once sent it may land even if its answer is lost.
pub(crate) async fn commit(mut tx: Transaction<'static, Postgres>) -> sqlx::Result<()> {
    if let Ok(node) = CURRENT.try_with(Arc::clone) {
        let wrote: bool =
            sqlx::query_scalar("SELECT pg_current_xact_id_if_assigned() IS NOT NULL").fetch_one(&mut *tx).await?;
        if wrote {
            sent(&node);
        }
    }
    tx.commit().await
}

fn sent(node: &Arc<Node>) {
    let mut at = Some(node);
    while let Some(node) = at {
        node.sent.fetch_add(1, Ordering::AcqRel);
        at = node.outer.as_ref();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_commit_counts_for_its_call_and_every_call_around_it() {
        let outer = CallEffects::new();
        let (inner_sent, sibling_sent) = outer
            .track(async {
                let sibling = CallEffects::new();
                sibling.track(async {}).await;
                let inner = CallEffects::new();
                inner.track(async { sent(&CURRENT.with(Arc::clone)) }).await;
                (inner.committed_any(), sibling.committed_any())
            })
            .await;
        assert!(inner_sent);
        assert!(!sibling_sent, "a call that sent nothing is not charged with its sibling's commit");
        assert!(outer.committed_any());
    }
}
