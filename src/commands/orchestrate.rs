//! `vf orchestrate PLAN.toml`: run a DAG of units with at most `--jobs` at
//! once, each through `dispatch::run`; `--resume` picks every unit up from its
//! marker after a crash.

use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use super::output::{GuardedStdout, StdoutSink, human_line};
use super::resume::{DEFAULT_RESUME_PROMPT, resolve_resume_id};
use crate::attach;
use crate::cli::{OrchestrateArgs, OutputFormat};
use crate::dispatch::{self, DispatchResult, EventSink, UnitSpec};
use crate::engine::{Attachment, EngineId};
use crate::error::{Result, VfError, exit};
use crate::frames::ConversationEvent;
use crate::fsutil::now_rfc3339;
use crate::marker::{Marker, MarkerStore, UnitState};
use crate::plan::{self, PlanUnit};
use crate::procinfo::Liveness;
use crate::replay;
use crate::state;

/// A unit's place in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RunState {
    Waiting,
    Running,
    Done,
    Failed,
    Blocked,
    /// `--resume` would not touch it (a live or unprovable owner).
    Refused,
    /// Never started because vf was interrupted.
    NotStarted,
}

/// How a unit was started in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StartMode {
    Fresh,
    /// Exact native session resumed with its recorded id.
    ExactResume,
    /// Fresh session with a bounded replay of the unit's earlier responses.
    Replay,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitReport {
    pub unit: String,
    pub engine: EngineId,
    pub state: RunState,
    /// False for units skipped because they were already done.
    pub ran: bool,
    pub start: Option<StartMode>,
    pub replay: Option<replay::Counts>,
    pub attempt: Option<u32>,
    pub session_id: Option<String>,
    pub summary: Option<Value>,
    pub error: Option<String>,
    pub duration_ms: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Final<'a> {
    kind: &'static str,
    plan: &'a std::path::Path,
    ok: bool,
    units: &'a [UnitReport],
}

struct Unit {
    plan: PlanUnit,
    engine: EngineId,
    attachments: Vec<Attachment>,
    report: UnitReport,
    started: Option<Instant>,
    last_event: String,
}

pub fn run(args: &OrchestrateArgs) -> Result<i32> {
    if args.jobs == 0 {
        return Err(VfError::usage("--jobs must be at least 1"));
    }
    // A bad VF_KILL_GRACE_MS is a usage error, before anything starts.
    crate::child::kill_grace_from_env()?;
    let plan = plan::load(&args.plan)?;
    let cwd = std::env::current_dir()?;
    let state_dir = state::resolve_state_dir(args.state_dir.as_deref(), &cwd)?;
    let store = MarkerStore::new(&state_dir);

    // Everything is checked before anything starts; `auto` units ask the doctor
    // which engines are ready (once for the whole plan).
    let ready = plan
        .units
        .iter()
        .any(|u| u.engine == attach::EngineChoice::Auto)
        .then(|| crate::doctor::readiness(&crate::doctor::Options::default()));
    let is_ready = |e| {
        ready
            .as_ref()
            .map(|m: &std::collections::HashMap<_, bool>| m.get(&e).copied().unwrap_or(false))
    };
    let mut units: Vec<Unit> = Vec::with_capacity(plan.units.len());
    for u in &plan.units {
        let p = attach::plan(u.engine, &u.attachments, &state_dir, &u.cwd, &is_ready)
            .map_err(|e| VfError::usage(format!("unit {:?}: {e}", u.name)))?;
        let engine = p.pick.engine;
        units.push(Unit {
            engine,
            attachments: p.attachments,
            report: UnitReport {
                unit: u.name.clone(),
                engine,
                state: RunState::Waiting,
                ran: false,
                start: None,
                replay: None,
                attempt: None,
                session_id: None,
                summary: None,
                error: None,
                duration_ms: None,
            },
            plan: u.clone(),
            started: None,
            last_event: String::new(),
        });
    }
    let mut existing = Vec::new();
    for u in &mut units {
        // A corrupt marker stops everything: vf never overwrites one.
        let Some(m) = store.load(&u.plan.name)? else {
            continue;
        };
        existing.push(u.plan.name.clone());
        if !args.resume {
            continue;
        }
        u.report.session_id = m.engine_session_id.clone();
        u.report.attempt = Some(m.attempts);
        if m.state == UnitState::Done {
            u.report.state = RunState::Done;
            u.report.summary = m.summary.clone();
        } else if m.state == UnitState::Running {
            match m.owner_alive() {
                Liveness::Dead => {}
                Liveness::Alive => {
                    u.report.state = RunState::Refused;
                    u.report.error = Some(format!(
                        "it is running under a live vf (pid {}); not touching it",
                        m.owner.as_ref().map(|o| o.supervisor.pid).unwrap_or(0)
                    ));
                }
                Liveness::Unknown => {
                    u.report.state = RunState::Refused;
                    u.report.error = Some(
                        "it is marked running and its owner cannot be proven dead; not touching it"
                            .into(),
                    );
                }
            }
        }
    }
    if args.resume {
        take_over_orphans(&state_dir, &mut units);
    }
    if !args.resume && !existing.is_empty() {
        return Err(VfError::usage(format!(
            "units of this plan already have markers under {} ({}); continue them with --resume, or use another --state-dir",
            state_dir.display(),
            existing.join(", ")
        )));
    }

    let format = if args.json {
        OutputFormat::Json
    } else {
        args.output.unwrap_or_else(|| {
            if std::io::stdout().is_terminal() {
                OutputFormat::Human
            } else {
                OutputFormat::Jsonl
            }
        })
    };
    let table = format == OutputFormat::Human && std::io::stdout().is_terminal();
    let ui = Rc::new(RefCell::new(Ui {
        format,
        table,
        drawn: 0,
        units,
        out: GuardedStdout::default(),
    }));
    let ctx = Ctx {
        state_dir: state_dir.clone(),
        resume: args.resume,
        jobs: args.jobs,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?;
    let local = tokio::task::LocalSet::new();
    let interrupted = local.block_on(&rt, schedule(ctx, ui.clone()))?;

    let mut ui = ui.borrow_mut();
    ui.draw();
    let reports: Vec<UnitReport> = ui.units.iter().map(|u| u.report.clone()).collect();
    let ok = reports.iter().all(|r| r.state == RunState::Done);
    let fin = Final {
        kind: "orchestrate.result",
        plan: &plan.path,
        ok,
        units: &reports,
    };
    match format {
        OutputFormat::Json | OutputFormat::Jsonl => ui.json_line(&fin),
        OutputFormat::Human => {
            let mut s = String::from("\n");
            for r in &reports {
                s.push_str(&format!(
                    "{:<20} {:<9} {:<10}{}{}\n",
                    r.unit,
                    r.engine.as_str(),
                    state_str(r.state),
                    r.session_id
                        .as_deref()
                        .map(|id| format!(" session {id}"))
                        .unwrap_or_default(),
                    r.error
                        .as_deref()
                        .map(|e| format!(" · {e}"))
                        .unwrap_or_default(),
                ));
                if let Some(v) = &r.summary {
                    s.push_str(&format!("  summary: {v}\n"));
                }
            }
            ui.write(s.as_bytes());
        }
    }
    Ok(match interrupted {
        Some(code) => code,
        None if ok => exit::OK,
        None => exit::ENGINE_FAILED,
    })
}

/// Before a unit is resumed, nothing of an earlier attempt may still run:
/// exact orphans (dead vf, proven CLI identity) of the plan's units are ended;
/// a unit with a process that is owned by a live vf or cannot be proven is
/// refused (fail closed).
fn take_over_orphans(state_dir: &std::path::Path, units: &mut [Unit]) {
    use crate::orphans::{self, Action, Class};
    for u in units.iter_mut() {
        if matches!(u.report.state, RunState::Done | RunState::Refused) {
            continue;
        }
        let name = u.plan.name.clone();
        let found = orphans::fix_where(state_dir, UnitSpec::default_kill_grace(), |f| {
            f.unit.as_deref() == Some(name.as_str())
        });
        for f in found {
            match (f.class, f.action) {
                (Class::Orphan, Action::Ended) => eprintln!(
                    "vf: {name}: ended the engine left running by a dead vf (process group {})",
                    f.pgid.unwrap_or(0)
                ),
                (_, Action::Released) | (Class::Corrupt, _) => {}
                (Class::Stale, _) => {}
                _ => {
                    u.report.state = RunState::Refused;
                    u.report.error = Some(format!(
                        "an earlier attempt's engine process is not proven gone ({}); see {}",
                        f.reason,
                        f.record.display()
                    ));
                }
            }
        }
    }
}

struct Ctx {
    state_dir: PathBuf,
    resume: bool,
    jobs: usize,
}

fn state_str(s: RunState) -> &'static str {
    match s {
        RunState::Waiting => "waiting",
        RunState::Running => "running",
        RunState::Done => "done",
        RunState::Failed => "failed",
        RunState::Blocked => "blocked",
        RunState::Refused => "refused",
        RunState::NotStarted => "notStarted",
    }
}

/// Runs the DAG; returns the signal exit code if vf was interrupted.
async fn schedule(ctx: Ctx, ui: Rc<RefCell<Ui>>) -> Result<Option<i32>> {
    // The signals each unit's runtime forwards to its engine (HUP and QUIT too).
    let mut signals = crate::child::Signals::new()?;
    let mut set: tokio::task::JoinSet<(usize, Result<DispatchResult>)> =
        tokio::task::JoinSet::new();
    let mut interrupted: Option<i32> = None;
    let mut running = 0usize;
    let mut ticker = tokio::time::interval(Duration::from_millis(250));
    let table = ui.borrow().table;
    let n = ui.borrow().units.len();
    let store = MarkerStore::new(&ctx.state_dir);

    loop {
        // Block what cannot run; start what can.
        if interrupted.is_none() {
            loop {
                let mut changed = false;
                for i in 0..n {
                    let (state, deps, name) = {
                        let u = &ui.borrow().units[i];
                        (
                            u.report.state,
                            u.plan.depends_on.clone(),
                            u.plan.name.clone(),
                        )
                    };
                    if state != RunState::Waiting {
                        continue;
                    }
                    let dep_states: Vec<(String, RunState)> = deps
                        .iter()
                        .map(|d| {
                            let b = ui.borrow();
                            let s = b
                                .units
                                .iter()
                                .find(|u| &u.plan.name == d)
                                .map(|u| u.report.state)
                                .unwrap_or(RunState::Failed);
                            (d.clone(), s)
                        })
                        .collect();
                    if let Some((d, s)) = dep_states.iter().find(|(_, s)| {
                        matches!(
                            s,
                            RunState::Failed
                                | RunState::Blocked
                                | RunState::Refused
                                | RunState::NotStarted
                        )
                    }) {
                        let why = format!("dependency {d:?} is {}", state_str(*s));
                        block(&store, &ui, i, &name, &why)?;
                        changed = true;
                        continue;
                    }
                    if dep_states.iter().all(|(_, s)| *s == RunState::Done) && running < ctx.jobs {
                        let spec = prepare(&ctx, &store, &ui, i)?;
                        let mut sink = UnitSink {
                            index: i,
                            ui: ui.clone(),
                            inner: None,
                        };
                        sink.inner = {
                            let b = ui.borrow();
                            (b.format == OutputFormat::Jsonl).then(|| {
                                let mut s = StdoutSink::new(OutputFormat::Jsonl);
                                s.tag = Some(("unit".into(), name.clone()));
                                s
                            })
                        };
                        let started = {
                            let b = ui.borrow();
                            serde_json::json!({
                                "kind": "orchestrate.unit",
                                "unit": name,
                                "state": "started",
                                "start": b.units[i].report.start,
                                "replay": b.units[i].report.replay,
                            })
                        };
                        ui.borrow_mut().line(&started);
                        set.spawn_local(async move {
                            let r = dispatch::run(spec, &mut sink).await;
                            if let (Ok(res), Some(inner)) = (&r, sink.inner.as_mut()) {
                                inner.result(res);
                            }
                            (i, r)
                        });
                        running += 1;
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
        }
        if running == 0 {
            break;
        }
        tokio::select! {
            joined = set.join_next() => {
                let Some(joined) = joined else { break };
                running -= 1;
                let (i, r) = joined.map_err(|e| VfError::Other(anyhow::anyhow!("unit task failed: {e}")))?;
                finish(&ctx, &ui, i, r);
            }
            sig = signals.recv() => { interrupted.get_or_insert(128 + sig as i32); }
            _ = ticker.tick(), if table => { ui.borrow_mut().draw(); }
        }
    }
    // Whatever never started stays without a (new) marker, ready for --resume.
    for u in ui.borrow_mut().units.iter_mut() {
        if u.report.state == RunState::Waiting {
            u.report.state = RunState::NotStarted;
        }
    }
    Ok(interrupted)
}

fn block(store: &MarkerStore, ui: &Rc<RefCell<Ui>>, i: usize, name: &str, why: &str) -> Result<()> {
    let (engine, cwd) = {
        let b = ui.borrow();
        (b.units[i].engine, b.units[i].plan.cwd.clone())
    };
    let mut m = match store.load(name)? {
        Some(m) => m,
        None => Marker::new(name, engine, &cwd),
    };
    m.state = UnitState::Blocked;
    m.error = Some(why.to_string());
    m.reason = Some(crate::error::Reason::Dependency);
    m.owner = None;
    m.finished_at = Some(now_rfc3339());
    store.save(&mut m)?;
    let mut b = ui.borrow_mut();
    b.units[i].report.state = RunState::Blocked;
    b.units[i].report.error = Some(why.to_string());
    b.line(&serde_json::json!({
        "kind": "orchestrate.unit", "unit": name, "state": "blocked", "error": why,
    }));
    Ok(())
}

/// Chooses how the unit starts (fresh, exact resume, replay) and builds its spec.
fn prepare(ctx: &Ctx, store: &MarkerStore, ui: &Rc<RefCell<Ui>>, i: usize) -> Result<UnitSpec> {
    let mut b = ui.borrow_mut();
    let u = &mut b.units[i];
    let marker = if ctx.resume {
        store.load(&u.plan.name)?
    } else {
        None
    };
    let mut session = None;
    let mut prompt = u.plan.prompt.clone();
    let mut mode = StartMode::Fresh;
    if let Some(m) = &marker {
        match resolve_resume_id(m) {
            Ok(id) if m.engine == u.engine => {
                session = Some(id);
                prompt = DEFAULT_RESUME_PROMPT.to_string();
                mode = StartMode::ExactResume;
            }
            _ => {
                let history = replay::load(&ctx.state_dir, &u.plan.name);
                if let Some((p, counts)) = replay::prepend(&u.plan.name, &history, &prompt) {
                    prompt = p;
                    mode = StartMode::Replay;
                    u.report.replay = Some(counts);
                }
            }
        }
    }
    u.report.start = Some(mode);
    u.report.state = RunState::Running;
    u.report.ran = true;
    u.started = Some(Instant::now());
    Ok(UnitSpec {
        engine: u.engine,
        unit: u.plan.name.clone(),
        prompt,
        session,
        cwd: u.plan.cwd.clone(),
        state_dir: ctx.state_dir.clone(),
        skip_permissions: u.plan.skip_permissions,
        engine_bin: None,
        attachments: u.attachments.clone(),
        stall_timeout: u.plan.stall_timeout,
        timeout: u.plan.timeout,
        kill_grace: UnitSpec::default_kill_grace(),
        warnings: Vec::new(),
        engine_reason: None,
        redact: Vec::new(),
    })
}

fn finish(ctx: &Ctx, ui: &Rc<RefCell<Ui>>, i: usize, r: Result<DispatchResult>) {
    let mut b = ui.borrow_mut();
    let u = &mut b.units[i];
    u.report.duration_ms = u.started.map(|s| s.elapsed().as_millis() as u64);
    match r {
        Ok(res) => {
            if let Some(answer) = res.answer.as_deref().filter(|a| !a.trim().is_empty())
                && let Err(e) = replay::record(
                    &ctx.state_dir,
                    &res.unit,
                    res.engine,
                    res.attempt,
                    res.state,
                    answer,
                )
            {
                eprintln!("vf: warning: {}: cannot record its response: {e}", res.unit);
            }
            u.report.state = if res.state == UnitState::Done {
                RunState::Done
            } else {
                RunState::Failed
            };
            u.report.attempt = Some(res.attempt);
            u.report.session_id = res.session_id.clone();
            u.report.summary = res.summary.clone();
            u.report.error = res.error.clone();
        }
        Err(e) => {
            u.report.state = RunState::Failed;
            u.report.error = Some(e.to_string());
        }
    }
    if b.format == OutputFormat::Human && !b.table {
        let u = &b.units[i];
        let line = format!(
            "[{}] {}{}\n",
            u.plan.name,
            state_str(u.report.state),
            u.report
                .error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        );
        b.write(line.as_bytes());
    }
}

/// Shared output state: the units and the terminal table.
struct Ui {
    format: OutputFormat,
    table: bool,
    /// Lines of the table currently on screen.
    drawn: usize,
    units: Vec<Unit>,
    out: GuardedStdout,
}

impl Ui {
    fn write(&mut self, bytes: &[u8]) {
        self.out.write(bytes);
    }

    fn json_line(&mut self, v: &impl Serialize) {
        let mut line = serde_json::to_vec(v).unwrap_or_default();
        line.push(b'\n');
        self.write(&line);
    }

    /// vf's own per-unit lines (jsonl only).
    fn line(&mut self, v: &Value) {
        if self.format == OutputFormat::Jsonl {
            self.json_line(v);
        }
    }

    fn draw(&mut self) {
        if !self.table {
            return;
        }
        let mut s = String::new();
        if self.drawn > 0 {
            s.push_str(&format!("\x1b[{}A", self.drawn));
        }
        s.push_str(&format!(
            "\x1b[2K{:<20} {:<9} {:<10} {:>8}  {}\n",
            "UNIT", "ENGINE", "STATE", "ELAPSED", "LAST EVENT"
        ));
        for u in &self.units {
            let elapsed = match (u.report.duration_ms, u.started) {
                (Some(ms), _) => format!("{:.1}s", ms as f64 / 1000.0),
                (None, Some(t)) => format!("{:.1}s", t.elapsed().as_secs_f64()),
                _ => "-".into(),
            };
            let last: String = u.last_event.chars().take(60).collect();
            s.push_str(&format!(
                "\x1b[2K{:<20} {:<9} {:<10} {:>8}  {}\n",
                u.plan.name,
                u.engine.as_str(),
                state_str(u.report.state),
                elapsed,
                last
            ));
        }
        self.drawn = self.units.len() + 1;
        self.write(s.as_bytes());
    }
}

/// Per-unit event sink: tagged JSONL lines, or the table's "last event".
struct UnitSink {
    index: usize,
    ui: Rc<RefCell<Ui>>,
    inner: Option<StdoutSink>,
}

impl EventSink for UnitSink {
    fn event(&mut self, event: &ConversationEvent) {
        if let Some(inner) = self.inner.as_mut() {
            inner.event(event);
            return;
        }
        let mut b = self.ui.borrow_mut();
        let line = human_line(event);
        let first = line.lines().next().unwrap_or("").trim().to_string();
        if b.format == OutputFormat::Human && !b.table {
            let name = b.units[self.index].plan.name.clone();
            b.write(format!("[{name}] {first}\n").as_bytes());
        }
        b.units[self.index].last_event = first;
    }

    fn warning(&mut self, message: &str) {
        let name = self.ui.borrow().units[self.index].plan.name.clone();
        let _ = writeln!(std::io::stderr(), "vf: warning: {name}: {message}");
    }
}
