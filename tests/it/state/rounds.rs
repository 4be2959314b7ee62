//! `vf status` shows a unit's closed loops (issue 41): its rounds, a review
//! still pending after the author is done, a round a dead vf interrupted.

use vf::engine::EngineId;
use vf::unit::marker::UnitState;
use vf::unit::marker::rounds::{Comment, Round, RoundKind, RoundOutcome, Verdict, VerdictKind};

use super::*;

fn round(kind: RoundKind, (n, of): (u32, u32), outcome: RoundOutcome) -> Round {
    let mut r = Round::start(kind, (n, of), EngineId::Codex);
    r.outcome = outcome;
    r
}

/// The `vf status` line of unit `u`, and its `--json` row.
fn status_of(env: &Units) -> (String, Value) {
    let out = env.run(&["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.starts_with("u ")).unwrap_or("");
    let out = env.run(&["status", "u", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (
        line.to_string(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

#[test]
fn status_lists_the_rounds_and_a_pending_review_is_never_plain_done() {
    let env = Units::new();
    let mut m = env.marker("u", UnitState::Done);
    let mut review = round(RoundKind::Review, (1, 1), RoundOutcome::Done);
    review.verdict = Some(Verdict {
        verdict: VerdictKind::Approve,
        comments: vec![Comment {
            path: Some("src/a.rs".into()),
            line: Some(3),
            text: "fine".into(),
        }],
    });
    m.rounds = vec![round(RoundKind::Fix, (1, 2), RoundOutcome::Done), review];
    env.save(&mut m);
    let (line, row) = status_of(&env);
    assert!(
        line.contains("rounds: fix 1/2 done, review 1/1 approve (1 comment)"),
        "{line}"
    );
    assert_eq!(row["rounds"].as_array().map(Vec::len), Some(2), "{row}");
    assert_eq!(row["rounds"][1]["verdict"]["comments"][0]["text"], "fine");
    assert!(row.get("loopOpen").is_none(), "{row}");

    // The author is done, the reviewer not yet: a gate still pending.
    m.loop_open = true;
    m.rounds = vec![round(RoundKind::Fix, (1, 2), RoundOutcome::Done)];
    env.save(&mut m);
    let (line, row) = status_of(&env);
    assert!(line.contains(" done, review pending "), "{line}");
    assert_eq!(
        (&row["state"], &row["loopOpen"]),
        (&"done".into(), &true.into())
    );
}

/// A round left `running` by a vf that died: interrupted, and resumable
/// as the resume rule says.
#[test]
fn a_round_under_a_dead_vf_shows_interrupted() {
    let env = Units::new();
    let mut m = env.marker("u", UnitState::Running);
    m.loop_open = true;
    m.owner = None;
    m.rounds = vec![
        round(RoundKind::Fix, (1, 2), RoundOutcome::Done),
        round(RoundKind::Review, (1, 2), RoundOutcome::Running),
    ];
    env.save(&mut m);
    let (line, row) = status_of(&env);
    assert!(
        line.contains("interrupted in review 1/2; resumable;"),
        "{line}"
    );
    assert_eq!(
        (
            &row["ownerState"],
            &row["resumable"],
            &row["rounds"][1]["outcome"]
        ),
        (&"dead".into(), &true.into(), &"running".into()),
        "{row}"
    );
}
