//! The plan's budget: once the usage of its units reaches `[budget]` (or
//! `--max-cost` / `--max-tokens`), no new unit starts; those left are
//! `notStarted` with reason `budget`, without a marker, ready for `--resume`.
//! With `--hard-budget` (`[budget] hard = true`) the running units are ended
//! too, the way a timeout ends them, and are `failed` with reason `budget`.
//!
//! The running total is every attempt's usage: a rate-limited attempt that
//! was retried still spent what it spent; a unit with children counts its
//! `treeUsage` (its own usage and theirs).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::{Run, RunState};
use crate::dispatch::BudgetWatch;
use crate::engine::usage::{Budget, Usage};
use crate::ground::error::Reason;

/// The hard budget shared with the running units' supervisors: their live
/// usage comes in, and the reason goes out once the total reaches it.
#[derive(Default)]
pub(super) struct HardStop(Arc<Shared>);

#[derive(Default)]
struct Shared {
    stop: watch::Sender<Option<String>>,
    live: Mutex<Live>,
}

#[derive(Default)]
struct Live {
    budget: Budget,
    /// What the plan has spent apart from the running units.
    settled: Option<Usage>,
    /// Each running unit's usage so far, by its index.
    running: BTreeMap<usize, Usage>,
}

impl Shared {
    fn fire(&self, why: &str) {
        if self.stop.borrow().is_none() {
            self.stop.send_replace(Some(why.to_string()));
        }
    }

    /// Unit `i` has used `u` so far.
    fn live(&self, i: usize, u: &Usage) {
        let why = {
            let Ok(mut l) = self.live.lock() else { return };
            l.running.insert(i, u.clone());
            let total = crate::engine::usage::total(l.settled.iter().chain(l.running.values()));
            l.budget.reached(total.as_ref())
        };
        if let Some(why) = why {
            self.fire(&why);
        }
    }
}

impl HardStop {
    /// What unit `i`'s spec carries (`None` unless the budget is hard).
    pub(super) fn watch(&self, i: usize, budget: Budget) -> Option<BudgetWatch> {
        if !budget.hard {
            return None;
        }
        if let Ok(mut l) = self.0.live.lock() {
            l.budget = budget;
        }
        let shared = self.0.clone();
        Some(BudgetWatch {
            stop: self.0.stop.subscribe(),
            live: Arc::new(move |u: &Usage| shared.live(i, u)),
        })
    }

    /// The reason, once running units' live usage has reached the budget.
    fn fired(&self) -> Option<String> {
        self.0.stop.borrow().clone()
    }

    /// The settled total, and which units still run (the others' final usage
    /// is in `settled`).
    fn settle(&self, settled: Option<Usage>, running: impl Fn(usize) -> bool) {
        if let Ok(mut l) = self.0.live.lock() {
            l.settled = settled;
            l.running.retain(|i, _| running(*i));
        }
    }
}

impl Run {
    /// True when the budget is reached; then every waiting unit is set aside,
    /// and with a hard budget every running one is told to end. A hard budget
    /// that running units' live usage reached is reached, even while the
    /// settled total is below it: live reports and this check run on the
    /// scheduler's one thread, so a start decided after the budget was
    /// reached never happens.
    pub(super) fn over_budget(&mut self) -> crate::ground::error::Result<bool> {
        // Without a limit nothing is summed: the sum is over every unit, and
        // this runs each time a unit ends.
        if !self.req.budget.limits() {
            return Ok(false);
        }
        let spent = self.spent();
        let running = |i: usize| self.units[i].report.state == RunState::Running;
        self.hard.settle(spent.clone(), running);
        let why = self.hard.fired();
        let Some(why) = why.or_else(|| self.req.budget.reached(spent.as_ref())) else {
            return Ok(false);
        };
        if self.req.budget.hard {
            self.hard.0.fire(&why);
        }
        for u in self
            .units
            .iter_mut()
            .filter(|u| u.report.state == RunState::Waiting)
        {
            u.report.not_started()?;
            u.report.reason = Some(Reason::Budget);
            u.report.error = Some(why.clone());
        }
        Ok(true)
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
            // A unit's children (started by its engine through vf) spend
            // from the plan's budget too.
            let report = &u.report;
            let latest = report.tree_usage.as_ref().or(report.usage.as_ref());
            let latest = latest.filter(|_| !retrying);
            u.retry.earlier_usage.as_ref().into_iter().chain(latest)
        });
        crate::engine::usage::total(each)
    }
}
