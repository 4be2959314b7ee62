//! Notification hooks: `--on-finish` / `--on-fail` (plan `on_finish`,
//! `on_fail`) after a unit has ended, `on_plan_finish` after a plan. Each is
//! a `setup`-like step ([`crate::process::steps`]: the system shell, contained, its own
//! owned-process record and log file) with the result JSON on its stdin, run
//! once the marker is final and ended after [`timeout`]. A hook that fails,
//! times out or cannot start is a warning: never the unit's failure, never
//! another exit code. Its output goes to its log file, never to vf's stdout.

use std::path::Path;
use std::time::Duration;

use crate::ground::EnvVars;
use crate::ground::{Result, VfError};
use crate::process::StepKind;
use crate::process::{Step, StepEnd, StepOwner};

/// How long a hook may run before its group is ended.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Overrides [`DEFAULT_TIMEOUT`], in milliseconds.
pub const TIMEOUT_VAR: &str = EnvVars::VF_HOOK_TIMEOUT_MS;
/// The owner name of the plan's hook (its record and log).
pub const PLAN_OWNER: &str = "orchestrate";

/// A unit's hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hooks {
    /// Runs whenever the unit ends.
    pub on_finish: Option<String>,
    /// Runs when it did not finish (failed, interrupted, blocked).
    pub on_fail: Option<String>,
}

/// `VF_HOOK_TIMEOUT_MS`, or the default; a value that is not a positive
/// number of milliseconds is a usage error (entry points check it first).
pub fn timeout_from_env() -> Result<Duration> {
    match std::env::var(TIMEOUT_VAR) {
        Err(_) => Ok(DEFAULT_TIMEOUT),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
            _ => Err(VfError::usage(format!(
                "{TIMEOUT_VAR} must be a positive number of milliseconds, not {}",
                crate::ground::text::shown(&v, 40)
            ))),
        },
    }
}

/// The hook's timeout as it runs ([`timeout_from_env`] was checked on entry).
pub fn timeout() -> Duration {
    timeout_from_env().unwrap_or(DEFAULT_TIMEOUT)
}

/// A unit that has ended, as its hooks see it.
pub struct Ended<'a> {
    pub state_dir: &'a Path,
    pub cwd: &'a Path,
    pub unit: &'a str,
    pub engine: &'a str,
    pub attempt: u32,
    /// Not `done`: `on_fail` runs too.
    pub failed: bool,
    /// The result's JSON text, given on stdin.
    pub json: &'a [u8],
    pub kill_grace: Duration,
}

/// Runs the unit's hooks (`on_finish`, then `on_fail` when it failed); the
/// warnings of those that did not succeed.
pub async fn after_unit(hooks: &Hooks, e: &Ended<'_>) -> Vec<String> {
    let mut warnings = Vec::new();
    let which = [
        (StepKind::OnFinish, hooks.on_finish.as_deref()),
        (
            StepKind::OnFail,
            hooks.on_fail.as_deref().filter(|_| e.failed),
        ),
    ];
    for (kind, cmd) in which {
        let Some(cmd) = cmd else { continue };
        let log = crate::unit::marker::MarkerStore::new(e.state_dir).log_path(
            e.unit,
            e.attempt,
            kind.as_str(),
        );
        if let Some(w) = run(kind, cmd, e, &log).await {
            warnings.push(w);
        }
    }
    warnings
}

/// Runs the plan's `on_plan_finish` with the plan's result JSON on stdin
/// (log: `<state>/orchestrate.on-plan-finish.log`); its warning, if any.
pub async fn after_plan(cmd: &str, e: &Ended<'_>) -> Option<String> {
    let log = e.state_dir.join(format!("{PLAN_OWNER}.on-plan-finish.log"));
    run(StepKind::OnPlanFinish, cmd, e, &log).await
}

async fn run(kind: StepKind, command: &str, e: &Ended<'_>, log: &Path) -> Option<String> {
    if let Some(dir) = log.parent()
        && let Err(err) = std::fs::create_dir_all(dir)
    {
        return Some(format!(
            "{} hook did not start: {}: {err}",
            kind.as_str(),
            dir.display()
        ));
    }
    let timeout = timeout();
    let step = Step {
        command,
        cwd: e.cwd,
        log,
        env: vec![
            (EnvVars::VF_UNIT, e.unit.to_string()),
            (EnvVars::VF_ENGINE, e.engine.to_string()),
            (EnvVars::VF_HOOK, kind.as_str().to_string()),
        ],
        stdin: Some(e.json),
        timeout: Some(timeout),
        kill_grace: e.kill_grace,
        owner: StepOwner {
            state_dir: e.state_dir,
            unit: e.unit,
            attempt: e.attempt,
            engine: e.engine,
            kind,
        },
    };
    let name = kind.as_str();
    match crate::process::steps::run(&step, None).await {
        StepEnd::Ok => None,
        StepEnd::Failed { code, tail } => {
            let status = code.map_or("was killed".to_string(), |c| {
                format!("exited with status {c}")
            });
            Some(format!(
                "{name} hook {status} (log {}): {tail}",
                log.display()
            ))
        }
        StepEnd::TimedOut => Some(format!(
            "{name} hook timed out after {}s and was ended",
            timeout.as_secs_f64()
        )),
        StepEnd::Interrupted(sig) => Some(format!("{name} hook interrupted by {}", sig.as_str())),
        StepEnd::NotStarted(why) => Some(format!("{name} hook did not start: {why}")),
    }
}
