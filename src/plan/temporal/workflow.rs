//! The plan as one Temporal workflow: the DAG run deterministically with the
//! scheduler's own rules ([`crate::plan::scheduler::dag`]), each unit attempt one
//! activity ([`super::activity`]). vf's retry table decides every retry here,
//! not Temporal's server-side retry: a retry must choose its queue (the host
//! that holds the session first), which a server retry cannot. Each activity
//! is therefore scheduled with one attempt.

use std::time::Duration;

use futures::future::{LocalBoxFuture, select_all};
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityCancellationType, ActivityExecutionError, ActivityOptions, ApplicationFailure,
    ContinueAsNewOptions, WorkflowContext, WorkflowContextView, WorkflowResult,
    WorkflowTermination,
};

use super::activity::UnitActivities;
use super::holds::{self, Governor};
use super::next_attempt::{self, Decision};
use super::payload::{Outcome, PlanInput, Progress, Start, UnitOrder, UnitState};
use crate::ground::error::{Reason, Result, VfError};
use crate::plan::scheduler::dag::{Dag, Executor};
use crate::plan::scheduler::{RunState, UnitReport};

/// A unit's heartbeat timeout when it has no `stall_timeout`: how soon a dead
/// worker is noticed.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(60);

#[workflow]
#[derive(Default)]
pub struct PlanWorkflow {
    progress: Progress,
}

/// What the run loop waits on: an attempt's end, or a wake timer.
enum Woke {
    Ended(usize, Box<Result<Outcome, ActivityExecutionError>>),
    Timer(u64),
}

type Pending<'a> = LocalBoxFuture<'a, Woke>;

/// The workflow's time in ms since the epoch (replay-safe: the time of the
/// workflow task, not a clock).
fn now_ms(ctx: &WorkflowContext<PlanWorkflow>) -> u64 {
    ctx.workflow_time()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

#[workflow_methods]
impl PlanWorkflow {
    #[run]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: PlanInput,
    ) -> WorkflowResult<Progress> {
        let ctx: &WorkflowContext<Self> = ctx;
        let mut plan = Driver::new(&input, ctx.workflow_id().to_string());
        let mut pending: Vec<Pending<'_>> = Vec::new();
        // The wake timers in flight, by the time they fire at.
        let mut timers: Vec<u64> = Vec::new();
        loop {
            let now = now_ms(ctx);
            let full = ctx.history_length() >= input.history_limit;
            let cancelled = ctx.cancellation_token().is_cancelled();
            if !full && !cancelled {
                plan.sweep().map_err(broken)?;
            } else {
                plan.block_only().map_err(broken)?;
            }
            plan.drop_queued(cancelled).map_err(broken)?;
            for (i, order) in plan.due(now).map_err(broken)? {
                pending.push(plan.attempt(ctx, i, order, now).map_err(broken)?);
            }
            let rows = plan.progress(false).map_err(broken)?;
            ctx.state_mut(|s| s.progress = rows);
            if plan.settled() {
                if full && plan.waiting() {
                    let next = plan.carry(input.clone());
                    ctx.continue_as_new(next, ContinueAsNewOptions::default())?;
                }
                break;
            }
            // Held units and delayed retries wait on a workflow timer.
            if let Some(at) = plan.wake(now)
                && !timers.iter().any(|t| *t <= at)
            {
                timers.push(at);
                pending.push(Box::pin(async move {
                    ctx.timer(Duration::from_millis(at - now)).await;
                    Woke::Timer(at)
                }));
            }
            if pending.is_empty() {
                break;
            }
            let (woke, _, rest) = select_all(pending).await;
            pending = rest;
            match woke {
                Woke::Timer(at) => timers.retain(|t| *t != at),
                Woke::Ended(i, r) => {
                    let jitter = ctx.random::<f64>();
                    let clock = (ctx.workflow_time(), jitter);
                    plan.settle(i, *r, clock).map_err(broken)?;
                }
            }
        }
        let progress = plan.progress(true).map_err(broken)?;
        ctx.state_mut(|s| s.progress = progress.clone());
        if ctx.cancellation_token().is_cancelled() {
            return Err(WorkflowTermination::cancelled());
        }
        Ok(progress)
    }

    /// The live table's rows, for `vf orchestrate --temporal --follow`.
    #[query]
    pub fn progress(&self, _ctx: &WorkflowContextView) -> Progress {
        self.progress.clone()
    }
}

/// A move a unit's row refused (vf's own bug, exit 70 in a local run): the
/// workflow fails, the error naming both states.
fn broken(e: VfError) -> WorkflowTermination {
    ApplicationFailure::non_retryable(e).into()
}

/// The workflow's own state (deterministic: no clock, no I/O).
struct Driver {
    input: PlanInput,
    workflow_id: String,
    /// Shared, so a sweep reads it while the workflow acts on its decisions.
    dag: std::rc::Rc<Dag>,
    units: Vec<UnitState>,
    /// Claimed: queued to start, or an attempt of it is scheduled.
    busy: Vec<bool>,
    /// Claimed units not started yet, in the order claimed.
    queue: Vec<Queued>,
    /// Attempts scheduled and not ended.
    inflight: usize,
    /// The plan's quota governor (what any worker's attempt taught it).
    gov: Governor,
    /// Each unit's account, once an attempt or a hold named it.
    account: Vec<Option<String>>,
    /// When its attempt in flight was scheduled (workflow time, ms).
    began: Vec<u64>,
    /// Its row and order before the attempt in flight: restored when the
    /// worker's ledger refused the start (no attempt).
    before: Vec<Option<(UnitReport, UnitOrder)>>,
    /// Its last attempt's end (failed) while a retry of it is queued.
    ended: Vec<Option<UnitReport>>,
}

/// A claimed unit waiting to start.
struct Queued {
    unit: usize,
    order: UnitOrder,
    /// A retry's delay: not before this (workflow time, ms).
    not_before: u64,
    /// The quota governor holds it until this.
    held_until: Option<u64>,
}

impl Driver {
    fn new(input: &PlanInput, workflow_id: String) -> Driver {
        let dag = std::rc::Rc::new(Dag::new(
            input
                .units
                .iter()
                .map(|u| (u.name.as_str(), u.depends_on.as_slice())),
        ));
        let units = input
            .units
            .iter()
            .enumerate()
            .map(|(i, u)| match input.carried.get(i) {
                Some(Some(s)) => s.clone(),
                _ => fresh(u),
            })
            .collect();
        let n = input.units.len();
        let account = (0..n)
            .map(|i| match input.carried.get(i) {
                Some(Some(s)) => s.row.account.clone(),
                _ => None,
            })
            .collect();
        Driver {
            busy: vec![false; n],
            input: input.clone(),
            workflow_id,
            dag,
            units,
            queue: Vec::new(),
            inflight: 0,
            gov: input.quota.clone(),
            account,
            began: vec![0; n],
            before: vec![None; n],
            ended: vec![None; n],
        }
    }

    fn states(&self) -> Vec<RunState> {
        let state = |(u, busy): (&UnitState, &bool)| match busy {
            true => RunState::Running,
            false => u.row.state,
        };
        self.units.iter().zip(&self.busy).map(state).collect()
    }

    /// Claims the units that may start now (queued, marked running for the
    /// DAG); blocks what cannot run. A unit the quota governor holds takes
    /// no room: the plan's other engines go on.
    fn sweep(&mut self) -> Result<()> {
        let unheld = self.queue.iter().filter(|q| q.held_until.is_none());
        let taken = self.inflight + unheld.count();
        let room = (self.input.parallel as usize).saturating_sub(taken);
        let room = if self.over_budget() { 0 } else { room };
        for i in self.drive(room)? {
            let order = self.order(i, Start::Fresh);
            self.busy[i] = true;
            self.queue.push(Queued {
                unit: i,
                order,
                not_before: 0,
                held_until: None,
            });
        }
        Ok(())
    }

    /// Blocks what a failure upstream will never let run, starting nothing.
    fn block_only(&mut self) -> Result<()> {
        self.drive(0).map(drop)
    }

    /// The scheduler's rules on this workflow (the [`Executor`] below).
    fn drive(&mut self, room: usize) -> Result<Vec<usize>> {
        let mut states = self.states();
        let dag = self.dag.clone();
        let mut starts = Starts {
            driver: self,
            starts: Vec::new(),
        };
        dag.drive(&mut states, room, |_| true, &mut starts)?;
        Ok(starts.starts)
    }

    fn block(&mut self, i: usize, why: String) -> Result<()> {
        self.units[i].row.block(why)
    }

    fn over_budget(&self) -> bool {
        let budget = crate::engine::usage::Budget {
            cost_usd: self.input.cost_usd,
            tokens: self.input.tokens,
            hard: false,
        };
        if !budget.limits() {
            return false;
        }
        let total =
            crate::engine::usage::total(self.units.iter().filter_map(|u| u.row.usage.as_ref()));
        budget.reached(total.as_ref()).is_some()
    }

    /// A unit is still to run (a continue-as-new goes on with it).
    fn waiting(&self) -> bool {
        self.units.iter().any(|u| u.row.state == RunState::Waiting)
    }

    /// The next run's input: what this one settled, the settled units'
    /// answers dropped (only a retry needs them).
    fn carry(&self, mut input: PlanInput) -> PlanInput {
        input.carried = self
            .units
            .iter()
            .map(|u| {
                let mut u = u.clone();
                if u.row.state != RunState::Waiting {
                    u.answers.clear();
                }
                Some(u)
            })
            .collect();
        input.runs_before += 1;
        input.quota = self.gov.clone();
        input.quota.prune();
        input
    }

    fn progress(&self, ended: bool) -> Result<Progress> {
        let mut units: Vec<UnitReport> = self.units.iter().map(|u| u.row.clone()).collect();
        if ended {
            for r in units.iter_mut().filter(|r| r.state == RunState::Waiting) {
                r.not_started()?;
                r.held_by = None;
                if self.over_budget() {
                    r.reason = Some(Reason::Budget);
                }
            }
        }
        Ok(Progress {
            plan: self.input.plan.clone(),
            units,
            ended,
            runs: self.input.runs_before + 1,
        })
    }

    /// Starts unit `i`'s attempt `order` now: its activity, on the queue
    /// the order names, with the accounts the plan holds on its engine.
    fn attempt<'a>(
        &mut self,
        ctx: &'a WorkflowContext<PlanWorkflow>,
        i: usize,
        mut order: UnitOrder,
        now: u64,
    ) -> Result<Pending<'a>> {
        let u = &mut self.units[i];
        self.before[i] = Some((u.row.clone(), order.clone()));
        self.ended[i] = None;
        // How it is asked to start; the worker's outcome says how it did.
        u.row.start(match &order.start {
            Start::Fresh => crate::plan::scheduler::StartMode::Fresh,
            Start::Exact { .. } => crate::plan::scheduler::StartMode::ExactResume,
            Start::Replay { .. } => crate::plan::scheduler::StartMode::Replay,
        })?;
        u.row.engine = order.engine;
        u.row.held_by = None;
        u.tries += 1;
        self.began[i] = now;
        self.inflight += 1;
        order.held = self.gov.held_of(order.engine, now);
        let opts = self.options(i, &order.start);
        Ok(Box::pin(async move {
            let r = ctx
                .execute_activity(UnitActivities::run_unit, order, opts)
                .await;
            Woke::Ended(i, Box::new(r))
        }))
    }

    /// Its queue (the session's host first), timeouts, one attempt.
    fn options(&self, i: usize, start: &Start) -> ActivityOptions {
        let u = &self.input.units[i];
        let heartbeat = u.stall_ms.map_or(DEFAULT_HEARTBEAT, Duration::from_millis);
        // One attempt may run for days; its own `timeout` bounds the engine.
        let close = u
            .timeout_ms
            .map_or(Duration::from_secs(7 * 24 * 3600), |t| {
                Duration::from_millis(t) + heartbeat * 2
            });
        let mut opts = ActivityOptions::with_start_to_close_timeout(close)
            .heartbeat_timeout(heartbeat)
            .cancellation_type(ActivityCancellationType::WaitCancellationCompleted)
            .retry_policy(
                temporalio_common::RetryPolicy::builder()
                    .maximum_attempts(1)
                    .build(),
            )
            .summary(u.name.clone())
            .build();
        if let Start::Exact { host, .. } = start {
            opts.task_queue = Some(super::host_queue(&self.input.task_queue, host));
            opts.schedule_to_start_timeout = Some(Duration::from_millis(self.input.affinity_ms));
        }
        opts
    }

    fn order(&self, i: usize, start: Start) -> UnitOrder {
        let u = &self.input.units[i];
        UnitOrder {
            workflow_id: self.workflow_id.clone(),
            plan: self.input.plan.clone(),
            unit: u.name.clone(),
            toml: u.toml.clone(),
            engine: self.units[i].row.engine,
            merge: u.merge.clone(),
            fetch_from: u.fetch_from.clone(),
            start,
            attempt: self.units[i].tries + 1,
            held: Vec::new(),
        }
    }

    /// An attempt of unit `i` ended: what it teaches the governor, its
    /// row, and the next attempt (queued, after its delay) if vf's retry
    /// table gives one. A start the worker's ledger refused is no attempt:
    /// the row is as before and the unit waits for the account's reset.
    fn settle(
        &mut self,
        i: usize,
        r: Result<Outcome, ActivityExecutionError>,
        (now, jitter): (Option<std::time::SystemTime>, f64),
    ) -> Result<()> {
        self.inflight = self.inflight.saturating_sub(1);
        let since = now.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        let now_ms = since.map_or(0, |d| d.as_millis() as u64);
        let before = self.before[i].take();
        if let (Ok(out), Some((row, order))) = (&r, before)
            && let Some(h) = &out.held
        {
            self.gov.learn_held(order.engine, h, (now_ms, &out.host));
            self.account[i] = Some(h.account.clone());
            let u = &mut self.units[i];
            (u.row, u.tries) = (row, u.tries.saturating_sub(1));
            self.queue.push(Queued {
                unit: i,
                order,
                not_before: now_ms,
                held_until: None,
            });
            return Ok(());
        }
        if let Ok(out) = &r {
            self.learn(i, out, now_ms);
        }
        let clock = (since.map_or(0, |d| d.as_secs()), jitter);
        match next_attempt::decide(&self.input.units[i], &mut self.units[i], r, clock) {
            Decision::Final => self.busy[i] = false,
            Decision::Again { delay, start } => {
                let order = self.order(i, start);
                self.ended[i] = Some(self.units[i].row.clone());
                self.units[i].row.again()?;
                self.queue.push(Queued {
                    unit: i,
                    order,
                    not_before: now_ms + delay.as_millis() as u64,
                    held_until: None,
                });
            }
        }
        Ok(())
    }

    /// What an attempt's end teaches the governor: a rate limit holds its
    /// engine's account for the whole plan; a run done proves it open.
    fn learn(&mut self, i: usize, out: &Outcome, now: u64) {
        let account = holds::account_of(out.row.account.as_deref()).to_string();
        self.account[i] = Some(account.clone());
        let (engine, unit) = (out.row.engine, &self.input.units[i].name);
        if out.exit == crate::ground::error::exit::RATE_LIMITED {
            let retry_at = out.retry_at.as_deref();
            let key = (engine, account.as_str());
            self.gov.learn_limit(key, unit, retry_at, (now, &out.host));
        } else if out.row.state == RunState::Done {
            self.gov.learn_ok(engine, &account, self.began[i]);
        }
    }
}

/// The claimed units' queue: each starts when its delay is over, room is
/// free and the governor lets its engine's account start.
impl Driver {
    /// The queued units to start now, in the order claimed; the governor's
    /// holds recorded in the rows of those it keeps waiting.
    fn due(&mut self, now: u64) -> Result<Vec<(usize, UnitOrder)>> {
        let mut room = (self.input.parallel as usize).saturating_sub(self.inflight);
        let mut out = Vec::new();
        let mut k = 0;
        while k < self.queue.len() {
            // A hold that has ended: it waits for room now, not for the governor.
            if self.queue[k].held_until.is_some_and(|t| t <= now) {
                self.queue[k].held_until = None;
                self.units[self.queue[k].unit].row.held_by = None;
            }
            let q = &self.queue[k];
            if q.not_before > now || room == 0 {
                k += 1;
                continue;
            }
            let (i, engine) = (q.unit, q.order.engine);
            let lim = holds::limits(self.input.units[i].stagger_ms);
            match self
                .gov
                .admit(engine, self.account[i].as_deref(), now, &lim)
            {
                Ok(()) => {
                    let q = self.queue.remove(k);
                    room -= 1;
                    out.push((i, q.order));
                }
                Err(h) => {
                    let until = crate::quota::entry::parse_ms(&h.until).unwrap_or(now);
                    self.queue[k].held_until = Some(until.max(now + 1));
                    self.units[i].row.held_by = Some(*h);
                    k += 1;
                }
            }
        }
        Ok(out)
    }

    /// When the loop must look at the queue again: the first hold's end or
    /// delay's end still to come.
    fn wake(&self, now: u64) -> Option<u64> {
        let times = self
            .queue
            .iter()
            .flat_map(|q| [Some(q.not_before), q.held_until]);
        times.flatten().filter(|t| *t > now).min()
    }

    /// Drops the queued units that will not start: every one once the plan
    /// is cancelled, the first attempts once its budget is spent (as a
    /// local run starts no new unit then). A first attempt's row stays
    /// waiting (reported not started); a retry's row is its last
    /// attempt's end again (failed), as when no retry follows.
    fn drop_queued(&mut self, cancelled: bool) -> Result<()> {
        let budget = !cancelled && self.over_budget();
        if !cancelled && !budget {
            return Ok(());
        }
        let mut kept = Vec::new();
        for q in std::mem::take(&mut self.queue) {
            let u = &mut self.units[q.unit];
            if !cancelled && u.tries > 0 {
                kept.push(q);
                continue;
            }
            self.busy[q.unit] = false;
            u.row.held_by = None;
            if let Some(ended) = self.ended[q.unit].take() {
                u.row.take_attempt(ended)?;
            }
        }
        self.queue = kept;
        Ok(())
    }

    /// Nothing is queued and no attempt runs.
    fn settled(&self) -> bool {
        self.inflight == 0 && self.queue.is_empty()
    }
}

/// The workflow as the scheduler's executor: a block is recorded in its
/// row; a start is collected, and the run loop schedules its activity.
struct Starts<'a> {
    driver: &'a mut Driver,
    starts: Vec<usize>,
}

impl Executor for Starts<'_> {
    fn block(&mut self, i: usize, why: String) -> Result<()> {
        self.driver.block(i, why)
    }

    fn start(&mut self, i: usize) -> Result<()> {
        self.starts.push(i);
        Ok(())
    }
}

/// A unit's row before it runs.
pub(super) fn fresh(u: &super::payload::UnitInput) -> UnitState {
    UnitState {
        row: UnitReport::waiting(&u.name, u.engine, u.model.clone()),
        tries: 0,
        retried: 0,
        waited_ms: 0,
        waits: 0,
        host: None,
        answers: Vec::new(),
    }
}

#[cfg(test)]
#[path = "workflow_tests.rs"]
mod tests;
