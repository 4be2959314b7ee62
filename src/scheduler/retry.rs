//! A rate-limited unit under `on_rate_limit = "wait" | "fallback"`: the next
//! attempt is scheduled instead of the unit failing (see [`crate::ratelimit`]).

use std::time::{Duration, Instant};

use super::{Run, RunState, Shared};
use crate::dispatch::DispatchResult;
use crate::error::Reason;
use crate::ratelimit::{self, Next, OnRateLimit};

/// A unit's rate-limit bookkeeping in this plan run.
#[derive(Debug, Default)]
pub(super) struct Retry {
    /// Not started again before this (a wait in progress).
    pub not_before: Option<Instant>,
    /// The next start continues after a rate limit (its marker decides how).
    pub pending: bool,
    waited: Duration,
    waits: u32,
    /// Starts again under `retries` so far.
    retried: u32,
    /// What its rate-limited attempts consumed, the one it waits after included.
    pub earlier_usage: Option<crate::usage::Usage>,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// `HH:MM:SS` (UTC) of a wait's end, for the live table and the JSONL event.
fn clock(d: Duration) -> String {
    let at = now_secs() + d.as_secs();
    let t = crate::fsutil::rfc3339(at, 0);
    t[11..19].to_string()
}

impl Run {
    /// Records the attempt of unit `i` and, when it was rate-limited and its
    /// policy allows, schedules the next one. True: the unit goes on.
    pub(super) fn after_attempt(
        &mut self,
        i: usize,
        res: &DispatchResult,
        reporter: &Shared,
    ) -> bool {
        let u = &mut self.units[i];
        let policy = &self.jobs[i].plan.rate_limit;
        if policy.on == OnRateLimit::Fail {
            return false;
        }
        // Its marker has them already (`markers::Attempts`, in its task).
        let attempts = u.report.attempts.get_or_insert_with(Vec::new);
        attempts.push(super::markers::attempt_of(res));
        if res.reason != Some(Reason::RateLimited) {
            return false;
        }
        let (job, u) = (&mut self.jobs[i], &mut self.units[i]);
        let reset = res
            .retry_at
            .as_deref()
            .and_then(|t| ratelimit::until(t, now_secs()));
        let ready = |e| crate::binary::resolve_binary(e, None).is_ok();
        let spent = (u.retry.waited, u.retry.waits);
        let next = ratelimit::next(&job.plan.rate_limit, res.engine, spent, reset, ready);
        let why = match next {
            Next::Fail => return false,
            Next::Wait(d) => {
                u.retry.waited += d;
                u.retry.waits += 1;
                u.retry.not_before = Some(Instant::now() + ratelimit::scaled(d));
                format!("rate-limited: waiting until {}", clock(d))
            }
            Next::Fallback(engine) => {
                job.engine = engine;
                u.report.engine = engine;
                u.retry.not_before = None;
                format!("rate-limited: falling back to {engine}")
            }
        };
        u.retry.pending = true;
        // Kept for the budget: the next attempt's usage replaces the report's.
        let this = u.report.usage.as_ref();
        u.retry.earlier_usage = crate::usage::total(u.retry.earlier_usage.iter().chain(this));
        u.report.state = RunState::Waiting;
        u.report.error = Some(why);
        reporter.borrow_mut().waiting(i, &u.report, res);
        true
    }

    /// `retries = N`: a unit whose engine failed (exit 1) or stalled or timed
    /// out (4) starts again, at most N times (its marker decides how: the
    /// exact session, else a fresh one with the replay). True: it goes on.
    pub(super) fn retry_failed(
        &mut self,
        i: usize,
        res: &DispatchResult,
        reporter: &Shared,
    ) -> bool {
        use crate::error::exit;
        let exit = res.vf_exit();
        let retryable = res.state == crate::marker::UnitState::Failed
            && (exit == exit::ENGINE_FAILED || exit == exit::TIMEOUT);
        let (allowed, u) = (self.jobs[i].plan.retries, &mut self.units[i]);
        if !retryable || u.retry.retried >= allowed {
            return false;
        }
        u.retry.retried += 1;
        u.retry.pending = true;
        let this = u.report.usage.as_ref();
        u.retry.earlier_usage = crate::usage::total(u.retry.earlier_usage.iter().chain(this));
        u.report.state = RunState::Waiting;
        let why = u.report.error.take().unwrap_or_else(|| "failed".into());
        u.report.error = Some(format!("{why}; retry {} of {allowed}", u.retry.retried));
        reporter.borrow_mut().waiting(i, &u.report, res);
        true
    }

    /// What unit `i`'s task needs to keep its attempts in its marker
    /// (`engineAttempts`), when its policy keeps them.
    pub(super) fn keeps_attempts(&self, i: usize) -> Option<super::markers::Attempts> {
        let job = &self.jobs[i];
        (job.plan.rate_limit.on != OnRateLimit::Fail).then(|| super::markers::Attempts {
            state_dir: self.req.state_dir.clone(),
            unit: job.plan.name.clone(),
            before: self.units[i].report.attempts.clone().unwrap_or_default(),
        })
    }

    /// Whether unit `i` may start now (no wait in progress).
    pub(super) fn due(&self, i: usize) -> bool {
        self.units[i]
            .retry
            .not_before
            .is_none_or(|t| t <= Instant::now())
    }

    /// The end of the earliest wait in progress, if any.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.units
            .iter()
            .filter(|u| u.report.state == RunState::Waiting)
            .filter_map(|u| u.retry.not_before)
            .min()
    }
}
