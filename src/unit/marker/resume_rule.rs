//! What a marker authorises: touching the unit at all (its owner must be
//! provably gone), and resuming its native session (the resume policy).
//! `vf dispatch`, `vf resume` and `vf orchestrate` all decide here.

use crate::ground::error::{Result, VfError};
use crate::ground::procinfo::Liveness;
use crate::ground::version::Version;
use crate::unit::marker::{Marker, UnitState};

/// The prompt of a resumed turn when the user gives none.
pub const DEFAULT_RESUME_PROMPT: &str =
    "Continue the task from where you stopped. End with the fenced ```json summary as before.";

/// Why a `running` marker must not be touched, as a predicate for "unit X" or
/// "it" (`is running under vf pid N, ...`), or `None` when its supervising vf
/// is provably dead (or the marker is not `running`). A zombie vf is dead.
pub fn owner_refusal(marker: &Marker) -> Option<String> {
    if marker.state != UnitState::Running {
        return None;
    }
    let pid = marker.owner.as_ref().map_or(0, |o| o.supervisor.pid);
    match marker.owner_alive() {
        Liveness::Dead => None,
        Liveness::Alive => Some(live_owner(pid)),
        Liveness::Unknown => Some(format!(
            "is marked running and its owner (vf pid {pid}) cannot be proven dead; not touching it"
        )),
    }
}

/// The one refusal (exit 2) for a unit that another vf may still be running.
pub fn refuse_if_owned(unit: &str, marker: &Marker) -> Result<()> {
    match owner_refusal(marker) {
        Some(why) => Err(VfError::usage(format!("unit {unit:?} {why}"))),
        None => Ok(()),
    }
}

/// The refusal for a unit whose lock is held by the live vf `pid`.
pub fn running_elsewhere(unit: &str, pid: u32) -> VfError {
    VfError::usage(format!("unit {unit:?} {}", live_owner(pid)))
}

fn live_owner(pid: u32) -> String {
    format!("is running under vf pid {pid}, a live vf; not touching it")
}

/// The resume policy: which session id, if any, a marker gives authority to
/// resume with the engine as installed now (`installed`: its version, when
/// readable). Only non-terminal markers (`failed`, `blocked`, or `running`
/// whose owner is provably dead) with a valid exact id on an engine with
/// exact authority (see [`authority_refusal`]) qualify.
pub fn resolve_resume_id(
    marker: &Marker,
    installed: Option<&Version>,
) -> std::result::Result<String, String> {
    if let Some(why) = state_refusal(marker) {
        return Err(why);
    }
    if let Some(why) = authority_refusal(marker, installed) {
        return Err(why);
    }
    let engine = marker.engine.engine();
    match &marker.engine_session_id {
        None => Err("no engine session id was recorded".into()),
        Some(id) if !engine.valid_session_id(id) => Err(format!(
            "the recorded session id {:?} is not valid",
            crate::ground::text::cut(id, 80)
        )),
        Some(id) => Ok(id.clone()),
    }
}

/// Why the marker's state alone forbids resuming the unit in any way (exact
/// or with a replay), or `None`.
pub fn state_refusal(marker: &Marker) -> Option<String> {
    match marker.state {
        // A done author whose loop is open (a review pending) goes on with it.
        UnitState::Done if marker.loop_open => None,
        UnitState::Done => Some("it is done; done units are never resumed".into()),
        // A pending marker with an id: a later attempt was claimed but vf died
        // before it spawned; the recorded session is still the one to resume.
        UnitState::Pending if marker.engine_session_id.is_some() => None,
        UnitState::Pending => Some("it never started (pending); dispatch it instead".into()),
        UnitState::Running => owner_refusal(marker).map(|why| format!("it {why}")),
        UnitState::Failed | UnitState::Blocked => None,
    }
}

/// Why the marker's engine has no exact resume authority, or `None`. The
/// authority is proven per version (ENGINES.md), so it must hold at the
/// version that made the session and at the installed one that would resume
/// it: an engine that left its proven versions since has none (stale
/// authority), and the unit is replayed like one on an engine without it.
pub fn authority_refusal(marker: &Marker, installed: Option<&Version>) -> Option<String> {
    let recorded = marker.engine_version.as_deref().and_then(Version::parse);
    let engine = marker.engine.engine();
    if !engine.exact_resume(recorded.as_ref()) {
        return Some(format!(
            "{} has no exact resume by session id",
            marker.engine
        ));
    }
    if engine.exact_resume(installed) {
        return None;
    }
    let now = installed.map_or("of unreadable version".to_string(), |v| format!("{v}"));
    let then = recorded.map_or(String::new(), |v| format!(" (the session was made by {v})"));
    Some(format!(
        "{} {now} has no exact resume by session id{then}",
        marker.engine
    ))
}

/// The marker's engine has exact resume authority, at its recorded version
/// and at the installed one.
pub fn has_exact_authority(marker: &Marker, installed: Option<&Version>) -> bool {
    authority_refusal(marker, installed).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineId;
    use crate::ground::procinfo::ProcIdentity;
    use crate::unit::marker::Owner;

    fn running(supervisor: ProcIdentity) -> Marker {
        let mut m = Marker::new("u", EngineId::Codex, std::path::Path::new("/"));
        m.state = UnitState::Running;
        m.engine_version = Some("0.171.0".into());
        m.engine_session_id = Some("01a229e6-b739-7472-9ac7-c8fe37200f9b".into());
        m.owner = Some(Owner {
            supervisor,
            cli: None,
            pgid: None,
        });
        m
    }

    #[test]
    fn one_refusal_for_live_and_unprovable_owners() {
        let live = running(ProcIdentity::current());
        let err = refuse_if_owned("u", &live).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert_eq!(
            err.to_string(),
            format!(
                "unit \"u\" is running under vf pid {}, a live vf; not touching it",
                std::process::id()
            )
        );
        assert_eq!(
            resolve_resume_id(&live, None).unwrap_err(),
            format!("it {}", owner_refusal(&live).unwrap())
        );
        let mut elsewhere = ProcIdentity::current();
        elsewhere.host = "elsewhere.invalid".into();
        assert!(
            owner_refusal(&running(elsewhere))
                .unwrap()
                .contains("cannot be proven dead")
        );
        let mut dead = ProcIdentity::current();
        dead.start_time = dead.start_time.map(|t| t + 1);
        let dead = running(dead);
        assert_eq!(owner_refusal(&dead), None);
        assert_eq!(
            resolve_resume_id(&dead, None).unwrap(),
            "01a229e6-b739-7472-9ac7-c8fe37200f9b"
        );
    }

    #[test]
    fn a_zombie_vf_is_no_owner() {
        let mut child = crate::ground::procinfo::tests::zombie();
        let m = running(ProcIdentity::of(child.id()));
        assert_eq!(owner_refusal(&m), None);
        assert!(refuse_if_owned("u", &m).is_ok());
        child.wait().unwrap();
    }
}
