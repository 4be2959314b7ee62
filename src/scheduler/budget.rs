//! The plan's budget: once the usage of its units reaches `[budget]` (or
//! `--max-cost` / `--max-tokens`), no new unit starts; those left are
//! `notStarted` with reason `budget`, without a marker, ready for `--resume`.
//! With `--hard-budget` (`[budget] hard = true`) the running units are ended
//! too, the way a timeout ends them, and are `failed` with reason `budget`.
//!
//! The running total is every attempt's usage: a rate-limited attempt that
//! was retried still spent what it spent.

use tokio::sync::watch;

use super::{Run, RunState};
use crate::error::Reason;
use crate::usage::Usage;

/// Tells every running unit's supervisor that the hard budget was reached.
pub(super) struct HardStop(watch::Sender<Option<String>>);

impl Default for HardStop {
    fn default() -> Self {
        HardStop(watch::channel(None).0)
    }
}

impl HardStop {
    /// What a unit's spec watches (`None` unless the budget is hard).
    pub(super) fn receiver(&self, hard: bool) -> Option<watch::Receiver<Option<String>>> {
        hard.then(|| self.0.subscribe())
    }

    fn fire(&self, why: &str) {
        if self.0.borrow().is_none() {
            self.0.send_replace(Some(why.to_string()));
        }
    }
}

impl Run {
    /// True when the budget is reached; then every waiting unit is set aside,
    /// and with a hard budget every running one is told to end.
    pub(super) fn over_budget(&mut self) -> bool {
        let Some(why) = self.req.budget.reached(self.spent().as_ref()) else {
            return false;
        };
        if self.req.budget.hard {
            self.hard.fire(&why);
        }
        for u in self
            .units
            .iter_mut()
            .filter(|u| u.report.state == RunState::Waiting)
        {
            u.report.state = RunState::NotStarted;
            u.report.reason = Some(Reason::Budget);
            u.report.error = Some(why.clone());
        }
        true
    }

    /// Every attempt's usage in this run (and done units' from their markers).
    pub(super) fn spent(&self) -> Option<Usage> {
        let each = self.units.iter().flat_map(|u| {
            // Until its next attempt ends, a retried unit's report still shows
            // the attempt already counted in `earlier_usage`.
            let retrying = matches!(
                u.report.state,
                RunState::Waiting | RunState::Running | RunState::NotStarted
            );
            let latest = u.report.usage.as_ref().filter(|_| !retrying);
            u.retry.earlier_usage.as_ref().into_iter().chain(latest)
        });
        crate::usage::total(each)
    }
}
