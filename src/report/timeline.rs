//! The timeline's bars: one per attempt, one per unit blocked before it ran,
//! one per wait on a rate limit (and one for the hold after a unit's last
//! rate-limited attempt, until its `retryAt`), one per round of its loops (a fix round
//! stands for the attempt it is); each put in the lowest free lane (the
//! lanes are the plan's `--jobs` slots as they were used), a round in its
//! unit's lane when that one is free.

use serde::Serialize;

use crate::ground::error::Reason;
use crate::ground::procinfo::Liveness;
use crate::unit::marker::rounds::{Round, RoundKind, RoundOutcome};
use crate::unit::marker::{Marker, MarkerStore, UnitState};

use super::millis;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bar {
    pub unit: String,
    /// The attempt (1, 2, ...); 0 for a unit blocked before it ran.
    pub attempt: u32,
    pub engine: String,
    /// `done`, `failed`, `blocked`, `rateLimited`, `interrupted`, `running`,
    /// `waiting` (on a rate limit, between two attempts) or `held` (after
    /// the last attempt, rate-limited, until its `retryAt`).
    pub outcome: &'static str,
    pub reason: Option<String>,
    pub start_ms: u64,
    pub end_ms: u64,
    /// The times come from the raw log's file times: the marker keeps only
    /// the latest attempt's.
    pub estimated: bool,
    pub lane: u32,
    /// A round of the unit's loops: `fix 2/3`, `review 1/2`, `resolve`
    /// (its engine is the round's: a reviewer's, a resolver's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<String>,
}

impl Bar {
    /// An attempt of the engine (not a wait, not a blocked unit).
    pub fn is_attempt(&self) -> bool {
        !matches!(self.outcome, "waiting" | "held" | "blocked")
    }
}

/// Every marker's bars, in lanes; and how many lanes there are.
pub fn bars(store: &MarkerStore, markers: &[Marker], now_ms: u64) -> (Vec<Bar>, u32) {
    let mut all: Vec<Bar> = markers
        .iter()
        .flat_map(|m| of_unit(store, m, now_ms))
        .collect();
    all.sort_by(|a, b| {
        (a.start_ms, &a.unit, a.attempt, a.outcome)
            .cmp(&(b.start_ms, &b.unit, b.attempt, b.outcome))
    });
    let mut ends: Vec<u64> = Vec::new();
    // The lane each unit's latest bar took: its rounds follow it there.
    let mut unit_lane: std::collections::HashMap<String, usize> = Default::default();
    for b in &mut all {
        let own = unit_lane
            .get(&b.unit)
            .copied()
            .filter(|&l| b.round.is_some() && ends[l] <= b.start_ms);
        let lane = match own.or_else(|| ends.iter().position(|&e| e <= b.start_ms)) {
            Some(l) => l,
            None => {
                ends.push(0);
                ends.len() - 1
            }
        };
        ends[lane] = b.end_ms.max(b.start_ms + 1);
        b.lane = lane as u32;
        unit_lane.insert(b.unit.clone(), lane);
    }
    (all, ends.len() as u32)
}

fn of_unit(store: &MarkerStore, m: &Marker, now_ms: u64) -> Vec<Bar> {
    let bar = |attempt, outcome, reason: Option<Reason>, (start_ms, end_ms): (u64, u64)| Bar {
        unit: m.unit.clone(),
        attempt,
        engine: m.engine.to_string(),
        outcome,
        reason: reason.map(|r| r.as_str().to_string()),
        start_ms,
        end_ms: end_ms.max(start_ms),
        estimated: false,
        lane: 0,
        round: None,
    };
    let latest = latest_span(m, now_ms);
    let earlier = match latest {
        Some(_) => m.attempts.saturating_sub(1),
        None => m.attempts,
    };
    // The attempts of the latest plan run under a rate-limit policy are the
    // last `engine_attempts.len()` ones.
    let first_recorded = (m.attempts as usize + 1).saturating_sub(m.engine_attempts.len());
    let mut out = Vec::new();
    for n in 1..=earlier {
        let Some(span) = log_span(store, &m.unit, n) else {
            continue;
        };
        let reason = (n as usize)
            .checked_sub(first_recorded)
            .and_then(|i| m.engine_attempts.get(i))
            .and_then(|a| a.reason);
        let outcome = match reason {
            Some(Reason::RateLimited) => "rateLimited",
            Some(_) => "failed",
            None => "interrupted",
        };
        out.push(Bar {
            estimated: true,
            ..bar(n, outcome, reason, span)
        });
    }
    match latest {
        Some(span) => out.push(bar(m.attempts, latest_outcome(m), m.reason, span)),
        None if m.state == UnitState::Blocked => {
            let t = m.finished_at.as_deref().unwrap_or(&m.updated_at);
            let t = millis(t).unwrap_or(0);
            out.push(bar(0, "blocked", m.reason, (t, t)));
        }
        None => {}
    }
    let waits: Vec<Bar> = out
        .windows(2)
        .filter(|w| w[0].outcome == "rateLimited" && w[1].start_ms > w[0].end_ms)
        .map(|w| Bar {
            estimated: w[0].estimated || w[1].estimated,
            ..bar(w[0].attempt, "waiting", None, (w[0].end_ms, w[1].start_ms))
        })
        .collect();
    out.extend(waits);
    out.extend(held_span(m, out.iter().rfind(|b| b.is_attempt())));
    // A fix round is an attempt: its bar, labelled, stands for the attempt's.
    out.retain(|b| {
        !m.rounds
            .iter()
            .any(|r| r.attempt == Some(b.attempt) && b.is_attempt())
    });
    out.extend(m.rounds.iter().filter_map(|r| round_bar(m, r, now_ms)));
    out
}

/// The span its engine's account is held after the unit's last attempt
/// ended rate-limited: to the `retryAt` the provider named.
fn held_span(m: &Marker, last: Option<&Bar>) -> Option<Bar> {
    let last = last.filter(|b| b.outcome == "rateLimited" && b.attempt == m.attempts)?;
    let until = m
        .retry_at
        .as_deref()
        .and_then(crate::quota::entry::parse_ms)?;
    (until > last.end_ms).then(|| Bar {
        outcome: "held",
        reason: Some(format!(
            "{}/{} until {} UTC",
            m.engine,
            m.account
                .as_deref()
                .unwrap_or(crate::quota::DEFAULT_ACCOUNT),
            crate::quota::entry::rfc3339_ms(until)
                .get(11..19)
                .unwrap_or_default()
        )),
        start_ms: last.end_ms,
        end_ms: until,
        estimated: false,
        lane: 0,
        round: None,
        ..last.clone()
    })
}

/// A round's bar, timed by its `startedAt` / `finishedAt`.
fn round_bar(m: &Marker, r: &Round, now_ms: u64) -> Option<Bar> {
    let start = millis(&r.started_at)?;
    let outcome = match r.outcome {
        RoundOutcome::Done => "done",
        RoundOutcome::Failed => "failed",
        RoundOutcome::Running if m.owner_alive() == Liveness::Alive => "running",
        RoundOutcome::Running => "interrupted",
    };
    let end = match r.finished_at.as_deref().and_then(millis) {
        Some(end) => end,
        None if outcome == "running" => now_ms,
        None => millis(&m.updated_at).unwrap_or(start),
    };
    Some(Bar {
        unit: m.unit.clone(),
        attempt: r.attempt.unwrap_or(0),
        engine: r.engine.to_string(),
        outcome,
        reason: r.reason.map(|x| x.as_str().to_string()),
        start_ms: start,
        end_ms: end.max(start),
        estimated: false,
        lane: 0,
        round: Some(round_name(r)),
    })
}

/// `fix 2/3`, `review 1/2`; a unit's one resolve round has no count.
pub fn round_name(r: &Round) -> String {
    match r.kind {
        RoundKind::Resolve => r.kind.as_str().to_string(),
        k => format!("{} {}/{}", k.as_str(), r.n, r.of),
    }
}

/// The latest attempt's start and end, when it ran in the unit's latest run.
fn latest_span(m: &Marker, now_ms: u64) -> Option<(u64, u64)> {
    if !matches!(
        m.state,
        UnitState::Done | UnitState::Failed | UnitState::Running
    ) || m.attempts == 0
    {
        return None;
    }
    let start = millis(m.started_at.as_deref()?)?;
    let end = match m.finished_at.as_deref().and_then(millis) {
        Some(end) => end,
        None if latest_outcome(m) == "running" => now_ms,
        None => millis(&m.updated_at).unwrap_or(start),
    };
    Some((start, end))
}

fn latest_outcome(m: &Marker) -> &'static str {
    match (m.state, m.reason) {
        (UnitState::Done, _) => "done",
        (UnitState::Running, _) if m.owner_alive() == Liveness::Alive => "running",
        (UnitState::Running, _) | (_, Some(Reason::Interrupted(_))) => "interrupted",
        (_, Some(Reason::RateLimited)) => "rateLimited",
        (UnitState::Blocked, _) => "blocked",
        _ => "failed",
    }
}

/// An earlier attempt's span, from its raw log: created (or, where the file
/// system does not say, last changed) to last written.
fn log_span(store: &MarkerStore, unit: &str, attempt: u32) -> Option<(u64, u64)> {
    let meta = std::fs::symlink_metadata(store.log_path(unit, attempt, "stdout")).ok()?;
    let ms = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_millis() as u64)
    };
    let end = ms(meta.modified().ok()?)?;
    let start = meta.created().ok().and_then(ms).unwrap_or(end);
    Some((start.min(end), end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineId;
    use crate::ground::fsutil::rfc3339;

    const T: u64 = 1_764_650_000;

    fn unit(name: &str, (from, to): (u64, u64), rounds: Vec<Round>) -> Marker {
        let mut m = Marker::new(name, EngineId::Claude, std::path::Path::new("/w"));
        (m.state, m.attempts) = (UnitState::Done, 2);
        m.started_at = Some(rfc3339(T + from, 0));
        m.finished_at = Some(rfc3339(T + to, 0));
        m.rounds = rounds;
        m
    }

    fn round(kind: RoundKind, attempt: Option<u32>, (from, to): (u64, u64)) -> Round {
        let mut r = Round::start(kind, (1, 2), EngineId::Codex);
        r.outcome = RoundOutcome::Done;
        r.attempt = attempt;
        (r.started_at, r.finished_at) = (rfc3339(T + from, 0), Some(rfc3339(T + to, 0)));
        r
    }

    /// A round's bar follows its unit into the unit's lane (not the lowest
    /// free one), and a fix round's bar stands for its attempt.
    #[test]
    fn a_rounds_bar_takes_its_units_lane_and_a_fix_round_its_attempt() {
        let dir = std::path::PathBuf::from("/nonexistent/vf-state");
        let store = MarkerStore::new(&dir);
        let x = unit("x", (0, 3), Vec::new());
        let a = unit(
            "a",
            (1, 10),
            vec![
                round(RoundKind::Fix, Some(2), (1, 10)),
                round(RoundKind::Review, None, (10, 15)),
            ],
        );
        let (bars, lanes) = bars(&store, &[x, a], (T + 20) * 1000);
        let got: Vec<_> = bars
            .iter()
            .map(|b| {
                (
                    b.unit.as_str(),
                    b.round.as_deref(),
                    b.engine.as_str(),
                    b.lane,
                )
            })
            .collect();
        assert_eq!(
            (got, lanes),
            (
                vec![
                    ("x", None, "claude", 0),
                    ("a", Some("fix 1/2"), "codex", 1),
                    ("a", Some("review 1/2"), "codex", 1),
                ],
                2
            )
        );
    }
}
