//! A resolve round (plan key `on_conflict = "resolve"`): a dependency's
//! merge conflicted and was left in progress in the unit's worktree; the
//! resolver runs there as a nested unit (`resolve-<n>`), then vf commits the
//! merge itself, or aborts it and the unit ends `merge-conflict` as without
//! a resolver. The round is in the unit's marker before the resolver starts
//! (a crash leaves it `running`, and the next run continues it: the nested
//! unit's session resumed) and its outcome after.

use super::nested::{self, Nested};
use super::prompts;
use crate::dispatch::{EventSink, UnitSpec};
use crate::engine::{EngineId, RoundNote};
use crate::ground::{Reason, Result, VfError};
use crate::unit::marker::Marker;
use crate::unit::marker::rounds::{Round, RoundKind, RoundOutcome};
use crate::unit::{LockedUnit, UnitState};
use crate::workspace::{Pending, Unsettled, Workspace, conflict};

/// How the unit ends when the round did not settle the merge.
pub type End = (UnitState, Reason, String);

/// What the resolver is told of each side.
const SUMMARY_CUT: usize = 4000;

/// Runs the resolve round of `pending` in `ws`. `None`: the merge is
/// committed and the unit goes on; else how the unit ends (the merge aborted).
pub async fn run(
    spec: &UnitSpec,
    unit: &LockedUnit,
    engine: EngineId,
    (ws, pending): (&Workspace, &Pending),
    sink: &mut dyn EventSink,
) -> Result<Option<End>> {
    let mut marker = match unit.load_marker()? {
        Some(m) => m,
        None => Marker::new(&spec.unit, spec.engine, &spec.cwd),
    };
    marker.workspace = Some(ws.clone());
    // A new loop starts with no rounds; its claim keeps the ones it has.
    if !marker.loop_open {
        marker.rounds.clear();
    }
    marker.loop_open = true;
    let (at, continued) = begin(&mut marker, engine, pending);
    let marker = save(unit, marker).await?;
    let (n, name) = (marker.rounds[at].n, marker.rounds[at].unit.clone());
    // A name read from a hostile marker is never a path.
    let name = name.filter(|n| crate::ground::names::check("unit name", n).is_ok());
    let name = name.unwrap_or_else(|| format!("resolve-{}.{n}", marker.attempts.saturating_add(1)));
    // A resolver killed before its session was known starts again whole.
    let resume = continued && nested::session_of(spec, &name, engine).is_some();
    let note = |ended: Option<&str>| RoundNote {
        kind: RoundKind::Resolve.as_str(),
        n,
        of: 1,
        engine,
        ended: ended.map(str::to_string),
    };
    sink.round(&note(None));
    let prompt = match resume {
        true => prompts::continue_round(RoundKind::Resolve),
        false => {
            let dep = summary_of(spec, &pending.dependency);
            // The unit has not run yet: its side is its task.
            let task = crate::ground::text::cut(&spec.prompt, SUMMARY_CUT);
            let own = serde_json::json!({ "task": task });
            prompts::resolve(
                &pending.dependency,
                &spec.unit,
                &pending.paths,
                dep.as_ref(),
                Some(&own),
            )
        }
    };
    let nested = Nested {
        parent: spec,
        name,
        engine,
        model: None,
        prompt,
        read_only: false,
        cwd: ws.path.clone(),
        resume,
    };
    let ran = nested::run(nested, sink).await;
    let (settled, end) = settle(ws, pending, engine, &ran).await?;
    let mut marker = marker;
    let round = &mut marker.rounds[at];
    if let Ok(res) = &ran {
        round.session_id = res.session_id.clone();
        round.usage = res.usage.clone();
    }
    round.outcome = settled;
    round.finished_at = Some(crate::ground::fsutil::now_rfc3339());
    if let Some((_, reason, error)) = &end {
        round.reason = Some(*reason);
        round.error = Some(error.clone());
    }
    save(unit, marker).await?;
    let word = match settled {
        RoundOutcome::Done => "done",
        _ => "failed",
    };
    sink.round(&note(Some(word)));
    Ok(end)
}

/// The round of `pending` in `marker`: the one a crash left running for
/// the same dependency (continued, `true`), else a new one. Its index.
fn begin(marker: &mut Marker, engine: EngineId, pending: &Pending) -> (usize, bool) {
    let running = marker.rounds.iter().rposition(|r| {
        r.kind == RoundKind::Resolve
            && r.outcome == RoundOutcome::Running
            && r.dependency.as_deref() == Some(pending.dependency.as_str())
    });
    if let Some(at) = running {
        return (at, true);
    }
    let n = marker
        .rounds
        .iter()
        .filter(|r| r.kind == RoundKind::Resolve)
        .count() as u32
        + 1;
    let mut round = Round::start(RoundKind::Resolve, (n, 1), engine);
    // Named after the attempt it comes before: unique across loops (a
    // re-run's loop numbers its rounds from 1 again).
    round.unit = Some(format!("resolve-{}.{n}", marker.attempts.saturating_add(1)));
    round.dependency = Some(pending.dependency.clone());
    round.paths = pending.paths.clone();
    marker.rounds.push(round);
    (marker.rounds.len() - 1, false)
}

async fn save(unit: &LockedUnit, marker: Marker) -> Result<Marker> {
    let (marker, saved) = unit.save_marker(marker).await;
    saved.map(|()| marker)
}

/// The dependency's summary as its marker has it (None: it has none); a
/// long one as its text, cut.
fn summary_of(spec: &UnitSpec, dep: &str) -> Option<serde_json::Value> {
    let m = crate::unit::UnitDir::new(&spec.state_dir, dep)
        .load_marker()
        .ok()??;
    let summary = m.summary?;
    let text = summary.to_string();
    Some(match text.len() > SUMMARY_CUT {
        true => serde_json::Value::String(crate::ground::text::cut(&text, SUMMARY_CUT).to_string()),
        false => summary,
    })
}

/// After the resolver: commit the merge, or abort it; the round's outcome
/// and, when not committed, how the unit ends.
async fn settle(
    ws: &Workspace,
    pending: &Pending,
    engine: EngineId,
    ran: &Result<crate::dispatch::DispatchResult>,
) -> Result<(RoundOutcome, Option<End>)> {
    let why_not = match ran {
        Ok(r) if r.state == UnitState::Done => None,
        Ok(r) => Some(format!(
            "the resolver ended {}: {}",
            r.state.as_str(),
            r.error.as_deref().unwrap_or("no error given")
        )),
        Err(e) => Some(format!("the resolver did not run: {e}")),
    };
    let branch = ws.branch.clone();
    let (ws, p) = (ws.clone(), pending.clone());
    let done = crate::ground::offload::run(move || {
        let committed = match why_not {
            None => conflict::commit(&ws, &p, engine.as_str()).map(|_| ()),
            Some(why) => Err(Unsettled::Conflict(why)),
        };
        match committed {
            Ok(()) => Ok(()),
            Err(Unsettled::Broken(m)) => Err(Unsettled::Broken(m)),
            Err(Unsettled::Conflict(m)) => match conflict::abort(&ws, &p) {
                Ok(()) => Err(Unsettled::Conflict(m)),
                Err(Unsettled::Broken(b)) => Err(Unsettled::Broken(b)),
                Err(Unsettled::Conflict(a)) => Err(Unsettled::Conflict(format!("{m}; {a}"))),
            },
        }
    })
    .await
    .map_err(|e| VfError::state(format!("the resolve round's git task failed: {e}")))?;
    Ok(match done {
        Ok(()) => (RoundOutcome::Done, None),
        Err(Unsettled::Broken(m)) => (
            RoundOutcome::Failed,
            Some((UnitState::Failed, Reason::Workspace, m)),
        ),
        Err(Unsettled::Conflict(m)) => {
            let msg = format!(
                "merge conflict: {} does not merge into {branch}: {}; the resolver ({engine}) \
                 did not settle it ({m}), so the merge was aborted",
                pending.theirs,
                pending.paths.join(", ")
            );
            (
                RoundOutcome::Failed,
                Some((UnitState::Blocked, Reason::MergeConflict, msg)),
            )
        }
    })
}

#[cfg(test)]
#[path = "resolver_tests.rs"]
mod tests;
