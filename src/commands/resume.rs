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
    // Checked even though a resume keeps the unit's own lineage: a hostile
    // value is refused (exit 2) as everywhere.
    crate::unit::lineage::Lineage::of_env()?;
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
    let engine_bin = args.run.engine_bin.as_deref();
    let cfg = crate::plan::config::load()?;
    let mut origins = super::config::Origins::new();
    let mut quota = super::run_options::quota_ask(&args.govern, marker.engine, &cfg, &mut origins)?;
    // Before anything is written: the session's own account first.
    super::run_options::choose_account(&mut quota, marker.engine, marker.account.as_deref())?;
    let (id, prompt, replay) = session(&state_dir, &marker, engine_bin, &quota, prompt)?;
    // What the unit asked for, kept unless given again or cleared.
    let given = super::run_options::ask_flags(&args.policy, &args.after);
    let mut asked = resolve::asked(&given, Some(&marker.asked));
    let loop_flags = super::run_options::loop_flags(&args.loops, None);
    resolve::loops::over(&loop_flags, &mut asked.loops)?;
    resolve::loops::checked(&asked.loops, asked.require_enforced)?;
    let (loops, warnings) = resolve::loops::resolve(&asked.loops, marker.engine);
    let hooks = super::dispatch::hooks_of(&asked)?;
    let (policy, sandbox) = resolve::policy(
        &asked,
        args.skip_permissions,
        (marker.engine, engine_bin),
        id.is_some(),
        &marker.cwd,
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
        sandbox,
        asked,
        mcp,
        keep_answer: true,
        command: marker.command.clone(),
        loops,
        warnings,
        quota,
        // Never re-parented: the lineage its first run recorded.
        lineage: crate::unit::lineage::Lineage::of_marker(&marker),
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

/// The session id a resume continues, its prompt, and the replay it was
/// primed with. Exact only on the account the session belongs to (`quota`'s
/// chosen one, else a fresh session with the bounded replay and a warning
/// naming both); and, as before, only with exact resume authority at the
/// recorded and the installed version.
fn session(
    state_dir: &std::path::Path,
    marker: &crate::unit::marker::Marker,
    engine_bin: Option<&std::path::Path>,
    quota: &crate::quota::Ask,
    prompt: String,
) -> Result<(Option<String>, String, Option<crate::unit::history::Counts>)> {
    let unit = &marker.unit;
    let installed = crate::dispatch::installed_version(marker.engine, engine_bin);
    let owner = marker
        .account
        .as_deref()
        .unwrap_or(crate::quota::DEFAULT_ACCOUNT);
    let chosen = quota.account_name();
    match resolve_resume_id(marker, installed.as_ref()) {
        Ok(id) if owner == chosen => Ok((Some(id), prompt, None)),
        Ok(_) => {
            let why = format!("its session belongs to account {owner}, not {chosen}");
            let primed = crate::dispatch::rerun::primed(state_dir, unit, &prompt)
                .map_err(|e| format!("{why}, and {e}"))
                .and_then(|p| {
                    p.ok_or(format!(
                        "{why}, and no earlier answer is recorded to replay"
                    ))
                })
                .map_err(|why| VfError::usage(format!("cannot resume unit {unit:?}: {why}")))?;
            crate::commands::stdio::eprint_line(format_args!(
                "vf: warning: {unit}: {why}: a fresh session, primed with a replay of its answers"
            ));
            Ok((None, primed.0, Some(primed.1)))
        }
        Err(why) => match for_resume(state_dir, marker, installed.as_ref(), why, &prompt) {
            Ok((primed, counts)) => Ok((None, primed, Some(counts))),
            Err(why) => Err(VfError::usage(format!(
                "cannot resume unit {unit:?}: {why}"
            ))),
        },
    }
}

pub fn run(args: &ResumeArgs) -> Result<i32> {
    let ran = run_checked(args);
    if let Err(VfError::Held(h)) = &ran {
        super::dispatch::held_json(args.run.output.format(), Some(&args.unit), h);
    }
    ran
}

fn run_checked(args: &ResumeArgs) -> Result<i32> {
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
