//! The dispatch runtime: run one unit on an engine CLI, in four phases.
//!
//! The spec comes from one resolution of the unit's options, [`resolve`].
//!
//! - prepare: take the unit's lock, read its marker, resolve the binary and
//!   its version, build the invocation. Every check that can refuse the run
//!   happens here, before anything is written: a refused run leaves the
//!   marker byte-identical.
//! - launch: raw logs and prompt file, spawn (see [`crate::process::child`]), the
//!   owned-process record, then the marker `running`.
//! - supervise: stream stdout through the projector line by line, keep the
//!   session id durable, forward signals, enforce stall/timeout, never hang.
//! - settle: the outcome, the final marker, release of the process record.
//!
//! The domain's map (one unit's run, phase by phase):
//! - `prepare`, `launch`, `supervise`, `settle`: the phases, a file each;
//!   `assess` settle's pure judge of the run's facts;
//! - `around`: what runs around the engine (the worktree, `setup`, the path
//!   guards, the commit, `verify`, `push`);
//! - `pump` reads the engine's pipes, `redact` removes echoed private ranges,
//!   `acp_session` the session path of an engine that speaks ACP,
//!   `budget_watch` a plan's hard budget as one unit sees it, `governor`
//!   the quota governor's turn at each attempt's start and end, `confine`
//!   the unit's sandbox (its request resolved, the rules of each process);
//! - the run's inputs: `attach` (attachments), `private` (private file ranges);
//!   `rerun` a unit started again outside a plan (its replay); `notify` the
//!   notification hooks (`--on-finish`, `--on-fail`);
//! - `rounds`: the closed loops around the run (fix, review, resolve rounds),
//!   driven under one hold of the unit's lock.

mod acp_session;
pub mod around;
pub mod assess;
pub mod attach;
mod budget_watch;
pub mod confine;
mod governor;
mod launch;
pub mod notify;
mod prepare;
pub mod private;
mod pump;
mod redact;
pub mod rerun;
pub mod resolve;
pub mod rounds;
mod settle;
mod supervise;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::engine::{Attachment, EngineId, RunOptions};
use crate::ground::{Reason, Result};
use crate::unit::LockedUnit;
use crate::unit::UnitState;

pub use crate::unit::remove_stale_prompt_files;
pub use around::Steps;
pub use budget_watch::{BudgetWatch, LiveUsage};
pub use redact::REDACTED;

/// How long `--version` may take before it is reported unreadable.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(15);
/// The version of `engine`'s binary (`engine_bin`, else the one found as a
/// dispatch finds it) as a dispatch would read it now (`process::version_cache`,
/// else `--version`); `None` when it is missing or unreadable.
pub fn installed_version(
    engine: EngineId,
    engine_bin: Option<&std::path::Path>,
) -> Option<crate::ground::Version> {
    let program = crate::process::resolve_binary(engine, engine_bin).ok()?;
    crate::process::read_version(&program, VERSION_TIMEOUT, false).ok()
}

/// The largest prompt vf accepts (`--prompt`, `--prompt-file`, stdin, plans).
pub const MAX_PROMPT_BYTES: usize = 16 << 20;

/// Everything one dispatch needs, made by [`resolve::Resolved::spec`] alone
/// (every option resolved and checked there, before anything is written).
#[derive(Debug, Clone)]
pub struct UnitSpec {
    pub engine: EngineId,
    pub unit: String,
    /// Never persisted by vf: it may carry private file ranges.
    pub prompt: String,
    /// Exact native session to resume.
    pub session: Option<String>,
    pub cwd: PathBuf,
    pub state_dir: PathBuf,
    pub skip_permissions: bool,
    pub engine_bin: Option<PathBuf>,
    pub attachments: Vec<Attachment>,
    pub stall_timeout: Option<Duration>,
    pub timeout: Option<Duration>,
    /// Between the forwarded signal and SIGKILL, and for the drain after the
    /// leader exits (see [`crate::process::child`]).
    pub kill_grace: Duration,
    /// Engine-specific warnings gathered before the run (e.g. dropped options).
    pub warnings: Vec<String>,
    /// Why this engine (e.g. the `--engine auto` rule that chose it).
    pub engine_reason: Option<String>,
    /// Appended to the engine's argv: its spending cap (`--max-cost`).
    pub budget_args: Vec<String>,
    /// The exact private-range blocks in the prompt: redacted wherever the
    /// engine echoes them, before projection and the raw log.
    pub redact: Vec<String>,
    /// Model, effort and the native schema flag's value (`engine::options`).
    pub options: RunOptions,
    /// vf's own, authoritative check of the summary (`--summary-schema`).
    pub summary_schema: Option<std::sync::Arc<crate::engine::SummarySchema>>,
    /// The worktree, setup and verify around the engine (see [`Steps`]).
    pub steps: Steps,
    /// Read-only and tool allow/deny (`engine::policy`).
    pub policy: crate::engine::ToolPolicy,
    /// The sandbox its engine and steps run in (`sandbox`); off by default.
    pub sandbox: confine::Sandbox,
    /// What the unit asked for (policy, path guards, hooks), recorded in
    /// its marker for a later resume.
    pub asked: crate::unit::Asked,
    /// MCP servers for this run (`engine::mcp`), already checked for the engine.
    pub mcp: Option<crate::engine::McpServers>,
    /// The plan's hard budget (`orchestrate --hard-budget`): live usage out,
    /// and once it is reached the engine is ended like a timeout, reason `budget`.
    pub budget_stop: Option<BudgetWatch>,
    /// Set to true by whoever runs the unit to end it as a SIGTERM to vf
    /// would (reason `interrupted`): a cancelled Temporal activity.
    pub cancel: Option<tokio::sync::watch::Receiver<bool>>,
    /// Record the answer for a later replay (`crate::unit::history`): dispatch,
    /// resume and plans do; conversations keep their own transcript.
    pub keep_answer: bool,
    /// A command engine's command (the bridge's); `None` for the CLIs.
    pub command: Option<crate::engine::EngineCommand>,
    /// The unit's closed loops (fix, review, resolve); none by default.
    pub loops: rounds::Loops,
    /// What the quota governor governs this run by: its account (chosen by
    /// the caller), `pause_at`, `stagger` (docs/QUOTA.md).
    pub quota: crate::quota::Ask,
    /// Who started the unit (`unit::lineage`): its marker records it at
    /// the first run; its engine is told the unit and depth.
    pub lineage: crate::unit::lineage::Lineage,
}

impl UnitSpec {
    /// What this run asks of the unit's marker when it claims it.
    pub fn claim(&self) -> crate::unit::Claim {
        crate::unit::Claim {
            unit: self.unit.clone(),
            engine: self.engine,
            cwd: self.cwd.clone(),
            session: self.session.clone(),
            command: self.command.clone(),
            model: self.options.model.clone(),
            effort: self.options.effort.clone(),
            summary_schema: self.summary_schema.as_ref().map(|s| s.path().to_path_buf()),
            asked: self.asked.clone(),
            loop_open: self.loops.any(),
            account: self.quota.account.as_ref().map(|a| a.name.clone()),
            lineage: self.lineage.clone(),
        }
    }
}

impl UnitSpec {
    /// `VF_KILL_GRACE_MS`, or the default. Entry points validate the variable
    /// first with [`crate::process::child::kill_grace_from_env`] (a bad value is exit 2).
    pub fn default_kill_grace() -> Duration {
        crate::process::kill_grace_from_env().unwrap_or(crate::process::DEFAULT_KILL_GRACE)
    }
}

pub use crate::engine::EventSink;

/// The final result object (`--output json`, and the last line of `jsonl`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchResult {
    pub unit: String,
    pub engine: EngineId,
    pub engine_version: Option<String>,
    /// `--model` / `--effort` as asked (absent when not set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    pub state: UnitState,
    /// The CLI's exit status (`null` when it was killed or never ran).
    pub exit_code: Option<i32>,
    pub session_id: Option<String>,
    pub summary: Option<Value>,
    pub summary_error: Option<String>,
    pub answer: Option<String>,
    pub unknown_frames: u64,
    pub warnings: Vec<String>,
    pub engine_reason: Option<String>,
    pub error: Option<String>,
    pub reason: Option<Reason>,
    /// What the run consumed; `null` when the engine reported nothing.
    pub usage: Option<crate::engine::Usage>,
    /// When a rate limit resets, if the engine said (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<String>,
    pub duration_ms: u64,
    pub attempt: u32,
    pub marker: PathBuf,
    pub stdout_log: Option<PathBuf>,
    pub stderr_log: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<crate::workspace::Workspace>,
    /// `{readOnly, tools}`, each `enforced | unenforced | off` (absent when
    /// no invocation was built).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::engine::PolicyStatus>,
    /// `"replay"` when the run was a fresh session primed with a bounded
    /// replay of the unit's earlier answers (see [`crate::dispatch::rerun`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::unit::Counts>,
    /// The changed paths its path guards refuse (reason `policy`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path_violations: Vec<String>,
    /// The MCP servers' names given to the engine (`--mcp`); never their
    /// `env` or `headers`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<String>,
    /// The rounds of its closed loops, oldest first (`unit::marker::rounds`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<crate::unit::marker::Round>,
    /// The declared account it ran on (absent: the engine's default one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The unit whose engine started this one, and its depth (both absent
    /// for a unit vf started directly; `unit::lineage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// The units its engine started through vf, sorted (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<String>,
    /// Its usage plus every descendant's latest (absent without children).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree_usage: Option<crate::engine::Usage>,
}

impl DispatchResult {
    /// vf's own exit code for this result.
    pub fn vf_exit(&self) -> i32 {
        self.reason
            .map_or(crate::ground::error::exit::OK, Reason::exit_code)
    }

    /// What the saved marker says of the run that just ended; the caller
    /// adds what the engine itself reported (nothing, when none ran).
    fn from_life(spec: &UnitSpec, life: &crate::unit::UnitLife, started: Instant) -> Self {
        DispatchResult::of_marker(spec, life.marker(), started)
    }

    /// What `marker` says of the unit's latest run (a loop that goes on
    /// from a settled attempt: no engine ran in this process).
    pub(crate) fn of_marker(
        spec: &UnitSpec,
        marker: &crate::unit::marker::Marker,
        started: Instant,
    ) -> Self {
        DispatchResult {
            unit: spec.unit.clone(),
            engine: spec.engine,
            engine_version: marker.engine_version.clone(),
            model: marker.model.clone(),
            effort: marker.effort.clone(),
            state: marker.state,
            exit_code: marker.exit_code,
            session_id: marker.engine_session_id.clone(),
            summary: marker.summary.clone(),
            summary_error: marker.summary_error.clone(),
            answer: None,
            unknown_frames: 0,
            warnings: spec.warnings.clone(),
            engine_reason: spec.engine_reason.clone(),
            error: marker.error.clone(),
            reason: marker.reason,
            // The marker keeps the latest usage that was reported; a run
            // without an engine consumed nothing and knows no reset time.
            usage: None,
            retry_at: None,
            duration_ms: started.elapsed().as_millis() as u64,
            attempt: marker.attempts,
            marker: crate::unit::UnitDir::new(&spec.state_dir, &spec.unit).marker_path(),
            stdout_log: None,
            stderr_log: None,
            workspace: marker.workspace.clone(),
            policy: marker.policy.clone(),
            start: None,
            replay: None,
            path_violations: Vec::new(),
            mcp: spec
                .mcp
                .as_ref()
                .map(crate::engine::McpServers::names)
                .unwrap_or_default(),
            rounds: Vec::new(),
            account: marker.account.clone(),
            parent: marker.parent.clone(),
            depth: Some(marker.depth).filter(|d| *d > 1),
            children: Vec::new(),
            tree_usage: None,
        }
    }
}

/// Runs one unit to completion, under its lock. Errors are returned only when
/// the unit could not be started (usage, missing engine, state), and then
/// nothing was written; an engine failure is an `Ok` result with `state: failed`.
pub async fn run(spec: UnitSpec, sink: &mut dyn EventSink) -> Result<DispatchResult> {
    if spec.steps.workspace.is_none() {
        // What the request alone refuses is refused before the unit is locked.
        prepare::check_spec(&spec)?;
    }
    let unit = LockedUnit::lock(&spec.state_dir, &spec.unit).await?;
    run_locked(spec, unit, sink).await
}

/// [`run`] on a runtime of its own, on the calling thread (a Temporal
/// worker runs each unit on a thread of its own).
pub fn run_blocking(spec: UnitSpec, sink: &mut dyn EventSink) -> Result<DispatchResult> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?;
    let local = tokio::task::LocalSet::new();
    let out = local.block_on(&rt, run(spec, sink));
    rt.shutdown_background();
    out
}

/// [`run`] of a unit the caller has locked (`vf resume` and `vf dispatch`
/// read its marker under the lock); the lock goes with the run. A unit
/// with closed loops runs them all under it ([`rounds::drive`]).
pub async fn run_locked(
    spec: UnitSpec,
    unit: LockedUnit,
    sink: &mut dyn EventSink,
) -> Result<DispatchResult> {
    let hold = unit.hold();
    drop(unit);
    match spec.loops.any() {
        true => rounds::drive(spec, hold, sink).await,
        false => run_once(spec, &hold, sink).await,
    }
}

/// One run of the unit under `hold`: an attempt, and the fresh session a
/// refused ACP `session/load` falls back to.
pub(crate) async fn run_once(
    spec: UnitSpec,
    hold: &crate::unit::UnitHold,
    sink: &mut dyn EventSink,
) -> Result<DispatchResult> {
    let again = spec.clone();
    let res = run_attempt(spec, hold.unit(), sink).await?;
    match load_refused(&again, &res) {
        Some((prompt, counts)) => {
            let msg = format!(
                "{}; a fresh session starts, primed with the unit's earlier answers",
                res.error
                    .as_deref()
                    .unwrap_or("the session could not be loaded")
            );
            sink.warning(&msg);
            let mut fresh = again;
            (fresh.session, fresh.prompt) = (None, prompt);
            let mut res = Box::pin(run_attempt(fresh, hold.unit(), sink)).await?;
            res.warnings.push(msg);
            res.start = Some("replay");
            res.replay = Some(counts);
            Ok(res)
        }
        None => Ok(res),
    }
}

/// An ACP agent that could not load the session a resume asked for (no
/// `loadSession`, or `session/load` refused): the bounded replay of the
/// unit's recorded answers, when there are any, for a fresh session.
fn load_refused(spec: &UnitSpec, res: &DispatchResult) -> Option<(String, crate::unit::Counts)> {
    let refused = spec.session.is_some()
        && spec.engine.engine().speaks_acp()
        && res.reason == Some(Reason::SessionMismatch);
    refused.then_some(())?;
    let recorded = crate::unit::history::load(&spec.state_dir, &spec.unit);
    crate::unit::history::prepend(&spec.unit, &recorded, &spec.prompt)
}

/// One attempt, if the quota governor lets its engine start: it asks first
/// (nothing is written when the account is held) and learns from its end.
async fn run_attempt(
    spec: UnitSpec,
    unit: LockedUnit,
    sink: &mut dyn EventSink,
) -> Result<DispatchResult> {
    let quota = governor::Turn::admit(&spec, sink).await?;
    // Boxed: the attempt's future is large, and rounds nest attempts.
    let mut res = Box::pin(attempt(spec, unit, &quota, sink)).await?;
    quota.learn(&mut res, sink);
    Ok(res)
}

/// One attempt: prepare, launch, supervise, settle.
async fn attempt(
    mut spec: UnitSpec,
    unit: LockedUnit,
    quota: &governor::Turn,
    sink: &mut dyn EventSink,
) -> Result<DispatchResult> {
    let started = Instant::now();
    let (unit, workspace) = match around::open_workspace(&mut spec, unit, sink, started).await? {
        around::Opened::Ready(unit, ws) => (*unit, ws),
        around::Opened::Ended(res) => return Ok(*res),
    };
    let (spec, mut prepared, mut life) = prepare::off_thread(spec, unit).await?;
    life.note_workspace(workspace);
    for w in &prepared.warnings {
        sink.warning(w);
    }
    if let Some(res) = around::setup(&spec, prepared.sandbox.as_ref(), &mut life, started).await? {
        return Ok(res);
    }
    if let Some(res) = around::guard_baseline(&spec, &mut prepared, &mut life, started).await? {
        return Ok(res);
    }
    let launched = launch::launch(&spec, prepared, &mut life).await?;
    let ended = supervise::supervise(&spec, launched, &mut life, (sink, quota), started).await;
    settle::settle(&spec, ended, life, sink, started).await
}
