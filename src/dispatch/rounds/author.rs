//! The author's side of a round: its session resumed (exact where the
//! engine can, else a fresh session primed with the bounded replay, as
//! `vf resume` decides), and what a fix round records of `verify`.

use crate::engine::EventSink;
use crate::ground::{Reason, Result};
use crate::unit::marker::Marker;
use crate::unit::marker::resume_rule::has_exact_authority;
use crate::unit::marker::rounds::{RoundKind, VerifyCheck};

use super::super::{DispatchResult, UnitSpec};

/// The author's next attempt, sending `prompt` into its session.
pub(super) async fn resume(
    (spec, hold): (&UnitSpec, &crate::unit::UnitHold),
    m: &Marker,
    prompt: String,
    sink: &mut dyn EventSink,
) -> Result<DispatchResult> {
    let (engine, bin) = (m.engine, spec.engine_bin.clone());
    let installed = crate::ground::offload::run(move || {
        super::super::installed_version(engine, bin.as_deref())
    })
    .await
    .ok()
    .flatten();
    let mut spec = spec.clone();
    let exact = m
        .engine_session_id
        .clone()
        .filter(|_| has_exact_authority(m, installed.as_ref()));
    (spec.session, spec.prompt) = match exact {
        Some(id) => (Some(id), prompt),
        None => {
            // A fresh session knows nothing: the task first, then the round's ask.
            let prompt = match hold.dir().load_task() {
                Some(task) => format!("{task}\n\n{prompt}"),
                None => prompt,
            };
            let recorded = crate::unit::history::load(&spec.state_dir, &spec.unit);
            match crate::unit::history::prepend(&spec.unit, &recorded, &prompt) {
                Some((primed, _)) => (None, primed),
                None => (None, prompt),
            }
        }
    };
    super::super::run_once(spec, hold, sink).await
}

/// The author's prompt after a reviewer's `changes` (its latest review's comments).
pub(super) fn revise_prompt(m: &Marker, round: (u32, u32)) -> String {
    let comments = m
        .rounds
        .iter()
        .rev()
        .find(|r| r.kind == RoundKind::Review)
        .and_then(|r| r.verdict.as_ref())
        .map(|v| v.comments.clone())
        .unwrap_or_default();
    super::prompts::revise_after_review(&comments, round)
}

/// `verify` as it ran after the attempt `res` (`None`: it did not run).
pub(super) fn verify_check(spec: &UnitSpec, res: &DispatchResult) -> Option<VerifyCheck> {
    let command = spec.steps.verify.clone()?;
    let failed = res.reason == Some(Reason::Verify);
    let ran = failed || res.state == crate::unit::UnitState::Done;
    ran.then(|| VerifyCheck {
        command,
        exit_code: match failed {
            true => res
                .error
                .as_deref()
                .and_then(super::super::around::verify_status),
            false => Some(0),
        },
        passed: !failed,
    })
}
