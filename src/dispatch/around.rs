//! The steps around the engine: the unit's worktree (before `prepare`),
//! `setup` (before the spawn), and at the end the worktree's commit and
//! `verify`. See docs/WORKSPACES.md.

use std::time::Instant;

use super::prepare::Prepared;
use super::prepare::SandboxRun;
use super::rounds::{OnConflict, resolver};
use super::{DispatchResult, EventSink, UnitSpec};
use crate::ground::EnvVars;
use crate::ground::{Reason, Result, VfError};
use crate::process::StepKind;
use crate::process::{Step, StepEnd, StepOwner};
use crate::unit::UnitLife;
use crate::unit::UnitState;
use crate::unit::{LockedUnit, Worktree};
use crate::workspace::{OpenError, SealError, Workspace, WorkspaceSpec};

/// What runs around the engine (all off by default).
#[derive(Debug, Clone, Default)]
pub struct Steps {
    /// Run in a git worktree of the unit (`--worktree`).
    pub workspace: Option<WorkspaceSpec>,
    /// `/bin/sh -c` before the engine.
    pub setup: Option<String>,
    /// `/bin/sh -c` after a successful engine run.
    pub verify: Option<String>,
    /// `--deny-path` / `--allow-path`, checked after the engine's run.
    pub guards: Option<crate::workspace::PathGuards>,
}

/// The locked unit to run, or the finished result of a unit whose worktree
/// could not be used (blocked by a merge conflict, or not vf's any more).
pub(super) enum Opened {
    /// Boxed: the enum stays small (clippy's `large_enum_variant` on Windows).
    Ready(Box<LockedUnit>, Option<Workspace>),
    Ended(Box<DispatchResult>),
}

/// Creates or reuses the locked unit's worktree, and points the spec's cwd
/// into it. A merge conflict blocks the unit (after a resolve round, when
/// the unit has a resolver: [`crate::dispatch::rounds::resolve`]), a
/// worktree that is not vf's any more fails it (marker written).
pub(super) async fn open_workspace(
    spec: &mut UnitSpec,
    unit: LockedUnit,
    sink: &mut dyn EventSink,
    started: Instant,
) -> Result<Opened> {
    let Some(mut ws_spec) = spec.steps.workspace.clone() else {
        return Ok(Opened::Ready(Box::new(unit), None));
    };
    let marker = unit.load_marker()?;
    if marker.as_ref().is_some_and(|m| m.state == UnitState::Done) && spec.session.is_none() {
        // `prepare` refuses a done unit: make no worktree for it first.
        return Ok(Opened::Ready(Box::new(unit), None));
    }
    let resolving = match spec.loops.conflict {
        OnConflict::Resolve { engine } => Some(engine),
        OnConflict::Fail => None,
    };
    ws_spec.keep_conflicts = resolving.is_some();
    let mut previous = marker.and_then(|m| m.workspace);
    // Each resolve round commits one dependency's merge (or ends the unit):
    // one more open than there are dependencies settles them all.
    for _ in 0..=ws_spec.merge.len() {
        // git can take a while (a large checkout, a merge): off the runtime's
        // thread (the locked unit's hop), so the plan's other units keep
        // streaming meanwhile.
        let opened = unit
            .open_workspace(ws_spec.clone(), previous.clone())
            .await?;
        let (workspace, pending) = match opened {
            Err(OpenError::Unmerged { workspace, pending }) => (workspace, pending),
            other => return opened_or_ended(spec, unit, other, sink, started).await,
        };
        let Some(engine) = resolving else {
            // Not asked in fail mode; ended as a conflict all the same.
            let end = (
                UnitState::Blocked,
                Reason::MergeConflict,
                pending.paths.join(", "),
            );
            return unopened(spec, unit, *workspace, end, started).await;
        };
        let ws = (workspace.as_ref(), pending.as_ref());
        if let Some(end) = resolver::run(spec, &unit, engine, ws, sink).await? {
            return unopened(spec, unit, *workspace, end, started).await;
        }
        previous = Some(*workspace);
    }
    let why = "internal error: a dependency merge was left unsettled after every resolve round";
    Err(VfError::state(why))
}

/// The unit's worktree opened, or the unit ended as its opening says.
async fn opened_or_ended(
    spec: &mut UnitSpec,
    unit: LockedUnit,
    opened: std::result::Result<crate::workspace::Opened, OpenError>,
    sink: &mut dyn EventSink,
    started: Instant,
) -> Result<Opened> {
    match opened {
        Ok(opened) => {
            for w in &opened.warnings {
                sink.warning(w);
            }
            spec.cwd = opened.cwd;
            if let Some(w) = spec.steps.workspace.as_mut() {
                w.git_dir = Some(opened.git_dir);
            }
            Ok(Opened::Ready(Box::new(unit), Some(opened.workspace)))
        }
        Err(OpenError::Refused(e)) => Err(e),
        Err(OpenError::Conflict { workspace, message }) => {
            let end = (UnitState::Blocked, Reason::MergeConflict, message);
            unopened(spec, unit, *workspace, end, started).await
        }
        Err(OpenError::Unmerged { workspace, pending }) => {
            let end = (
                UnitState::Blocked,
                Reason::MergeConflict,
                pending.paths.join(", "),
            );
            unopened(spec, unit, *workspace, end, started).await
        }
        Err(OpenError::Remote { workspace, message }) => {
            let end = (UnitState::Failed, Reason::Remote, message);
            unopened(spec, unit, *workspace, end, started).await
        }
        Err(OpenError::Broken { workspace, message }) => {
            let end = (UnitState::Failed, Reason::Workspace, message);
            unopened(spec, unit, *workspace, end, started).await
        }
    }
}

/// Ends a unit whose worktree could not be opened (the lock drops after the marker).
async fn unopened(
    spec: &UnitSpec,
    unit: LockedUnit,
    workspace: Workspace,
    (state, reason, message): (UnitState, Reason, String),
    started: Instant,
) -> Result<Opened> {
    let mut life = UnitLife::claim_under(&spec.claim(), unit)?;
    life.note_workspace(Some(workspace));
    let res = end_early(spec, &mut life, (state, reason, message), started).await?;
    Ok(Opened::Ended(Box::new(res)))
}

/// Runs `setup` before the engine, the unit's workspace recorded in its
/// marker first; on failure the unit is failed (reason `setup`) and its
/// result returned: the engine never starts.
pub(super) async fn setup(
    spec: &UnitSpec,
    sandbox: Option<&SandboxRun>,
    life: &mut UnitLife,
    started: Instant,
) -> Result<Option<DispatchResult>> {
    life.record_workspace().await?;
    let Some(cmd) = &spec.steps.setup else {
        return Ok(None);
    };
    let session = life.marker().engine_session_id.clone();
    let failure = run_step(
        spec,
        sandbox,
        life,
        StepKind::Setup,
        cmd,
        session.as_deref(),
    )
    .await?;
    let Some((reason, error)) = failure else {
        return Ok(None);
    };
    let end = (UnitState::Failed, reason, error);
    Ok(Some(end_early(spec, life, end, started).await?))
}

/// With path guards, reads the repository before the engine runs (in a
/// plain one, what is dirty already is exempt). A repository that cannot
/// be read fails the unit (reason `policy`): an unguarded run never starts.
pub(super) async fn guard_baseline(
    spec: &UnitSpec,
    p: &mut Prepared,
    life: &mut UnitLife,
    started: Instant,
) -> Result<Option<DispatchResult>> {
    if spec.steps.guards.is_none() {
        return Ok(None);
    }
    let plain = life.marker().workspace.is_none();
    let read = life.unit().guard_baseline(spec.cwd.clone(), plain).await?;
    let error = match read {
        Ok(b) => {
            p.guard = Some(b);
            return Ok(None);
        }
        Err(e) => format!("cannot read the repository for the path guards: {e}"),
    };
    let end = (UnitState::Failed, Reason::Policy, error);
    Ok(Some(end_early(spec, life, end, started).await?))
}

/// What the steps after the engine change of its result.
#[derive(Default)]
pub(super) struct After {
    /// The failure that overrides the engine's outcome, if any.
    pub failure: Option<(Reason, String)>,
    pub warnings: Vec<String>,
    /// The changed paths the guards refuse.
    pub violations: Vec<String>,
}

/// The paths the run changed that the guards refuse, or the failure to tell.
async fn check_guards(
    spec: &UnitSpec,
    baseline: Option<&crate::workspace::Baseline>,
    life: &UnitLife,
) -> Result<Option<(Vec<String>, String)>> {
    let (Some(guards), Some(b)) = (spec.steps.guards.clone(), baseline.cloned()) else {
        return Ok(None);
    };
    // No git runs in a worktree that is not vf's any more (`finish` says so).
    let worktree = life.marker().workspace.clone().map(|ws| worktree(spec, ws));
    let changed = life.unit().guard_changes(b, worktree).await?;
    Ok(match changed {
        Err(e) => Some((
            Vec::new(),
            format!("cannot check the path guards, so nothing is committed: {e}"),
        )),
        Ok(changed) => crate::workspace::guard::refusal(&guards, &changed),
    })
}

/// After the engine: check the path guards (whatever the engine did: a
/// violation fails the unit, reason `policy`); when it succeeded and they
/// passed, commit its leftovers on the branch and run `verify`. A worktree
/// that is not the one vf made fails the unit whatever the engine did
/// (nothing is committed, verify does not run); the marker gets the
/// workspace's head and changed files otherwise.
pub(super) async fn after_engine(
    spec: &UnitSpec,
    (baseline, sandbox): (Option<&crate::workspace::Baseline>, Option<&SandboxRun>),
    life: &mut UnitLife,
    succeeded: bool,
    session: Option<&str>,
    sink: &mut dyn EventSink,
) -> Result<After> {
    let mut after = After::default();
    if let Some((bad, msg)) = check_guards(spec, baseline, life).await? {
        after.failure = Some((Reason::Policy, msg));
        after.violations = bad;
    }
    if let Some(ws) = life.marker().workspace.clone() {
        let commit = succeeded && ws.commit && after.failure.is_none();
        let by = (spec.engine.as_str(), session.map(str::to_string));
        let sealed = life
            .unit()
            .seal_worktree(worktree(spec, ws), by, commit)
            .await?;
        let sealed_failure = match sealed.error {
            Some(SealError::Broken(msg)) => Some((Reason::Workspace, msg)),
            Some(SealError::Git(e)) => Some((
                Reason::State,
                format!("cannot commit the unit's changes: {e}"),
            )),
            None => None,
        };
        after.failure = after.failure.or(sealed_failure);
        for w in &sealed.warnings {
            sink.warning(w);
        }
        after.warnings = sealed.warnings;
        life.note_workspace(Some(sealed.workspace));
    }
    if let (true, None, Some(cmd)) = (succeeded, &after.failure, &spec.steps.verify) {
        after.failure = run_step(spec, sandbox, life, StepKind::Verify, cmd, session).await?;
    }
    // Under a reviewer's gate the branch is pushed once it is approved
    // (the loop's driver, `approved_push`), never before.
    if succeeded && after.failure.is_none() && spec.loops.review.is_none() {
        after.failure = push(spec, life).await?;
    }
    Ok(after)
}

/// A done worktree unit with `push`: its branch pushed to the remote, which
/// its workspace then names (`pushed`); a failed push fails the unit
/// (reason `remote`), its worktree kept.
async fn push(spec: &UnitSpec, life: &mut UnitLife) -> Result<Option<(Reason, String)>> {
    let ws_spec = spec.steps.workspace.as_ref();
    let (Some(remote), Some(ws)) = (
        ws_spec.and_then(|w| w.push.clone()),
        life.marker().workspace.clone(),
    ) else {
        return Ok(None);
    };
    let pushing = life
        .unit()
        .push_worktree(worktree(spec, ws.clone()), remote.clone());
    match pushing.await? {
        Ok(()) => {
            let pushed = Some(remote);
            life.note_workspace(Some(Workspace { pushed, ..ws }));
            Ok(None)
        }
        Err(SealError::Broken(message)) => Ok(Some((Reason::Workspace, message))),
        Err(SealError::Git(e)) => Ok(Some((Reason::Remote, e.message))),
    }
}

/// The push of a unit its reviewer approved (plan key `push`): its
/// workspace with `pushed`, or the unit's failure (`remote`, `workspace`).
pub async fn approved_push(
    spec: &UnitSpec,
    unit: &crate::unit::LockedUnit,
    ws: Workspace,
) -> Result<std::result::Result<Option<Workspace>, (Reason, String)>> {
    let Some(remote) = spec.steps.workspace.as_ref().and_then(|w| w.push.clone()) else {
        return Ok(Ok(None));
    };
    let pushing = unit.push_worktree(worktree(spec, ws.clone()), remote.clone());
    Ok(match pushing.await? {
        Ok(()) => Ok(Some(Workspace {
            pushed: Some(remote),
            ..ws
        })),
        Err(SealError::Broken(message)) => Err((Reason::Workspace, message)),
        Err(SealError::Git(e)) => Err((Reason::Remote, e.message)),
    })
}

/// Runs one step; `None` when it succeeded, else the unit's failure.
async fn run_step(
    spec: &UnitSpec,
    sandbox: Option<&SandboxRun>,
    life: &UnitLife,
    which: StepKind,
    command: &str,
    session: Option<&str>,
) -> Result<Option<(Reason, String)>> {
    let kind = which.as_str();
    let marker = life.marker();
    let log = life.unit().dir().log_path(marker.attempts, kind);
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| VfError::state(format!("cannot create {}: {e}", dir.display())))?;
    }
    let worktree = marker
        .workspace
        .as_ref()
        .map(|w| w.path.display().to_string());
    // Inside the unit's sandbox unless `verify_sandbox = false`.
    let sandbox = sandbox.filter(|_| !spec.sandbox.steps_outside);
    let confine = sandbox.map(SandboxRun::for_step).transpose()?;
    let tmp = sandbox.map(|s| ("TMPDIR", s.tmp.display().to_string()));
    let step = Step {
        command,
        cwd: &spec.cwd,
        log: &log,
        env: tmp
            .into_iter()
            .chain(vec![
                (EnvVars::VF_UNIT, spec.unit.clone()),
                (EnvVars::VF_ENGINE, spec.engine.as_str().to_string()),
                (
                    EnvVars::VF_SESSION_ID,
                    session.unwrap_or_default().to_string(),
                ),
                (EnvVars::VF_WORKTREE, worktree.unwrap_or_default()),
            ])
            .collect(),
        stdin: None,
        timeout: spec.timeout,
        kill_grace: spec.kill_grace,
        owner: StepOwner {
            state_dir: &spec.state_dir,
            unit: &spec.unit,
            attempt: marker.attempts,
            engine: spec.engine.as_str(),
            kind: which,
        },
    };
    let reason = match which {
        StepKind::Setup => Reason::Setup,
        _ => Reason::Verify,
    };
    Ok(match crate::process::steps::run(&step, confine).await {
        StepEnd::Ok => None,
        StepEnd::Failed { code, tail } => {
            let status = code.map_or("was killed".to_string(), |c| {
                format!("exited with status {c}")
            });
            Some((reason, format!("{kind} {status}: {tail}")))
        }
        StepEnd::TimedOut => Some((
            Reason::Timeout,
            format!(
                "{kind} timed out after {}s",
                spec.timeout.unwrap_or_default().as_secs_f64()
            ),
        )),
        StepEnd::Interrupted(sig) => Some((
            Reason::Interrupted(Some(sig.number())),
            format!("{kind} interrupted by {}", sig.as_str()),
        )),
        StepEnd::NotStarted(why) => Some((reason, format!("{kind} did not start: {why}"))),
    })
}

/// The final marker (written on the blocking pool) and result of a unit
/// that ended without an engine run.
async fn end_early(
    spec: &UnitSpec,
    life: &mut UnitLife,
    (state, reason, error): (UnitState, Reason, String),
    started: Instant,
) -> Result<DispatchResult> {
    life.end_early(state, reason, error).await?;
    Ok(DispatchResult::from_life(spec, life, started))
}

/// The unit's worktree `ws` with the git directory it was opened with.
fn worktree(spec: &UnitSpec, ws: Workspace) -> Worktree {
    let git_dir = spec.steps.workspace.as_ref();
    Worktree {
        workspace: ws,
        git_dir: git_dir.and_then(|w| w.git_dir.clone()),
    }
}

/// The exit status a failed `verify`'s error names (`run_step` writes it).
pub fn verify_status(error: &str) -> Option<i32> {
    let rest = error.strip_prefix("verify exited with status ")?;
    let end = rest.find(':').unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}
