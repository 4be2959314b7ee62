//! The plan's budget: once the usage of its units reaches `[budget]` (or
//! `--max-cost` / `--max-tokens`), no new unit starts; those left are
//! `notStarted` with reason `budget`, without a marker, ready for `--resume`.

use super::{Run, RunState};
use crate::error::Reason;

impl Run {
    /// True when the budget is reached; then every waiting unit is set aside.
    pub(super) fn over_budget(&mut self) -> bool {
        let spent = crate::usage::total(self.units.iter().filter_map(|u| u.report.usage.as_ref()));
        let Some(why) = self.req.budget.reached(spent.as_ref()) else {
            return false;
        };
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
}
