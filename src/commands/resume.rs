//! `vf resume UNIT`: continue a unit's exact native session.

use crate::cli::ResumeArgs;
use crate::dispatch::UnitSpec;
use crate::error::{Result, VfError};
use crate::marker::{Marker, MarkerStore, UnitState};
use crate::procinfo::Liveness;
use crate::version::Version;
use crate::{names, state};

/// The prompt of a resumed turn when the user gives none.
pub const DEFAULT_RESUME_PROMPT: &str =
    "Continue the task from where you stopped. End with the fenced ```json summary as before.";

/// The resume policy: which session id, if any, a marker gives authority to resume.
/// Only non-terminal markers (`failed`, `blocked`, or `running` whose owner is
/// provably dead) with a valid exact id on an exact-resume engine qualify.
pub fn resolve_resume_id(marker: &Marker) -> std::result::Result<String, String> {
    match marker.state {
        UnitState::Done => return Err("it is done; done units are never resumed".into()),
        // A pending marker with an id: a later attempt was claimed but vf died
        // before it spawned; the recorded session is still the one to resume.
        UnitState::Pending if marker.engine_session_id.is_some() => {}
        UnitState::Pending => return Err("it never started (pending); dispatch it instead".into()),
        UnitState::Running => match marker.owner_alive() {
            Liveness::Dead => {}
            Liveness::Alive => {
                return Err(format!(
                    "it is running under a live vf (pid {})",
                    marker.owner.as_ref().map(|o| o.supervisor.pid).unwrap_or(0)
                ));
            }
            Liveness::Unknown => {
                return Err("it is marked running and its owner cannot be proven dead".into());
            }
        },
        UnitState::Failed | UnitState::Blocked => {}
    }
    let engine = marker.engine.engine();
    let version = marker.engine_version.as_deref().and_then(Version::parse);
    if !engine.exact_resume(version.as_ref()) {
        return Err(format!(
            "{} has no exact resume by session id",
            marker.engine
        ));
    }
    match &marker.engine_session_id {
        None => Err("no engine session id was recorded".into()),
        Some(id) if !engine.valid_session_id(id) => {
            Err(format!("the recorded session id {id:?} is not valid"))
        }
        Some(id) => Ok(id.clone()),
    }
}

pub fn run(args: &ResumeArgs) -> Result<i32> {
    names::check("unit name", &args.unit)?;
    let cwd = std::env::current_dir()?;
    let state_dir = state::resolve_state_dir(args.run.state_dir.as_deref(), &cwd)?;
    let kill_grace = crate::child::kill_grace_from_env()?;
    let store = MarkerStore::new(&state_dir);
    let no_unit = || {
        VfError::usage(format!(
            "no unit {:?} under {}",
            args.unit,
            state_dir.display()
        ))
    };
    // Nothing (not even a lock file) is written for a unit that does not exist;
    // one whose first run is still starting has its lock file already.
    let lock_file = crate::unit_lock::lock_path(&state_dir, &args.unit);
    if !store.path(&args.unit).exists() && !lock_file.exists() {
        return Err(no_unit());
    }
    // Held from reading the marker to the end of the run: no other vf can
    // change the resume authority in between.
    let lock = crate::unit_lock::UnitLock::acquire(&state_dir, &args.unit)?;
    let marker = store.load(&args.unit)?.ok_or_else(no_unit)?;
    let id = resolve_resume_id(&marker)
        .map_err(|why| VfError::usage(format!("cannot resume unit {:?}: {why}", args.unit)))?;
    let prompt = if args.prompt.prompt.is_some() || args.prompt.prompt_file.is_some() {
        super::prompt::read(&args.prompt)?
    } else {
        DEFAULT_RESUME_PROMPT.to_string()
    };
    let spec = UnitSpec {
        engine: marker.engine,
        unit: marker.unit.clone(),
        prompt,
        session: Some(id),
        cwd: marker.cwd.clone(),
        state_dir,
        skip_permissions: args.skip_permissions,
        engine_bin: args.run.engine_bin.clone(),
        attachments: Vec::new(),
        stall_timeout: super::dispatch::seconds("--stall-timeout", args.run.stall_timeout)?,
        timeout: super::dispatch::seconds("--timeout", args.run.timeout)?,
        kill_grace,
        warnings: Vec::new(),
        engine_reason: None,
        redact: Vec::new(),
    };
    super::dispatch::run_unit(spec, Some(lock), super::output::format(&args.run))
}
