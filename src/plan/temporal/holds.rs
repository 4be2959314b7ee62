//! The workflow as the quota governor of its plan (docs/QUOTA.md,
//! docs/DISTRIBUTED.md): what a unit's attempt met on any worker (a rate
//! limit, a refusal by that worker's own ledger, a clean end) is kept here,
//! in the workflow's state, so no unit of that engine and account is
//! scheduled before the reset, whichever worker would run it.
//!
//! The rules are the ledger's own ([`crate::quota::gate`]: hold, shared
//! back-off, staggered release), applied to the workflow's entries with the
//! workflow's time, so a replay decides the same. Pure: no clock, no I/O.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::EngineId;
use crate::quota::gate::{self, Gate, Learned, Limits};
use crate::quota::{DEFAULT_ACCOUNT, Entry, HeldBy, HoldKind};

/// The shortest hold a worker's refusal gives: its `until` may already be
/// past by the workflow's clock (skew), and an order sent again at once
/// would be refused again.
const MIN_HOLD_MS: u64 = 1_000;

/// Every engine account the plan's attempts taught something (carried
/// across a continue-as-new).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Governor {
    pub entries: Vec<Entry>,
}

impl Governor {
    fn find(&mut self, engine: EngineId, account: &str) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .find(|e| e.key() == (engine.as_str(), account))
    }

    fn entry(&mut self, engine: EngineId, account: &str) -> &mut Entry {
        let i = match self
            .entries
            .iter()
            .position(|e| e.key() == (engine.as_str(), account))
        {
            Some(i) => i,
            None => {
                self.entries.push(Entry::new(engine.as_str(), account));
                self.entries.len() - 1
            }
        };
        &mut self.entries[i]
    }

    /// Whether a unit of `engine` may be scheduled at `now`, taking the
    /// start when it may (a start after a hold makes the next wait its
    /// `stagger`). `account`: the one the unit is known to run on (its
    /// latest attempt's, or the one that held it); unknown, any account of
    /// the engine this plan knows that is open will do (the worker chooses
    /// among those the order does not name as held).
    pub fn admit(
        &mut self,
        engine: EngineId,
        account: Option<&str>,
        now: u64,
        lim: &Limits,
    ) -> Result<(), Box<HeldBy>> {
        let keys: Vec<String> = match account {
            Some(a) => vec![a.to_string()],
            None => self
                .entries
                .iter()
                .filter(|e| e.engine == engine.as_str())
                .map(|e| e.account.clone())
                .collect(),
        };
        let mut first: Option<Box<HeldBy>> = None;
        for k in keys {
            let Some(e) = self.find(engine, &k) else {
                return Ok(());
            };
            let g = gate::gate(e, now, lim);
            gate::started(e, now, &g);
            match g {
                Gate::Open { .. } => return Ok(()),
                Gate::Held { until, kind } => {
                    let h = gate::held_by(e, until, kind);
                    if first.as_ref().is_none_or(|f| h.until < f.until) {
                        first = Some(Box::new(h));
                    }
                }
            }
        }
        match first {
            Some(h) => Err(h),
            // Nothing known of the engine: open.
            None => Ok(()),
        }
    }

    /// The accounts of `engine` held at `now`, for an order: its worker
    /// does not choose them.
    pub fn held_of(&self, engine: EngineId, now: u64) -> Vec<HeldBy> {
        let held =
            |e: &&Entry| e.engine == engine.as_str() && e.held_until.is_some_and(|u| u > now);
        self.entries
            .iter()
            .filter(held)
            .map(|e| {
                let kind = e.hold.unwrap_or(HoldKind::RateLimited);
                gate::held_by(e, e.held_until.unwrap_or(now), kind)
            })
            .collect()
    }

    /// An attempt of `unit` on `engine`'s `account` ended rate-limited on a
    /// worker: held until `retry_at` (the engine's reset, RFC 3339, scaled
    /// as every wait is), else the shared back-off.
    pub fn learn_limit(
        &mut self,
        (engine, account): (EngineId, &str),
        unit: &str,
        retry_at: Option<&str>,
        (now, host): (u64, &str),
    ) {
        let reset = retry_at
            .and_then(crate::quota::entry::parse_ms)
            .map(|at| now + scaled_ms(Duration::from_millis(at.saturating_sub(now))));
        let source = match reset {
            Some(_) => format!("a rate-limited run on worker {host}, reset named by the engine"),
            None => format!("a rate-limited run on worker {host}, no reset named"),
        };
        let by = Learned {
            now,
            unit,
            source: &source,
        };
        let backoff = |n| scaled_ms(crate::quota::backoff(n));
        gate::learn_limit(self.entry(engine, account), reset, backoff, by);
    }

    /// A worker's own ledger refused the start (`held`): the plan holds
    /// that account as long, every worker alike.
    pub fn learn_held(&mut self, engine: EngineId, held: &HeldBy, (now, host): (u64, &str)) {
        let until = crate::quota::entry::parse_ms(&held.until)
            .unwrap_or(now)
            .max(now + MIN_HOLD_MS);
        let e = self.entry(engine, &held.account);
        // A later fact never shortens a hold another unit taught.
        if e.held_until.is_none_or(|h| h < until) {
            (e.held_until, e.hold) = (Some(until), Some(held.kind));
        }
        // What was releasing starts over after this hold.
        (e.releasing, e.released_at, e.last_start) = (false, None, None);
        e.learned_at = Some(now);
        e.unit = held.unit.clone();
        let was = held.source.as_deref().unwrap_or("its ledger");
        e.source = Some(format!("worker {host}'s ledger: {was}"));
    }

    /// An attempt that the workflow scheduled at `started` ended done.
    pub fn learn_ok(&mut self, engine: EngineId, account: &str, started: u64) {
        if let Some(e) = self.find(engine, account) {
            gate::learn_ok(e, started);
        }
    }

    /// Entries with nothing left to remember are dropped (what a
    /// continue-as-new carries stays small).
    pub fn prune(&mut self) {
        self.entries.retain(|e| !e.is_idle());
    }
}

/// The account a row names (absent: the engine's default).
pub fn account_of(row_account: Option<&str>) -> &str {
    row_account.unwrap_or(DEFAULT_ACCOUNT)
}

/// `d` as the workflow waits it (the test scale), in ms.
pub fn scaled_ms(d: Duration) -> u64 {
    crate::quota::scaled(d).as_millis() as u64
}

/// A unit's `stagger` in ms (already scaled by the submitter), else the default.
pub fn limits(stagger_ms: Option<u64>) -> Limits {
    Limits {
        pause_at: None,
        stagger_ms: stagger_ms.unwrap_or_else(|| scaled_ms(gate::DEFAULT_STAGGER)),
    }
}

#[cfg(test)]
#[path = "holds_tests.rs"]
mod tests;
