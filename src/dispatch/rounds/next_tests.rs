use super::*;
use crate::engine::EngineId;
use crate::unit::marker::rounds::{Comment, Verdict};

fn loops(fix: u32, review: Option<u32>) -> Loops {
    Loops {
        fix_rounds: fix,
        review: review.map(|rounds| super::super::Review {
            engine: EngineId::Codex,
            model: None,
            rounds,
            prompt: None,
        }),
        ..Loops::default()
    }
}

fn round(kind: RoundKind, n: u32, outcome: RoundOutcome) -> Round {
    Round {
        outcome,
        ..Round::start(kind, (n, 2), EngineId::Codex)
    }
}

fn review(n: u32, verdict: VerdictKind) -> Round {
    Round {
        verdict: Some(Verdict {
            verdict,
            comments: vec![Comment {
                path: Some("a.rs".into()),
                line: Some(3),
                text: "rename x".into(),
            }],
        }),
        ..round(RoundKind::Review, n, RoundOutcome::Done)
    }
}

fn fix(trigger: Trigger) -> Round {
    Round {
        trigger: Some(trigger),
        ..round(RoundKind::Fix, 1, RoundOutcome::Done)
    }
}

#[test]
fn a_failed_verify_gets_a_fix_round_while_rounds_remain() {
    let l = loops(2, None);
    let failed = (UnitState::Failed, Some(Reason::Verify));
    let want = |n| Next::Fix {
        n,
        of: 2,
        trigger: Trigger::Verify,
    };
    assert_eq!(next(failed.0, failed.1, &[], &l), want(1));
    assert_eq!(
        next(failed.0, failed.1, &[fix(Trigger::Verify)], &l),
        want(2)
    );
    let two = [fix(Trigger::Verify), fix(Trigger::Verify)];
    assert_eq!(next(failed.0, failed.1, &two, &l), Next::Close);
    // Revisions after a review do not use the verify rounds.
    let revised = [fix(Trigger::Review)];
    assert_eq!(next(failed.0, failed.1, &revised, &l), want(1));
}

#[test]
fn other_failures_and_no_loops_close() {
    let l = loops(3, Some(2));
    assert_eq!(
        next(UnitState::Failed, Some(Reason::Engine), &[], &l),
        Next::Close
    );
    assert_eq!(
        next(UnitState::Done, None, &[], &loops(3, None)),
        Next::Close
    );
    assert_eq!(
        next(
            UnitState::Failed,
            Some(Reason::Verify),
            &[],
            &loops(0, None)
        ),
        Next::Close
    );
}

#[test]
fn review_gates_a_done_author_and_sends_changes_back() {
    let l = loops(0, Some(2));
    let done = |r: &[Round]| next(UnitState::Done, None, r, &l);
    let review_n = |n| Next::Review {
        n,
        of: 2,
        again: false,
    };
    assert_eq!(done(&[]), review_n(1));
    let changes = review(1, VerdictKind::Changes);
    assert_eq!(
        done(std::slice::from_ref(&changes)),
        Next::Fix {
            n: 1,
            of: 2,
            trigger: Trigger::Review
        }
    );
    assert_eq!(done(&[changes.clone(), fix(Trigger::Review)]), review_n(2));
    assert_eq!(done(&[review(1, VerdictKind::Approve)]), Next::Close);
    let last = [
        changes,
        fix(Trigger::Review),
        review(2, VerdictKind::Changes),
    ];
    assert_eq!(
        done(&last),
        Next::Fail(
            Reason::Review,
            "the reviewer (codex) asked for changes in its last round (2/2): rename x".into()
        )
    );
}

#[test]
fn an_interrupted_review_is_continued_and_an_invalid_one_fails() {
    let l = loops(0, Some(2));
    let running = [round(RoundKind::Review, 1, RoundOutcome::Running)];
    let again = Next::Review {
        n: 1,
        of: 2,
        again: true,
    };
    assert_eq!(next(UnitState::Done, None, &running, &l), again);
    let bad = Round {
        error: Some("no verdict".into()),
        ..round(RoundKind::Review, 1, RoundOutcome::Failed)
    };
    assert_eq!(
        next(UnitState::Done, None, &[bad], &l),
        Next::Fail(Reason::Review, "no verdict".into())
    );
}

#[test]
fn a_hostile_round_number_never_overflows() {
    let l = loops(0, Some(u32::MAX));
    let changes = Round {
        n: u32::MAX,
        of: u32::MAX,
        ..review(1, VerdictKind::Changes)
    };
    let step = next(UnitState::Done, None, &[changes, fix(Trigger::Review)], &l);
    assert_eq!(
        step,
        Next::Review {
            n: u32::MAX,
            of: u32::MAX,
            again: false
        }
    );
}
