//! vf's retry table: what comes after a plan unit's attempt, for both
//! executors (the local run, [`super::retry`], and the Temporal workflow,
//! `temporal/retry.rs`). Pure (no clock, no I/O), so the workflow stays
//! deterministic and the table is tested without a server. The executor is
//! a parameter: on Temporal an attempt may end with its worker, which a
//! local run (whose units die with vf) never sees.
//!
//! | the attempt ended | local run | Temporal |
//! |---|---|---|
//! | done (0), or its row is not `failed` | none | none |
//! | usage (2), engine missing (3), corrupt state (5), internal (70) | none | none |
//! | engine failure (1) | again while `retries` allows | the same |
//! | stall or timeout (4) | again while `retries` allows | the same, and at least once (it may be a worker's death) |
//! | rate-limited (75) | `on_rate_limit`: wait, fall back, or none | the same |
//! | interrupted (129-143) | none (vf itself was stopped) | again, at most [`MAX_LOST`] times (the worker was stopped) |
//! | the worker lost (a heartbeat or close timeout) | - | again, at most [`MAX_LOST`] times |
//! | its host did not take an exact resume in time | - | again on the shared queue, with the replay |
//!
//! How a rate-limited attempt goes on is [`crate::plan::ratelimit::next`]'s: each
//! executor asks it with its own clock, jitter and engines at hand.

use std::time::Duration;

use crate::engine::EngineId;
use crate::ground::error::exit;
use crate::plan::ratelimit;

/// Attempts lost with their worker (or handed back) before the unit fails.
pub const MAX_LOST: u32 = 5;

/// Which executor asks: their documented difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutorKind {
    Local,
    Temporal,
}

/// How an attempt ended, as the table reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It has vf's exit code; `failed`: its row is `failed`.
    Exit { code: i32, failed: bool },
    /// Temporal: its worker was lost (a heartbeat or close timeout).
    Lost,
    /// Temporal: its host did not take the exact resume in time.
    NotTaken,
}

/// What the unit has spent before this decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spent {
    /// Starts again under `retries` so far.
    pub retried: u32,
    /// Its starts so far, the attempt that just ended included (Temporal).
    pub tries: u32,
}

/// What comes after the attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The unit stays as the attempt left it.
    Final,
    /// Again, one more of `retries` spent.
    Retry,
    /// Again: the attempt was handed back or lost with its worker.
    HandBack,
    /// Again on the shared queue: a fresh session with the replay.
    Elsewhere,
    /// Rate-limited: again after this wait.
    Wait(Duration),
    /// Rate-limited: again on this engine.
    Fallback(EngineId),
}

/// The table. `retries` is the unit's key; `rate_limit` answers for a
/// rate-limited attempt (asked only then).
pub fn next(
    kind: ExecutorKind,
    ended: Ended,
    retries: u32,
    spent: Spent,
    rate_limit: impl FnOnce() -> ratelimit::Next,
) -> Action {
    let temporal = kind == ExecutorKind::Temporal;
    let lost_again = temporal && spent.tries <= MAX_LOST;
    let code = match ended {
        Ended::NotTaken if temporal => return Action::Elsewhere,
        Ended::Lost if lost_again => return Action::HandBack,
        Ended::Lost | Ended::NotTaken | Ended::Exit { failed: false, .. } => return Action::Final,
        Ended::Exit { code, .. } => code,
    };
    // On Temporal a stall or timeout may be its worker's death.
    let timeouts = if temporal { retries.max(1) } else { retries };
    match code {
        exit::ENGINE_FAILED if spent.retried < retries => Action::Retry,
        exit::TIMEOUT if spent.retried < timeouts => Action::Retry,
        exit::RATE_LIMITED => match rate_limit() {
            ratelimit::Next::Fail => Action::Final,
            ratelimit::Next::Wait(d) => Action::Wait(d),
            ratelimit::Next::Fallback(e) => Action::Fallback(e),
        },
        129..=143 if lost_again => Action::HandBack,
        _ => Action::Final,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;
    use ExecutorKind::{Local as L, Temporal as T};

    fn failed(code: i32) -> Ended {
        Ended::Exit { code, failed: true }
    }

    /// Executor, how the attempt ended, `retries`, spent (retried, tries),
    /// the rate-limit policy's answer, and the action.
    type Case<'a> = (
        ExecutorKind,
        Ended,
        u32,
        (u32, u32),
        &'a ratelimit::Next,
        Action,
    );

    /// One table for both executors: (executor, ended, retries, spent
    /// (retried, tries), the rate-limit answer) → the action.
    #[test]
    fn the_retry_table_for_both_executors() {
        let wait = ratelimit::Next::Wait(Duration::from_secs(60));
        let fall = ratelimit::Next::Fallback(EngineId::Claude);
        let no = ratelimit::Next::Fail;
        let done = Ended::Exit {
            code: exit::OK,
            failed: false,
        };
        // A merge conflict: exit 1, but the row is `blocked`.
        let blocked = Ended::Exit {
            code: exit::ENGINE_FAILED,
            failed: false,
        };
        #[rustfmt::skip]
        let cases: &[Case] = &[
            (L, done, 2, (0, 1), &no, Final),
            (T, done, 2, (0, 1), &no, Final),
            (L, blocked, 2, (0, 1), &no, Final),
            (T, blocked, 2, (0, 1), &no, Final),
            (L, failed(exit::USAGE), 2, (0, 1), &no, Final),
            (T, failed(exit::NOT_READY), 2, (0, 1), &no, Final),
            (T, failed(exit::STATE), 2, (0, 1), &no, Final),
            (L, failed(exit::INTERNAL), 2, (0, 1), &no, Final),
            (T, failed(exit::INTERNAL), 2, (0, 1), &no, Final),
            // Engine failure: while `retries` allows, in both.
            (L, failed(exit::ENGINE_FAILED), 0, (0, 1), &no, Final),
            (T, failed(exit::ENGINE_FAILED), 0, (0, 1), &no, Final),
            (L, failed(exit::ENGINE_FAILED), 2, (1, 2), &no, Retry),
            (T, failed(exit::ENGINE_FAILED), 2, (1, 2), &no, Retry),
            (L, failed(exit::ENGINE_FAILED), 2, (2, 3), &no, Final),
            (T, failed(exit::ENGINE_FAILED), 2, (2, 3), &no, Final),
            // Stall or timeout: the difference at `retries = 0`.
            (L, failed(exit::TIMEOUT), 0, (0, 1), &no, Final),
            (T, failed(exit::TIMEOUT), 0, (0, 1), &no, Retry),
            (T, failed(exit::TIMEOUT), 0, (1, 2), &no, Final),
            (L, failed(exit::TIMEOUT), 2, (1, 2), &no, Retry),
            (T, failed(exit::TIMEOUT), 2, (2, 3), &no, Final),
            // Rate-limited: the policy's answer, in both.
            (L, failed(exit::RATE_LIMITED), 0, (0, 1), &no, Final),
            (T, failed(exit::RATE_LIMITED), 0, (0, 1), &no, Final),
            (L, failed(exit::RATE_LIMITED), 0, (0, 1), &wait, Wait(Duration::from_secs(60))),
            (T, failed(exit::RATE_LIMITED), 0, (0, 9), &wait, Wait(Duration::from_secs(60))),
            (L, failed(exit::RATE_LIMITED), 0, (0, 1), &fall, Fallback(EngineId::Claude)),
            (T, failed(exit::RATE_LIMITED), 0, (0, 1), &fall, Fallback(EngineId::Claude)),
            // Interrupted: vf stopped (local), a worker stopped (Temporal).
            (L, failed(exit::SIGINT), 2, (0, 1), &no, Final),
            (L, failed(exit::SIGTERM), 2, (0, 1), &no, Final),
            (T, failed(129), 0, (0, 1), &no, HandBack),
            (T, failed(exit::SIGTERM), 0, (0, MAX_LOST), &no, HandBack),
            (T, failed(exit::SIGTERM), 0, (0, MAX_LOST + 1), &no, Final),
            (T, failed(144), 0, (0, 1), &no, Final),
            // The worker lost, or the host that holds the session away.
            (T, Ended::Lost, 0, (0, MAX_LOST), &no, HandBack),
            (T, Ended::Lost, 0, (0, MAX_LOST + 1), &no, Final),
            (T, Ended::NotTaken, 0, (0, MAX_LOST + 1), &no, Elsewhere),
            (L, Ended::Lost, 2, (0, 1), &no, Final),
            (L, Ended::NotTaken, 2, (0, 1), &no, Final),
        ];
        for (i, (kind, ended, retries, (retried, tries), answer, want)) in cases.iter().enumerate()
        {
            let spent = Spent {
                retried: *retried,
                tries: *tries,
            };
            let asked = std::cell::Cell::new(false);
            let got = next(*kind, *ended, *retries, spent, || {
                asked.set(true);
                (*answer).clone()
            });
            assert_eq!(
                got, *want,
                "case {i}: {kind:?} {ended:?} retries {retries} {spent:?}"
            );
            // The policy is asked only for a rate-limited attempt.
            let limited = *ended == failed(exit::RATE_LIMITED);
            assert_eq!(asked.get(), limited, "case {i}");
        }
    }
}
