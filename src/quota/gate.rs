//! The governor's rules, pure: given an account's ledger entry and the
//! time, may an engine start now, and what does a run's end teach. The
//! ledger (`ledger.rs`) applies them under its lock.

use std::time::Duration;

use super::Signal;
use super::entry::{Entry, Window};
use crate::ground::held::{HeldBy, HoldKind};

/// Starts after a hold go at most one per this long, by default.
pub const DEFAULT_STAGGER: Duration = Duration::from_secs(5);
/// The longest `stagger` a user may ask for.
pub const MAX_STAGGER: Duration = Duration::from_secs(3600);

/// What this process governs by (its own `pause_at` and `stagger`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Percent (1–100) at which new starts pause; `None`: only the wall holds.
    pub pause_at: Option<f64>,
    /// Between two starts after a hold, already scaled for tests.
    pub stagger_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            pause_at: None,
            stagger_ms: DEFAULT_STAGGER.as_millis() as u64,
        }
    }
}

/// The answer for one start.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// It may start; `release`: it is a start after a hold (the ledger notes it).
    Open {
        release: bool,
    },
    Held {
        until: u64,
        kind: HoldKind,
    },
}

/// Who taught the ledger a fact.
#[derive(Debug, Clone, Copy)]
pub struct Learned<'a> {
    pub now: u64,
    pub unit: &'a str,
    pub source: &'a str,
}

impl Window {
    /// As [`Signal::reaches`].
    fn reaches(&self, pause_at: f64) -> bool {
        Signal::from(self.clone()).reaches(pause_at)
    }
}

impl From<Window> for Signal {
    fn from(w: Window) -> Signal {
        Signal {
            status: w.status,
            utilization: w.utilization,
            window: w.name,
            resets_at: w.resets_at,
            source: String::new(),
        }
    }
}

/// May a start happen at `now`? Ends what has expired on the way (a past
/// hold or window begins the release: one start per `stagger`).
pub fn gate(e: &mut Entry, now: u64, lim: &Limits) -> Gate {
    if let Some(until) = e.held_until {
        if now < until {
            let kind = e.hold.unwrap_or(HoldKind::RateLimited);
            return Gate::Held { until, kind };
        }
        (e.held_until, e.hold) = (None, None);
        begin_release(e, until);
    }
    if let Some(w) = e.window.clone() {
        let pausing =
            w.status.as_deref() != Some("allowed") || lim.pause_at.is_some_and(|p| w.reaches(p));
        match w.resets_at {
            Some(reset) if now < reset && lim.pause_at.is_some_and(|p| w.reaches(p)) => {
                return Gate::Held {
                    until: reset,
                    kind: HoldKind::Paused,
                };
            }
            Some(reset) if now < reset => {}
            // A window past its reset says nothing any more.
            Some(reset) => {
                e.window = None;
                if pausing {
                    begin_release(e, reset);
                }
            }
            None => {}
        }
    }
    if !e.releasing {
        return Gate::Open { release: false };
    }
    match e.last_start {
        Some(last) if now < last + lim.stagger_ms => Gate::Held {
            until: last + lim.stagger_ms,
            kind: HoldKind::Stagger,
        },
        _ => Gate::Open { release: true },
    }
}

fn begin_release(e: &mut Entry, at: u64) {
    if !e.releasing {
        e.releasing = true;
        e.released_at = Some(at);
        e.last_start = None;
    }
}

/// A start let through at `now` (a release start is noted for the stagger).
pub fn started(e: &mut Entry, now: u64, gate: &Gate) {
    if matches!(gate, Gate::Open { release: true }) {
        e.last_start = Some(now);
    }
}

/// A run ended refused by the provider: no start before `reset` (when the
/// engine named it), else before the shared back-off for this many refusals.
pub fn learn_limit(e: &mut Entry, reset: Option<u64>, backoff: impl Fn(u32) -> u64, by: Learned) {
    let (until, kind) = match reset {
        Some(r) => {
            e.strikes = 0;
            (r.max(by.now), HoldKind::RateLimited)
        }
        None => {
            e.strikes = e.strikes.saturating_add(1);
            (by.now + backoff(e.strikes - 1), HoldKind::Backoff)
        }
    };
    // A later fact never shortens a hold another unit taught.
    if e.held_until.is_none_or(|h| h < until) {
        (e.held_until, e.hold) = (Some(until), Some(kind));
    }
    // What was releasing starts over after this hold.
    (e.releasing, e.released_at, e.last_start) = (false, None, None);
    note(e, by);
}

/// What the engine said of its window while it ran.
pub fn learn_signal(e: &mut Entry, sig: &Signal, by: Learned) {
    e.window = Some(Window {
        status: sig.status.clone(),
        utilization: sig.utilization,
        name: sig.window.clone(),
        resets_at: sig.resets_at,
    });
    note(e, by);
    // A refusal without a reset is learned when the run ends (the back-off).
    if let (true, Some(reset)) = (sig.rejected(), sig.resets_at) {
        learn_limit(e, Some(reset), |_| 0, by);
    }
}

fn note(e: &mut Entry, by: Learned) {
    e.learned_at = Some(by.now);
    e.unit = Some(by.unit.to_string());
    e.source = Some(by.source.to_string());
}

/// A run that started at `started_at` ended without a limit: if it started
/// after the release began, the account is open again for everyone.
pub fn learn_ok(e: &mut Entry, started_at: u64) {
    if e.held_until.is_some() {
        return;
    }
    e.strikes = 0;
    if e.releasing && e.released_at.is_some_and(|r| started_at >= r) {
        (e.releasing, e.released_at, e.last_start) = (false, None, None);
    }
}

/// What holds `e` for the row, the error and `vf quota`.
pub fn held_by(e: &Entry, until: u64, kind: HoldKind) -> HeldBy {
    let w = e.window.as_ref();
    HeldBy {
        engine: e.engine.clone(),
        account: e.account.clone(),
        until: super::entry::rfc3339_ms(until),
        kind,
        unit: e.unit.clone(),
        source: e.source.clone(),
        utilization: w.and_then(|w| w.utilization),
        window: w.and_then(|w| w.name.clone()),
    }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
