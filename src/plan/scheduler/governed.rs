//! The plan's side of the quota governor (`crate::quota`): a unit starts
//! only on an open account of its engine; a held one waits in the plan
//! (`waiting`, with `heldBy`), listed in the ledger as a waiter; a unit that
//! meets the wall moves at once to another open account of its engine when
//! its keys let it rotate.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{Run, RunState, Shared};
use crate::dispatch::DispatchResult;
use crate::engine::EngineId;
use crate::ground::error::{Reason, Result};
use crate::quota::{self, Account, HeldBy};

/// A held unit asks the ledger again at least this often: another process
/// may clear the hold (`vf quota clear`) or take the next staggered start.
const RECHECK: Duration = Duration::from_secs(1);

/// Peeks made in one sweep, per engine and preferred account.
pub(super) type Peeks = HashMap<(EngineId, Option<String>), Option<Box<HeldBy>>>;

impl Run {
    /// Whether unit `i`'s engine has an open account now; when it has none
    /// and the unit could otherwise start, it is marked held.
    pub(super) fn quota_open(&mut self, i: usize, peeks: &mut Peeks, reporter: &Shared) -> bool {
        let engine = self.jobs[i].engine;
        let prefer = self.units[i].report.account.clone();
        let key = (engine, prefer.clone());
        let held = match peeks.get(&key) {
            Some(h) => h.clone(),
            None => {
                let (r, warnings) =
                    quota::choose(&self.jobs[i].plan.quota, engine, prefer.as_deref());
                self.quota_warnings(i, warnings, reporter);
                let h = r.err();
                peeks.insert(key, h.clone());
                h
            }
        };
        match held {
            None => true,
            Some(h) => {
                self.hold(i, *h, reporter);
                false
            }
        }
    }

    /// Takes the start of unit `i`: the account it runs on (`None`: the
    /// engine's default), or `Err` when the ledger holds it after all (a
    /// staggered start another unit took): it stays waiting.
    pub(super) fn take_start(
        &mut self,
        i: usize,
        reporter: &Shared,
    ) -> std::result::Result<Option<Account>, ()> {
        let engine = self.jobs[i].engine;
        let prefer = self.units[i].report.account.clone();
        let ask = &self.jobs[i].plan.quota;
        let (chosen, warnings) = quota::choose(ask, engine, prefer.as_deref());
        self.quota_warnings(i, warnings, reporter);
        let account = match chosen {
            Ok(a) => a,
            Err(h) => {
                self.hold(i, *h, reporter);
                return Err(());
            }
        };
        let name = account.as_ref().map_or(quota::DEFAULT_ACCOUNT, |a| &a.name);
        let (admitted, w) = quota::admit(engine, name, &self.jobs[i].plan.quota.limits);
        self.quota_warnings(i, w.into_iter().collect(), reporter);
        match admitted {
            Ok(()) => {
                self.unhold(i);
                Ok(account)
            }
            Err(h) => {
                self.hold(i, *h, reporter);
                Err(())
            }
        }
    }

    /// Unit `i` waits on `held`: its row says so (told once per change),
    /// the ledger lists it, and it looks again by the hold's end.
    pub(super) fn hold(&mut self, i: usize, held: HeldBy, reporter: &Shared) {
        let until_ms = quota::entry::parse_ms(&held.until).unwrap_or(0);
        let left = Duration::from_millis(until_ms.saturating_sub(quota::now_ms()));
        let u = &mut self.units[i];
        u.retry.not_before = Some(Instant::now() + left.min(RECHECK));
        if u.report.held_by.as_ref() == Some(&held) {
            return;
        }
        let engine = self.jobs[i].engine;
        if let Some(old) = u.report.held_by.take() {
            self.unlist(i, &old);
        }
        let me = (
            self.jobs[i].plan.name.as_str(),
            self.req.state_dir.as_path(),
        );
        let w = quota::waiting(engine, &held.account, me, true);
        let u = &mut self.units[i];
        u.report.held_by = Some(held);
        reporter.borrow_mut().held(i, &u.report);
        self.quota_warnings(i, w.into_iter().collect(), reporter);
    }

    /// Unit `i` is no longer held (it starts, or the plan ends).
    pub(super) fn unhold(&mut self, i: usize) {
        if let Some(old) = self.units[i].report.held_by.take() {
            self.unlist(i, &old);
        }
    }

    fn unlist(&self, i: usize, held: &HeldBy) {
        let me = (
            self.jobs[i].plan.name.as_str(),
            self.req.state_dir.as_path(),
        );
        // A warning here was given when the unit was listed.
        let _ = quota::waiting(self.jobs[i].engine, &held.account, me, false);
    }

    fn quota_warnings(&self, i: usize, warnings: Vec<String>, reporter: &Shared) {
        for w in warnings {
            reporter.borrow_mut().warning(i, &w);
        }
    }

    /// After unit `i` met the wall: the next open account of its engine,
    /// when its keys let it rotate (no pinned account, `rotate` on, two or
    /// more declared); the row says which account it left.
    pub(super) fn rotate(
        &mut self,
        i: usize,
        res: &DispatchResult,
        reporter: &Shared,
    ) -> Option<String> {
        let ask = &self.jobs[i].plan.quota;
        let declared = ask
            .accounts
            .iter()
            .filter(|a| a.engine == res.engine)
            .count();
        let limited = res.reason == Some(Reason::RateLimited);
        if !limited || ask.rule.pinned.is_some() || ask.rule.no_rotate || declared < 2 {
            return None;
        }
        let (chosen, warnings) = quota::choose(ask, res.engine, None);
        self.quota_warnings(i, warnings, reporter);
        let to = chosen.ok()??;
        let from = res
            .account
            .clone()
            .unwrap_or_else(|| quota::DEFAULT_ACCOUNT.into());
        (to.name != from).then(|| {
            self.units[i].report.rotated_from.push(from.clone());
            format!(
                "rate-limited on {}/{from}: restarting on {}/{} with the replay of its answers",
                res.engine, res.engine, to.name
            )
        })
    }

    /// The plan ends: no unit of it waits on an account any more.
    pub(super) fn unhold_all(&mut self) {
        for i in 0..self.units.len() {
            if self.units[i].report.state != RunState::Running {
                self.unhold(i);
            }
        }
    }

    /// A dispatch the governor refused (a round's engine held, a start
    /// another process took): the unit waits again, not failed.
    pub(super) fn refused_start(
        &mut self,
        i: usize,
        held: HeldBy,
        reporter: &Shared,
    ) -> Result<()> {
        self.units[i].report.again()?;
        self.hold(i, held, reporter);
        Ok(())
    }
}
