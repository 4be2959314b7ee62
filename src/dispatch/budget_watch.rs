//! A plan's hard budget as one running unit sees it (`orchestrate
//! --hard-budget`): the unit's usage so far goes out as its frames report it,
//! and the reason comes back once the plan's total reaches the budget; the
//! supervisor then ends the engine like a timeout.

use std::sync::Arc;

use tokio::sync::watch;

use crate::engine::Projector;
use crate::engine::{Running, Usage};

/// Called with the unit's usage so far, each time it changes.
pub type LiveUsage = Arc<dyn Fn(&Usage) + Send + Sync>;

#[derive(Clone)]
pub struct BudgetWatch {
    /// `Some(reason)` once the budget is reached.
    pub stop: watch::Receiver<Option<String>>,
    pub live: LiveUsage,
}

impl std::fmt::Debug for BudgetWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BudgetWatch")
            .field("stop", &*self.stop.borrow())
            .finish_non_exhaustive()
    }
}

/// Tells the plan what the run has used so far. A resumed session's running
/// total (codex's tokens, claude's cost) is not this run's figure: it waits
/// for the run's end.
pub(super) fn report(watch: Option<&BudgetWatch>, resumed: bool, projector: &Projector) {
    let Some(w) = watch else { return };
    match projector.tracker().usage() {
        (Some(u), running) if !(resumed && running != Running::None) => (w.live)(u),
        _ => {}
    }
}

/// The reason, once the plan's hard budget is reached; never without one.
pub(super) async fn reached(rx: &mut Option<watch::Receiver<Option<String>>>) -> String {
    if let Some(rx) = rx
        && let Ok(why) = rx.wait_for(Option::is_some).await
    {
        return why.clone().unwrap_or_default();
    }
    // No budget, or its sender is gone: nothing will ever stop this run.
    std::future::pending().await
}
