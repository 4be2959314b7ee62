//! A unit started again outside a plan: `vf dispatch` of an existing unit
//! that is not done (a re-run), and `vf resume` of a unit whose engine has no
//! exact resume authority. Neither can continue the native session, so each
//! starts a fresh one primed with the bounded replay of the unit's own
//! earlier public answers ([`crate::unit::history`]), as `orchestrate --resume` does.

use std::path::Path;

use crate::dispatch::DispatchResult;
use crate::ground::Version;
use crate::unit::Counts;
use crate::unit::UnitState;
use crate::unit::history;
use crate::unit::marker::Marker;
use crate::unit::{has_exact_authority, state_refusal};

/// What `start` says in a result that was primed with a replay.
pub const START_REPLAY: &str = "replay";

/// `prompt` behind the replay block of `unit`'s recorded answers, or `None`
/// when nothing is recorded. Errors: the recorded answers cannot be read
/// (what is wrong with the file, in one line).
pub fn primed(
    state_dir: &Path,
    unit: &str,
    prompt: &str,
) -> Result<Option<(String, Counts)>, String> {
    let recorded = history::load_checked(state_dir, unit).map_err(|e| {
        let path = history::history_path(state_dir, unit);
        format!(
            "its recorded answers {} cannot be read: {e}",
            path.display()
        )
    })?;
    Ok(history::prepend(unit, &recorded, prompt))
}

/// For `vf dispatch` (under the unit's lock): a re-run of an existing, not
/// done unit without `--session` gets the replay. A done unit is left to the
/// dispatch runtime, which refuses it.
pub fn for_dispatch(
    state_dir: &Path,
    marker: Option<&Marker>,
    session: Option<&str>,
    prompt: &str,
) -> Result<Option<(String, Counts)>, String> {
    let Some(m) = marker else { return Ok(None) };
    if session.is_some() || m.state == UnitState::Done {
        return Ok(None);
    }
    primed(state_dir, &m.unit, prompt)
}

/// For `vf resume` when the exact resume was refused (`why`): a unit that may
/// be resumed but whose engine has no exact authority (at its recorded or its
/// `installed` version) gets the replay; any other refusal stands. Errors are
/// the one-line reason, without the unit.
pub fn for_resume(
    state_dir: &Path,
    marker: &Marker,
    installed: Option<&Version>,
    why: String,
    prompt: &str,
) -> Result<(String, Counts), String> {
    if state_refusal(marker).is_some() || has_exact_authority(marker, installed) {
        return Err(why);
    }
    primed(state_dir, &marker.unit, prompt)
        .map_err(|e| format!("{why}, and {e}"))?
        .ok_or_else(|| format!("{why}, and no earlier answer is recorded to replay"))
}

/// Marks a result as started from a replay of `counts`.
pub fn mark(result: &mut DispatchResult, counts: Option<Counts>) {
    if let Some(c) = counts {
        result.start = Some(START_REPLAY);
        result.replay = Some(c);
    }
}
