//! What a unit's loop does next, read off its durable state alone (pure):
//! the marker's state and reason after the latest attempt, and its rounds.
//! Because the decision is made again from the marker after every round, a
//! loop that a crash interrupted continues where it stood and never repeats
//! a finished round.

use crate::ground::Reason;
use crate::unit::UnitState;
use crate::unit::marker::rounds::{Round, RoundKind, RoundOutcome, Trigger, VerdictKind};

use super::Loops;

/// The next step of a unit's loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// The loop is over; the unit's state stands.
    Close,
    /// The loop is over and fails the unit.
    Fail(Reason, String),
    /// Resume the author's session with a fix prompt (after `trigger`).
    Fix { n: u32, of: u32, trigger: Trigger },
    /// Run the reviewer; `again`: the round a crash interrupted, continued.
    Review { n: u32, of: u32, again: bool },
}

/// The step after an attempt that ended in `state` for `reason`.
pub fn next(state: UnitState, reason: Option<Reason>, rounds: &[Round], loops: &Loops) -> Next {
    if let Some(r) = rounds.last()
        && r.outcome == RoundOutcome::Running
        && r.kind == RoundKind::Review
    {
        return Next::Review {
            n: r.n,
            of: r.of,
            again: true,
        };
    }
    match (state, reason) {
        (UnitState::Done, _) => after_done(rounds, loops),
        (UnitState::Failed, Some(Reason::Verify)) => {
            let used = fixes(rounds, Trigger::Verify);
            match used < loops.fix_rounds {
                true => Next::Fix {
                    n: used.saturating_add(1),
                    of: loops.fix_rounds,
                    trigger: Trigger::Verify,
                },
                false => Next::Close,
            }
        }
        _ => Next::Close,
    }
}

/// How many fix rounds `trigger` started so far.
fn fixes(rounds: &[Round], trigger: Trigger) -> u32 {
    let of = |r: &&Round| r.kind == RoundKind::Fix && r.trigger == Some(trigger);
    rounds.iter().filter(of).count() as u32
}

/// An author that ended well: the reviewer's gate, if there is one.
fn after_done(rounds: &[Round], loops: &Loops) -> Next {
    let Some(review) = &loops.review else {
        return Next::Close;
    };
    let of = review.rounds;
    let Some(i) = rounds.iter().rposition(|r| r.kind == RoundKind::Review) else {
        return Next::Review {
            n: 1,
            of,
            again: false,
        };
    };
    let last = &rounds[i];
    let verdict = last.verdict.as_ref().map(|v| v.verdict);
    match (last.outcome, verdict) {
        (RoundOutcome::Done, Some(VerdictKind::Approve)) => Next::Close,
        (RoundOutcome::Done, Some(VerdictKind::Changes)) => {
            let revised = rounds[i + 1..].iter().any(|r| r.kind == RoundKind::Fix);
            match (revised, last.n < of) {
                // The author answered the comments and ended well: review again.
                (true, _) => Next::Review {
                    n: last.n.saturating_add(1),
                    of,
                    again: false,
                },
                (false, true) => Next::Fix {
                    n: last.n,
                    of,
                    trigger: Trigger::Review,
                },
                (false, false) => Next::Fail(Reason::Review, rejected(last)),
            }
        }
        _ => Next::Fail(
            Reason::Review,
            last.error
                .clone()
                .unwrap_or_else(|| "the reviewer gave no valid verdict".into()),
        ),
    }
}

/// The unit's error when its reviewer's last round asked for changes.
fn rejected(last: &Round) -> String {
    let first = last
        .verdict
        .as_ref()
        .and_then(|v| v.comments.first())
        .map(|c| format!(": {}", crate::ground::text::cut(&c.text, 200)))
        .unwrap_or_default();
    format!(
        "the reviewer ({}) asked for changes in its last round ({}/{}){first}",
        last.engine, last.n, last.of
    )
}

#[cfg(test)]
#[path = "next_tests.rs"]
mod tests;
