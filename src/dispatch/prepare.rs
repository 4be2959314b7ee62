//! Phase 1, prepare: every check that can refuse the run, before anything of
//! the unit is written (only the unit's lock file and the version cache).

use std::path::{Path, PathBuf};

use super::{MAX_PROMPT_BYTES, UnitSpec, VERSION_TIMEOUT};
use crate::engine::{Invocation, Request};
use crate::ground::Version;
use crate::ground::state;
use crate::ground::text::shown;
use crate::ground::{Reason, Result, VfError};
use crate::process::binary;
use crate::process::child::Confine;
use crate::unit::LockedUnit;
use crate::unit::UnitLife;
use crate::unit::prompt_file;

/// A run that passed every check, not started yet.
pub(super) struct Prepared {
    pub program: PathBuf,
    pub version: Option<Version>,
    pub inv: Invocation,
    pub warnings: Vec<String>,
    /// The repository as the run found it, when the unit has path guards.
    pub guard: Option<crate::workspace::Baseline>,
    /// The unit's sandbox for this run, when it has one.
    pub sandbox: Option<SandboxRun>,
}

/// A sandboxed run's rules, and the engine's confinement made ready.
#[derive(Debug)]
pub(super) struct SandboxRun {
    pub rules: crate::sys::sandbox::Rules,
    pub profile_file: PathBuf,
    /// The run's private temp dir (`TMPDIR`).
    pub tmp: PathBuf,
    /// Taken by the engine's spawn.
    pub engine: Option<Confine>,
}

impl SandboxRun {
    /// The same rules made ready again for a step (`setup`, `verify`).
    pub fn for_step(&self) -> Result<Confine> {
        let prepared = crate::sys::sandbox::prepare(&self.rules, &super::confine::support())
            .map_err(|e| VfError::usage(format!("the sandbox cannot be made: {e}")))?;
        Ok(Confine {
            prepared,
            profile_file: self.profile_file.clone(),
        })
    }
}

/// [`prepare`] on tokio's blocking pool: the unit's marker, the
/// binary's and version's look-ups and the take-over of orphans (which may
/// wait out a grace) are file-system and process work, kept off the thread
/// that shows every unit's events in a plan. The spec goes there and comes
/// back (its prompt may be 16 MiB: not copied).
pub(super) async fn off_thread(
    spec: UnitSpec,
    unit: LockedUnit,
) -> Result<(UnitSpec, Prepared, UnitLife)> {
    let job = move || prepare(&spec, unit).map(|(p, life)| (spec, p, life));
    crate::ground::offload::run_vf("preparing the unit", job).await
}

/// `unit`: locked before the marker is read, so no other vf can write it
/// until the run is done (the life holds it).
fn prepare(spec: &UnitSpec, unit: LockedUnit) -> Result<(Prepared, UnitLife)> {
    check_spec(spec)?;
    let mut life = UnitLife::claim_under(&spec.claim(), unit)?;
    // Left by a vf that was killed: under the lock nobody else can be using them.
    let leftover = prompt_file::path_for_unit(&spec.state_dir, &spec.unit);
    life.unit().remove_leftover_inputs_sync(&leftover);
    let is_command = spec.engine.engine().own_program();
    // A command engine runs what its launch names (resolved after the build):
    // no binary of its own, no version to read.
    let binary = match is_command {
        true => None,
        false => {
            Some(find_program(spec, None).map_err(|e| life.fail_before_spawn(Reason::Missing, e))?)
        }
    };
    let mut warnings = spec.warnings.clone();
    let version = binary
        .as_ref()
        .and_then(|p| read_version(spec, p, &mut warnings));
    life.note_version(
        version
            .as_ref()
            .map(Version::to_string)
            .or_else(|| spec.engine.engine().fixed_version().map(String::from)),
    );
    let unit_dir = life.unit().dir().path();
    let built = spec.engine.engine().build(&Request {
        prompt: &spec.prompt,
        session: spec.session.as_deref(),
        skip_permissions: spec.skip_permissions,
        cwd: &spec.cwd,
        in_git_repo: state::in_git_work_tree(&spec.cwd),
        attachments: &spec.attachments,
        unit: &spec.unit,
        state_dir: &spec.state_dir,
        unit_dir: &unit_dir,
        version: version.as_ref(),
        policy: &spec.policy,
        mcp: spec.mcp.as_ref(),
        options: &spec.options,
        command: spec.command.as_ref(),
    });
    let mut inv = match built {
        Ok(inv) => inv,
        Err(e) => return Err(life.fail_before_spawn(Reason::Invalid, e)),
    };
    let program = match binary {
        Some(p) => p,
        None => find_program(spec, Some(&inv.program))
            .map_err(|e| life.fail_before_spawn(Reason::Missing, e))?,
    };
    // The account's variables point the engine at its credentials.
    if let Some(a) = &spec.quota.account {
        inv.env.extend(a.env.iter().cloned());
    }
    tell_lineage(&mut inv, &life);
    let sandbox = match spec.sandbox.is_on() {
        true => Some(
            sandbox_run(spec, &mut inv, &life, &mut warnings)
                .map_err(|e| life.fail_before_spawn(Reason::Invalid, e))?,
        ),
        false => None,
    };
    life.note_policy(inv.policy.clone());
    inv.args.extend(spec.budget_args.iter().cloned());
    check_argv(spec, &inv)?;
    warnings.extend(inv.warnings.iter().cloned());
    take_over_orphans(spec, &mut warnings)?;
    let prepared = Prepared {
        program,
        version,
        inv,
        warnings,
        guard: None,
        sandbox,
    };
    Ok((prepared, life))
}

/// The engine is told its unit and depth (`unit::lineage`), as the marker
/// records them (a resumed child stays at its depth), last: no account's
/// or engine's variable of the same name stands.
fn tell_lineage(inv: &mut crate::engine::Invocation, life: &UnitLife) {
    let m = life.marker();
    let told = crate::unit::lineage::Lineage::of_marker(m).engine_env(&m.unit);
    inv.env.retain(|(k, _)| told.iter().all(|(t, _)| t != k));
    inv.env.extend(told);
}

/// The unit's sandbox for this run: a fresh private temp dir (`TMPDIR`),
/// the rules, the engine's confinement made ready, its record in the policy.
fn sandbox_run(
    spec: &UnitSpec,
    inv: &mut Invocation,
    life: &UnitLife,
    warnings: &mut Vec<String>,
) -> Result<SandboxRun> {
    let unit = life.unit();
    let tmp = unit.fresh_tmp_sync()?;
    inv.env.push(("TMPDIR".into(), tmp.display().to_string()));
    let git = worktree_git_paths(spec);
    let place = super::confine::Place {
        cwd: &spec.cwd,
        tmp: &tmp,
        engine: spec.engine,
        command: spec.command.as_ref(),
        env: &inv.env,
        git: &git,
    };
    warnings.extend(spec.sandbox.make_state_dirs(&place));
    let rules = spec.sandbox.rules(&place);
    let prepared = crate::sys::sandbox::prepare(&rules, &super::confine::support())
        .map_err(|e| VfError::usage(format!("the sandbox cannot be made: {e}")))?;
    let status = spec.sandbox.status(&rules, Some(&prepared));
    warnings.extend(
        prepared
            .missing()
            .iter()
            .map(|m| format!("sandbox unenforced: {m}")),
    );
    if spec.sandbox.require_enforced && !prepared.missing().is_empty() {
        return Err(VfError::usage(format!(
            "require-enforced: the sandbox cannot be enforced on this machine: {}",
            prepared.missing().join("; ")
        )));
    }
    let profile_file = match prepared.profile() {
        Some(text) => unit.write_sandbox_profile_sync(text)?,
        None => unit.dir().sandbox_profile_path(),
    };
    inv.policy.sandbox = Some(status);
    Ok(SandboxRun {
        rules,
        tmp,
        engine: Some(Confine {
            prepared,
            profile_file: profile_file.clone(),
        }),
        profile_file,
    })
}

/// A worktree unit's git paths its engine may write: the worktree's own
/// git dir (its index, HEAD, logs), the shared object store (`git add`,
/// a commit), and the `vf/` branches' refs and logs (a commit moves its own
/// branch). The user's branches (`refs/heads/*` outside `vf/`), the config
/// and the hooks stay read-only.
fn worktree_git_paths(spec: &UnitSpec) -> Vec<PathBuf> {
    let Some(git_dir) = spec
        .steps
        .workspace
        .as_ref()
        .and_then(|w| w.git_dir.clone())
    else {
        return Vec::new();
    };
    let Some(common) = git_dir.parent().and_then(Path::parent) else {
        return vec![git_dir];
    };
    vec![
        common.join("objects"),
        common.join("refs/heads/vf"),
        common.join("logs/refs/heads/vf"),
        git_dir,
    ]
}

/// What runs: a CLI's binary (`launch` is `None`), or the program a command
/// engine's launch names (`/bin/sh`, `cmd.exe`, the command's first token).
fn find_program(spec: &UnitSpec, launch: Option<&str>) -> Result<PathBuf> {
    let found = match launch {
        None => binary::resolve_binary(spec.engine, spec.engine_bin.as_deref())
            .map_err(|e| e.to_string()),
        Some(program) => binary::resolve_program(program),
    };
    found.map_err(|e| VfError::not_ready(format!("{}: {e}", spec.engine)))
}

/// Never a second engine on the unit: an engine a killed vf left running is
/// ended first when it is provably that engine; anything that cannot be
/// proven gone refuses the run (exit 2). Last of the checks, so a run refused
/// for another reason ends nothing.
fn take_over_orphans(spec: &UnitSpec, warnings: &mut Vec<String>) -> Result<()> {
    let ended = crate::process::take_over(&spec.state_dir, &spec.unit, spec.kill_grace)
        .map_err(|why| VfError::usage(format!("cannot run unit {:?}: {why}", spec.unit)))?;
    warnings.extend(ended.iter().map(crate::process::Finding::ended_notice));
    Ok(())
}

/// What can be judged from the request alone.
pub(super) fn check_spec(spec: &UnitSpec) -> Result<()> {
    if spec.prompt.len() > MAX_PROMPT_BYTES {
        return Err(VfError::usage(format!(
            "the prompt is {} bytes; vf accepts at most {MAX_PROMPT_BYTES} (16 MiB)",
            spec.prompt.len()
        )));
    }
    check_cwd(&spec.cwd)?;
    if let Some(id) = &spec.session
        && !spec.engine.engine().valid_session_id(id)
    {
        // Cut: a 10 KB pasted blob is not echoed back whole.
        return Err(VfError::usage(format!(
            "{}: {} is not a valid {} session id",
            spec.engine,
            shown(id, 80),
            spec.engine
        )));
    }
    Ok(())
}

/// A marker's working directory may have been deleted since it was recorded.
pub(super) fn check_cwd(cwd: &Path) -> Result<()> {
    match std::fs::metadata(cwd) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(VfError::usage(format!(
            "the working directory {} is not a directory",
            cwd.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(VfError::usage(format!(
            "the working directory {} is missing (deleted or moved?)",
            cwd.display()
        ))),
        Err(e) => Err(VfError::usage(format!(
            "the working directory {} is unusable: {e}",
            cwd.display()
        ))),
    }
}

/// An argv cannot carry a NUL byte: say so instead of "cannot start".
fn check_argv(spec: &UnitSpec, inv: &Invocation) -> Result<()> {
    if !inv.args.iter().any(|a| a.contains('\0')) {
        return Ok(());
    }
    Err(VfError::usage(if spec.prompt.contains('\0') {
        format!(
            "prompt contains a NUL byte, which {} cannot take (its prompt goes on the command line)",
            spec.engine
        )
    } else {
        "an argument for the engine contains a NUL byte".to_string()
    }))
}

fn read_version(spec: &UnitSpec, program: &Path, warnings: &mut Vec<String>) -> Option<Version> {
    if let Some(v) = crate::process::cached_version(program) {
        return Some(v);
    }
    match crate::process::read_version(program, VERSION_TIMEOUT, false) {
        Ok(v) => Some(v),
        Err(e) => {
            warnings.push(format!(
                "{}: {e}; proceeding without a verified version",
                spec.engine
            ));
            None
        }
    }
}
