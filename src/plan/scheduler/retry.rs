//! The local run's side of the retry table ([`super::retry_table`]): a
//! failed unit under `retries = N` starts again, a rate-limited unit under
//! `on_rate_limit = "wait" | "fallback"` has its next attempt scheduled
//! (see [`crate::plan::ratelimit`]) instead of failing.

use std::time::{Duration, Instant};

use super::retry_table::{self, Action, Ended, ExecutorKind, Spent};
use super::{Run, RunState, Shared};
use crate::dispatch::DispatchResult;
use crate::ground::error::Result;
use crate::plan::ratelimit::{self, OnRateLimit};

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
    pub earlier_usage: Option<crate::engine::usage::Usage>,
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
    let t = crate::ground::fsutil::rfc3339(at, 0);
    t[11..19].to_string()
}

impl Run {
    /// Records the attempt of unit `i` (when its policy keeps attempts) and
    /// asks the retry table what comes next: a wait or a fallback after a
    /// rate limit, a start again under `retries`. True: the unit goes on.
    pub(super) fn after_attempt(
        &mut self,
        i: usize,
        res: &DispatchResult,
        reporter: &Shared,
    ) -> Result<bool> {
        let (job, u) = (&mut self.jobs[i], &mut self.units[i]);
        if job.plan.rate_limit.on != OnRateLimit::Fail {
            // Its marker has them already (`markers::Attempts`, in its task).
            let attempts = u.report.attempts.get_or_insert_with(Vec::new);
            attempts.push(super::markers::attempt_of(res));
        }
        // At the wall, another open account of its engine comes first.
        if let Some(why) = self.rotate(i, res, reporter) {
            self.units[i].retry.not_before = None;
            return self.go_on(i, why, res, reporter);
        }
        let (job, u) = (&mut self.jobs[i], &mut self.units[i]);
        let ended = Ended::Exit {
            code: res.vf_exit(),
            failed: u.report.state == RunState::Failed,
        };
        let spent = Spent {
            retried: u.retry.retried,
            tries: 0,
        };
        let rate_limit = || {
            let reset = res
                .retry_at
                .as_deref()
                .and_then(|t| ratelimit::until(t, now_secs()));
            let ready = |e| crate::process::binary::resolve_binary(e, None).is_ok();
            let spent = (u.retry.waited, u.retry.waits);
            ratelimit::next(&job.plan.rate_limit, res.engine, spent, reset, ready)
        };
        let allowed = job.plan.retries;
        let why = match retry_table::next(ExecutorKind::Local, ended, allowed, spent, rate_limit) {
            Action::Wait(d) => {
                u.retry.waited += d;
                u.retry.waits += 1;
                u.retry.not_before = Some(Instant::now() + ratelimit::scaled(d));
                format!("rate-limited: waiting until {}", clock(d))
            }
            Action::Fallback(engine) => {
                job.engine = engine;
                u.report.engine = engine;
                u.retry.not_before = None;
                format!("rate-limited: falling back to {engine}")
            }
            Action::Retry => {
                u.retry.retried += 1;
                let why = u.report.error.take().unwrap_or_else(|| "failed".into());
                format!("{why}; retry {} of {allowed}", u.retry.retried)
            }
            // The rest are Temporal's: a local unit ends with vf.
            Action::Final | Action::HandBack | Action::Elsewhere => return Ok(false),
        };
        self.go_on(i, why, res, reporter)
    }

    /// Unit `i` runs again (`why` says when, where or on which account).
    fn go_on(
        &mut self,
        i: usize,
        why: String,
        res: &DispatchResult,
        reporter: &Shared,
    ) -> Result<bool> {
        let u = &mut self.units[i];
        u.retry.pending = true;
        // Kept for the budget: the next attempt's usage replaces the report's.
        let this = u.report.usage.as_ref();
        u.retry.earlier_usage =
            crate::engine::usage::total(u.retry.earlier_usage.iter().chain(this));
        u.report.again()?;
        u.report.error = Some(why);
        reporter.borrow_mut().waiting(i, &u.report, res);
        Ok(true)
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
