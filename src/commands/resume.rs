//! `vf resume UNIT`: continue a unit's exact native session, or, on an
//! engine without exact resume authority, start a fresh one primed with a
//! replay of the unit's earlier answers ([`crate::dispatch::rerun`]).

use crate::cli::{OutputFormat, ResumeArgs};
use crate::dispatch::UnitSpec;
use crate::dispatch::rerun::for_resume;
use crate::dispatch::resolve::{self, Resolved};
use crate::ground::error::{Result, VfError};
use crate::ground::names;
use crate::unit::marker::resume_rule::{DEFAULT_RESUME_PROMPT, resolve_resume_id};
use crate::unit::{LockedUnit, UnitDir};

/// A validated `vf resume`: everything is checked before anything is touched.
struct Request {
    spec: UnitSpec,
    /// The unit, locked from reading the marker to the end of the run.
    unit: LockedUnit,
    format: OutputFormat,
    replay: Option<crate::unit::history::Counts>,
    hooks: crate::dispatch::notify::Hooks,
}

/// The unit's name is the one asked for (checked, and the marker's own
/// `unit` must agree with it); the session comes from the resume policy.
fn resolve(args: &ResumeArgs) -> Result<Request> {
    names::check("unit name", &args.unit)?;
    let cwd = std::env::current_dir()?;
    let state_dir = super::config::state_dir(args.run.state.state_dir.as_deref(), &cwd)?;
    let kill_grace = crate::process::child::kill_grace_from_env()?;
    crate::dispatch::notify::timeout_from_env()?;
    crate::engine::acp::handshake_timeout_from_env()?;
    let dir = UnitDir::new(&state_dir, &args.unit);
    let no_unit = || {
        VfError::usage(format!(
            "no unit {:?} under {}",
            args.unit,
            state_dir.display()
        ))
    };
    // Nothing (not even a lock file) is written for a unit that does not exist;
    // one whose first run is still starting has its lock file already.
    if !dir.has_marker() && !dir.lock_path().exists() {
        return Err(no_unit());
    }
    // Held from reading the marker to the end of the run: no other vf can
    // change the resume authority in between.
    let unit = LockedUnit::lock_sync(&state_dir, &args.unit)?;
    let marker = unit.load_marker()?.ok_or_else(no_unit)?;
    let prompt = if args.prompt.prompt.is_some() || args.prompt.prompt_file.is_some() {
        super::prompt::read(&args.prompt)?
    } else {
        DEFAULT_RESUME_PROMPT.to_string()
    };
    // Without exact authority (at the recorded version and the installed
    // one): a fresh session primed with the unit's answers.
    let engine_bin = args.run.engine_bin.as_deref();
    let installed = crate::dispatch::installed_version(marker.engine, engine_bin);
    let (id, prompt, replay) = match resolve_resume_id(&marker, installed.as_ref()) {
        Ok(id) => (Some(id), prompt, None),
        Err(why) => match for_resume(&state_dir, &marker, installed.as_ref(), why, &prompt) {
            Ok((primed, counts)) => (None, primed, Some(counts)),
            Err(why) => {
                let msg = format!("cannot resume unit {:?}: {why}", args.unit);
                return Err(VfError::usage(msg));
            }
        },
    };
    // What the unit asked for, kept unless given again or cleared.
    let given = super::run_options::ask_flags(&args.policy, &args.after);
    let mut asked = resolve::asked(&given, Some(&marker.asked));
    let loop_flags = super::run_options::loop_flags(&args.loops, None);
    resolve::loops::over(&loop_flags, &mut asked.loops)?;
    resolve::loops::checked(&asked.loops, asked.require_enforced)?;
    let (loops, warnings) = resolve::loops::resolve(&asked.loops, marker.engine);
    let hooks = super::dispatch::hooks_of(&asked)?;
    let policy = resolve::policy(
        &asked,
        args.skip_permissions,
        marker.engine,
        engine_bin,
        id.is_some(),
    )?;
    let mcp = super::run_options::mcp(
        &mut asked,
        args.policy.mcp.is_some(),
        marker.engine,
        &state_dir,
        &args.unit,
    )?;
    // A resumed session keeps the model, effort and schema it ran with, unless asked.
    let model = super::run_options::model_flags(&args.run.model);
    let chosen = resolve::options(marker.engine, &model, Some(&marker))?;
    if let Some(agent) = &chosen.options.agent {
        crate::engine::agy::require_agent(&marker.cwd, agent)?;
    }
    // A unit that ran in a worktree resumes in it, as it was.
    let (deny, allow) = (&asked.deny_paths, &asked.allow_paths);
    let what = "--deny-path / --allow-path (given or kept)";
    let steps = crate::dispatch::Steps {
        workspace: marker.workspace.as_ref().map(|w| {
            crate::workspace::WorkspaceSpec::reuse(w, &marker.cwd, &state_dir, &args.unit)
        }),
        guards: resolve::path_guards(deny, allow, &marker.cwd, what)?,
        // A unit with loops checks its rounds as its dispatch did.
        verify: asked.verify.clone().filter(|_| loops.any()),
        ..Default::default()
    };
    let run = Resolved {
        skip_permissions: args.skip_permissions,
        engine_bin: args.run.engine_bin.clone(),
        stall_timeout: resolve::seconds("--stall-timeout", args.run.stall_timeout)?,
        timeout: resolve::seconds("--timeout", args.run.timeout)?,
        kill_grace,
        steps,
        policy,
        asked,
        mcp,
        keep_answer: true,
        command: marker.command.clone(),
        loops,
        warnings,
        ..Resolved::new(marker.engine, args.unit.clone(), marker.cwd, state_dir).with_chosen(chosen)
    };
    let spec = run.spec(prompt, id);
    Ok(Request {
        spec,
        unit,
        format: args.run.output.format(),
        replay,
        hooks,
    })
}

pub fn run(args: &ResumeArgs) -> Result<i32> {
    let Request {
        spec,
        unit,
        format,
        replay,
        hooks,
    } = resolve(args)?;
    // The run's prepare phase ends a proven orphan of the unit first (or
    // refuses), under the lock held since the marker was read.
    super::dispatch::run_unit(spec, unit, (format, &hooks), replay)
}
