//! The executor of `vf orchestrate`: runs a plan's DAG of units with at most
//! `parallel` at once, each through `dispatch::run`, and picks every unit up
//! from its marker on `--resume`. It knows nothing of the terminal: it tells a
//! [`Reporter`] what happens (unit started / event / finished / blocked / the
//! plan's result), so the live table and JSONL are just reporters.
//!
//! Rules: a unit whose dependency did not finish is `blocked` (marker written,
//! never run); a `running` marker with a live or unprovable owner is
//! `refused`; before a unit runs again its proven orphans are ended and
//! anything unproven refuses it; SIGINT/SIGTERM stop starting units (running
//! ones get the signal through their own dispatch) and leave the rest without
//! a marker, ready for `--resume`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::dispatch::resolve::Resolved;
use crate::dispatch::{self, DispatchResult, EventSink, UnitSpec};
use crate::engine::frames::ConversationEvent;
use crate::engine::{Attachment, EngineId, RoundNote};
use crate::ground::error::{Reason, Result, VfError, exit};
use crate::ground::version::Version;
use crate::plan::PlanUnit;
use crate::process::orphans;
use crate::unit::history;
use crate::unit::marker::resume_rule::{DEFAULT_RESUME_PROMPT, owner_refusal, resolve_resume_id};
use crate::unit::marker::{Marker, MarkerStore, UnitState};

mod budget;
pub mod dag;
mod governed;
mod markers;
pub mod result_json;
mod retry;
pub mod retry_table;
mod row;
pub mod unit_hooks;

pub use result_json::JsonText;
pub use row::{RunState, StartMode, UnitReport};

/// One unit of a resolved plan: its engine and attachments already chosen.
#[derive(Debug, Clone)]
pub struct Job {
    pub plan: PlanUnit,
    pub engine: EngineId,
    pub attachments: Vec<Attachment>,
    /// Its worktree (dependencies still to fill in), setup and verify.
    pub steps: dispatch::Steps,
    /// Where its keys came from, when the user config set one (reported).
    pub origins: Option<std::collections::BTreeMap<String, String>>,
    /// Who started the plan (`unit::lineage`): each unit is its child.
    pub lineage: crate::unit::lineage::Lineage,
}

/// A validated `vf orchestrate` request.
#[derive(Debug, Clone)]
pub struct Request {
    /// The plan file (reported back in the result).
    pub plan: PathBuf,
    pub state_dir: PathBuf,
    /// In dependency order.
    pub jobs: Vec<Job>,
    /// Units run at once (at least 1).
    pub parallel: usize,
    pub resume: bool,
    /// No new unit starts once the plan's usage reaches it.
    pub budget: crate::engine::usage::Budget,
    /// Between SIGTERM and SIGKILL, for each unit and for orphans.
    pub kill_grace: Duration,
}

/// The plan's outcome: `{"kind":"orchestrate.result","ok":…,"plan":…,"units":[…],"usage":…}`.
/// Serialized with its keys sorted at every level, the text that a
/// `serde_json::Value` of it prints, but one unit's row at a time (see [`rows`]).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanResult {
    pub kind: &'static str,
    /// Every unit is done.
    pub ok: bool,
    pub plan: PathBuf,
    #[serde(serialize_with = "result_json::rows")]
    pub units: Vec<UnitReport>,
    /// The units' usage summed (`null` when none reported any).
    #[serde(serialize_with = "result_json::value")]
    pub usage: Option<crate::engine::usage::Usage>,
    /// The signal's exit code (130/143) when vf was interrupted.
    #[serde(skip)]
    pub interrupted: Option<i32>,
}

impl PlanResult {
    /// vf's exit code: the signal's, else 0 when every unit is done, 75 when
    /// only rate limits kept it from finishing, else 1.
    pub fn exit_code(&self) -> i32 {
        match self.interrupted {
            Some(code) => code,
            None if self.ok => exit::OK,
            None if self.only_rate_limited() => exit::RATE_LIMITED,
            None => exit::ENGINE_FAILED,
        }
    }

    /// Every unit that did not finish was rate-limited or is blocked behind
    /// one: running the plan again later (`--resume`) may finish it.
    fn only_rate_limited(&self) -> bool {
        let mut limited = false;
        for u in &self.units {
            match (u.state, u.reason) {
                (RunState::Done, _) | (RunState::Blocked, Some(Reason::Dependency)) => {}
                (RunState::Failed, Some(Reason::RateLimited)) => limited = true,
                _ => return false,
            }
        }
        limited
    }
}

/// What the executor tells its caller, as it happens. `index` is the unit's
/// place in [`Run::reports`].
pub trait Reporter {
    /// A unit is about to run; its report says how it starts.
    fn started(&mut self, index: usize, report: &UnitReport);
    /// One of a running unit's events, as projected live.
    fn event(&mut self, index: usize, event: &ConversationEvent);
    /// vf's own notice about a unit (not engine output).
    fn warning(&mut self, index: usize, message: &str);
    /// A round of the unit's loops starts (`note.ended` is `None`) or ends.
    fn round(&mut self, _index: usize, _note: &RoundNote) {}
    /// A unit ran to its end; `result` is its dispatch result when it got one.
    fn finished(&mut self, index: usize, report: &UnitReport, result: Option<&DispatchResult>);
    /// A unit will not run: a dependency did not finish.
    fn blocked(&mut self, index: usize, report: &UnitReport);
    /// A rate-limited unit will run again (`report.error` says when or where);
    /// `result` is the attempt that was rate-limited.
    fn waiting(&mut self, index: usize, report: &UnitReport, result: &DispatchResult);
    /// A unit waits on the quota governor (`report.held_by` says what holds
    /// it and until when); told again when the hold changes.
    fn held(&mut self, _index: usize, _report: &UnitReport) {}
    /// Every unit has settled.
    fn plan_result(&mut self, result: &PlanResult);
    /// Called a few times a second while units run, when `wants_ticks`.
    fn tick(&mut self) {}
    fn wants_ticks(&self) -> bool {
        false
    }
}

/// A unit's place in this run (its job is `Run::jobs[i]`).
struct Unit {
    report: UnitReport,
    started: Option<Instant>,
    retry: retry::Retry,
}

/// A plan checked against the state dir, ready to run.
pub struct Run {
    req: Request,
    store: MarkerStore,
    /// The plan's units as the request gave them (kept once: moved here).
    jobs: Vec<Job>,
    /// What this run knows of each, in the same order.
    units: Vec<Unit>,
    /// Their dependencies (the rules shared with the Temporal workflow);
    /// shared, so a sweep reads it while the run acts on its decisions.
    dag: Rc<dag::Dag>,
    /// What vf did before running (orphans it ended), one line each.
    pub notices: Vec<String>,
    /// Ends the running units once a hard budget is reached.
    hard: budget::HardStop,
    /// Units whose dispatch runs (at most `parallel`).
    running: usize,
    /// Each engine's installed version, read once (a resume needs authority
    /// at it as well as at the marker's).
    installed: HashMap<EngineId, Option<Version>>,
}

/// Checks the plan against its markers (a corrupt or newer marker stops
/// everything; markers without `--resume` are refused), then, on `--resume`,
/// decides each unit's start and ends its proven orphans.
pub fn open(mut req: Request) -> Result<Run> {
    let store = MarkerStore::new(&req.state_dir);
    let jobs = std::mem::take(&mut req.jobs);
    let dag = Rc::new(dag_of(&jobs));
    let mut units: Vec<Unit> = jobs.iter().map(Unit::new).collect();
    let mut existing = Vec::new();
    let mut installed = HashMap::new();
    for (u, job) in units.iter_mut().zip(&jobs) {
        // vf never overwrites a marker it cannot use.
        if let Some(m) = store.load(&job.plan.name)? {
            existing.push(job.plan.name.clone());
            u.adopt(&m)?;
            // Read now, before any unit runs: `--version` may take seconds.
            if req.resume && m.engine_session_id.is_some() {
                installed
                    .entry(m.engine)
                    .or_insert_with(|| dispatch::installed_version(m.engine, None));
            }
        }
    }
    if !req.resume && !existing.is_empty() {
        return Err(VfError::usage(format!(
            "units of this plan already have markers under {} ({}); continue them with --resume, or use another --state-dir",
            req.state_dir.display(),
            existing.join(", ")
        )));
    }
    let mut notices = Vec::new();
    if req.resume {
        for u in units
            .iter_mut()
            .filter(|u| u.report.state == RunState::Waiting)
        {
            let name = u.report.unit.clone();
            match orphans::take_over(&req.state_dir, &name, req.kill_grace) {
                Ok(ended) => notices.extend(
                    ended
                        .iter()
                        .map(|f| format!("{name}: {}", f.ended_notice())),
                ),
                Err(why) => u.report.refuse(why)?,
            }
        }
    }
    Ok(Run {
        req,
        store,
        jobs,
        units,
        dag,
        notices,
        hard: budget::HardStop::default(),
        running: 0,
        installed,
    })
}

/// The plan's DAG, by each job's name and dependencies.
pub fn dag_of(jobs: &[Job]) -> dag::Dag {
    dag::Dag::new(
        jobs.iter()
            .map(|j| (j.plan.name.as_str(), j.plan.depends_on.as_slice())),
    )
}

impl Unit {
    fn new(job: &Job) -> Unit {
        Unit {
            report: UnitReport {
                origins: job.origins.clone(),
                ..UnitReport::waiting(&job.plan.name, job.engine, job.plan.model.clone())
            },
            started: None,
            retry: retry::Retry::default(),
        }
    }

    /// What an existing marker says (only used with `--resume`).
    fn adopt(&mut self, m: &Marker) -> Result<()> {
        self.report.session_id = m.engine_session_id.clone();
        self.report.attempt = Some(m.attempts);
        self.report.workspace = m.workspace.clone();
        self.report.account = m.account.clone();
        // A done author whose loop is still open (a review pending) is not done.
        if m.state == UnitState::Done && !m.loop_open {
            self.report.done_before(m)?;
        } else if let Some(why) = owner_refusal(m) {
            self.report.refuse(format!("it {why}"))?;
        }
        Ok(())
    }
}

type Shared = Rc<RefCell<dyn Reporter>>;
type Joined = (usize, Ended);

/// What a unit's task ends with.
enum Ended {
    /// Its dispatch's result, once its attempts (if kept) are in its marker;
    /// a warning when they could not be.
    Ran(Box<Result<DispatchResult>>, Option<String>),
    /// Its `blocked` marker is written (or could not be); its hooks' warnings.
    Blocked(Result<()>, Vec<String>),
}

impl Run {
    /// Every unit's report as it stands (before `execute`: skipped, refused or waiting).
    pub fn reports(&self) -> impl ExactSizeIterator<Item = &UnitReport> {
        self.units.iter().map(|u| &u.report)
    }

    /// Runs the DAG to its end (or to an interruption) on a fresh runtime.
    pub fn execute(mut self, reporter: Shared) -> Result<PlanResult> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)?;
        let local = tokio::task::LocalSet::new();
        let interrupted = local.block_on(&rt, self.schedule(&reporter))?;
        let usage = self.spent();
        // The rows move into the result; the plan's jobs go.
        self.jobs = Vec::new();
        let units: Vec<UnitReport> = std::mem::take(&mut self.units)
            .into_iter()
            .map(|u| u.report)
            .collect();
        let result = PlanResult {
            kind: "orchestrate.result",
            ok: units.iter().all(|r| r.state == RunState::Done),
            plan: std::mem::take(&mut self.req.plan),
            units,
            usage,
            interrupted,
        };
        reporter.borrow_mut().plan_result(&result);
        Ok(result)
    }

    /// Runs the DAG; returns the signal's exit code if vf was interrupted.
    async fn schedule(&mut self, reporter: &Shared) -> Result<Option<i32>> {
        // The signals each unit's runtime forwards to its engine (HUP and QUIT too).
        let mut signals = crate::process::child::Signals::new()?;
        let mut set: tokio::task::JoinSet<Joined> = tokio::task::JoinSet::new();
        let mut interrupted: Option<i32> = None;
        let mut ticker = tokio::time::interval(Duration::from_millis(250));
        let ticks = reporter.borrow().wants_ticks();
        loop {
            if interrupted.is_none() {
                self.start_ready(&mut set, reporter)?;
            }
            let due = self.next_due().filter(|_| interrupted.is_none());
            if set.is_empty() && due.is_none() {
                break;
            }
            let wake = due.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                _ = tokio::time::sleep_until(wake.into()), if due.is_some() => {}
                joined = set.join_next(), if !set.is_empty() => {
                    let Some(joined) = joined else { break };
                    let (i, ended) = joined.map_err(|e| VfError::Other(anyhow::anyhow!("unit task failed: {e}")))?;
                    self.ended(i, ended, reporter)?;
                }
                sig = signals.recv() => { interrupted.get_or_insert(128 + sig.number()); }
                _ = ticker.tick(), if ticks => { reporter.borrow_mut().tick(); }
            }
        }
        self.unhold_all();
        // Whatever never started stays without a (new) marker, ready for --resume.
        for u in &mut self.units {
            if u.report.state == RunState::Waiting {
                u.report.not_started()?;
            }
        }
        Ok(interrupted)
    }

    /// Blocks what cannot run and starts what can, until nothing changes.
    fn start_ready(
        &mut self,
        set: &mut tokio::task::JoinSet<Joined>,
        reporter: &Shared,
    ) -> Result<()> {
        if self.over_budget()? {
            return Ok(());
        }
        let mut states: Vec<RunState> = self.units.iter().map(|u| u.report.state).collect();
        let room = self.req.parallel.saturating_sub(self.running);
        let due = self.due_now(&states, reporter);
        let dag = self.dag.clone();
        let mut local = Local {
            run: self,
            set,
            reporter,
        };
        dag.drive(&mut states, room, |i| due[i], &mut local)
    }

    /// Unit `i` will not run: it is `blocked` at once (its dependents see
    /// it), and reported once its marker says so.
    fn block(
        &mut self,
        i: usize,
        why: String,
        set: &mut tokio::task::JoinSet<Joined>,
    ) -> Result<()> {
        let (job, u) = (&self.jobs[i], &mut self.units[i]);
        u.report.block(why.clone())?;
        let write = markers::Blocked {
            state_dir: self.req.state_dir.clone(),
            unit: job.plan.name.clone(),
            engine: job.engine,
            cwd: job.plan.cwd.clone(),
            why,
        };
        let (hooks, report) = (self.hooks_of(i), self.units[i].report.clone());
        set.spawn_local(async move {
            let written = write.write().await;
            let warnings = hooks.run(&report, 0, true).await;
            (i, Ended::Blocked(written, warnings))
        });
        Ok(())
    }

    /// Unit `i`'s notification hooks, as its task runs them.
    fn hooks_of(&self, i: usize) -> unit_hooks::UnitHooks {
        let job = &self.jobs[i];
        unit_hooks::UnitHooks {
            hooks: job.plan.hooks.clone(),
            state_dir: self.req.state_dir.clone(),
            cwd: job.plan.cwd.clone(),
            unit: job.plan.name.clone(),
            engine: job.engine,
            kill_grace: self.req.kill_grace,
        }
    }

    /// Which units may start now: no wait in progress, and (for those
    /// whose dependencies are done) an open account of their engine.
    fn due_now(&mut self, states: &[RunState], reporter: &Shared) -> Vec<bool> {
        let mut peeks = governed::Peeks::new();
        let dag = self.dag.clone();
        (0..self.units.len())
            .map(|i| {
                let ready = states[i] == RunState::Waiting
                    && self.due(i)
                    && dag.deps_of(i, states) == dag::Deps::Done;
                ready && self.quota_open(i, &mut peeks, reporter)
            })
            .collect()
    }

    /// Starts unit `i`'s dispatch; its attempts, when kept, go into its
    /// marker before the scheduler hears how it ended. A unit the quota
    /// governor holds after all stays waiting.
    fn start(
        &mut self,
        i: usize,
        set: &mut tokio::task::JoinSet<Joined>,
        reporter: &Shared,
    ) -> Result<()> {
        let Ok(account) = self.take_start(i, reporter) else {
            return Ok(());
        };
        let spec = self.prepare(i, account)?;
        reporter.borrow_mut().started(i, &self.units[i].report);
        let mut sink = UnitSink {
            index: i,
            reporter: reporter.clone(),
        };
        let attempts = self.keeps_attempts(i);
        self.running += 1;
        let hooks = self.hooks_of(i);
        set.spawn_local(async move {
            let r = dispatch::run(spec, &mut sink).await;
            let warning = match (&r, attempts) {
                (Ok(res), Some(a)) => a.keep(res).await,
                _ => None,
            };
            if let Ok(res) = &r {
                let failed = res.state != UnitState::Done;
                for w in hooks.run(res, res.attempt, failed).await {
                    sink.warning(&w);
                }
            }
            (i, Ended::Ran(Box::new(r), warning))
        });
        Ok(())
    }

    /// How unit `i`'s task ended.
    fn ended(&mut self, i: usize, ended: Ended, reporter: &Shared) -> Result<()> {
        match ended {
            Ended::Ran(r, warning) => {
                self.running -= 1;
                if let Some(w) = warning {
                    reporter.borrow_mut().warning(i, &w);
                }
                self.finish(i, *r, reporter)?;
            }
            Ended::Blocked(written, warnings) => {
                written?;
                for w in warnings {
                    reporter.borrow_mut().warning(i, &w);
                }
                reporter.borrow_mut().blocked(i, &self.units[i].report);
            }
        }
        Ok(())
    }

    /// Chooses how the unit starts (fresh, exact resume, replay) on
    /// `account` and builds its spec: a session resumes exactly only on the
    /// account it belongs to.
    fn prepare(&mut self, i: usize, account: Option<crate::quota::Account>) -> Result<UnitSpec> {
        let marker = match self.req.resume || self.units[i].retry.pending {
            true => self.store.load(&self.jobs[i].plan.name)?,
            false => None,
        };
        let installed = match &marker {
            Some(m) => self.installed_version(m.engine),
            None => None,
        };
        let state_dir = &self.req.state_dir;
        let (job, u) = (&self.jobs[i], &mut self.units[i]);
        let (mut session, mut prompt, mut mode) = (None, job.plan.prompt.clone(), StartMode::Fresh);
        if let Some(m) = &marker {
            let name = account.as_ref().map(|a| a.name.clone());
            match resolve_resume_id(m, installed.as_ref()) {
                Ok(id) if m.engine == job.engine && m.account == name => {
                    session = Some(id);
                    prompt = DEFAULT_RESUME_PROMPT.to_string();
                    mode = StartMode::ExactResume;
                }
                _ => {
                    let history = history::load(state_dir, &job.plan.name);
                    if let Some((p, counts)) = history::prepend(&job.plan.name, &history, &prompt) {
                        prompt = p;
                        mode = StartMode::Replay;
                        u.report.replay = Some(counts);
                    }
                }
            }
        }
        u.report.start(mode)?;
        u.started = Some(Instant::now());
        let mut spec = spec_of(job, state_dir, self.req.kill_grace, prompt, session);
        spec.steps = self.steps_of(i);
        spec.budget_stop = self.hard.watch(i, self.req.budget);
        // The start was taken (`take_start`): the first attempt does not ask again.
        spec.quota.account = account;
        spec.quota.admitted = crate::quota::Admitted::taken();
        Ok(spec)
    }

    /// `engine`'s installed version, read once per run (a unit that ran in
    /// this run had it read by its dispatch: the cache answers).
    fn installed_version(&mut self, engine: EngineId) -> Option<Version> {
        let v = self.installed.entry(engine);
        v.or_insert_with(|| dispatch::installed_version(engine, None))
            .clone()
    }

    /// Unit `i`'s steps; a worktree unit merges the branch of each of its
    /// dependencies that ran in a worktree too.
    fn steps_of(&self, i: usize) -> dispatch::Steps {
        let job = &self.jobs[i];
        let mut steps = job.steps.clone();
        if let Some(ws) = &mut steps.workspace {
            ws.merge = self
                .dag
                .places(i)
                .filter(|(_, at)| at.is_some_and(|j| self.jobs[j].steps.workspace.is_some()))
                .map(|(d, _)| d.to_string())
                .collect();
        }
        steps
    }

    fn finish(&mut self, i: usize, r: Result<DispatchResult>, reporter: &Shared) -> Result<()> {
        if let Err(VfError::Held(held)) = r {
            return self.refused_start(i, *held, reporter);
        }
        let u = &mut self.units[i];
        u.report.duration_ms = u.started.map(|s| s.elapsed().as_millis() as u64);
        u.report.settle(&r)?;
        if let Ok(res) = &r
            && self.after_attempt(i, res, reporter)?
        {
            return Ok(());
        }
        reporter
            .borrow_mut()
            .finished(i, &self.units[i].report, r.as_ref().ok());
        Ok(())
    }
}

/// The spec of one run of a plan unit, as a local plan and a Temporal
/// worker both start it: `prompt` and `session` say how it starts (fresh,
/// exact resume, replay); the caller adds what is its own (the merged
/// dependency branches, a budget watch, a cancel).
pub fn spec_of(
    job: &Job,
    state_dir: &std::path::Path,
    kill_grace: Duration,
    prompt: String,
    session: Option<String>,
) -> UnitSpec {
    let (u, state_dir) = (&job.plan, state_dir.to_path_buf());
    let (loops, warnings) = dispatch::resolve::loops::resolve(&u.loops, job.engine);
    let run = Resolved {
        skip_permissions: u.skip_permissions,
        attachments: job.attachments.clone(),
        stall_timeout: u.stall_timeout,
        timeout: u.timeout,
        kill_grace,
        options: u.run_options(),
        summary_schema: u.summary_schema.clone(),
        steps: job.steps.clone(),
        policy: u.policy.clone(),
        sandbox: u.sandbox.clone(),
        // The plan's values, recorded: the plan file is read again each run.
        asked: crate::unit::marker::Asked {
            mcp: u.mcp_file.clone(),
            loops: u.loops.clone(),
            sandbox: u.sandbox_asked.sandbox,
            deny_read: u.sandbox_asked.deny_read.clone(),
            writable: u.sandbox_asked.writable.clone(),
            steps_unsandboxed: u.sandbox_asked.steps_unsandboxed,
            ..crate::unit::marker::Asked::new(
                &u.policy,
                (&u.deny_paths, &u.allow_paths),
                (u.hooks.on_finish.as_deref(), u.hooks.on_fail.as_deref()),
            )
        },
        mcp: u.mcp.clone(),
        keep_answer: true,
        command: u.command.clone(),
        loops,
        warnings,
        quota: u.quota.clone(),
        lineage: job.lineage.clone(),
        ..Resolved::new(job.engine, u.name.clone(), u.cwd.clone(), state_dir)
    };
    run.spec(prompt, session)
}

/// The local executor: a unit blocked gets its marker, a unit started runs
/// through `dispatch::run` as a task of this process.
struct Local<'a> {
    run: &'a mut Run,
    set: &'a mut tokio::task::JoinSet<Joined>,
    reporter: &'a Shared,
}

impl dag::Executor for Local<'_> {
    fn block(&mut self, i: usize, why: String) -> Result<()> {
        self.run.block(i, why, self.set)
    }

    fn start(&mut self, i: usize) -> Result<()> {
        self.run.start(i, self.set, self.reporter)
    }
}

/// One unit's live events, forwarded to the shared reporter.
struct UnitSink {
    index: usize,
    reporter: Shared,
}

impl EventSink for UnitSink {
    fn event(&mut self, event: &ConversationEvent) {
        self.reporter.borrow_mut().event(self.index, event);
    }

    fn warning(&mut self, message: &str) {
        self.reporter.borrow_mut().warning(self.index, message);
    }

    fn round(&mut self, note: &RoundNote) {
        self.reporter.borrow_mut().round(self.index, note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the rounds it is told of.
    #[derive(Default)]
    struct Rounds(Vec<(usize, RoundNote)>);

    impl Reporter for Rounds {
        fn started(&mut self, _: usize, _: &UnitReport) {}
        fn event(&mut self, _: usize, _: &ConversationEvent) {}
        fn warning(&mut self, _: usize, _: &str) {}
        fn finished(&mut self, _: usize, _: &UnitReport, _: Option<&DispatchResult>) {}
        fn blocked(&mut self, _: usize, _: &UnitReport) {}
        fn waiting(&mut self, _: usize, _: &UnitReport, _: &DispatchResult) {}
        fn plan_result(&mut self, _: &PlanResult) {}
        fn round(&mut self, index: usize, note: &RoundNote) {
            self.0.push((index, note.clone()));
        }
    }

    #[test]
    fn a_units_sink_forwards_its_rounds_to_the_reporter_with_its_index() {
        let seen = Rc::new(RefCell::new(Rounds::default()));
        let mut sink = UnitSink {
            index: 3,
            reporter: seen.clone(),
        };
        let note = RoundNote {
            kind: "review",
            n: 1,
            of: 2,
            engine: EngineId::Codex,
            ended: None,
        };
        sink.round(&note);
        let ended = RoundNote {
            ended: Some("approve".into()),
            ..note.clone()
        };
        sink.round(&ended);
        assert_eq!(seen.borrow().0, vec![(3, note), (3, ended)]);
    }
}
