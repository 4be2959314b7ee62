//! The Temporal workflow's side of vf's retry table
//! ([`crate::plan::scheduler::retry_table`], which holds the table for both
//! executors): what a unit attempt's end does to the unit's row and which
//! start the next attempt gets (pure, so the workflow stays deterministic).
//!
//! A retry resumes the exact session on the host that holds it (its own
//! queue) when the attempt had a session id; otherwise, or once that host
//! did not take it, a fresh session is primed with the public responses of
//! the attempts before (the bounded replay).

use std::time::Duration;

use temporalio_sdk::{ActivityExecutionError, TimeoutType};

use super::payload::{Beat, Outcome, Start, UnitInput, UnitState};
use crate::ground::error::Reason;
#[cfg(test)]
use crate::ground::error::exit;
use crate::plan::ratelimit;
use crate::plan::scheduler::RunState;
pub use crate::plan::scheduler::retry_table::MAX_LOST;
use crate::plan::scheduler::retry_table::{self, Action, Ended, ExecutorKind, Spent};

/// What comes after an attempt.
#[derive(Debug, PartialEq)]
pub enum Decision {
    Final,
    Again { delay: Duration, start: Start },
}

/// Updates the unit's row from the attempt and decides what comes next.
/// `now_secs` and `jitter` (0..1) are the workflow's: replay-safe.
pub fn decide(
    input: &UnitInput,
    u: &mut UnitState,
    r: Result<Outcome, ActivityExecutionError>,
    (now_secs, jitter): (u64, f64),
) -> Decision {
    let decided = match r {
        Ok(out) => after_outcome(input, u, out, (now_secs, jitter)),
        Err(e) => after_error(input, u, &e),
    };
    // A move the row refused (vf's bug, or a worker's row that is no
    // attempt's end) fails the unit, naming both states.
    decided.unwrap_or_else(|e| {
        u.row.broken(&e);
        Decision::Final
    })
}

/// The table's answer for the unit, with the workflow's clock and jitter
/// for a rate limit.
fn ask(
    input: &UnitInput,
    u: &UnitState,
    ended: Ended,
    retry_at: Option<&str>,
    (now_secs, jitter): (u64, f64),
) -> Action {
    let spent = Spent {
        retried: u.retried,
        tries: u.tries,
    };
    let rate_limit = || {
        let reset = retry_at.and_then(|t| ratelimit::until(t, now_secs));
        let waited = (Duration::from_millis(u.waited_ms), u.waits);
        // Which engines a worker has is the worker's to say: none is skipped here.
        let ready = |_| true;
        ratelimit::next_jittered(
            &input.rate_limit,
            u.row.engine,
            waited,
            reset,
            ready,
            jitter,
        )
    };
    retry_table::next(
        ExecutorKind::Temporal,
        ended,
        input.retries,
        spent,
        rate_limit,
    )
}

fn after_outcome(
    input: &UnitInput,
    u: &mut UnitState,
    out: Outcome,
    clock: (u64, f64),
) -> crate::ground::error::Result<Decision> {
    u.host = Some(out.host.clone());
    if !out.answers.is_empty() {
        u.answers = out.answers.clone();
    }
    let retry_at = out.retry_at.clone();
    u.row.take_attempt(out.row)?;
    let ended = Ended::Exit {
        code: out.exit,
        failed: u.row.state == RunState::Failed,
    };
    Ok(match ask(input, u, ended, retry_at.as_deref(), clock) {
        Action::Final => Decision::Final,
        Action::Retry => {
            u.retried += 1;
            again(u, Duration::ZERO)
        }
        Action::HandBack => again(u, Duration::ZERO),
        // Not from an outcome; as for a host that did not take it.
        Action::Elsewhere => Decision::Again {
            delay: Duration::ZERO,
            start: replay(u),
        },
        Action::Wait(d) => {
            u.waited_ms += d.as_millis() as u64;
            u.waits += 1;
            u.row.error = Some(format!("rate-limited: waiting {}s", d.as_secs()));
            again(u, ratelimit::scaled(d))
        }
        Action::Fallback(engine) => {
            u.row.engine = engine;
            u.row.error = Some(format!("rate-limited: falling back to {engine}"));
            // Another engine cannot resume this one's session.
            Decision::Again {
                delay: Duration::ZERO,
                start: replay(u),
            }
        }
    })
}

/// The activity itself failed: its worker was lost, its host did not take
/// it, or the workflow was cancelled.
fn after_error(
    input: &UnitInput,
    u: &mut UnitState,
    e: &ActivityExecutionError,
) -> crate::ground::error::Result<Decision> {
    if let Some(t) = e.as_timeout() {
        if let Ok(Some(beat)) = t.last_heartbeat_details::<Beat>() {
            take_beat(u, beat);
        }
        let not_taken = t.timeout_type() == TimeoutType::ScheduleToStart;
        let ended = if not_taken {
            Ended::NotTaken
        } else {
            Ended::Lost
        };
        match ask(input, u, ended, None, (0, 0.0)) {
            Action::Elsewhere => {
                u.row.error = Some("its host did not take the exact resume in time".into());
                return Ok(Decision::Again {
                    delay: Duration::ZERO,
                    start: replay(u),
                });
            }
            Action::HandBack => {
                u.row.error = Some(format!(
                    "the worker was lost ({:?} timeout)",
                    t.timeout_type()
                ));
                return Ok(again(u, Duration::ZERO));
            }
            _ => {}
        }
    }
    if e.as_cancelled().is_some() {
        u.row.fail(
            Reason::Interrupted(None),
            "the workflow was cancelled".into(),
        )?;
    } else {
        u.row
            .fail(Reason::Internal, format!("the activity failed: {e}"))?;
    }
    Ok(Decision::Final)
}

fn take_beat(u: &mut UnitState, beat: Beat) {
    if beat.session_id.is_some() {
        u.row.session_id = beat.session_id;
        u.host = Some(beat.host);
    }
    if !beat.answers.is_empty() {
        u.answers = beat.answers;
    }
}

/// The next attempt: the exact session on its host when there is one.
fn again(u: &UnitState, delay: Duration) -> Decision {
    let start = match (&u.row.session_id, &u.host) {
        (Some(id), Some(host)) => Start::Exact {
            session_id: id.clone(),
            host: host.clone(),
            answers: u.answers.clone(),
        },
        _ => replay(u),
    };
    Decision::Again { delay, start }
}

fn replay(u: &UnitState) -> Start {
    match u.answers.is_empty() {
        true => Start::Fresh,
        false => Start::Replay {
            answers: u.answers.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineId;
    use crate::plan::ratelimit::{OnRateLimit, Policy};

    fn unit(retries: u32, rate_limit: Policy) -> UnitInput {
        UnitInput {
            name: "a".into(),
            depends_on: Vec::new(),
            engine: EngineId::Codex,
            toml: String::new(),
            retries,
            stall_ms: None,
            timeout_ms: None,
            rate_limit,
            merge: Vec::new(),
            fetch_from: Default::default(),
            model: None,
            stagger_ms: None,
        }
    }

    fn outcome(state: RunState, exit: i32, session: Option<&str>) -> Outcome {
        let mut row = super::super::workflow::fresh(&unit(0, Policy::default())).row;
        row.state = state;
        row.session_id = session.map(String::from);
        Outcome {
            row,
            exit,
            host: "h1".into(),
            retry_at: None,
            answers: Vec::new(),
            held: None,
        }
    }

    /// The decisions for one exit code, attempt after attempt, until final.
    fn decisions(input: &UnitInput, exit: i32, session: Option<&str>) -> Vec<Decision> {
        let mut u = super::super::workflow::fresh(input);
        let state = if exit == 0 {
            RunState::Done
        } else {
            RunState::Failed
        };
        let mut out = Vec::new();
        for _ in 0..12 {
            u.tries += 1;
            // The worker ran the engine the order named (a fallback's).
            let mut o = outcome(state, exit, session);
            o.row.engine = u.row.engine;
            let d = decide(input, &mut u, Ok(o), (0, 0.5));
            let last = d == Decision::Final;
            out.push(d);
            if last {
                break;
            }
        }
        out
    }

    fn again_exact() -> Decision {
        Decision::Again {
            delay: Duration::ZERO,
            start: Start::Exact {
                session_id: "s1".into(),
                host: "h1".into(),
                answers: Vec::new(),
            },
        }
    }

    #[test]
    fn the_table_by_exit_code() {
        let none = unit(0, Policy::default());
        let two = unit(2, Policy::default());
        let fin = vec![Decision::Final];
        for code in [
            exit::OK,
            exit::USAGE,
            exit::NOT_READY,
            exit::STATE,
            exit::INTERNAL,
        ] {
            assert_eq!(
                decisions(&two, code, Some("s1")),
                fin,
                "exit {code} is final"
            );
        }
        assert_eq!(decisions(&none, exit::ENGINE_FAILED, Some("s1")), fin);
        let retried_twice = vec![again_exact(), again_exact(), Decision::Final];
        assert_eq!(
            decisions(&two, exit::ENGINE_FAILED, Some("s1")),
            retried_twice
        );
        // A stall or timeout: at least once, even at retries = 0.
        assert_eq!(
            decisions(&none, exit::TIMEOUT, Some("s1")),
            vec![again_exact(), Decision::Final]
        );
        assert_eq!(decisions(&two, exit::TIMEOUT, Some("s1")), retried_twice);
        // Without a session id there is nothing to resume: a fresh start.
        let fresh = Decision::Again {
            delay: Duration::ZERO,
            start: Start::Fresh,
        };
        assert_eq!(
            decisions(&none, exit::TIMEOUT, None),
            vec![fresh, Decision::Final]
        );
        // A worker stopped by a signal hands the unit back, a bounded number of times.
        assert_eq!(
            decisions(&none, exit::SIGTERM, Some("s1")).len(),
            MAX_LOST as usize + 1
        );
    }

    #[test]
    fn a_rate_limit_follows_on_rate_limit() {
        let fail = unit(0, Policy::default());
        assert_eq!(
            decisions(&fail, exit::RATE_LIMITED, None),
            vec![Decision::Final]
        );
        let fallback = Policy {
            on: OnRateLimit::Fallback,
            fallback: vec![EngineId::Claude],
            max_wait: Duration::ZERO,
        };
        let d = decisions(&unit(0, fallback), exit::RATE_LIMITED, Some("s1"));
        // Another engine cannot resume codex's session: fresh, then no engine is left.
        let to_claude = Decision::Again {
            delay: Duration::ZERO,
            start: Start::Fresh,
        };
        assert_eq!(d, vec![to_claude, Decision::Final]);
        let wait = Policy {
            on: OnRateLimit::Wait,
            fallback: Vec::new(),
            max_wait: Duration::from_secs(3600),
        };
        let mut u = super::super::workflow::fresh(&unit(0, wait.clone()));
        let mut out = outcome(RunState::Failed, exit::RATE_LIMITED, Some("s1"));
        out.retry_at = Some("1970-01-01T00:10:00Z".into());
        let d = decide(&unit(0, wait), &mut u, Ok(out), (0, 0.5));
        // The engine's reset time (10 minutes from "now" = 0), then the exact session.
        assert_eq!(
            d,
            Decision::Again {
                delay: ratelimit::scaled(Duration::from_secs(600)),
                start: match again_exact() {
                    Decision::Again { start, .. } => start,
                    Decision::Final => unreachable!(),
                },
            }
        );
        assert_eq!((u.waits, u.waited_ms), (1, 600_000));
    }
}
