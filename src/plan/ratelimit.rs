//! What `vf orchestrate` does when a unit is rate-limited: the plan keys
//! `on_rate_limit = "fail" | "wait" | "fallback"`, `fallback = [...]` and
//! `max_wait = SECONDS`, and the pure decisions behind them (how long to
//! wait, which engine is next). The scheduler (`scheduler/retry.rs`) acts on
//! them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::EngineId;

/// The shortest and longest backoff when the engine names no reset time.
pub const MIN_BACKOFF: Duration = Duration::from_secs(1);
pub const MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);
/// `max_wait` when the plan gives none: one hour of waiting in all.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnRateLimit {
    /// The unit fails (`rate-limited`), as any failure.
    #[default]
    Fail,
    /// Sleep until the reset (or back off), then resume the same session.
    Wait,
    /// Start fresh on the next engine of `fallback`.
    Fallback,
}

/// A unit's validated rate-limit policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    pub on: OnRateLimit,
    pub fallback: Vec<EngineId>,
    /// How long `wait` may wait in all before the unit fails.
    pub max_wait: Duration,
}

impl Policy {
    /// The plan keys, checked (the caller names the unit in the error).
    pub fn from_plan(
        on: Option<OnRateLimit>,
        fallback: Vec<EngineId>,
        max_wait: Option<f64>,
    ) -> Result<Policy, String> {
        let on = on.unwrap_or_default();
        match (on, fallback.is_empty()) {
            (OnRateLimit::Fallback, true) => {
                return Err(
                    "`on_rate_limit = \"fallback\"` needs a `fallback` list of engines".into(),
                );
            }
            (OnRateLimit::Fail | OnRateLimit::Wait, false) => {
                return Err("`fallback` is only used with `on_rate_limit = \"fallback\"`".into());
            }
            _ => {}
        }
        let max_wait = match max_wait {
            None => DEFAULT_MAX_WAIT,
            Some(s) if (0.0..1e9).contains(&s) => Duration::from_secs_f64(s),
            Some(s) => return Err(format!("`max_wait` must be a number of seconds, not {s}")),
        };
        Ok(Policy {
            on,
            fallback,
            max_wait,
        })
    }
}

/// The attempt record is the marker's (`engineAttempts`); kept here by
/// name for the plan's code that has always called it `ratelimit::Attempt`.
pub use crate::unit::marker::Attempt;

/// What to do after a rate-limited attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    Fail,
    /// Run the same engine again after this long.
    Wait(Duration),
    /// Start fresh on this engine.
    Fallback(EngineId),
}

/// The decision for a rate-limited attempt on `engine`: `waited` is the time
/// already spent waiting, `retries` the number of waits so far, `retry_at_in`
/// how far away the engine's reset time is (when it named one); `ready` says
/// whether a fallback engine can run here (an uninstalled one is skipped).
pub fn next(
    policy: &Policy,
    engine: EngineId,
    spent: (Duration, u32),
    retry_at_in: Option<Duration>,
    ready: impl Fn(EngineId) -> bool,
) -> Next {
    next_jittered(policy, engine, spent, retry_at_in, ready, jitter())
}

/// [`next`] with the backoff's jitter (0..1) given: a Temporal workflow
/// takes it from its replay-safe randomness.
pub fn next_jittered(
    policy: &Policy,
    engine: EngineId,
    (waited, retries): (Duration, u32),
    retry_at_in: Option<Duration>,
    ready: impl Fn(EngineId) -> bool,
    jitter: f64,
) -> Next {
    match policy.on {
        OnRateLimit::Fail => Next::Fail,
        OnRateLimit::Fallback => {
            let after = policy.fallback.iter().position(|e| *e == engine);
            let rest = &policy.fallback[after.map_or(0, |p| p + 1)..];
            rest.iter()
                .find(|e| **e != engine && ready(**e))
                .map_or(Next::Fail, |e| Next::Fallback(*e))
        }
        OnRateLimit::Wait => {
            let d = retry_at_in.unwrap_or_else(|| backoff(retries, jitter));
            if waited + d > policy.max_wait {
                Next::Fail
            } else {
                Next::Wait(d)
            }
        }
    }
}

/// Exponential backoff, 1 s doubling to 15 min, with ±20 % jitter
/// (`jitter` in 0..1).
pub fn backoff(retries: u32, jitter: f64) -> Duration {
    let base = MIN_BACKOFF.as_secs_f64() * 2f64.powi(retries.min(20) as i32);
    let d = base.min(MAX_BACKOFF.as_secs_f64()) * (0.8 + 0.4 * jitter.clamp(0.0, 1.0));
    Duration::from_secs_f64(d.clamp(MIN_BACKOFF.as_secs_f64(), MAX_BACKOFF.as_secs_f64()))
}

/// A number in 0..1 that differs between runs (no rand dependency needed).
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    f64::from(nanos % 1000) / 1000.0
}

/// How far `retry_at` (RFC 3339) is from `now_secs`; `None` when unreadable.
pub fn until(retry_at: &str, now_secs: u64) -> Option<Duration> {
    let at = crate::ground::fsutil::parse_rfc3339(retry_at)?;
    Some(Duration::from_secs(at.saturating_sub(now_secs)).max(MIN_BACKOFF))
}

/// The real sleep for a wait of `d`: scaled down only by the test variable
/// (the governor's rule, so a plan's waits and the ledger's holds agree).
pub fn scaled(d: Duration) -> Duration {
    crate::quota::scaled(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(on: OnRateLimit, fallback: &[EngineId], max_wait: u64) -> Policy {
        Policy {
            on,
            fallback: fallback.to_vec(),
            max_wait: Duration::from_secs(max_wait),
        }
    }

    #[test]
    fn backoff_doubles_from_one_second_to_fifteen_minutes() {
        let mid: Vec<u64> = (0..4).map(|n| backoff(n, 0.5).as_secs()).collect();
        assert_eq!(mid, [1, 2, 4, 8]);
        assert_eq!(backoff(30, 1.0), MAX_BACKOFF);
        assert_eq!(backoff(0, 0.0), MIN_BACKOFF);
        assert!(backoff(3, 0.0) < backoff(3, 1.0));
    }

    #[test]
    fn wait_uses_the_reset_time_and_gives_up_after_max_wait() {
        let p = policy(OnRateLimit::Wait, &[], 60);
        let reset = Some(Duration::from_secs(30));
        assert_eq!(
            next(&p, EngineId::Codex, (Duration::ZERO, 0), reset, |_| true),
            Next::Wait(Duration::from_secs(30))
        );
        assert_eq!(
            next(
                &p,
                EngineId::Codex,
                (Duration::from_secs(31), 1),
                reset,
                |_| true
            ),
            Next::Fail
        );
        assert_eq!(
            next(
                &policy(OnRateLimit::Fail, &[], 60),
                EngineId::Codex,
                (Duration::ZERO, 0),
                reset,
                |_| true
            ),
            Next::Fail
        );
    }

    #[test]
    fn fallback_takes_the_next_engine_of_the_list() {
        let p = policy(
            OnRateLimit::Fallback,
            &[EngineId::Codex, EngineId::Opencode],
            0,
        );
        assert_eq!(
            next(&p, EngineId::Claude, (Duration::ZERO, 0), None, |_| true),
            Next::Fallback(EngineId::Codex)
        );
        assert_eq!(
            next(&p, EngineId::Codex, (Duration::ZERO, 0), None, |_| true),
            Next::Fallback(EngineId::Opencode)
        );
        assert_eq!(
            next(&p, EngineId::Opencode, (Duration::ZERO, 0), None, |_| true),
            Next::Fail
        );
        // An engine that cannot run here is skipped.
        let no_codex = |e| e != EngineId::Codex;
        assert_eq!(
            next(&p, EngineId::Claude, (Duration::ZERO, 0), None, no_codex),
            Next::Fallback(EngineId::Opencode)
        );
    }

    #[test]
    fn plan_keys_are_checked() {
        assert!(Policy::from_plan(Some(OnRateLimit::Fallback), vec![], None).is_err());
        assert!(Policy::from_plan(Some(OnRateLimit::Wait), vec![EngineId::Codex], None).is_err());
        assert!(Policy::from_plan(Some(OnRateLimit::Wait), vec![], Some(-1.0)).is_err());
        let p = Policy::from_plan(None, vec![], None).unwrap();
        assert_eq!(
            p,
            policy(OnRateLimit::Fail, &[], DEFAULT_MAX_WAIT.as_secs())
        );
        assert_eq!(
            until("2026-11-30T01:05:53Z", 1_796_000_743),
            Some(Duration::from_secs(10))
        );
    }
}
